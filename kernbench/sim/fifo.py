"""The FIFO servers transfers share: every directed edge, every memory pseudo-channel.

Contract. A :class:`Fifo` serves flits in arrival order (same instant: lower ``seq`` first, then flit
index), one per ``s`` ns; one transfer's flits through it are a :class:`Passage`. Callers add passages
(:meth:`~Fifo.arrive`), change a passage's later arrivals (:meth:`~Fifo.amend`), serve bursts that arrive
together (:meth:`~Fifo.reserve`), ask when the work before an instant is done (:meth:`~Fifo.finish_before`,
:meth:`~Fifo.pass_control`), and defer or adopt a train planned in closed form (:func:`idle_route`,
:func:`defer_route`, :meth:`~Fifo.adopt`). Changed departures go to the passage's ``on_change``; control
flits due to cross are told to look again (:class:`Watcher`). Only this module writes a ``Fifo``'s or a
``Passage``'s fields. The model is ``docs/timing.md``, the words ``docs/glossary.md``, the arithmetic
:mod:`kernbench.sim.serve`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Protocol

import numpy as np
import simpy

from kernbench.sim.clock import REPLAN, Action, call_at
from kernbench.sim.serve import fifo, interleave
from kernbench.sim.train import EPS, Train, first_difference
from kernbench.sim.transit import Reserved, reserved, train_shares

if TYPE_CHECKING:
    from kernbench.sim.deferral import Deferrer, IdleRead

ChangeHook = Callable[["Passage", int], None]
BEFORE_ALL = -1  # a seq lower than any transfer's: "strictly before t"
NOT_PLANNED = Train(0, [])  # a passage's departures until its FIFO first plans them


class Passage:
    """One transfer's flits through one FIFO: ``inp`` arrival train, ``out`` departures.

    ``on_change(passage, k)`` is called when departures from flit ``k`` on
    changed after they were first planned (``out`` already holds the new ones).
    ``fifo`` and ``out`` are set by the FIFO that plans it (``out`` is
    :data:`NOT_PLANNED` until then).
    """

    fifo: Fifo

    __slots__ = ("corr", "fifo", "inp", "on_change", "out", "seq")

    def __init__(self, seq: int, corr: int, inp: Train, on_change: ChangeHook | None = None) -> None:
        self.seq = seq
        self.corr = corr
        self.inp = inp
        self.out = NOT_PLANNED
        self.on_change = on_change

    @property
    def n(self) -> int:
        return self.inp.n

    def detach(self) -> None:
        """Its transfer is over: nobody is told of later changes (FIFOs may still hold it)."""
        self.on_change = None


class Watcher(Protocol):
    """A control flit due to cross FIFOs (see :meth:`Fifo.pass_control`)."""

    def recheck(self, h: int, t: float, d: float, token: int) -> None:
        """The FIFO of its hop ``h``, where it arrives at ``t`` and was planned to leave
        at ``d``, re-planned (``token``: which plan of it that was)."""


class Fifo:
    """One FIFO server; see the module docstring.

    Its state is the work of passages that have fully arrived (``free``:
    when it is done) and the passages still arriving (``members``), each
    with its departures. The work that arrived before a time ``t`` is done
    when the last of it leaves: at ``free`` or at a member's last flit
    before ``t``, whichever is later (FIFO order makes the latest arrival
    the latest departure). A *deferred* train is only two numbers, its last
    flit's arrival and departure, until it is folded or materializes.
    """

    __slots__ = (
        "_replan_at",
        "_watch_limit",
        "_watch_until",
        "_watchers",
        "deferred",
        "deferred_t_last",
        "deferred_v_end",
        "free",
        "history",
        "members",
        "name",
        "s",
        "t_last",
        "v_end",
    )

    def __init__(self, name: str, service_ns: float, history: bool = False) -> None:
        self.name = name
        self.s = service_ns
        self.free = 0.0  # when the work of passages no longer arriving is done
        self.members: list[Passage] = []  # passages with flits still to arrive, in seq order
        self.t_last = float("-inf")  # the members' last flit arrival
        self.v_end = 0.0  # when all work, members' included, is done (the virtual finish)
        self._watchers: list[tuple[float, Watcher, int, float, int]] = []  # (t, who, hop, d, token): see pass_control
        self._watch_until = float("-inf")  # the latest time a watcher is due
        self._watch_limit = 8  # how many watchers it holds before it drops those past (see pass_control)
        self._replan_at: Action | None = None  # the re-plan due (see amend), until it runs
        # what it served, for :meth:`shares` (recorded runs): passages, oldest first
        self.history: deque[Passage | Reserved] | None = deque() if history else None
        # a train planned here in closed form only: its owner, its last flit's arrival and departure
        self.deferred: Deferrer | None = None
        self.deferred_t_last = 0.0
        self.deferred_v_end = 0.0

    def finish_before(self, t: float, seq: int = BEFORE_ALL) -> float:
        """When the work that arrived before ``t`` is done (never before ``t``).

        Flits arriving at ``t`` itself count when their transfer's ``seq`` is
        lower than ``seq``. A control flit (zero service) arriving at ``t``
        leaves then.
        """
        if self.deferred is not None:
            if t > self.deferred_t_last + EPS:  # after the deferred train's last flit: the numbers answer
                v = self.deferred_v_end
                return v if v > t else t
            self.deferred.materialize()
        if t > self.t_last + EPS:
            return self.v_end if self.v_end > t else t
        v = self.free
        for p in self.members:
            k = p.inp.count_before(t, inclusive=p.seq < seq)
            if k:
                d = p.out.at(k - 1)
                if d > v:
                    v = d
        return v if v > t else t

    def depth_flits(self, t: float, seq: int = BEFORE_ALL) -> float:
        """Flits of work waiting ahead of a flit that arrives at ``t``."""
        return (self.finish_before(t, seq) - t) / self.s if self.s > 0.0 else 0.0

    def busy_after(self, now: float) -> bool:
        """Whether trains planned here still have flits arriving after now."""
        if self.deferred is not None:
            self._settle(now)
        return self.t_last >= now - EPS and bool(self.members)

    def pass_control(self, t: float, seq: int, who: Watcher, h: int, token: int, now: float) -> float:
        """A control flit of transfer ``seq`` (hop ``h`` of its route) arriving at ``t``:
        when it leaves (:meth:`finish_before`). From now on ``who.recheck(h, t, d, token)``
        is called whenever the FIFO re-plans at or before ``t``, since the answer may
        have changed."""
        if self.deferred is None and t > self.t_last + EPS:  # (finish_before's common case)
            v = self.v_end
            d = v if v > t else t
        else:
            d = self.finish_before(t, seq)
        ws = self._watchers
        if len(ws) >= self._watch_limit:  # drop those due before now (no re-plan reaches back), at doubling sizes
            ws = self._watchers = [w for w in ws if w[0] >= now - EPS]
            self._watch_limit = max(8, 2 * len(ws))
        ws.append((t, who, h, d, token))
        if t > self._watch_until:
            self._watch_until = t
        return d

    def _notify(self, t_from: float) -> None:
        """Re-check the control flits due at ``t_from`` or later."""
        if self._watch_until < t_from - EPS:  # none is (under contention the list is mostly flits long past)
            return
        for t, who, h, d, token in list(self._watchers):
            if t >= t_from - EPS:
                who.recheck(h, t, d, token)

    def shares(self, x: float, y: float, own_seq: int, horizon: float) -> tuple[tuple[int, float], ...]:
        """Time in ``[x, y]`` (the server busy throughout) spent on other transfers' flits: (corr id, ns)
        per transfer, in the order served. ``horizon``: no transfer still running started before it."""
        hist = self.history
        if hist is None:
            return ()
        while hist:  # (served before the horizon: nothing running can have waited behind them)
            h0 = hist[0]
            if type(h0) is Reserved:
                if h0.last >= horizon - EPS:
                    break
            elif h0.out is NOT_PLANNED or h0.out.last() >= horizon - EPS:
                break
            hist.popleft()
        for p in hist:
            if p.seq != own_seq:
                break
        else:  # (what is left is its own flits: the common case, a wait behind its own earlier flits)
            return ()
        return train_shares([p for p in hist if type(p) is Reserved or p.out is not NOT_PLANNED], self.s, x, y, own_seq)

    def reserve(self, now: float, count: int, seq: int, corr: int = -1) -> float | None:
        """``count`` flits arriving together now, if nothing else is still to arrive:
        when the first starts (``None``: something is; plan a :class:`Passage`)."""
        if self.deferred is not None:
            self._settle(now)
        if self.t_last >= now - EPS:
            self._retire(now)
            if self.members:
                return None
            start = self.finish_before(now, seq)
        else:
            start = self.v_end if self.v_end > now else now
            if self.members:  # (all arrived: none is still served)
                self.members = []
        s, hist = self.s, self.history
        self.free = self.v_end = start + count * s
        if hist is not None:  # (recorded runs: what it served, for shares; its last departure as its train's)
            hist.append(reserved((seq, corr, start, count, s, (start + s) + (count - 1) * s)))
        if self._watchers:
            self._notify(now)
        return start

    def arrive(self, p: Passage, now: float) -> None:
        """Add ``p`` (its head arrives now or later) and plan it, re-planning from its head."""
        if self.deferred is not None:
            self._settle(now)
        if self.history is not None:
            self.history.append(p)
        if self.t_last < now - EPS:  # nothing still arriving: the closed form, alone, behind the work queued (as adopt's)
            inp, v = p.inp, self.v_end
            head = inp.first()
            p.fifo = self
            p.out = out = fifo(inp, self.s, v if v > head else head)
            self.free, self.members, self.t_last, self.v_end = v, [p], inp.last(), out.last()
            if self._watchers:
                self._notify(head)
            return
        p.fifo = self
        self._retire(now)
        head = p.inp.first()
        self._replan(head, self.finish_before(head), p)

    def adopt(self, owner: Deferrer, p: Passage, v: float) -> None:
        """``owner``'s deferred train materializing: ``p``, its passage here, planned
        alone behind the work done at ``v`` (what was queued when it was deferred). It
        becomes the one member if the train is still deferred here; a FIFO it has fully
        passed keeps its folded numbers."""
        p.fifo = self  # (its departures with the FIFO to itself behind v)
        head = p.inp.first()
        p.out = fifo(p.inp, self.s, v if v > head else head)
        if self.deferred is owner:  # (free: the work before it; queries before its head see only that)
            self.deferred = None
            self.free, self.members, self.t_last, self.v_end = v, [p], p.inp.last(), p.out.last()

    def amend(self, p: Passage, inp: Train, t: float, env: simpy.Environment) -> None:
        """``p``'s flits arrive as in ``inp`` from ``t`` on (no sooner than now, nor
        than the flits it replaces): re-plan from then. Changes to several
        passages before one re-plan are planned together."""
        p.inp = inp  # nothing before t changes, so the plan still answers for before t
        act = self._replan_at
        if act is not None and act.pending:
            if act.args[0] <= t:
                return
            act.cancel()
        self._replan_at = call_at(env, t if t > env.now else env.now, REPLAN, self._replan_now, t, env)

    def _replan_now(self, _t: float, env: simpy.Environment) -> None:
        self._replan_at = None
        now = env.now
        if self.deferred is not None:
            self._settle(now)
        self._retire(now)
        if self.members:
            self._replan(now, self.finish_before(now), None)

    def _settle(self, now: float) -> None:
        """Before reading the state at ``now``: fold a deferred train whose flits have
        all arrived, or have its owner plan it as passages."""
        owner = self.deferred
        assert owner is not None
        if now > self.deferred_t_last + EPS:
            self._fold()
        else:
            owner.materialize()
            assert self.deferred is None, "a materialized train is no longer deferred"

    def _fold(self) -> None:
        """The deferred train has fully arrived: what remains of it is when its work is
        done (as :meth:`_retire` leaves a passage that has fully arrived)."""
        self.deferred = None
        self.members = []
        self.t_last = self.deferred_t_last
        self.free = self.v_end = self.deferred_v_end

    def _retire(self, now: float) -> None:
        """Fold the work of passages that have fully arrived into ``free``."""
        if self.t_last >= now - EPS:
            ms = self.members
            if len(ms) > 1 or (ms and ms[0].inp.last() < now - EPS):
                keep = []
                for q in ms:
                    if q.inp.last() < now - EPS:
                        if q.out.last() > self.free:
                            self.free = q.out.last()
                    else:
                        keep.append(q)
                self.members = keep
            return
        if self.members:
            self.free = max(self.free, self.v_end)
            self.members = []

    def _replan(self, t: float, v0: float, new: Passage | None) -> None:
        """Re-plan every flit arriving at ``t`` or later; the work before ``t`` is done at ``v0``."""
        cluster: list[tuple[Passage, int]] = []
        for q in self.members:
            if q.inp.last() >= t - EPS:
                k = q.inp.count_before(t)
                if k < q.n:
                    cluster.append((q, k))
        if new is not None:
            cluster.append((new, 0))
            self.members.append(new)
            self.members.sort(key=lambda q: q.seq)
        if len(cluster) == 1:
            q, k = cluster[0]
            out = fifo(q.inp, self.s, v0, k)
            self._publish(q, q.out.splice(k, out) if k else out, k)
        elif cluster:
            self._merge(cluster, v0)
        self.t_last = max(q.inp.last() for q in self.members) if self.members else float("-inf")
        self.v_end = max([self.free] + [q.out.last() for q in self.members])
        if self._watchers:
            self._notify(t)

    def _merge(self, members: list[tuple[Passage, int]], v0: float) -> None:
        """Several passages' flits, merged in FIFO order and served exactly."""
        members.sort(key=lambda m: m[0].seq)
        for (p, k), mine in zip(members, interleave([p.inp.times(k) for p, k in members], self.s, v0), strict=True):
            old = p.out
            if old is NOT_PLANNED:
                p.out = Train(p.n, arr=mine)
                continue
            changed = (np.abs(old.times(k) - mine) > 1e-9).nonzero()[0]
            if not len(changed):
                continue
            p.out = Train(p.n, arr=np.concatenate([old.times(0, k), mine]) if k else mine)
            if p.on_change is not None:
                p.on_change(p, k + int(changed[0]))

    def _publish(self, p: Passage, out: Train, k: int) -> None:
        """``p`` leaves as ``out`` from flit ``k`` on; tell its route if that changed."""
        old = p.out
        p.out = out
        if old is NOT_PLANNED or p.on_change is None:
            return
        first = first_difference(old, out, k)
        if first < p.n:
            p.on_change(p, first)


def defer_route(fifos: Sequence[Fifo], owner: Deferrer, lasts: Sequence[tuple[float, float]], base: float = 0.0) -> None:
    """``owner``'s train passes the :func:`idle_route` ``fifos`` deferred: at FIFO ``h``
    its last flit arrives at ``base + lasts[h][0]`` and leaves at ``base + lasts[h][1]``."""
    for f, (t_last, v_end) in zip(fifos, lasts, strict=True):
        f.deferred = owner
        f.deferred_t_last = base + t_last
        f.deferred_v_end = base + v_end


def idle_route(fifos: Sequence[Fifo], now: float, read: IdleRead | None = None, owner: Deferrer | None = None) -> list[float] | None:
    """When the work queued on each FIFO of a route is done, if a train arriving from now on would have every one of them to itself
    as far as anything planned so far goes — nothing still arriving, no re-plan due, no control flit due to cross from now on — else
    ``None`` (a train deferred here that has fully arrived counts as its work: :func:`defer_route` takes its place, a fold would keep
    nothing more). ``read``: the plan of ``owner``, a read whose request arrives now: if its channels are idle too and no queued work
    outlasts its head, it is deferred (:func:`defer_route`, inlined) and its bursts start."""
    arrived = now - EPS
    heads = read.heads if read is not None else repeat(float("inf"))  # (a send's: no queued work outlasts them)
    if read is not None:
        for f in read.fifos:  # (idle channels: every flit arrived before now, nothing queued, nothing recorded)
            if f.t_last >= arrived or f.v_end > now or f.history is not None:
                return None
    queued = []
    for f, head in zip(fifos, heads, strict=False):  # (a send's heads: endless)
        if f.deferred is not None:
            if now <= f.deferred_t_last + EPS:
                return None
            v = f.deferred_v_end
        else:
            if f.t_last >= arrived:
                return None
            v = f.v_end
        if f._replan_at is not None or f._watch_until >= arrived or v > now + head:
            return None
        queued.append(v)
    if read is not None and owner is not None:  # its data train deferred from now; its bursts start (as Fifo.reserve's)
        for f, (t_last, v_end) in zip(fifos, read.lasts, strict=True):
            f.deferred, f.deferred_t_last, f.deferred_v_end = owner, now + t_last, now + v_end
        for f, busy in zip(read.fifos, read.busy, strict=True):
            if f.members:  # (an idle channel's members have all arrived: none is still served)
                f.members = []
            f.free = f.v_end = now + busy
    return queued


def close(fifos: Iterable[Fifo | None]) -> None:
    """The run is over: each FIFO (``None``: one never made) lets go of what refers back to it
    (see ``Network.close``). A function over them all, not a method: ~3.6k FIFOs a GQA network."""
    for f in fifos:
        if f is not None:
            f.members, f._watchers, f._replan_at, f.deferred, f.history = [], [], None, None, None
