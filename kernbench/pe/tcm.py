"""TCM as a port: every access to the PE's TCM takes its turn on it.

The paper's table gives TCM 512 GB/s read and write. A port is an in-order
server like an engine lane (:class:`~kernbench.pe.lane.Lane`): an access of
``B`` bytes holds it ``B / tcm_bw_gbps`` ns, from the later of when it may
start and when the port's previous holder lets go. Who takes which port
(``docs/timing.md``, "TCM"):

* the **write port**: STORE, and every DMA *into* TCM (a ``tl.load``, a
  composite's tile read);
* the **read port**: FETCH, and every DMA *out of* TCM (a ``tl.store``, a
  composite's result write).

With ``pe.attrs.tcm_port_shared`` one port serves both directions (the
table's "512 GB/s R/W" read as one port; the default reads it as 512 each
way, "assumed").

A DMA streams flits, and the port takes them as they come (cut-through, as a
node's overhead is pipelined): a read's TCM write is one span of ``B / bw``
that cannot start before the DMA does nor before the port is free, and ends
no earlier than its last flit lands — on an idle port faster than the link
it ends exactly then, and costs nothing. A write's flits can leave the DMA
no faster than the port reads them: its network transfer starts
``max(0, B / bw − B / port_link_bw)`` after the port starts reading, so that
its last flit leaves when the port has read it.
"""

from __future__ import annotations

import bisect

from kernbench.pe.lane import ENGINE_BUSY, Lane


class TcmPort:
    """One TCM port: the spans it is held for, in time order (future ones included: engine
    lanes reserve ahead), and which span holds each (its seq, recorded runs).

    An access takes the first gap long enough, from when it may start: the port serves
    accesses in the order of time, not of asking (a STORE reserved for later does not hold
    up a DMA landing now).
    """

    __slots__ = ("_ends", "_seqs", "_starts", "busy_ns", "bw_gbps", "longest_ns")

    def __init__(self, bw_gbps: float) -> None:
        self.bw_gbps = bw_gbps
        self.busy_ns = 0.0
        self.longest_ns = 0.0  # the longest access yet: spans ending that long before now can no longer matter
        self._starts: list[float] = []
        self._ends: list[float] = []
        self._seqs: list[int] = []

    def fit(self, earliest: float, service: float, now: float) -> tuple[float, int]:
        """The first start ``>= earliest`` at which the port is free for ``service`` ns, and
        the span that ends there (``-1`` when it starts at ``earliest``)."""
        if service > self.longest_ns:
            self.longest_ns = service
        ends = self._ends
        if len(ends) > 32:  # (every access starts at or after now - the longest one)
            self._forget(now - self.longest_ns)
        if not ends or earliest >= ends[-1]:  # after everything held: the common case
            return earliest, -1
        starts = self._starts
        t, seq = earliest, -1
        i = bisect.bisect_right(ends, t)  # the first span ending after t
        while i < len(starts) and starts[i] < t + service:
            if ends[i] > t:
                t, seq = ends[i], self._seqs[i]
            i += 1
        return t, seq

    def hold(self, start: float, end: float, seq: int) -> None:
        """The port is held ``[start, end)`` (a gap :meth:`fit` found)."""
        if end <= start:
            return
        starts = self._starts
        self.busy_ns += end - start
        if not starts or start >= starts[-1]:
            starts.append(start)
            self._ends.append(end)
            self._seqs.append(seq)
            return
        i = bisect.bisect_left(starts, start)
        starts.insert(i, start)
        self._ends.insert(i, end)
        self._seqs.insert(i, seq)

    def _forget(self, before: float) -> None:
        # the spans ending before ``before``: a prefix (held spans do not overlap, so their ends are in
        # order too, as fit's bisect reads them); found by bisection, not a walk (~30 spans a fit past 32)
        k = bisect.bisect_left(self._ends, before)
        if k:
            del self._starts[:k], self._ends[:k], self._seqs[:k]

    def with_lane(self, lane: Lane, earliest: float, nbytes: int, label: str, corr: int, pred: int, now: float) -> float:
        """FETCH or STORE: hold ``lane`` and this port together for ``nbytes``; when it ends (what
        every caller reads: no tuple with its start, ~14k a GQA re-timing)."""
        service = nbytes / self.bw_gbps
        free = lane.free_ns
        t = earliest if earliest > free else free
        ends = self._ends
        if ends and (t < ends[-1] or len(ends) > 32):  # else the port is free from t on (fit's common case, inlined)
            at, by = self.fit(t, service, now)
            if at > t:  # the port held it up
                earliest, pred = at, by
        if lane.scale is None:  # (Lane.reserve, in line: no scale; ~14k a recorded GQA re-timing)
            start = earliest if earliest > free else free
            end = start + service
            lane.free_ns = end
            lane.busy_ns += service
            lane.count += 1
            if lane.bus.active:
                seq = pred if earliest >= free else lane.last
                if service > 0:
                    seq = lane.bus.emit(start, ENGINE_BUSY, lane.component, end, corr, label, 0.0, "", seq)
                lane.last = seq
        else:
            start, end = lane.reserve(earliest, service, label, corr, 0.0, pred)
        starts = self._starts
        if end > start and (not starts or start >= starts[-1]):  # hold's common case, inlined
            starts.append(start)
            ends.append(end)
            self._seqs.append(lane.last)
            self.busy_ns += end - start
        else:
            self.hold(start, end, lane.last)
        return end

    def landing(self, start: float, landed: float, nbytes: int, now: float) -> tuple[float, float]:
        """A DMA into TCM that started at ``start`` and whose last flit landed at ``landed``:
        (when the port writes it from, when its last byte is in TCM). Then :meth:`hold` it."""
        service = nbytes / self.bw_gbps
        t = landed - service
        begin, _ = self.fit(t if t > start else start, service, now)
        return begin, begin + service

    def leaving(self, now: float, nbytes: int, link_gbps: float) -> tuple[float, float, float]:
        """A DMA out of TCM whose channel is free at ``now``: (when the port reads from, when it
        is done, when the transfer's first flit may leave the DMA). Then :meth:`hold` it."""
        service = nbytes / self.bw_gbps
        begin, _ = self.fit(now, service, now)
        lag = service - nbytes / link_gbps
        return begin, begin + service, begin + (lag if lag > 0 else 0.0)
