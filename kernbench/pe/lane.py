"""Engine lanes: in-order servers that hold a command for its service time.

Compute engines (PE_GEMM, PE_MATH, PE_FETCH_STORE, PE_SCHEDULER) need no
SimPy event per command: a command's start is ``max(earliest, free)`` and
its end ``start + service``, reserved when it reaches the engine. Engines
that move bytes over the graph (DMA read/write, IPCQ) are :class:`Channel`\\ s:
capacity one, each transfer waiting for the previous one's completion event.
"""

from __future__ import annotations

import simpy

from kernbench.events.bus import Bus
from kernbench.events.types import EventKind


class Lane:
    __slots__ = ("component", "free_ns", "busy_ns", "bus", "count")

    def __init__(self, component: str, bus: Bus):
        self.component = component
        self.free_ns = 0.0
        self.busy_ns = 0.0
        self.count = 0
        self.bus = bus

    def reserve(self, earliest_ns: float, service_ns: float, label: str, corr_id: int = -1, value: float = 0.0) -> tuple[float, float]:
        start = earliest_ns if earliest_ns > self.free_ns else self.free_ns
        end = start + service_ns
        self.free_ns = end
        self.busy_ns += service_ns
        self.count += 1
        if self.bus.active and service_ns > 0:
            self.bus.emit(start, EventKind.ENGINE_BUSY, self.component, end_ns=end, corr_id=corr_id, label=label, value=value)
        return start, end


class Channel:
    """A capacity-one engine driven through SimPy (transfers over the graph)."""

    __slots__ = ("component", "env", "tail", "busy_ns", "count", "bus")

    def __init__(self, component: str, env: simpy.Environment, bus: Bus):
        self.component = component
        self.env = env
        self.tail: simpy.Event | None = None
        self.busy_ns = 0.0
        self.count = 0
        self.bus = bus

    def claim(self) -> tuple[simpy.Event | None, simpy.Event]:
        """Join the queue: (the event to wait for first, the event to fire when done)."""
        prev = self.tail
        mine = self.env.event()
        self.tail = mine
        return prev, mine

    def record(self, start: float, end: float, label: str, corr_id: int, value: float) -> None:
        self.busy_ns += end - start
        self.count += 1
        if self.bus.active:
            self.bus.emit(start, EventKind.ENGINE_BUSY, self.component, end_ns=end, corr_id=corr_id, label=label, value=value)
