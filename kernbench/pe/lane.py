"""Engine lanes: in-order servers that hold a command for its service time.

Compute engines (PE_GEMM, PE_MATH, PE_FETCH_STORE, PE_SCHEDULER) need no
SimPy event per command: a command's start is ``max(earliest, free)`` and
its end ``start + service``, reserved when it reaches the engine. Engines
that move bytes over the graph (DMA read/write, IPCQ) are :class:`Channel`\\ s:
capacity one, each transfer waiting for the previous one's completion event.

When events are recorded each span names its cause (``pred``, see
:mod:`kernbench.events.types`): the span ``earliest`` came from, or the
lane's own previous span when the lane was still busy. ``last`` is the seq
of the span that ends at ``free_ns`` — what a later stage waits for.
"""

from __future__ import annotations

from typing import cast

import simpy
from simpy.events import PENDING

from kernbench.events.bus import Bus
from kernbench.events.types import EventKind
from kernbench.pe.scale import WorkScale
from kernbench.sim.clock import fire
from kernbench.sim.transit import Part

# (module constants: an enum member's lookup is a class attribute's, ~80k a recorded GQA re-timing)
ENGINE_BUSY, TRANSIT = EventKind.ENGINE_BUSY, EventKind.TRANSIT


def fired_at(ev: simpy.Event) -> float:
    """The time a readiness or completion event fired with (its value, read as SimPy's ``value``
    does once the event is triggered — every caller asks of a processed event — without the
    property's check and ``cast``'s call: ~11k reads in a GQA re-timing)."""
    t: float = ev._value
    return t


def all_fired(env: simpy.Environment, events: list[simpy.Event]) -> simpy.Event:
    """An event that fires once every one of ``events`` has, where ``simpy.AllOf`` would:
    scheduled (at that instant, normal priority) as the last of them is processed, or at
    once if all were; it fails as AllOf does if one of them fails. Lighter than AllOf — no
    condition value, which no stage reads — and in the same place in SimPy's schedule."""
    done = env.event()
    left = len(events)

    def check(ev: simpy.Event) -> None:
        nonlocal left
        if done._value is not PENDING:  # (done.triggered, without the property's call)
            return
        left -= 1
        if not ev._ok:
            ev._defused = True  # (SimPy's own flag: AllOf sets it too)
            done.fail(cast(Exception, ev._value))
        elif left == 0:
            fire(env, done)  # (done.succeed(): scheduled where it schedules it)

    if not events:
        done.succeed()
    for ev in events:
        if ev.callbacks is None:
            check(ev)
        else:
            ev.callbacks.append(check)
    return done


class Lane:
    __slots__ = ("bus", "busy_ns", "component", "count", "engine", "free_ns", "last", "scale")

    def __init__(self, component: str, bus: Bus):
        self.component = component
        self.free_ns = 0.0
        self.busy_ns = 0.0
        self.count = 0
        self.bus = bus
        self.last = -1  # seq of the span ending at free_ns (recorded runs)
        self.scale: WorkScale | None = None  # what-if re-timing: service times scaled (kernbench.pe.scale)
        self.engine = ""  # its engine kind, for the scale (PE_GEMM, …)

    def reserve(
        self, earliest_ns: float, service_ns: float, label: str, corr_id: int = -1, value: float = 0.0, pred: int = -1
    ) -> tuple[float, float]:
        """Hold the lane for ``service_ns`` from ``max(earliest_ns, free)``; ``pred``: the span ``earliest_ns`` came from."""
        if self.scale is not None:
            service_ns *= self.scale.of_lane(self.engine, corr_id)
        free = self.free_ns
        start = earliest_ns if earliest_ns > free else free
        end = start + service_ns
        self.free_ns = end
        self.busy_ns += service_ns
        self.count += 1
        if self.bus.active:
            cause = pred if earliest_ns >= free else self.last
            if service_ns > 0:
                cause = self.bus.emit(start, ENGINE_BUSY, self.component, end, corr_id, label, value, "", cause)
            self.last = cause
        return start, end


class Channel:
    """A capacity-one engine driven through SimPy (transfers over the graph)."""

    __slots__ = ("bus", "busy_ns", "component", "count", "env", "last", "tail")

    def __init__(self, component: str, env: simpy.Environment, bus: Bus):
        self.component = component
        self.env = env
        self.tail: simpy.Event | None = None
        self.busy_ns = 0.0
        self.count = 0
        self.bus = bus
        self.last = -1  # seq of its latest transfer's span (recorded runs)

    def claim(self) -> tuple[simpy.Event | None, simpy.Event]:
        """Join the queue: (the event to wait for first, the event to fire when done)."""
        prev = self.tail
        mine = self.env.event()
        self.tail = mine
        return prev, mine

    def record(self, start: float, end: float, label: str, corr_id: int, value: float, pred: int = -1, parts: tuple[Part, ...] = ()) -> int:
        """A transfer on this channel took ``[start, end]``: its span (``pred``: what it waited for),
        followed by where its critical flit spent that time (``parts``, TRANSIT spans); the span's seq."""
        self.busy_ns += end - start
        self.count += 1
        bus = self.bus
        if not bus.active:
            return -1
        seq = self.last = bus.emit(start, ENGINE_BUSY, self.component, end, corr_id, label, value, "", pred)
        if parts:  # (a Part is (start, end, component, cause, behind): a TRANSIT span's fields in emit_spans' order)
            bus.emit_spans(TRANSIT, parts, corr_id, seq)
        return seq
