"""Where a topology value comes from, as its YAML comment says: ``[hw]`` or ``[cal]``.

A value is marked by the comment on its key's line: ``[hw]`` (the paper's
hardware table) or ``[cal]`` (calibrated so the probe reproduces the
paper's table). A line may hold several keys (``link: {bw_gbps: 768,
prop_ns: 76.88}``) and its comment several markers (``# [hw] bandwidth;
[cal] same PCIe latency as the ring``), so a marker is read with the text
that follows it, up to the next marker (a *segment*):

* a segment *names* a key when its text has a word its unit is called by
  (``GB/s``, ``bandwidth``; ``ns``, ``latency``:
  :attr:`kernbench.topology.units.Unit.words`) or the key's own name when
  that is no ordinary word (``prop_ns``, not ``a`` or ``half``: a name with
  an underscore); it marks the keys it names;
* a segment that names no key on its line marks every key of the line that
  no segment names (``mesh: {width: 4, height: 4}  # [hw]``);
* a key marked by both kinds is ``hw+cal``; a key no marker reaches is
  ``unmarked``, whatever else the comment says.

Nothing is inferred beyond what the comment says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from kernbench.topology.units import unit_of

MARKER = re.compile(r"\[(hw|cal)\]")
MARKS = ("hw", "cal")


@dataclass(frozen=True, slots=True)
class Segment:
    """One marker of a comment and the text after it, up to the next marker."""

    mark: str
    text: str  # the marker included: "[hw] bandwidth" (of "[hw] bandwidth; [cal] …")


def comment_of(line: str) -> str:
    """The comment of one YAML line, without its ``#`` ("" if none): the first ``#`` that starts
    the line or follows a space or tab, outside quotes."""
    quote = ""
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"" and (i == 0 or line[i - 1] in " \t[{,:-"):
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[i + 1 :].strip()
        i += 1
    return ""


def segments(comment: str) -> list[Segment]:
    """The markers of ``comment``, each with the text it governs."""
    found = list(MARKER.finditer(comment))
    ends = [m.start() for m in found[1:]] + [len(comment)] if found else []
    return [Segment(m[1], comment[m.start() : end].strip().rstrip(";,").rstrip()) for m, end in zip(found, ends, strict=True)]


def names(segment: Segment, key: str) -> bool:
    """Whether ``segment``'s text names the parameter ``key`` (its last name) or its unit."""
    unit = unit_of(key)
    words = ((key,) if "_" in key else ()) + (unit.words if unit else ())
    return any(re.search(rf"(?<![\w.]){re.escape(w)}(?!\w)", segment.text, re.IGNORECASE) for w in words)


def marks(comment: str, keys: Iterable[str]) -> dict[str, tuple[Segment, ...]]:
    """For each key on a line (last names), the segments of the line's ``comment`` that mark it."""
    keys = list(keys)
    segs = segments(comment)
    named = {key: tuple(s for s in segs if names(s, key)) for key in keys}
    general = tuple(s for s in segs if not any(names(s, key) for key in keys))
    return {key: named[key] or general for key in keys}


def source_of(marked_by: tuple[Segment, ...]) -> str:
    """``hw``, ``cal``, ``hw+cal`` or ``unmarked`` for a key marked by ``marked_by``."""
    kinds = [m for m in MARKS if any(s.mark == m for s in marked_by)]
    return "+".join(kinds) or "unmarked"
