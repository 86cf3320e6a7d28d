"""The critical path as the debugger shows it, without Textual.

:func:`kernbench.analysis.critical.attribute` walks the path once per
recording; :class:`WhyPath` keeps it with what the views ask of it: the
steps (:func:`~kernbench.analysis.steps.path_steps`) the Why panel lists and
``>`` / ``<`` walk, the intervals the path covers on each lane (the overlay
``c`` draws), and the edges and transfers on it (marked in the FIFO and
loads panels).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass

from kernbench.analysis.critical import Attribution, NoCausesError, PathError, Segment, attribute
from kernbench.analysis.steps import Step, path_steps
from kernbench.events.store import EventStore
from kernbench.topology.ids import pe_of

PATH_MARK = "━"  # a cell, an edge or a load on the critical path
NO_CAUSES = "this recording has no causes (recorded before format v2): no critical path"
STILL_RUNNING = "the critical path is computed when the run ends (it is still running)"


@dataclass(frozen=True, eq=False)
class WhyPath:
    """A recording's critical path (equal only to itself: views compare it by identity)."""

    attribution: Attribution
    steps: tuple[Step, ...]
    lanes: dict[str, tuple[tuple[float, float], ...]]  # lane → the path's intervals on it, in time order
    edges: frozenset[str]  # edges and nodes a transfer on the path crossed
    corr_ids: frozenset[int]  # commands and transfers on the path

    @classmethod
    def of(cls, store: EventStore) -> WhyPath:
        """Walk the path of a finished recording (raises :class:`PathError`)."""
        a = attribute(store)
        lanes: dict[str, list[tuple[float, float]]] = {}
        for s in a.path:
            for lane in lanes_of(s):
                lanes.setdefault(lane, []).append((s.start_ns, s.end_ns))
        return cls(
            attribution=a,
            steps=tuple(path_steps(a.path)),
            lanes={lane: tuple(spans) for lane, spans in lanes.items()},
            edges=frozenset(s.component for s in a.path if s.kind in ("edge", "node")),
            corr_ids=frozenset(s.corr_id for s in a.path if s.corr_id >= 0),
        )

    @property
    def latency_ns(self) -> float:
        return self.attribution.latency_ns

    def pes(self) -> list[str]:
        """The PEs the path crosses, in the order it reaches them."""
        seen: dict[str, None] = {}
        for step in self.steps:
            pe = step_pe(step)
            if pe:
                seen.setdefault(pe)
        return list(seen)

    def ns_on(self, pe: str) -> float:
        """Nanoseconds of the path spent on ``pe``'s lanes (a transfer counts for the PE that issued it)."""
        return sum(step.ns for step in self.steps if step_pe(step) == pe)

    def cells(self, lane: str, t0: float, t1: float, n: int) -> list[bool]:
        """Which of ``n`` equal cells of ``[t0, t1)`` the path covers on ``lane``."""
        return cover(self.lanes.get(lane, ()), t0, t1, n)

    def step_cells(self, index: int, lane: str, t0: float, t1: float, n: int) -> list[bool]:
        """Which of ``n`` equal cells of ``[t0, t1)`` step ``index`` covers on ``lane``."""
        spans = [(s.start_ns, s.end_ns) for s in self.steps[index].segments if lane in lanes_of(s)]
        return cover(spans, t0, t1, n)

    def crosses(self, lane: str, t0: float, t1: float) -> bool:
        """Whether the path is on ``lane`` somewhere in ``[t0, t1]``."""
        return any(a <= t1 and b >= t0 for a, b in self.lanes.get(lane, ()))

    def step_at(self, t_ns: float) -> int:
        """Index of the step under ``t_ns`` (the later one where two meet); -1 before the first."""
        return bisect.bisect_right([s.start_ns for s in self.steps], t_ns) - 1

    def current(self, step: int, cursor_ns: float) -> int:
        """The step the cursor is on: ``step`` (the last jumped to) while the cursor is at its start."""
        if 0 <= step < len(self.steps) and self.steps[step].start_ns == cursor_ns:
            return step
        return self.step_at(cursor_ns)

    def next_step(self, current: int, cursor_ns: float, direction: int) -> int | None:
        """The step ``>`` (``direction`` +1) or ``<`` (-1) goes to.

        From the current step while the cursor is still at its start; else from
        the cursor: the first step starting at or after it, the last before it.
        """
        n = len(self.steps)
        if 0 <= current < n and self.steps[current].start_ns == cursor_ns:
            target = current + direction
        elif direction > 0:
            target = bisect.bisect_left([s.start_ns for s in self.steps], cursor_ns)
        else:
            target = bisect.bisect_left([s.start_ns for s in self.steps], cursor_ns) - 1
        return target if 0 <= target < n else None


def lanes_of(s: Segment) -> set[str]:
    """The lanes a segment is drawn on: its span's, and an HBM channel's own lane (``h``)."""
    return {s.span_component, s.component if s.kind == "hbm channel" else s.span_component}


def cover(spans: Iterable[tuple[float, float]], t0: float, t1: float, n: int) -> list[bool]:
    """Which of ``n`` equal cells of ``[t0, t1)`` the intervals ``spans`` touch."""
    out = [False] * n
    if t1 <= t0:
        return out
    scale = n / (t1 - t0)
    for a, b in spans:
        if b <= t0 or a >= t1:
            continue
        lo = max(0, int((a - t0) * scale))
        hi = min(n - 1, max(lo, int((b - t0) * scale - 1e-9)))
        out[lo : hi + 1] = [True] * (hi - lo + 1)
    return out


def step_lane(step: Step) -> str:
    """The lane a step is on: its spans' component, or the lane of the transfer it is."""
    return step.first.span_component or step.first.component


def step_pe(step: Step) -> str | None:
    return pe_of(step_lane(step))


def top_causes(why: WhyPath, n: int = 5) -> Iterable[tuple[str, float]]:
    """The ``n`` causes with most of the latency, with their share."""
    total = why.latency_ns or 1.0
    return [(cause, ns / total) for cause, ns in list(why.attribution.by_cause.items())[:n]]


def compute(store: EventStore) -> WhyPath | str:
    """The path of a finished recording, or why there is none (for the user, one line)."""
    try:
        why = WhyPath.of(store)
    except NoCausesError:
        return NO_CAUSES
    except PathError as exc:
        return f"no critical path: {exc}"
    if not why.steps:
        return "no critical path: the recording has no spans"
    return why
