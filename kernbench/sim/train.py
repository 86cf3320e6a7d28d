"""Flit trains: when each flit of a transfer passes a point, exactly.

A :class:`Train` of ``n`` flits (times never decrease with the flit index)
is either a short list of *segments* or, when its pattern is irregular, an
explicit array of times. A segment ``(k0, a, g, p, T)`` holds flits ``k0``
up to the next segment's first in *groups* of ``p``: flit ``k0 + m·p + i``
(``0 <= i < p``) passes at ``a + m·T + i·g``. A plain evenly spaced stretch
is ``p = 1`` with spacing ``T``; a memory's channels finishing ``p`` bursts
at once every burst time is ``g = 0``.

What a FIFO server does to a train is :mod:`kernbench.sim.serve`; the
model both implement is ``docs/timing.md`` (terms: ``docs/glossary.md``).
"""

from __future__ import annotations

from math import floor

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
        return cls(n, joined(segs))

    def __repr__(self) -> str:
        if self.arr is not None:
            return f"Train({self.n}, arr[{self.arr[0]:.3f} … {self.arr[-1]:.3f}])"
        return f"Train({self.n}, {self.segs})"

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
            # at(n − 1) written out (a recorded run asks ~23k trains): the last segment's, as _index finds it
            k = self.n - 1
            if self.arr is not None or not self.segs or self.segs[-1][0] > k:
                t = self.at(k)
            else:
                k0, a, g, p, T = self.segs[-1]
                if p == 1:
                    t = a + (k - k0) * T
                else:
                    m, i = divmod(k - k0, p)
                    t = a + m * T + i * g
            self._last = t
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

    def shift(self, d: float) -> Train:
        if d == 0.0:
            return self
        if self.arr is not None:
            return Train(self.n, arr=self.arr + d)
        if len(self.segs) == 1:  # (most trains: no comprehension, a call less)
            k0, a, g, p, T = self.segs[0]
            return Train(self.n, [(k0, a + d, g, p, T)])
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
                rest = segment_from(tail.segs[j], k, k1) + rest
            return Train(self.n, joined(keep + rest))
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


def segment_from(sg: Segment, k: int, k1: int) -> list[Segment]:
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


def joined(segs: list[Segment]) -> list[Segment]:
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
