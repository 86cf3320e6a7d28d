"""Text that came from input, made safe to print on a terminal.

A name in a topology, a path on the command line or a string in a trace file
can hold control characters: an escape sequence in a topology's name would
reach the terminal of whoever prints it (recolouring it, retitling the
window, or worse on some emulators). Where kernbench cannot refuse such text
at the door (the topology loader does: its strings must be plain text), it
prints it through :func:`printable`, which writes each control character as
its escape (``\\x1b``), so what is shown is what the input holds and the
terminal sees no control sequence.
"""

from __future__ import annotations

import unicodedata

#: Unicode categories that do not print: C0/C1 controls (ESC, BEL, CSI …) and format characters
#: (bidirectional overrides, which reorder what the eye reads, and zero-width ones).
_HIDDEN = frozenset({"Cc", "Cf"})


def printable(text: str, keep: str = "") -> str:
    """``text`` with every control or format character but those in ``keep`` written as its escape.

    ``keep="\\n\\t"`` for a message of several lines (an error listing a topology's problems)."""
    if text.isprintable():
        return text
    return "".join(ch if ch in keep or unicodedata.category(ch) not in _HIDDEN else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
