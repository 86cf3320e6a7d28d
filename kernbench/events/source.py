"""Where a command came from: the kernel source site its DISPATCH (or ``tl.cycles``) carries.

A *site* is the chain of the user's frames that issued a command, innermost
first: the file, line and function of the call in the user's code, then the
calls through the user's helpers that led to it, out to the kernel function.
Frames of kernbench's own machinery (``tl``, the runtime, the PE model) and of
Python's libraries are left out; shipped kernels (``kernbench/kernels/``) are
user code like any kernel file.

On the event stream a site is one string (the ``src`` field), frames joined by
``" < "``, each ``FILE:LINE:FUNCTION``::

    /tmp/k/kern.py:12:helper < /tmp/k/kern.py:30:my_kernel

The string is interned (one table entry per distinct site) in the event store
and trace files, so a run of a million commands from twenty lines keeps twenty
strings.
"""

from __future__ import annotations

from dataclasses import dataclass

FRAME_SEP = " < "


@dataclass(frozen=True, slots=True)
class Frame:
    """One user frame: ``file:line`` in ``function``."""

    file: str
    line: int
    function: str

    @property
    def where(self) -> str:
        """``file:line``: a source line's name."""
        return f"{self.file}:{self.line}"

    def text(self) -> str:
        return f"{self.file}:{self.line}:{self.function}"


def site_text(frames: tuple[Frame, ...] | list[Frame]) -> str:
    """The ``src`` string of a chain of frames (innermost first)."""
    return FRAME_SEP.join(f.text() for f in frames)


def parse_site(src: str) -> tuple[Frame, ...]:
    """The frames of a ``src`` string, innermost first (``()`` for ``""``: no site was recorded).

    A frame's file may itself hold ``:`` (a Windows drive): the line and the
    function are the last two fields."""
    if not src:
        return ()
    out = []
    for part in src.split(FRAME_SEP):
        file, line, function = part.rsplit(":", 2)
        out.append(Frame(file, int(line), function))
    return tuple(out)


def innermost(src: str) -> Frame | None:
    """The frame that issued the command (None when no site was recorded)."""
    frames = parse_site(src)
    return frames[0] if frames else None
