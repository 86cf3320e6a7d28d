"""The critical path by source line of the kernel: which line of my file costs the time.

Every segment of the critical path (:mod:`kernbench.analysis.critical`)
belongs to one command (its ``corr_id``), and every command carries the
source site that issued it (:mod:`kernbench.events.source`). Adding the
segments up by the innermost frame of that site gives each line of the
user's files its nanoseconds on the path, and the causes inside them; the
lines tile the latency exactly as the causes do. ``by="function"`` adds
them up by the innermost frame's function instead.

A segment whose command has no site — a trace from before format v3, a
run of a bare command log — is counted under :data:`NO_LINE`, so the sum
stays the latency.
"""

from __future__ import annotations

import linecache
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from kernbench.events.source import innermost

if TYPE_CHECKING:  # (critical.py reads the lines of its attribution from here: no import back)
    from kernbench.analysis.critical import Attribution

NO_LINE = "(no source line)"
By = Literal["line", "function"]
BY: tuple[str, ...] = ("cause", "line", "function")


@dataclass(frozen=True)
class LineCost:
    """One source line (or function) of the user's files and its time on the critical path."""

    key: str  # "FILE:LINE" (by line) or "FILE:FUNCTION" (by function); NO_LINE
    file: str
    line: int  # 0 by function, or no line
    function: str
    ns: float
    causes: dict[str, float] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """As a profiler prints it: ``kern.py:42`` (``kern.py:helper`` by function)."""
        if not self.file:
            return self.key
        tail = str(self.line) if self.line else self.function
        return f"{os.path.basename(self.file)}:{tail}"

    @property
    def text(self) -> str:
        """The line's source text ("" by function, or when the file cannot be read)."""
        if not self.line:
            return ""
        return (linecache.getline(self.file, self.line) or "").strip()

    def share(self, latency_ns: float) -> float:
        return self.ns / latency_ns if latency_ns > 0 else 0.0

    def as_json(self, latency_ns: float) -> dict[str, object]:
        d: dict[str, object] = {
            "name": self.name,
            "file": self.file,
            "line": self.line,
            "function": self.function,
            "ns": round(self.ns, 9),
            "share": round(self.share(latency_ns), 9),
            "causes": {k: round(v, 9) for k, v in self.causes.items()},
        }
        if self.line:
            d["text"] = self.text
        return d


def by_source(a: Attribution, by: By = "line") -> list[LineCost]:
    """The path's time per source line (or function), most first; the entries' ns sum to the latency."""
    acc: dict[str, tuple[str, int, str, dict[str, float]]] = {}
    sums: dict[str, float] = {}
    frames: dict[str, tuple[str, str, int, str]] = {}  # src -> (key, file, line, function)
    for s in a.path:
        hit = frames.get(s.src)
        if hit is None:
            f = innermost(s.src)
            if f is None:
                hit = (NO_LINE, "", 0, "")
            elif by == "line":
                hit = (f.where, f.file, f.line, f.function)
            else:
                hit = (f"{f.file}:{f.function}", f.file, 0, f.function)
            frames[s.src] = hit
        key = hit[0]
        if key not in acc:
            acc[key] = (hit[1], hit[2], hit[3], {})
            sums[key] = 0.0
        causes = acc[key][3]
        causes[s.cause] = causes.get(s.cause, 0.0) + s.ns
        sums[key] += s.ns
    out = [
        LineCost(key, file, line, function, sums[key], dict(sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))))
        for key, (file, line, function, causes) in acc.items()
    ]
    return sorted(out, key=lambda lc: (-lc.ns, lc.key))


def lines_json(a: Attribution) -> dict[str, object]:
    """``by_line`` and ``by_function`` as the run record's attribution holds them."""
    return {
        "by_line": [lc.as_json(a.latency_ns) for lc in by_source(a, "line")],
        "by_function": [lc.as_json(a.latency_ns) for lc in by_source(a, "function")],
    }
