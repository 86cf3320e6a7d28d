"""The critical path as a reader follows it: one step per span, runs of like spans joined.

:func:`kernbench.analysis.critical.attribute` gives the path as segments, one
per span and per part of a transfer (``TRANSIT``). A person reads it in
*steps*: a transfer's parts fold into the transfer, and consecutive spans of
one component for one cause (a run of dispatches, of MATH ops) are one step.
``kernbench run --explain`` prints one line per step; the debugger's Why
panel lists them and walks them.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernbench.analysis.critical import Segment

#: component kinds of a transfer's parts (everything else is a PE lane)
NETWORK_KINDS = ("node", "edge", "hbm channel")


@dataclass(frozen=True, slots=True)
class Step:
    """Consecutive segments of the path read as one: a transfer with its parts
    (``transfer``), or one or more spans of one component for one cause."""

    segments: tuple[Segment, ...]
    transfer: bool

    @property
    def first(self) -> Segment:
        return self.segments[0]

    @property
    def start_ns(self) -> float:
        return self.segments[0].start_ns

    @property
    def end_ns(self) -> float:
        return self.segments[-1].end_ns

    @property
    def ns(self) -> float:
        return self.end_ns - self.start_ns

    @property
    def via(self) -> str:
        """Why the step started when it did (what it followed on the path)."""
        return self.first.via

    @property
    def cause(self) -> str:
        """``dispatch``, ``math ×9``; ``transfer`` for a transfer."""
        if self.transfer:
            return "transfer"
        n = len(self.segments)
        return self.first.cause if n == 1 else f"{self.first.cause} ×{n}"

    @property
    def what(self) -> str:
        """The spans' labels (``MathCmd ×9, CompositeCmd``); a transfer's label and corr id."""
        if self.transfer:
            return f"{self.first.label} (corr {self.first.corr_id})"
        counts: dict[str, int] = {}
        for s in self.segments:
            counts[s.label] = counts.get(s.label, 0) + 1
        return ", ".join(f"{label} ×{n}" if n > 1 else label for label, n in counts.items())

    def parts(self) -> list[tuple[str, float]]:
        """A transfer's time by cause (``queueing behind corr 31`` apart), most first."""
        by: dict[str, float] = {}
        for s in self.segments:
            key = s.cause if s.behind < 0 else f"{s.cause} behind corr {s.behind}"
            by[key] = by.get(key, 0.0) + s.ns
        return sorted(by.items(), key=lambda kv: -kv[1])


def path_steps(path: tuple[Segment, ...] | list[Segment]) -> list[Step]:
    """The path's steps in time order (they tile the path as its segments do)."""
    spans = _spans(path)
    steps: list[Step] = []
    i = 0
    while i < len(spans):
        first = spans[i][0]
        if len(spans[i]) == 1 and first.kind not in NETWORK_KINDS:
            j = i + 1
            while (
                j < len(spans)
                and len(spans[j]) == 1
                and spans[j][0].component == first.component
                and spans[j][0].cause == first.cause
                and spans[j][0].kind not in NETWORK_KINDS
            ):
                j += 1
            steps.append(Step(tuple(g[0] for g in spans[i:j]), transfer=False))
            i = j
            continue
        steps.append(Step(tuple(spans[i]), transfer=True))
        i += 1
    return steps


def _spans(path: tuple[Segment, ...] | list[Segment]) -> list[list[Segment]]:
    """One list per span on the path: a transfer's parts follow its first (``via == "transfer"``)."""
    groups: list[list[Segment]] = []
    for s in path:
        if groups and s.via == "transfer":
            groups[-1].append(s)
        else:
            groups.append([s])
    return groups
