"""What a fast-mode transfer tells a recorded run: where its time went, and its busy spans.

Contract. In a run whose events are recorded or explained every passage is
planned (nothing is deferred), so a :class:`FastRecord` can name, FIFO by
FIFO, when its critical flit arrived and left and whose flits the server
was busy with meanwhile (:meth:`Transfer.parts`, through
:mod:`kernbench.sim.transit`), and publish each FIFO's busy span and
queue depth, and each memory channel's (:meth:`FastRecord.publish`).
:mod:`kernbench.sim.fast` computes the times; this module only reads them.

Why recorded runs plan every passage is ``docs/timing.md`` ("Deferred on
idle routes"); the words (recorded run, passage, horizon) are in
``docs/glossary.md``.
"""

from __future__ import annotations

import functools
from abc import abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from kernbench.events.types import EventKind
from kernbench.sim.fifo import Fifo, Passage
from kernbench.sim.train import EPS, Train
from kernbench.sim.transfer import Transfer
from kernbench.sim.transit import Journey, Part
from kernbench.topology.graph import Route

if TYPE_CHECKING:
    from kernbench.sim.fast import FastEngine


class ControlPlan(NamedTuple):
    """A control flit's plan (a read's request, a write's acknowledgement): hop by hop,
    the token of its watch on that hop's FIFO and (recorded runs) its (arrival, departure) there."""

    route: Route
    then: Callable[[float], None]  # called with its arrival at the far end
    tokens: list[int]
    times: list[tuple[float, float]]


_PlanFields = tuple[Route, Callable[[float], None], list[int], list[tuple[float, float]]]
#: ``control_plan((route, then, tokens, times))``: a :class:`ControlPlan` with no Python call (one a read or write)
control_plan: Callable[[_PlanFields], ControlPlan] = functools.partial(tuple.__new__, ControlPlan)


class EvenDepartures:
    """``n`` bursts leaving one every ``s`` from ``start + s`` on: the first and last times a
    ``Train(n, [(0, start + s, 0.0, 1, s)])`` gives (the same arithmetic), all that is asked of a
    reservation's departures; no train is built for them."""

    __slots__ = ("_first", "_last")

    def __init__(self, start: float, n: int, s: float) -> None:
        first = start + s
        self._first = first
        self._last = first + (n - 1) * s

    def first(self) -> float:
        return self._first

    def last(self) -> float:
        return self._last


class ReservedBursts:
    """A read's bursts on an idle channel: no passage needed, only what to publish — the channel's busy
    span, worked out when reserved as :meth:`FastRecord.publish` works out a passage's (``busy_from``: the
    first departure less one burst time, ``busy_to``: the last; :class:`EvenDepartures`' arithmetic). A
    recorded GQA default reserves ~35k of them."""

    __slots__ = ("busy_from", "busy_to", "fifo", "n", "start")

    def __init__(self, fifo: Fifo, start: float, count: int) -> None:
        s = fifo.s
        first = start + s
        self.fifo = fifo
        self.n = count
        self.start = start
        self.busy_from = first - s
        self.busy_to = first + (count - 1) * s

    @property
    def out(self) -> EvenDepartures:
        """Its departures (a write's channels are passages: nothing on the hot path asks a reservation)."""
        return EvenDepartures(self.start, self.n, self.fifo.s)


class FifoStop(NamedTuple):
    """The critical flit at one FIFO (a :class:`~kernbench.sim.transit.StopLike`): arrival ``a``, departure
    ``d``, service ``s``; whose flits the FIFO served meanwhile (``shares``) is asked of it only when read,
    as at the transfer's end (``seq``: the transfer's, ``hz``: the horizon then), which is the same answer:
    what the FIFO served before its horizon cannot fall in a window of a transfer still running. A named
    tuple, built by one C call (:data:`_stop`): a recorded GQA default re-timing makes ~33k of them."""

    a: float
    d: float
    s: float
    fifo: Fifo
    seq: int
    hz: float

    @property
    def shares(self) -> tuple[tuple[int, float], ...]:
        return self.fifo.shares(self.a, self.d - self.s, self.seq, self.hz)


#: ``_stop((a, d, s, fifo, seq, hz))``: a :class:`FifoStop` from all its fields, with no Python call
_stop: Callable[[tuple[float, float, float, Fifo, int, float]], FifoStop] = functools.partial(tuple.__new__, FifoStop)


class FastRecord(Transfer):
    """The state a fast transfer keeps that recorded runs read, and what they read of it."""

    __slots__ = ("ch", "crit", "ctl", "data", "engine", "hz", "mem_train", "route", "tied")

    ch: dict[int, Passage | ReservedBursts]  # per memory channel: its bursts
    crit: tuple[int, float, float]  # a read's critical channel: (channel, request arrival, its last departure)
    ctl: ControlPlan | None  # the control flit's plan
    data: list[Passage]  # the data train, FIFO by FIFO
    engine: FastEngine
    hz: float  # the horizon when it finished (see Network.horizon)
    mem_train: Train  # a write's data train at the memory
    route: Route  # the data's route
    tied: bool  # a read: several channels sent their last bursts at once

    @abstractmethod
    def materialize(self) -> None:
        """Plan a deferred data train as passages (the fast engine's)."""

    def parts(self, end: float) -> tuple[Part, ...]:
        self.hz = self.net.horizon()
        return super().parts(end)

    def _stops(self, passages: list[Passage], k: int) -> list[FifoStop]:
        """Flit ``k`` at each of ``passages``' FIFOs (the last flit, mostly: its times are kept by its trains)."""
        seq, hz = self.seq, self.hz
        out = []
        for p in passages:
            f, inp, dep = p.fifo, p.inp, p.out
            a = inp.last() if k == inp.n - 1 else inp.at(k)
            out.append(_stop((a, dep.last() if k == dep.n - 1 else dep.at(k), f.s, f, seq, hz)))
        return out

    def _control_stops(self) -> tuple[Route, list[FifoStop]]:
        assert self.ctl is not None
        route, _then, _tokens, times = self.ctl
        edge_fifo = self.engine.edge_fifo
        seq, hz = self.seq, self.hz
        return route, [_stop((t, d, 0.0, edge_fifo(hop.edge.index), seq, hz)) for (t, d), hop in zip(times, route.hops, strict=True)]

    def _request(self, j: Journey) -> float:
        route, stops = self._control_stops()
        r = self.crit[1]
        j.leg(route, stops, r, data=False)
        return r

    def _write_crit(self) -> tuple[int, Passage | ReservedBursts]:
        """A write's last burst to be written: (channel, its passage)."""
        c = max(self.ch, key=lambda c: (self.ch[c].out.last(), c))
        return c, self.ch[c]

    def _channel(self, j: Journey, arrive: float) -> None:
        mem = self.memory_end()[0]
        b = mem.burst_ns
        if self.op == "read":
            c, _r, d = self.crit
            tied = self.tied
        else:
            c, p = self._write_crit()
            d = p.out.last()
            tied = sum(1 for q in self.ch.values() if d - q.out.last() <= EPS) > 1
        f = mem.fifos[c]
        j.fifo(f.name, _stop((arrive, d, b, f, self.seq, self.hz)), "drain", mem.node_id if tied else f.name)

    def _data(self, j: Journey, end: float | None) -> float:
        k = self.flits - 1 if self.op != "write" else self.memory_end()[1].last(self._write_crit()[0])
        arrive = end if end is not None else self.mem_train.at(k)
        j.leg(self.route, self._stops(self.data, k), arrive, data=True)
        return arrive

    def _ack(self, j: Journey, end: float) -> None:
        route, stops = self._control_stops()
        j.leg(route, stops, end, data=False)

    def publish(self) -> None:
        emit = self.net.bus.emit
        corr = self.corr
        self.materialize()  # (a train deferred before anyone subscribed to the bus)
        for p in self.data:
            f, out = p.fifo, p.out
            s = f.s
            head = p.inp.first()
            served = out.first() - s
            if served > head + EPS:  # others' flits were ahead of its head
                emit(head, _QUEUE_DEPTH, f.name, corr_id=corr, value=round((served - head) / s, 6))
                emit(served, _QUEUE_DEPTH, f.name, corr_id=corr, value=0.0)
            emit(served, _EDGE_BUSY, f.name, out.last(), corr, "", p.inp.n)
        mem = self.mem.node_id if self.mem is not None else ""
        ch = self.ch
        for c in sorted(ch):
            q = ch[c]
            if type(q) is ReservedBursts:  # (most: a read's bursts on idle channels; the same numbers, worked out once)
                emit(q.busy_from, _CHANNEL_BUSY, q.fifo.name, q.busy_to, corr, mem, q.n)
            else:
                dep, f = q.out, q.fifo
                emit(dep.first() - f.s, _CHANNEL_BUSY, f.name, dep.last(), corr, mem, q.n)


_QUEUE_DEPTH, _EDGE_BUSY, _CHANNEL_BUSY = EventKind.QUEUE_DEPTH, EventKind.EDGE_BUSY, EventKind.CHANNEL_BUSY
