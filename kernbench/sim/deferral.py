"""The fast mode's idle path: a train alone on its route, in closed form, until someone looks.

Contract. A read's or a send's data train that finds every FIFO of its route
idle (:func:`~kernbench.sim.fifo.idle_route`) is *deferred*: its last flit's
arrival and departure at each FIFO come from
:func:`~kernbench.sim.serve.tandem` — or, for a read on idle channels, from
an :class:`IdleRead` worked out once per route and layout — and each FIFO
holds only those two numbers (:func:`~kernbench.sim.fifo.defer_route`). A
FIFO folds them once the flits have passed; whoever needs the flits
themselves has the transfer :func:`materialize` them: its passages, planned
exactly as they would have been when the train started. The cost of a
transfer on an idle route does not grow with its size.

The model is ``docs/timing.md`` ("Deferred on idle routes"); the words are
in ``docs/glossary.md``.
"""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING, NamedTuple, Protocol

from kernbench.sim.fifo import Fifo, Passage, defer_route, idle_route
from kernbench.sim.hbm import Bursts, ChannelArray
from kernbench.sim.serve import tandem, union

if TYPE_CHECKING:
    from kernbench.sim.fast import FastTransfer, Path

_BURSTS = itemgetter(1)  # a (channel, bursts) pair's bursts (no comprehension's frame: a call less a plan)


class Deferrer(Protocol):
    """The owner of a train deferred on FIFOs."""

    corr: int

    def materialize(self) -> None:
        """Plan the deferred train as passages on every FIFO of its route, as it
        would have been planned when it started (:meth:`Fifo.adopt`)."""


class IdleTimes(NamedTuple):
    """When an idle read's data passes each FIFO of its route, relative to the request's
    arrival (nothing queued anywhere): it depends only on how many bursts each
    channel serves and the route's pace, so routes and slices alike share it."""

    lasts: list[tuple[float, float]]  # per hop: the last flit's arrival, departure
    heads: list[float]  # per hop: the head's arrival
    finish: float  # the last flit's arrival at the far end

    @classmethod
    def of(cls, counts: tuple[int, ...], burst_ns: float, service: list[float], delay: list[float]) -> IdleTimes:
        data = union([(0.0, n) for n in counts], burst_ns)
        lasts = tandem(data, service, [float("-inf")] * len(service), delay)
        heads = [data.first()]
        for s, dl in zip(service[:-1], delay[:-1], strict=True):
            heads.append(heads[-1] + s + dl)
        return cls(lasts, heads, lasts[-1][1] + delay[-1])


class IdleRead:
    """A read's data on idle channels and an idle route: what planning it channel by
    channel and FIFO by FIFO would give when nothing is queued anywhere."""

    __slots__ = ("busy", "counts", "fifos", "finish", "heads", "lasts")

    def __init__(self, mem: ChannelArray, counts: list[tuple[int, int]], times: IdleTimes) -> None:
        self.counts = counts  # (channel, bursts)
        self.fifos = tuple([mem.fifos[c] for c, _n in counts])  # the channels' FIFOs
        self.busy = tuple([n * mem.fifos[c].s for c, n in counts])  # how long each is busy with its bursts
        self.lasts, self.heads, self.finish = times


class IdleReads:
    """One network's :class:`IdleRead` plans, kept per data path and kept layout (``Path.reads``:
    the layouts of contiguous regions live as long as the network, so their identity names
    them); a strided layout's are worked out per read, from the times kept per shape."""

    __slots__ = ("_times",)

    def __init__(self) -> None:
        self._times: dict[tuple[object, ...], IdleTimes] = {}  # (bursts per channel, burst time, route's pace) -> times

    def plan(self, path: Path, mem: ChannelArray, bursts: Bursts) -> IdleRead:
        plan = path.reads.get(id(bursts)) if bursts.kept else None
        if plan is None:
            counts = list(bursts.used)
            service, delay = path.service, path.delay
            shape = (tuple(sorted(map(_BURSTS, counts))), mem.burst_ns, tuple(service), tuple(delay))
            times = self._times.get(shape)
            if times is None:
                times = self._times[shape] = IdleTimes.of(shape[0], mem.burst_ns, service, delay)
            plan = IdleRead(mem, counts, times)
            if bursts.kept:
                path.reads[id(bursts)] = plan
        return plan


def defer_train(tr: FastTransfer, path: Path) -> tuple[list[float], float] | None:
    """``tr``'s data train, from now, deferred if its whole route is idle: when the work
    queued on each FIFO was done, and when its last flit reaches the far end (``None``:
    not idle, nothing done)."""
    now = tr.env.now
    queued = idle_route(path.fifos, now)
    if queued is None:
        return None
    times = tandem(tr.data_in, path.service, queued, path.delay)
    defer_route(path.fifos, tr, times)
    return queued, times[-1][1] + path.delay[-1]


def materialize(tr: FastTransfer, path: Path, queued: list[float]) -> None:
    """``tr``'s deferred data train as passages, planned FIFO by FIFO as when its request
    arrived (a send: when it started) — nothing has changed its route since, or it would
    have asked first; FIFOs it has fully passed keep their folded numbers."""
    if tr.idle is not None:  # the data train of an idle read: the channels' output from the request's arrival
        r, plan = tr.idle
        tr.data_in = union([(r, n) for _c, n in plan.counts], tr.memory_end()[0].burst_ns)
    f: Fifo
    for h, (f, v) in enumerate(zip(path.fifos, queued, strict=True)):
        p = Passage(tr.seq, tr.corr, tr.input_at(h), tr.passage_changed)
        f.adopt(tr, p, v)
        tr.data.append(p)
