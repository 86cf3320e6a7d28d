"""A FIFO server's departures, computed: alone in closed form, interleaved as arrays.

A FIFO of per-flit service ``s`` (an edge serializing flits, a channel
draining bursts) serves flits in arrival order; with the work ahead of flit
``k`` done at ``D(k−1)``, it leaves at ``D(k) = max(D(k−1), A(k)) + s``
(Lindley's recursion). Here that recursion is solved for a :class:`Train`
the server has to itself (:func:`fifo`, O(segments)), for explicit arrival
times (:func:`lindley`), for flits of several trains arriving among each
other (:func:`interleave`), for a memory's channels finishing their bursts
(:func:`union`) and for a train through a tandem of FIFOs it has to itself
(:func:`tandem`). The stateful server that uses them is
:class:`kernbench.sim.fifo.Fifo`; the model is ``docs/timing.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import ceil
from operator import itemgetter

import numpy as np

from kernbench.sim.train import EPS, Segment, Times, Train, joined, segment_from

_count = itemgetter(1)  # a (start, count) progression's burst count (see union)


def fifo(train: Train, s: float, d_prev: float, k_from: int = 0) -> Train:
    """Departures of flits ``k_from …`` from a FIFO of service ``s`` they have alone.

    ``d_prev`` is when the work ahead of flit ``k_from`` is done. Flits
    before ``k_from`` keep their times from ``train``; call :meth:`Train.splice`
    to put the result after them.
    """
    n = train.n
    if train.arr is None:
        segs = train.segs
        out: list[Segment] = []
        try:
            if not k_from and len(segs) == 1 and n > 0:  # (most: one segment, planned whole; the loop's one step)
                _serve(out, segs[0], n, s, d_prev)
            else:
                d = d_prev
                for idx, sg in enumerate(segs):
                    k1 = segs[idx + 1][0] if idx + 1 < len(segs) else n
                    if k1 <= k_from:
                        continue
                    parts = segment_from(sg, k_from, k1) if sg[0] < k_from else [sg]
                    for j, part in enumerate(parts):
                        kj = parts[j + 1][0] if j + 1 < len(parts) else k1
                        last = _serve(out, part, kj, s, d)
                        d = _end(out, kj) if last is None else last
            if len(out) == 1:  # (joined, written out for one segment: whole groups back to back are evenly spaced)
                k0, a, g, p, T = out[0]
                return Train(n, [(k0, a, 0.0, 1, g)] if p > 1 and abs(p * g - T) <= EPS else out)
            return Train(n, joined(out))
        except _NeedArray:
            pass
    times = train.times(k_from)
    dep = lindley(times, s, d_prev)
    if k_from == 0:
        return Train.from_times(dep)
    full = np.concatenate([train.times()[:k_from], dep])
    return Train.from_times(full)


def _serve(out: list[Segment], sg: Segment, k1: int, s: float, d: float) -> float | None:
    """Append the departures of segment ``sg`` (up to flit ``k1``); the last one's time if worked out
    flit by flit, else ``None``: :func:`_end` reads it off ``out`` (only if asked: most trains are one segment)."""
    k0, a, g, p, T = sg
    if p == 1:
        r = T
        if r >= s:
            if a >= d:
                out.append((k0, a + s, 0.0, 1, r))
            elif r - s <= EPS:
                out.append((k0, d + s, 0.0, 1, s))
            else:
                kc = k0 + ceil((d - a) / (r - s) - EPS)  # first flit its own pacing decides
                out.append((k0, d + s, 0.0, 1, s))
                if kc < k1:
                    out.append((kc, a + s + (kc - k0) * r, 0.0, 1, r))
        else:
            out.append((k0, (a if a > d else d) + s, 0.0, 1, s))
        return None
    gg = g if g > s else s  # spacing within a group once served
    if s + (p - 1) * gg > T:
        if g > s:
            return _serve_array(out, sg, k1, s, d)
        # groups come faster than the server drains them: busy from the first flit on
        out.append((k0, (a if a > d else d) + s, 0.0, 1, s))
        return None

    # Unperturbed, each group leaves as it came, spaced by gg; a backlog d drains at
    # spacing s first. D(k) = max(d + (k−k0+1)·s, U(k)); the first term falls behind.
    def U(k: int) -> float:
        m, i = divmod(k - k0, p)
        return a + m * T + s + i * gg

    if d + s <= U(k0):
        out.append((k0, a + s, gg, p, T))
        return None
    lo, hi = k0, k1  # first flit where U wins
    while lo < hi:
        mid = (lo + hi) // 2
        if U(mid) >= d + (mid - k0 + 1) * s - EPS:
            hi = mid
        else:
            lo = mid + 1
    out.append((k0, d + s, 0.0, 1, s))
    if lo < k1:
        m, i = divmod(lo - k0, p)
        if i:
            kg = k0 + (m + 1) * p
            out.append((lo, U(lo), 0.0, 1, gg))
            if kg < k1:
                out.append((kg, U(kg), gg, p, T))
        else:
            out.append((lo, U(lo), gg, p, T))
    return None


def _serve_array(out: list[Segment], sg: Segment, k1: int, s: float, d: float) -> float:
    k0, a, g, p, T = sg
    j = np.arange(0, k1 - k0, dtype=np.int64)
    arr = a + (j // p) * T + (j % p) * g
    dep = lindley(arr, s, d, 0, len(arr))
    t = Train.from_times(dep)
    if t.arr is not None:
        raise _NeedArray
    out.extend((k + k0, aa, gg, pp, TT) for k, aa, gg, pp, TT in t.segs)
    return float(dep[-1])


class _NeedArray(Exception):
    pass


def _end(out: list[Segment], k1: int) -> float:
    k0, a, g, p, T = out[-1]
    m, i = divmod(k1 - 1 - k0, p)
    return a + m * T + i * g


def lindley(arrivals: Times, s: float, d_prev: float, k_from: int = 0, n: int | None = None) -> Times:
    """Departures from a FIFO of service ``s`` of flits arriving at ``arrivals`` (sorted)."""
    idx = np.arange(1, len(arrivals) + 1, dtype=np.float64) * s
    peak = np.maximum.accumulate(arrivals - (idx - s))
    return idx + np.maximum(peak, d_prev)


def interleave(times: list[Times], s: float, v0: float) -> list[Times]:
    """Departures of several trains' flits through one FIFO of service ``s`` whose work
    before them is done at ``v0``: ``times[i]`` are train ``i``'s arrivals (trains in
    ``seq`` order, each in flit order), and the result is each one's departures.

    FIFO order is time (ties within :data:`EPS` together), then ``seq``, then flit
    index; the trains come in ``seq`` order and each one's flits in index order, so a
    stable sort on time alone gives it.
    """
    arr = np.concatenate(times)
    order = np.round(arr * (1.0 / EPS)).argsort(kind="stable")
    dep = np.empty(len(arr))
    dep[order] = lindley(arr[order], s, v0)
    out: list[Times] = []
    start = 0
    for t in times:
        out.append(dep[start : start + len(t)])
        start += len(t)
    return out


def union(progressions: list[tuple[float, int]], period_ns: float) -> Train:
    """The train of bursts leaving an array of channels, exactly.

    Channel ``c`` finishes its ``count_c`` bursts at ``start_c + m·period``
    (``m = 1 … count_c``); the flits leave in time order. When every
    channel starts together this is whole groups, one per period (and a
    last, partial group); otherwise the merged times, as an array.
    """
    # (no generator expressions: each of their steps is a Python call, ~9 a read, ~4.4k reads a recorded GQA run)
    progs = sorted(progressions)
    if progs and min(map(_count, progs)) <= 0:
        progs = [pc for pc in progs if pc[1] > 0]
    n = sum(map(_count, progs))
    if n == 0:
        raise ValueError("a union of empty progressions")
    b = period_ns
    st0 = progs[0][0]
    if progs[-1][0] - st0 <= EPS:  # every channel starts together (the starts sorted: the last is the farthest)
        counts = sorted(map(_count, progs), reverse=True)
        p = len(counts)
        q = counts[-1]  # rounds in which every channel has a burst
        segs: list[Segment] = [(0, st0 + b, 0.0, p, b)] if p > 1 else [(0, st0 + b, 0.0, 1, b)]
        k = q * p
        for rnd in range(q + 1, counts[0] + 1):
            width = sum(1 for c in counts if c >= rnd)
            segs.append((k, st0 + rnd * b, 0.0, 1, 0.0))
            k += width
        # (one segment: joined would only make groups of bursts 0 ns apart evenly spaced, for b within EPS of 0)
        return Train(n, segs if len(segs) == 1 and abs(b) > EPS else joined(segs))
    times = np.sort(np.concatenate([st + b * np.arange(1, c + 1) for st, c in progs]))
    return Train.from_times(times)


def tandem(train: Train, service: Sequence[float], queued_until: Sequence[float], delay: Sequence[float]) -> list[tuple[float, float]]:
    """Per stage (a FIFO of per-flit ``service``, whose queued work is done at
    ``queued_until``, then ``delay`` to the next stage), when ``train``'s last
    flit arrives and when it leaves, the train having the stages to itself
    (nothing else arrives while it passes).

    The same numbers as applying :func:`fifo` stage by stage, without
    building the trains: in a tandem of FIFOs of constant service, a flit's
    departure is the heaviest path through the (flit, stage) grid (max-plus
    algebra), so the last flit leaves stage ``h`` at the latest of

    * ``max_k (A(k) − k·M) + (n − 1)·M + Σ s + Σ delays`` — the train's own
      flits, ``M`` the slowest service up to ``h`` (:meth:`Train.max_minus`);
    * ``v_j + Σ_{j..h} s + (n − 1)·M_{j..h} + delays`` — the work queued at
      stage ``j``, for a stage whose work outlasts the head's arrival (any
      other is dominated by the head's own path).

    O(stages²) arithmetic, however many flits: the cost of a transfer on an
    idle route does not grow with its size.
    """
    n1 = train.n - 1
    head = train.first()
    t_last = train.last()
    M = -1.0
    X = 0.0  # max_k (A(k) − k·M) for the current M
    own = 0.0  # Σ s + Σ delays along the own path so far
    queued: list[tuple[float, float]] = []  # paths from queued work: (value so far, slowest service on them)
    out: list[tuple[float, float]] = []
    for s, v, dl in zip(service, queued_until, delay, strict=True):
        if s > M:
            M = s
            X = train.max_minus(M)
        own += s
        if queued:
            queued = [(w + s, m if m > s else s) for w, m in queued]
        if v > head:
            queued.append((v + s, s))
        last = X + n1 * M + own
        for w, m in queued:
            x = w + n1 * m
            if x > last:
                last = x
        out.append((t_last, last))
        head = (head if head > v else v) + s + dl
        t_last = last + dl
        own += dl
        if queued:
            queued = [(w + dl, m) for w, m in queued]
    return out
