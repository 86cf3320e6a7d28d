"""FIFO servers that transfers share: edges serializing flits, memory channels.

Every directed edge and every HBM/SRAM pseudo-channel is a :class:`Fifo`: a
server of per-flit service ``s`` (``flit_bytes / bw`` for an edge, the burst
time for a channel) serving flits in arrival order, flits arriving at the
same instant in order of their transfer's ``seq``, then flit index. One
transfer's flits through one FIFO are a :class:`Passage`: its arrival train
in, its departure train out.

**Alone: closed form.** A passage among whose flits no other transfer's
arrive leaves as :func:`~kernbench.sim.train.fifo` of its train, from the
server's *virtual finish* at its head (when the work that arrived before it
is done): the flit-by-flit answer, in O(segments) however long the train.

**Interleaved: merged flit by flit.** While several passages' flits arrive
at once, their arrival times are merged in FIFO order and run through
Lindley's recursion ``D_i = max(D_{i−1}, A_i) + s`` as numpy arrays
(:meth:`Fifo._merge`) — exactly what the oracle computes, at C speed, for
the flits that interleave. Each passage's departures go back to segments
when they are regular (they usually are: two streams sharing a link
alternate) or stay an array.

**Planned ahead, re-planned from now.** A passage may be added before its
head arrives (:meth:`Fifo.arrive` at ``now`` for a train that starts later:
a transfer is planned along its whole route when it starts), and a
passage's flits that arrive after now may change (:meth:`Fifo.amend`).
Each call re-plans the FIFO's busy period from now on, merging every
passage with flits still to come, future heads included; flits that
arrived before now keep their departures (nothing can overtake them).
Changed departures go to the passage's ``on_change``, so the next FIFO on
its route hears of them in turn, and *watchers* (control flits that will
cross the FIFO later, see :meth:`Fifo.pass_control`) are told to look again.

**Deferred: numbers until someone looks.** A train that finds its whole
route idle need not be a passage at all: :meth:`Fifo.defer` records only
when its last flit arrives and leaves (:func:`~kernbench.sim.train.tandem`).
As long as nothing else comes while its flits are still arriving, those two
numbers are all any later question needs (:meth:`Fifo.finish_before` past
its last flit, a later train's wait), and once they have arrived the train
is folded into the FIFO's state. Anything that needs the flits themselves —
another train arriving among them, a control flit due before the last —
first asks the owner to :meth:`~Deferrer.materialize`: to plan its passages
exactly as it would have when it started, which nothing since can have
changed (whatever would have, asked first).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import simpy

from kernbench.sim.clock import Action, call_at, priority
from kernbench.sim.train import EPS, Train, fifo, first_difference, lindley
from kernbench.sim.transit import merge_shares

ChangeHook = Callable[["Passage", int], None]
BEFORE_ALL = -1  # a seq lower than any transfer's: "strictly before t"
NOT_PLANNED = Train(0, [])  # a passage's departures until its FIFO first plans them
_REPLAN_PRIORITY = priority(0)  # a FIFO's re-plan: before any transfer's step at the same instant


class Passage:
    """One transfer's flits through one FIFO: ``inp`` arrival train, ``out`` departures.

    ``on_change(passage, k)`` is called when departures from flit ``k`` on
    changed after they were first planned (``out`` already holds the new ones).
    ``fifo`` and ``out`` are set by :meth:`Fifo.arrive` (``out`` is
    :data:`NOT_PLANNED` until then).
    """

    fifo: Fifo

    __slots__ = ("corr", "fifo", "inp", "on_change", "out", "seq", "shared", "waited_behind")

    def __init__(self, seq: int, corr: int, inp: Train, on_change: ChangeHook | None = None) -> None:
        self.seq = seq
        self.corr = corr
        self.inp = inp
        self.out = NOT_PLANNED
        self.on_change = on_change
        self.shared = False  # its flits arrived among another transfer's here
        self.waited_behind = -1  # corr of the transfer whose work its head queued behind

    @property
    def n(self) -> int:
        return self.inp.n


class Deferrer(Protocol):
    """The owner of a train deferred on FIFOs (see the module docstring)."""

    corr: int

    def materialize(self) -> None:
        """Plan the deferred train as passages on every FIFO of its route, as it
        would have been planned when it started."""


class Watcher(Protocol):
    """A control flit due to cross FIFOs (see :meth:`Fifo.pass_control`)."""

    def recheck(self, h: int, t: float, d: float, token: int) -> None:
        """The FIFO of its hop ``h``, where it arrives at ``t`` and was planned to leave
        at ``d``, re-planned (``token``: which plan of it that was)."""


class Reserved:
    """Flits served through :meth:`Fifo.reserve` (no passage): who, and their departures."""

    __slots__ = ("corr", "out", "seq")

    def __init__(self, seq: int, corr: int, out: Train) -> None:
        self.seq, self.corr, self.out = seq, corr, out


class Fifo:
    """One FIFO server; see the module docstring.

    Its state is the work of passages that have fully arrived (``free``:
    when it is done) and the passages still arriving (``members``), each
    with its departures. The work that arrived before a time ``t`` is done
    when the last of it leaves: at ``free`` or at a member's last flit
    before ``t``, whichever is later (FIFO order makes the latest arrival
    the latest departure).
    """

    __slots__ = (
        "_replan_at",
        "_watch_until",
        "_watchers",
        "deferred",
        "deferred_t_last",
        "deferred_v_end",
        "flits",
        "free",
        "history",
        "last_corr",
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
        self.v_end = 0.0  # when all work, members' included, is done
        self.last_corr = -1  # whose work that is
        self.flits = 0  # data flits served (busy time = flits · s)
        self._watchers: list[tuple[float, Watcher, int, float, int]] = []  # (t, who, hop, d, token): see pass_control
        self._watch_until = float("-inf")  # the latest time a watcher is due
        self._replan_at: Action | None = None  # the re-plan due (see amend), until it runs
        # what it served, for :meth:`shares` (recorded runs): passages and reservations, oldest first
        self.history: deque[Passage | Reserved] | None = deque() if history else None
        # a train planned here in closed form only (see defer): its owner, its last flit's arrival and departure
        self.deferred: Deferrer | None = None
        self.deferred_t_last = 0.0
        self.deferred_v_end = 0.0

    # --- queries ------------------------------------------------------------

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
        if len(ws) >= 8 and ws[0][0] < now - EPS:
            ws = self._watchers = [w for w in ws if w[0] >= now - EPS]
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
        while hist and hist[0].out is not NOT_PLANNED and hist[0].out.last() < horizon - EPS:
            hist.popleft()
        s = self.s
        found = []
        for p in hist:
            out = p.out
            if p.seq == own_seq or out is NOT_PLANNED or out.last() <= x + EPS or out.first() - s >= y - EPS:
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
            self.members = []
        self.free = self.v_end = start + count * self.s
        self.flits += count
        if self.history is not None:
            self.history.append(Reserved(seq, corr, Train(count, [(0, start + self.s, 0.0, 1, self.s)])))
        if self._watchers:
            self._notify(now)
        return start

    # --- changes --------------------------------------------------------------

    def arrive(self, p: Passage, now: float) -> None:
        """Add ``p`` (its head arrives now or later) and plan it, re-planning from its head."""
        if self.deferred is not None:
            self._settle(now)
        p.fifo = self
        self.flits += p.n
        if self.history is not None:
            self.history.append(p)
        inp = p.inp
        if self.t_last < now - EPS:  # nothing still arriving: the closed form, alone
            head = inp.first()
            v = self.v_end
            p.out = fifo(inp, self.s, v if v > head else head)
            self.place_alone(p, v)
            if self._watchers:
                self._notify(head)
            return
        self._retire(now)
        head = inp.first()
        d = self.finish_before(head)
        p.waited_behind = self.last_corr if d > head + EPS else -1
        self._replan(head, d, p)

    def place_alone(self, p: Passage, v: float) -> None:
        """``p``, planned alone behind the work done at ``v``, becomes the one member."""
        head = p.inp.first()
        self.free = v  # the work before it (queries before its head see only that)
        p.waited_behind = self.last_corr if v > head + EPS else -1
        self.members = [p]
        self.t_last = p.inp.last()
        self.v_end = p.out.last()
        self.last_corr = p.corr

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
        self._replan_at = call_at(env, t if t > env.now else env.now, _REPLAN_PRIORITY, self._replan_now, t, env)

    def _replan_now(self, _t: float, env: simpy.Environment) -> None:
        self._replan_at = None
        now = env.now
        if self.deferred is not None:
            self._settle(now)
        self._retire(now)
        if self.members:
            self._replan(now, self.finish_before(now), None)

    # --- deferred trains ----------------------------------------------------------

    def idle_at(self, now: float) -> bool:
        """Whether a train arriving from now on would have this FIFO to itself
        as far as anything planned so far goes: nothing still arriving, no
        re-plan due, no control flit due to cross it from now on."""
        if self.deferred is not None:
            if now <= self.deferred_t_last + EPS:
                return False
            self._fold()
        if self.t_last >= now - EPS:
            return False
        return self._replan_at is None and self._watch_until < now - EPS

    def defer(self, owner: Deferrer, n: int, t_last: float, v_end: float) -> None:
        """``owner``'s train of ``n`` flits passes here (the FIFO was :meth:`idle_at` now):
        its last flit arrives at ``t_last`` and leaves at ``v_end``."""
        self.deferred = owner
        self.deferred_t_last = t_last
        self.deferred_v_end = v_end
        self.flits += n

    def take_deferred(self, owner: Deferrer) -> bool:
        """Whether ``owner``'s train is still deferred here, no longer (it is materializing)."""
        if self.deferred is owner:
            self.deferred = None
            return True
        return False

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
        owner = self.deferred
        assert owner is not None
        self.deferred = None
        self.members = []
        self.t_last = self.deferred_t_last
        self.free = self.v_end = self.deferred_v_end
        self.last_corr = owner.corr

    # --- planning ---------------------------------------------------------------

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
        self.v_end = self.free
        for q in self.members:
            e = q.out.last()
            if e >= self.v_end:
                self.v_end = e
                self.last_corr = q.corr
        if self._watchers:
            self._notify(t)

    def _merge(self, members: list[tuple[Passage, int]], v0: float) -> None:
        """Several passages' flits, merged in FIFO order and served exactly."""
        members.sort(key=lambda m: m[0].seq)
        times = [p.inp.times(k) for p, k in members]
        lens = [len(t) for t in times]
        arr = np.concatenate(times)
        # FIFO order: time (ties within EPS together), then seq, then flit index — the
        # members are in seq order and each one's flits in index order, so a stable
        # sort on time alone gives it
        order = np.round(arr * (1.0 / EPS)).argsort(kind="stable")
        dep = np.empty(len(arr))
        dep[order] = lindley(arr[order], self.s, v0)
        start = 0
        for (p, k), n in zip(members, lens, strict=True):
            mine = dep[start : start + n]
            start += n
            p.shared = True
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


# --- along a route ---------------------------------------------------------------------


def pass_control_route(
    fifos: Sequence[Fifo],
    delay: Sequence[float],
    h: int,
    t: float,
    seq: int,
    who: Watcher,
    token: int,
    now: float,
    times: list[tuple[float, float]] | None,
) -> float:
    """A control flit from hop ``h`` of a route (its FIFOs, and the delay after
    each to the next), arriving there at ``t``: :meth:`Fifo.pass_control` hop by
    hop; when it reaches the far end. ``times`` collects each hop's (arrival,
    departure) when given."""
    for i in range(h, len(fifos)):
        d = fifos[i].pass_control(t, seq, who, i, token, now)
        if times is not None:
            times.append((t, d))
        t = d + delay[i]
    return t


def defer_route(
    fifos: Sequence[Fifo], heads: Sequence[float], lasts: Sequence[tuple[float, float]], owner: Deferrer, n: int, now: float
) -> list[float] | None:
    """Defer ``owner``'s train of ``n`` flits on a route if every FIFO is :meth:`~Fifo.idle_at`
    now and no work queued there outlasts the head (at ``now + heads[h]``); the
    last flit arrives at and leaves FIFO ``h`` at ``now + lasts[h]``. When the
    work queued on each was done (``None``: not idle, nothing done)."""
    queued = []
    for f, head in zip(fifos, heads, strict=True):  # (idle_at, inline: this runs for every idle read)
        if f.deferred is not None:
            if now <= f.deferred_t_last + EPS:
                return None
            # a train deferred here before has passed: all a fold would keep of it is when
            # its work is done, and the new train's fold or materialize overwrites the rest
            v = f.deferred_v_end
        else:
            if f.t_last >= now - EPS:
                return None
            v = f.v_end
        if f._replan_at is not None or f._watch_until >= now - EPS or v > now + head:
            return None
        queued.append(v)
    for f, (t_last, v_end) in zip(fifos, lasts, strict=True):  # (Fifo.defer, inline like the checks above)
        f.deferred = owner
        f.deferred_t_last = now + t_last
        f.deferred_v_end = now + v_end
        f.flits += n
    return queued


def channels_idle(channels: Sequence[tuple[Fifo, int, float]], now: float) -> bool:
    """Whether memory channels ``(FIFO, bursts, their busy time)`` are all idle now:
    nothing arriving or queued."""
    for f, _n, _busy in channels:
        if f.t_last >= now - EPS or f.v_end > now or f.history is not None:
            return False
    return True


def start_channels(channels: Sequence[tuple[Fifo, int, float]], now: float) -> None:
    """The bursts on :func:`channels_idle` channels start now, as :meth:`Fifo.reserve` would start them."""
    for f, n, busy in channels:
        f.members = []
        f.free = f.v_end = now + busy
        f.flits += n
