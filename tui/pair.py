"""Two runs answered as one timeline, for ``kernbench-tui compare``.

:class:`TimelinePair` offers the questions the :class:`~kernbench_tui.navigator.Navigator`
asks of a model, over both runs at once: one time axis from the earlier start
to the later end, the union of their PEs, the next change on either. What to
draw is still asked of each run's own model (``pair.sides``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernbench.events.store import EventStore
from kernbench.events.timeline import TimelineModel, natural_key
from kernbench.events.types import Event


class TimelinePair:
    def __init__(self, a: TimelineModel, b: TimelineModel) -> None:
        self.sides = (a, b)

    @property
    def stores(self) -> tuple[EventStore, ...]:
        return tuple(m.store for m in self.sides)

    @property
    def start_ns(self) -> float:
        return min(m.start_ns for m in self.sides)

    @property
    def end_ns(self) -> float:
        return max(m.end_ns for m in self.sides)

    def pes(self) -> list[str]:
        """Every PE of either run, in natural order."""
        return sorted({pe for m in self.sides for pe in m.pes()}, key=natural_key)

    def has_pe(self, side: int, pe: str) -> bool:
        return pe in self.sides[side].pes()

    lanes_of = staticmethod(TimelineModel.lanes_of)

    def channels_of(self, pe: str) -> list[str]:
        found = {lane for m in self.sides for lane in m.channels_of(pe)}
        return sorted(found, key=natural_key)

    def next_change(self, t_ns: float, **scope: Any) -> float | None:
        found = [t for m in self.sides if (t := m.next_change(t_ns, **scope)) is not None]
        return min(found, default=None)

    def prev_change(self, t_ns: float, **scope: Any) -> float | None:
        found = [t for m in self.sides if (t := m.prev_change(t_ns, **scope)) is not None]
        return max(found, default=None)

    def stalls_at(self, t_ns: float, pes: Sequence[str] | None = None) -> list[Event]:
        return [s for m in self.sides for s in m.stalls_at(t_ns, pes)]

    def utilization_text(self, pe: str) -> str:
        """``82%/55%``: the PE's utilization in each run (``-`` where it is missing)."""
        return "/".join(f"{u[pe]:.0%}" if pe in (u := m.pe_utilizations()) else "-" for m in self.sides)
