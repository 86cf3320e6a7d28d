"""Flit trains: when each flit of a transfer passes a point, exactly.

A :class:`Train` of ``n`` flits (times never decrease with the flit index)
is either a short list of *segments* or, when its pattern is irregular, an
explicit array of times. A segment ``(k0, a, g, p, T)`` holds flits ``k0``
up to the next segment's first in *groups* of ``p``: flit ``k0 + m·p + i``
(``0 <= i < p``) passes at ``a + m·T + i·g``. A plain evenly spaced stretch
is ``p = 1`` with spacing ``T``; a memory's channels finishing ``p`` bursts
at once every burst time is ``g = 0``.

The one operation a route applies besides fixed delays is a FIFO server of
per-flit service ``s`` (an edge serializing flits, a channel draining
bursts). Served alone, with the work ahead of the train done at ``d``, flit
``k`` leaves at ``D(k) = max(D(k-1), A(k)) + s`` with ``D(-1) = d``
(Lindley). :func:`fifo` computes it exactly in O(segments): an evenly
spaced stretch maps to at most two (paced by the server, then by the
train), a stretch of groups to at most three (a backlog draining, the rest
of a group, then groups again — or one evenly spaced stretch when the
server cannot keep up with the groups). An array train goes through numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import ceil, floor

import numpy as np
from numpy.typing import NDArray

Times = NDArray[np.floating]  # flit times (ns), never decreasing (float64; numpy's stubs widen arithmetic on it to floating)
Segment = tuple[int, float, float, int, float]  # (first flit, time, gap in a group, group size, period)

EPS = 1e-9  # ns: two times closer than this are the same instant
MAX_SEGMENTS = 16  # an array train with more runs than this stays an array


class Train:
    """``n`` flit times: segments, or an array ``arr``; see the module docstring."""

    __slots__ = ("_k0s", "_last", "_times", "arr", "n", "segs")

    def __init__(self, n: int, segs: list[Segment] | None = None, arr: Times | None = None) -> None:
        self.n = n
        self.segs: list[Segment] = segs if segs is not None else []  # empty for an array train
        self.arr = arr
        self._k0s: list[int] | None = None
        self._last: float | None = None  # (a train never changes: the last flit's time, once asked)
        self._times: Times | None = None  # (… and a segment train's times, once asked: see times)

    @classmethod
    def burst(cls, n: int, t: float) -> Train:
        """All ``n`` flits at ``t`` (a source with its whole payload ready)."""
        return cls(n, [(0, t, 0.0, 1, 0.0)])

    @classmethod
    def even(cls, n: int, t: float, gap: float) -> Train:
        return cls(n, [(0, t, 0.0, 1, gap)])

    @classmethod
    def from_times(cls, times: Times) -> Train:
        """A train from explicit times, as segments when they are few evenly spaced runs."""
        n = len(times)
        if n == 1:
            return cls(1, [(0, float(times[0]), 0.0, 1, 0.0)])
        d = np.diff(times)
        brk = (np.abs(np.diff(d)) > EPS).nonzero()[0] + 1  # a new run starts at flit brk + 1
        if len(brk) + 1 > MAX_SEGMENTS:
            return cls(n, arr=np.asarray(times, dtype=np.float64))
        starts = [0] + [int(b) for b in brk]
        segs: list[Segment] = []
        for i, k0 in enumerate(starts):
            k1 = starts[i + 1] if i + 1 < len(starts) else n
            gap = float(d[k0]) if k1 - k0 > 1 else (float(d[k0]) if k0 < n - 1 else 0.0)
            segs.append((k0, float(times[k0]), 0.0, 1, gap))
        return cls(n, _merge(segs))

    def __repr__(self) -> str:
        if self.arr is not None:
            return f"Train({self.n}, arr[{self.arr[0]:.3f} … {self.arr[-1]:.3f}])"
        return f"Train({self.n}, {self.segs})"

    # --- reading -----------------------------------------------------------

    def _index(self, k: int) -> int:
        segs = self.segs
        if len(segs) == 1:
            return 0
        k0s = self._k0s
        if k0s is None:
            k0s = self._k0s = [sg[0] for sg in segs]
        lo, hi = 0, len(k0s)
        while lo < hi:
            mid = (lo + hi) // 2
            if k0s[mid] <= k:
                lo = mid + 1
            else:
                hi = mid
        return lo - 1

    def at(self, k: int) -> float:
        """Time of flit ``k``."""
        if self.arr is not None:
            return float(self.arr[k])
        k0, a, g, p, T = self.segs[self._index(k)]
        if p == 1:
            return a + (k - k0) * T
        m, i = divmod(k - k0, p)
        return a + m * T + i * g

    def first(self) -> float:
        return float(self.arr[0]) if self.arr is not None else self.segs[0][1]

    def last(self) -> float:
        t = self._last
        if t is None:
            t = self._last = self.at(self.n - 1)
        return t

    def times(self, k: int = 0, stop: int | None = None) -> Times:
        """Times of flits ``k … stop − 1`` (to the last) as an array."""
        if self.arr is not None:
            return self.arr[k:stop]
        # A segment train's times are worked out whole, once: a train merged at a FIFO is
        # asked again at each re-plan there, and its departures are compared each time.
        # (Slices of it are handed out, read-only: nobody writes into a train's times.)
        times = self._times
        if times is None:
            if not self.segs:
                return np.empty(0)
            out: list[Times] = []
            segs = self.segs
            for i, (k0, a, g, p, T) in enumerate(segs):
                k1 = segs[i + 1][0] if i + 1 < len(segs) else self.n
                j = np.arange(0, k1 - k0, dtype=np.int64)
                if p == 1:
                    out.append(a + j * T)
                else:
                    out.append(a + (j // p) * T + (j % p) * g)
            times = self._times = np.concatenate(out) if len(out) > 1 else out[0]
            times.flags.writeable = False
        k0 = self.segs[0][0]  # (a train fifo() planned from a flit on starts there)
        if k0:
            return times[max(k - k0, 0) : None if stop is None else max(stop - k0, 0)]
        return times[k:stop]

    def count_before(self, t: float, inclusive: bool = False) -> int:
        """How many flits pass before ``t`` (at or before it when ``inclusive``).

        Times within :data:`EPS` of ``t`` count as ``t`` itself.
        """
        bound = t + EPS if inclusive else t - EPS
        if self.arr is not None:
            return int(self.arr.searchsorted(bound, side="right" if inclusive else "left"))
        segs = self.segs
        lo, hi = 0, len(segs)
        while lo < hi:
            mid = (lo + hi) // 2
            a = segs[mid][1]
            if a < bound or (inclusive and a == bound):
                lo = mid + 1
            else:
                hi = mid
        if lo == 0:
            return 0
        k0, a, g, p, T = segs[lo - 1]
        k1 = segs[lo][0] if lo < len(segs) else self.n
        n = min(k1 - k0, _count_in(bound - a, g, p, T, inclusive))

        # the closed form divides; settle a flit right at the bound the way
        # ``at`` computes its time, so counting and reading times agree
        def passed(j: int) -> bool:
            m, i = divmod(j, p)
            x = a + m * T + i * g if p > 1 else a + j * T
            return x <= bound if inclusive else x < bound

        while n < k1 - k0 and passed(n):
            n += 1
        while n > 0 and not passed(n - 1):
            n -= 1
        return k0 + n

    def max_minus(self, m: float) -> float:
        """``max_k (at(k) − k·m)``: how far the train runs ahead of a pace of ``m`` per flit.

        Linear within an evenly spaced stretch and within a group (and from
        group to group), so only the corners of each segment can be the
        maximum.
        """
        if self.arr is not None:
            return float(np.max(self.arr - m * np.arange(self.n, dtype=np.float64)))
        segs = self.segs
        best = float("-inf")
        for i, (k0, a, g, p, T) in enumerate(segs):
            k1 = segs[i + 1][0] if i + 1 < len(segs) else self.n
            if p == 1:
                x = a - k0 * m + max(0.0, (k1 - 1 - k0) * (T - m))
            else:
                full, rest = divmod(k1 - k0, p)  # whole groups, flits of a last partial one
                x = float("-inf")
                if full:  # the first or the last whole group, its first or last flit
                    x = a - k0 * m + max(0.0, (full - 1) * (T - p * m)) + max(0.0, (p - 1) * (g - m))
                if rest:
                    x = max(x, a - k0 * m + full * (T - p * m) + max(0.0, (rest - 1) * (g - m)))
            if x > best:
                best = x
        return best

    def gap_at(self, k: int) -> float:
        """Time from flit ``k`` to flit ``k + 1`` (0 for the last)."""
        return self.at(k + 1) - self.at(k) if k + 1 < self.n else 0.0

    # --- making new trains ---------------------------------------------------

    def shift(self, d: float) -> Train:
        if d == 0.0:
            return self
        if self.arr is not None:
            return Train(self.n, arr=self.arr + d)
        return Train(self.n, [(k0, a + d, g, p, T) for k0, a, g, p, T in self.segs])

    def splice(self, k: int, tail: Train) -> Train:
        """Flits before ``k`` from this train, flits ``k`` onward from ``tail``."""
        if k <= 0:
            return tail
        if self.arr is None and tail.arr is None:
            keep = [sg for sg in self.segs if sg[0] < k]
            rest = [sg for sg in tail.segs if sg[0] >= k]
            if not rest or rest[0][0] != k:
                j = tail._index(k)
                k1 = tail.segs[j + 1][0] if j + 1 < len(tail.segs) else tail.n
                rest = _from(tail.segs[j], k, k1) + rest
            return Train(self.n, _merge(keep + rest))
        return Train.from_times(np.concatenate([self.times()[:k], tail.times(k)]))


def _count_in(x: float, g: float, p: int, T: float, inclusive: bool) -> int:
    """Flits of one segment (its first at offset 0) at offsets below ``x`` (or equal, when ``inclusive``)."""
    if x < 0.0:
        return 0
    if T == 0.0:
        return 1 << 62
    m = floor(x / T)  # whole periods before x
    r = x - m * T
    if r < 0.0:  # x / T rounded up to a whole number
        m -= 1
        r += T
    if p == 1:
        return m + (1 if inclusive or r > 0.0 else 0)
    if g == 0.0:
        within = p if inclusive or r > 0.0 else 0
    else:
        q = floor(r / g)
        within = min(p, q + 1 if inclusive or r > q * g else q)
    return m * p + within


def _from(sg: Segment, k: int, k1: int) -> list[Segment]:
    """Segment ``sg`` (ending before flit ``k1``) from flit ``k`` on, as segments."""
    k0, a, g, p, T = sg
    if k == k0:
        return [sg]
    if p == 1:
        return [(k, a + (k - k0) * T, g, 1, T)]
    m, i = divmod(k - k0, p)
    if i == 0:
        return [(k, a + m * T, g, p, T)]
    out: list[Segment] = [(k, a + m * T + i * g, 0.0, 1, g)]  # the rest of this group
    kg = k0 + (m + 1) * p
    if kg < k1:
        out.append((kg, a + (m + 1) * T, g, p, T))
    return out


def _merge(segs: list[Segment]) -> list[Segment]:
    """Drop segments that continue the previous one exactly; normalize full groups."""
    out: list[Segment] = []
    for k0, a, g, p, T in segs:
        if p > 1 and abs(p * g - T) <= EPS:
            p, T, g = 1, g, 0.0  # groups back to back: evenly spaced
        sg = (k0, a, g, p, T)
        if out:
            q0, qa, qg, qp, qT = out[-1]
            if qp == 1 and p == 1 and abs(qT - T) <= EPS and abs(qa + (k0 - q0) * qT - a) <= EPS:
                continue
            if (
                qp == p
                and p > 1
                and abs(qT - T) <= EPS
                and abs(qg - g) <= EPS
                and (k0 - q0) % p == 0
                and abs(qa + (k0 - q0) // p * qT - a) <= EPS
            ):
                continue
        out.append(sg)
    return out


def first_difference(old: Train, new: Train, k: int, tol: float = 1e-9) -> int:
    """The first flit from ``k`` on whose time differs (``n`` if none; may answer early)."""
    n = old.n
    if k >= n:
        return n
    if old.arr is not None or new.arr is not None:
        d = (np.abs(old.times(k) - new.times(k)) > tol).nonzero()[0]
        return k + int(d[0]) if len(d) else n
    bounds = sorted({k} | {sg[0] for sg in old.segs if sg[0] > k} | {sg[0] for sg in new.segs if sg[0] > k})
    for b in bounds:
        if abs(old.at(b) - new.at(b)) > tol:
            return b
        if b + 1 < n and abs(old.gap_at(b) - new.gap_at(b)) > 1e-12:
            return b + 1
        # groups: a difference can hide inside a group (same start, other inner gap)
        i_old, i_new = old._index(b), new._index(b)
        if old.segs[i_old][3] > 1 or new.segs[i_new][3] > 1:
            return b + 1
    return n


# --- one FIFO server -----------------------------------------------------------


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
            d = d_prev
            for idx, sg in enumerate(segs):
                k1 = segs[idx + 1][0] if idx + 1 < len(segs) else n
                if k1 <= k_from:
                    continue
                parts = _from(sg, k_from, k1) if sg[0] < k_from else [sg]
                for j, part in enumerate(parts):
                    d = _serve(out, part, parts[j + 1][0] if j + 1 < len(parts) else k1, s, d)
            return Train(n, _merge(out))
        except _NeedArray:
            pass
    times = train.times(k_from)
    dep = lindley(times, s, d_prev)
    if k_from == 0:
        return Train.from_times(dep)
    full = np.concatenate([train.times()[:k_from], dep])
    return Train.from_times(full)


def _serve(out: list[Segment], sg: Segment, k1: int, s: float, d: float) -> float:
    """Append the departures of segment ``sg`` (up to flit ``k1``); the last one's time."""
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
        return _end(out, k1)
    gg = g if g > s else s  # spacing within a group once served
    if s + (p - 1) * gg > T:
        if g > s:
            return _serve_array(out, sg, k1, s, d)
        # groups come faster than the server drains them: busy from the first flit on
        out.append((k0, (a if a > d else d) + s, 0.0, 1, s))
        return _end(out, k1)

    # Unperturbed, each group leaves as it came, spaced by gg; a backlog d drains at
    # spacing s first. D(k) = max(d + (k−k0+1)·s, U(k)); the first term falls behind.
    def U(k: int) -> float:
        m, i = divmod(k - k0, p)
        return a + m * T + s + i * gg

    if d + s <= U(k0):
        out.append((k0, a + s, gg, p, T))
        return _end(out, k1)
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
    return _end(out, k1)


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


# --- the channels' output --------------------------------------------------------


def union(progressions: list[tuple[float, int]], period_ns: float) -> Train:
    """The train of bursts leaving an array of channels, exactly.

    Channel ``c`` finishes its ``count_c`` bursts at ``start_c + m·period``
    (``m = 1 … count_c``); the flits leave in time order. When every
    channel starts together this is whole groups, one per period (and a
    last, partial group); otherwise the merged times, as an array.
    """
    progs = sorted((st, c) for st, c in progressions if c > 0)
    n = sum(c for _, c in progs)
    if n == 0:
        raise ValueError("a union of empty progressions")
    b = period_ns
    st0 = progs[0][0]
    if all(abs(st - st0) <= EPS for st, _ in progs):
        counts = sorted((c for _, c in progs), reverse=True)
        p = len(counts)
        q = counts[-1]  # rounds in which every channel has a burst
        segs: list[Segment] = [(0, st0 + b, 0.0, p, b)] if p > 1 else [(0, st0 + b, 0.0, 1, b)]
        k = q * p
        for rnd in range(q + 1, counts[0] + 1):
            width = sum(1 for c in counts if c >= rnd)
            segs.append((k, st0 + rnd * b, 0.0, 1, 0.0))
            k += width
        return Train(n, _merge(segs))
    times = np.sort(np.concatenate([st + b * np.arange(1, c + 1) for st, c in progs]))
    return Train.from_times(times)


# --- a train through FIFOs it has to itself, in closed form ------------------------


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
