"""Where a transfer's time went: its critical flit's journey, part by part.

A transfer ends when its *critical flit* arrives: the last data flit of a
send or a read, or, for a write, the acknowledgement that leaves when the
write's last burst is in memory. Walking that flit's journey from the
transfer's start, every instant is one of:

``overhead``       a node's per-flit overhead (the source's, each router's, the memory's)
``serialization``  the edge serializing this transfer's flits (this flit and its own
                   earlier flits queued ahead of it)
``queueing``       waiting in a FIFO (edge or HBM channel) while it served another
                   transfer's flits (``behind``: that transfer's corr id)
``propagation``    the edge's propagation delay
``drain``          an HBM/SRAM pseudo-channel serving this transfer's bursts

The parts are built from the instants the engine computed (arrival and
departure at each FIFO), so they tile ``[start, end]`` exactly; a FIFO's
wait is split by whose flits the server was busy with, which each timing
mode reports from its own bookkeeping (:class:`FifoLog`). How ``--explain``
uses them is ``docs/critical-path.md`` ("Inside a transfer"); the model whose
instants they are, ``docs/timing.md``.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import NamedTuple, Protocol

from kernbench.frozen import quick_init
from kernbench.sim.train import EPS, Train
from kernbench.topology.graph import Route


class Part(NamedTuple):
    """``[start, end]`` of a transfer's time spent on ``component`` for ``cause``.

    A named tuple rather than a frozen dataclass: a recorded run makes one per TRANSIT event (~28k for the
    GQA default re-timing) and a journey builds each with one C call (:data:`_part`), where a dataclass's
    ``__init__`` ran a Python frame; read by field name as before, immutable as before."""

    start: float
    end: float
    component: str
    cause: str
    behind: int = -1  # queueing: the corr id of the transfer it waited behind

    @property
    def ns(self) -> float:
        return self.end - self.start


#: ``_part((start, end, component, cause, behind))``: a :class:`Part` from all its fields, with no Python call
_part: Callable[[tuple[float, float, str, str, int]], Part] = functools.partial(tuple.__new__, Part)
_ns = itemgetter(1)  # a share's ns


@quick_init
@dataclass(frozen=True, slots=True)
class Stop:
    """The critical flit at one FIFO: arrival ``a``, departure ``d``, service ``s``, and who else
    the server was busy with while it waited (``shares``: (corr id, ns), in the order served)."""

    a: float
    d: float
    s: float
    shares: tuple[tuple[int, float], ...]


class StopLike(Protocol):
    """What :class:`Journey` reads of a stop: :class:`Stop`, or one whose ``shares`` are asked of its FIFO
    only when read (:class:`kernbench.sim.fast_record.FifoStop`) — the journey reads them only if the flit
    waited longer than its own flits' service, which on a run without contention is never."""

    @property
    def a(self) -> float: ...
    @property
    def d(self) -> float: ...
    @property
    def s(self) -> float: ...
    @property
    def shares(self) -> tuple[tuple[int, float], ...]: ...


class Journey:
    """Parts of one flit's journey, appended instant by instant from the transfer's start."""

    __slots__ = ("parts", "t")

    def __init__(self, t0: float) -> None:
        self.t = t0
        self.parts: list[Part] = []

    def to(self, t: float, component: str, cause: str, behind: int = -1) -> None:
        """The flit was on ``component`` for ``cause`` until ``t``."""
        if t > self.t:
            self.parts.append(_part((self.t, t, component, cause, behind)))
            self.t = t

    def fifo(self, name: str, stop: StopLike, own: str, served_on: str | None = None) -> None:
        """Through a FIFO: its wait (others' flits: queueing; its own: ``own``), then its service
        (named ``served_on`` if given: a memory whose channels tie for the last burst)."""
        wait = stop.d - stop.s - self.t
        if wait > 0.0:
            shares = stop.shares  # (read once, and only here: see StopLike)
            if shares:  # (mostly none: it waited behind its own flits)
                self._behind(name, stop, shares, wait)
        d = stop.d  # (to(), written out)
        if d > self.t:
            self.parts.append(_part((self.t, d, served_on or name, own, -1)))
            self.t = d

    def _behind(self, name: str, stop: StopLike, shares: tuple[tuple[int, float], ...], wait: float) -> None:
        """The ``wait`` at a FIFO from now, split by whose flits it served meanwhile (``stop.shares``): queueing."""
        foreign = sum(map(_ns, shares))
        scale = wait / foreign if foreign > wait else 1.0
        t = self.t
        for corr, ns in shares:
            t += ns * scale
            self.to(min(t, stop.d - stop.s), name, "queueing", corr)

    def leg(self, route: Route, stops: Sequence[StopLike], arrive: float, data: bool) -> None:
        """Along ``route`` through ``stops`` (one per hop), arriving at its last node at ``arrive``."""
        # (what to() and fifo() do, written out: a recorded run walks ~26k hops this way)
        nodes = route.nodes
        own = "serialization" if data else "queueing"
        parts = self.parts
        t = self.t
        for h, (hop, stop) in enumerate(zip(route.hops, stops, strict=True)):
            edge = hop.edge_id
            a, d = stop.a, stop.d
            if a > t:
                parts.append(_part((t, a, nodes[h], "overhead", -1)))
                t = a
            wait = d - stop.s - t
            if wait > 0.0 and (shares := stop.shares):  # it waited behind others' flits (fifo()'s, inlined)
                self.t = t
                self._behind(edge, stop, shares, wait)
                t = self.t
            if d > t:  # its service (and any wait behind its own flits)
                parts.append(_part((t, d, edge, own, -1)))
                t = d
            e = d + hop.prop_ns
            if e > t:
                parts.append(_part((t, e, edge, "propagation", -1)))
                t = e
        if arrive > t:
            parts.append(_part((t, arrive, nodes[-1], "overhead", -1)))
            t = arrive
        self.t = t


class FifoLog:
    """Who a FIFO served when: ``(start, end, seq, corr)`` per service, in service order (the oracle's log)."""

    __slots__ = ("ends", "owners", "starts")

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.owners: list[tuple[int, int]] = []

    def add(self, start: float, end: float, seq: int, corr: int) -> None:
        self.starts.append(start)
        self.ends.append(end)
        self.owners.append((seq, corr))

    def shares(self, x: float, y: float, own_seq: int) -> tuple[tuple[int, float], ...]:
        """Time in ``[x, y]`` the server spent on other transfers' flits, per transfer, in service order."""
        return merge_shares(
            (corr, min(self.ends[i], y) - max(self.starts[i], x))
            for i in range(bisect.bisect_right(self.ends, x), len(self.ends))
            if self.starts[i] < y and self.owners[i][0] != own_seq
            for corr in (self.owners[i][1],)
        )


class Served(Protocol):
    """Flits a FIFO served for one transfer, as the fast mode keeps them: whose, and when they left."""

    @property
    def seq(self) -> int: ...
    @property
    def corr(self) -> int: ...
    @property
    def out(self) -> Train: ...


class Reserved(NamedTuple):
    """Flits served through :meth:`~kernbench.sim.fifo.Fifo.reserve`, in its history (recorded runs): whose, and when they
    left — ``n`` flits, one every ``s`` from ``start``; lighter than a :class:`~kernbench.sim.fifo.Passage`, as most reads
    reserve. Their departures (:attr:`out`) are made only if asked: most never are. A named tuple, built by one C call
    (:data:`reserved`): a recorded GQA default re-timing makes ~35k of them."""

    seq: int
    corr: int
    start: float
    n: int  # (not ``count``: a tuple's method)
    s: float
    last: float  # its last departure: ``(start + s) + (n - 1) * s``, as ``out.last()`` works it out

    @property
    def out(self) -> Train:
        s = self.s
        return Train(self.n, [(0, self.start + s, 0.0, 1, s)])


#: ``reserved((seq, corr, start, n, s, last))``: a :class:`Reserved` from all its fields, with no Python call
reserved: Callable[[tuple[int, int, float, int, float, float]], Reserved] = functools.partial(tuple.__new__, Reserved)


def train_shares(served: Iterable[Served], s: float, x: float, y: float, own_seq: int) -> tuple[tuple[int, float], ...]:
    """Time in ``[x, y]`` a FIFO of service ``s``, busy throughout, spent on other transfers'
    flits (``served``, oldest first): (corr id, ns) per transfer, in the order served."""
    found = []
    for p in served:
        out = p.out
        if p.seq == own_seq or out.last() <= x + EPS or out.first() - s >= y - EPS:
            continue
        k0 = out.count_before(x, inclusive=True)  # departures by x: served before the window
        k1 = out.count_before(y, inclusive=True)
        if k1 <= k0:
            continue
        first = out.at(k0)
        ns = (k1 - k0) * s - max(0.0, x + s - first)  # the first may have started before x
        found.append((first, p.corr, ns))
    found.sort(key=lambda f: f[0])
    return merge_shares((corr, ns) for _, corr, ns in found)


def merge_shares(items: Iterable[tuple[int, float]]) -> tuple[tuple[int, float], ...]:
    """Sum positive shares per corr id, keeping the order each first appears."""
    out: dict[int, float] = {}
    for corr, ns in items:
        if ns > 0.0:
            out[corr] = out.get(corr, 0.0) + ns
    return tuple(out.items())
