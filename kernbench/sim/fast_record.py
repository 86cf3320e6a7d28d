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
    the token of its watch on that hop's FIFO and (recorded runs) its stop there, made as it is
    planned (what :meth:`FastRecord.parts` reads of it: no list of them built again at the end)."""

    route: Route
    then: Callable[[float], None]  # called with its arrival at the far end
    tokens: list[int]
    times: list[FifoStop]


_PlanFields = tuple[Route, Callable[[float], None], list[int], list["FifoStop"]]
#: ``control_plan((route, then, tokens, times))``: a :class:`ControlPlan` with no Python call (one a read or write)
control_plan: Callable[[_PlanFields], ControlPlan] = functools.partial(tuple.__new__, ControlPlan)


class FifoStop(NamedTuple):
    """The critical flit at one FIFO (a :class:`~kernbench.sim.transit.StopLike`): arrival ``a``, departure
    ``d``, service ``s``; whose flits the FIFO served meanwhile (``shares``) is asked of it only when read,
    as at the transfer's end (its ``seq``, and ``hz``: the horizon then), which is the same answer: what
    the FIFO served before its horizon cannot fall in a window of a transfer still running. A named tuple,
    built by one C call (:data:`fifo_stop`): a recorded GQA default re-timing makes ~21k of them; a control
    flit's as it is planned, before the transfer's end (hence the transfer, not its horizon)."""

    a: float
    d: float
    s: float
    fifo: Fifo
    tr: FastRecord

    @property
    def shares(self) -> tuple[tuple[int, float], ...]:
        tr = self.tr
        return self.fifo.shares(self.a, self.d - self.s, tr.seq, tr.hz)


#: ``fifo_stop((a, d, s, fifo, tr))``: a :class:`FifoStop` from all its fields, with no Python call
fifo_stop: Callable[[tuple[float, float, float, Fifo, FastRecord]], FifoStop] = functools.partial(tuple.__new__, FifoStop)


class FastRecord(Transfer):
    """The state a fast transfer keeps that recorded runs read, and what they read of it."""

    __slots__ = ("ch", "crit", "ctl", "data", "engine", "hz", "mem_train", "route", "tied")

    # per memory channel: its bursts, as a passage, or (a read's reserved, Fifo.reserve, in recorded runs: most,
    # ~35k a GQA default) as the (start, count) its reservation gave: all publish needs, no object built for them
    ch: dict[int, Passage | tuple[float, int]]
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
        if self.op != "read":
            return super().parts(end)
        # a read (most transfers: ~4.4k of a recorded GQA re-timing's 5.1k): Transfer.parts' steps, with
        # _request's and _channel's in line (three Python calls less a read)
        assert self.ctl is not None
        j = Journey(self.t0)
        route, _then, _tokens, stops = self.ctl
        c, r, d = self.crit
        j.leg(route, stops, r, data=False)  # the request, arriving at r
        mem = self.mem
        assert mem is not None
        f = mem.fifos[c]  # the critical channel
        served_on = mem.node_id if self.tied else f.name
        q = self.ch.get(c)
        if type(q) is tuple and q[0] == r:  # (most) its bursts reserved from the request's arrival on: until its
            # last, the channel served only them (reserved work is served in one stretch, others' before or after
            # it), so no one else's flits: its whole wait is its own drain (what Journey.fifo makes of no shares),
            # and no FIFO history is asked (Fifo.shares: none)
            j.to(d, served_on, "drain")
        else:
            j.fifo(f.name, fifo_stop((r, d, mem.burst_ns, f, self)), "drain", served_on)
        self._data(j, end)  # (ends at end: nothing is left for Transfer.parts' last to())
        return tuple(j.parts)

    def _write_crit(self) -> tuple[int, Passage]:
        """A write's last burst to be written: (channel, its passage; a write's channels are passages)."""
        ch: dict[int, Passage] = self.ch  # type: ignore[assignment]
        c = max(ch, key=lambda c: (ch[c].out.last(), c))
        return c, ch[c]

    def _channel(self, j: Journey, arrive: float) -> None:
        """A write's last burst to be written (a read's critical channel is in :meth:`parts`)."""
        mem = self.mem
        assert mem is not None  # (memory_end, inlined)
        c, p = self._write_crit()
        d = p.out.last()
        tied = sum(1 for q in self.ch.values() if isinstance(q, Passage) and d - q.out.last() <= EPS) > 1  # (all are)
        f = mem.fifos[c]
        j.fifo(f.name, fifo_stop((arrive, d, mem.burst_ns, f, self)), "drain", mem.node_id if tied else f.name)

    def _data(self, j: Journey, end: float | None) -> float:
        """Along the data route, the stops of flit ``k`` (the last, mostly: its times are kept by its trains)."""
        if self.op == "write":
            k = self.memory_end()[1].last(self._write_crit()[0])
        else:
            bursts = self.bursts
            k = (bursts.n if bursts is not None else self.flits) - 1  # (flits, inlined for a read)
        arrive = end if end is not None else self.mem_train.at(k)
        stops = []
        for p in self.data:
            f, inp, dep = p.fifo, p.inp, p.out
            a = inp.last() if k == inp.n - 1 else inp.at(k)
            stops.append(fifo_stop((a, dep.last() if k == dep.n - 1 else dep.at(k), f.s, f, self)))
        j.leg(self.route, stops, arrive, data=True)
        return arrive

    def _ack(self, j: Journey, end: float) -> None:
        assert self.ctl is not None
        route, _then, _tokens, stops = self.ctl
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
        ch = self.ch
        if not ch:
            return
        mem = self.mem
        assert mem is not None
        node, fifos = mem.node_id, mem.fifos
        for c, q in ch.items():  # (in channel order: a read and a write fill ch in it)
            if type(q) is tuple:  # (most: a read's reserved bursts, its reservation's (start, count))
                start, n = q
                f = fifos[c]
                s = f.s
                first = start + s  # (its first departure and last, as the train of its departures works them out)
                emit(first - s, _CHANNEL_BUSY, f.name, first + (n - 1) * s, corr, node, n)
            else:
                assert isinstance(q, Passage)
                dep, f = q.out, q.fifo
                emit(dep.first() - f.s, _CHANNEL_BUSY, f.name, dep.last(), corr, node, q.n)


_QUEUE_DEPTH, _EDGE_BUSY, _CHANNEL_BUSY = EventKind.QUEUE_DEPTH, EventKind.EDGE_BUSY, EventKind.CHANNEL_BUSY
