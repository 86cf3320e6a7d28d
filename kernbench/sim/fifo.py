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

**Causal.** A FIFO is only told about the present: a passage's head
arriving now (:meth:`Fifo.arrive`), or a change to a passage's flits that
arrive after now (:meth:`Fifo.amend`). It keeps the plan of its current
busy period and re-plans from now on each call. Flits that arrived before
now keep their departures (later arrivals cannot overtake them); changed
departures go to the passage's ``on_change``, so the next FIFO on its route
hears of them in turn.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kernbench.sim.train import EPS, Train, fifo, first_difference, lindley

ChangeHook = Callable[["Passage", int], None]
BEFORE_ALL = -1  # a seq lower than any transfer's: "strictly before t"


class Passage:
    """One transfer's flits through one FIFO: ``inp`` arrival train, ``out`` departures.

    ``on_change(passage, k)`` is called when departures from flit ``k`` on
    changed after they were first planned (``out`` already holds the new ones).
    """

    __slots__ = ("seq", "corr", "inp", "out", "fifo", "on_change", "shared", "waited_behind")

    def __init__(self, seq: int, corr: int, inp: Train, on_change: ChangeHook | None = None) -> None:
        self.seq = seq
        self.corr = corr
        self.inp = inp
        self.out: Train | None = None
        self.fifo: Fifo | None = None
        self.on_change = on_change
        self.shared = False  # its flits arrived among another transfer's here
        self.waited_behind = -1  # corr of the transfer whose work its head queued behind

    @property
    def n(self) -> int:
        return self.inp.n


class Fifo:
    """One FIFO server; see the module docstring."""

    __slots__ = ("name", "s", "free", "members", "t_last", "v_end", "last_corr", "flits", "_arr", "_seq", "_dep")

    def __init__(self, name: str, service_ns: float) -> None:
        self.name = name
        self.s = service_ns
        self.free = 0.0  # virtual finish of the work from before the current plan
        self.members: list[tuple[Passage, int]] = []  # (passage, first flit the plan decides)
        self.t_last = float("-inf")  # the plan's last flit arrival
        self.v_end = 0.0  # virtual finish once all of the plan's flits are in
        self.last_corr = -1  # whose work finishes last in the plan
        self.flits = 0  # data flits served (busy time = flits · s)
        # a merged plan: arrival, seq and departure of every flit, in service order
        self._arr: np.ndarray | None = None
        self._seq: np.ndarray | None = None
        self._dep: np.ndarray | None = None

    # --- queries ------------------------------------------------------------

    def finish_before(self, t: float, seq: int = BEFORE_ALL) -> float:
        """When the work that arrived before ``t`` is done (never before ``t``).

        Flits arriving at ``t`` itself count when their transfer's ``seq`` is
        lower than ``seq``. A control flit (zero service) arriving at ``t``
        leaves then.
        """
        members = self.members
        if not members or t > self.t_last + EPS:
            return self.v_end if self.v_end > t else t
        if self._arr is None:
            p, k0 = members[0]
            k = p.inp.count_before(t, inclusive=p.seq < seq)
            v = self.free if k <= k0 else p.out.at(k - 1)
            return v if v > t else t
        arr = self._arr
        i = int(np.searchsorted(arr, t - EPS, side="left"))
        j = int(np.searchsorted(arr, t + EPS, side="right"))
        if j > i:
            i += int(np.count_nonzero(self._seq[i:j] < seq))
        v = self.free if i == 0 else float(self._dep[i - 1])
        return v if v > t else t

    def depth_flits(self, t: float, seq: int = BEFORE_ALL) -> float:
        """Flits of work waiting ahead of a flit that arrives at ``t``."""
        return (self.finish_before(t, seq) - t) / self.s if self.s > 0.0 else 0.0

    # --- changes --------------------------------------------------------------

    def arrive(self, p: Passage, now: float) -> None:
        """``p``'s head arrives now: plan it, re-planning the passages it interleaves with."""
        p.fifo = self
        self.flits += p.n
        d = self.finish_before(now)
        p.waited_behind = self.last_corr if d > now + EPS else -1
        pending = self._pending(now)
        if not pending:
            self._alone(p, 0, d, now)
            return
        self._merge(pending + [(p, 0)], d, now)

    def amend(self, p: Passage, inp: Train, now: float) -> None:
        """``p``'s flits arriving after now arrive as in ``inp`` instead."""
        p.inp = inp
        if not any(q is p for q, _ in self.members):
            return  # not planned here yet: its head has not arrived
        pending = self._pending(now)
        d = self.finish_before(now)
        if len(pending) == 1:
            q, k = pending[0]
            self._alone(q, k, d if k == 0 else max(d, q.out.at(k - 1)), now)
            return
        self._merge(pending, d, now)

    # --- planning ---------------------------------------------------------------

    def _pending(self, now: float) -> list[tuple[Passage, int]]:
        """The plan's passages with flits arriving at or after now: (passage, first such flit)."""
        out = []
        for p, _ in self.members:
            inp = p.inp
            if inp.last() < now - EPS:
                continue
            k = inp.count_before(now)
            if k < inp.n:
                out.append((p, k))
        return out

    def _alone(self, p: Passage, k: int, d_prev: float, now: float) -> None:
        """One passage: the closed form from flit ``k`` on, the work before it done at ``d_prev``."""
        out = fifo(p.inp, self.s, d_prev, k)
        if k > 0:
            out = p.out.splice(k, out)
        self.free = d_prev
        self.members = [(p, k)]
        self.t_last = p.inp.last()
        self._arr = self._seq = self._dep = None
        self.v_end = out.last()
        self.last_corr = p.corr
        self._publish(p, out, k)

    def _merge(self, members: list[tuple[Passage, int]], v0: float, now: float) -> None:
        """Several passages' flits from ``now`` on, merged in FIFO order, exactly."""
        members.sort(key=lambda m: m[0].seq)
        times = [p.inp.times(k) for p, k in members]
        arr = np.concatenate(times)
        seq = np.concatenate([np.full(len(t), p.seq, dtype=np.int64) for (p, _), t in zip(members, times)])
        pos = np.concatenate([np.arange(len(t), dtype=np.int64) for t in times])
        owner = np.concatenate([np.full(len(t), i, dtype=np.int64) for i, t in enumerate(times)])
        # FIFO order: time (within EPS), then seq, then flit index
        q = np.round(arr / EPS)  # ties within EPS sort together
        order = np.lexsort((pos, seq, q))
        arr_s = arr[order]
        dep_s = lindley(arr_s, self.s, v0)
        dep = np.empty_like(dep_s)
        dep[order] = dep_s
        self.free = v0
        self.members = members
        self.t_last = float(arr_s[-1])
        self._arr, self._seq, self._dep = arr_s, seq[order], dep_s
        self.v_end = float(dep_s[-1])
        self.last_corr = members[int(owner[order[-1]])][0].corr
        start = 0
        for (p, k), t in zip(members, times):
            mine = dep[start:start + len(t)]
            start += len(t)
            p.shared = True
            tail = Train.from_times(mine if k == 0 else np.concatenate([p.out.times()[:k], mine]))
            self._publish(p, tail, k)

    def _publish(self, p: Passage, out: Train, k: int) -> None:
        """``p`` leaves as ``out`` from flit ``k`` on; tell its route if that changed."""
        old = p.out
        p.out = out
        if old is None or p.on_change is None:
            return
        first = first_difference(old, out, k)
        if first < p.n:
            p.on_change(p, first)
