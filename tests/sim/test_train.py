"""Flit trains in closed form equal a flit-by-flit FIFO, for any input
(kernbench.sim.train): evenly spaced stretches, groups of simultaneous
flits (a memory's channels), explicit arrays, chains of servers, splices,
counting, and the channels' union."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kernbench.sim.serve import fifo, lindley, union
from kernbench.sim.train import Train, first_difference

times = st.floats(min_value=0.0, max_value=200.0, allow_nan=False, allow_infinity=False)
# Times closer than the engine's 1e-9 ns are one instant; keep generated gaps either 0 or real.
gaps = st.sampled_from([0.0, 0.25, 1 / 3, 0.5, 1.0, 2.0, 8.0]) | st.floats(0.01, 10.0)
services = st.sampled_from([0.25, 1 / 3, 0.5, 1.0, 2.0, 8.0]) | st.floats(0.01, 10.0)


def explicit(t: Train) -> list[float]:
    return [t.at(k) for k in range(t.n)]


@st.composite
def trains(draw):
    """Nondecreasing trains of plain and grouped segments."""
    segs = []
    k = 0
    t = draw(times)
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            p = draw(st.integers(2, 8))
            period = draw(st.floats(0.5, 20.0))
            if period / p < 0.01:
                period = 0.01 * p
            g = draw(st.just(0.0) | st.floats(0.01, max(0.01, period / p)))
            groups = draw(st.integers(1, 6))
            segs.append((k, t, g, p, period))
            k += p * groups
            t += groups * period
        else:
            r = draw(gaps)
            cnt = draw(st.integers(1, 12))
            segs.append((k, t, 0.0, 1, r))
            k += cnt
            t += (cnt - 1) * r
        t += draw(st.floats(0.0, 10.0))
    return Train(k, segs)


def brute_force(arrivals: list[float], s: float, free: float) -> list[float]:
    out, last = [], free
    for a in arrivals:
        last = max(last, a) + s
        out.append(last)
    return out


def close(a: list[float], b: list[float]) -> bool:
    """Equal as the engine sees times: within a few of its 1e-9 ns instants."""
    return all(abs(x - y) <= 5e-9 + 1e-12 * abs(y) for x, y in zip(a, b, strict=True))


@settings(max_examples=300, deadline=None)
@given(trains(), services, times)
def test_fifo_equals_a_flit_by_flit_fifo(train, s, free):
    arrivals = explicit(train)
    assert arrivals == sorted(arrivals)
    assert close(explicit(fifo(train, s, free)), brute_force(arrivals, s, free))


@settings(max_examples=200, deadline=None)
@given(trains(), st.lists(st.tuples(services, st.floats(0.0, 10.0), times), min_size=1, max_size=6))
def test_a_chain_of_servers_equals_flit_by_flit(train, hops):
    """Several FIFOs with fixed delays between them (a route)."""
    arrivals = explicit(train)
    for s, delay, free in hops:
        arrivals = [t + delay for t in brute_force(arrivals, s, free)]
        train = fifo(train, s, free).shift(delay)
    assert close(explicit(train), arrivals)


@settings(max_examples=200, deadline=None)
@given(trains(), services, times, st.data())
def test_fifo_from_a_later_flit_continues_the_same_recursion(train, s, free, data):
    k = data.draw(st.integers(0, train.n - 1))
    whole = explicit(fifo(train, s, free))
    d_prev = whole[k - 1] if k else free
    tail = fifo(train, s, d_prev, k)
    assert close([tail.at(j) for j in range(k, train.n)], whole[k:])
    spliced = fifo(train, s, free).splice(k, tail)
    assert close(explicit(spliced), whole)


@settings(max_examples=200, deadline=None)
@given(trains(), services, times)
def test_array_trains_and_segment_trains_agree(train, s, free):
    as_array = Train(train.n, arr=np.array(explicit(train)))
    assert close(explicit(fifo(as_array, s, free)), explicit(fifo(train, s, free)))
    assert close(list(lindley(np.array(explicit(train)), s, free)), brute_force(explicit(train), s, free))


@settings(max_examples=300, deadline=None)
@given(trains(), times)
@example(Train(3, [(0, 1.0, 0.0, 1, 0.0), (1, 1.000000001, 0.0, 2, 1.0)]), 1.0)  # a segment starting EPS after t
def test_count_before_counts_the_flits_before_a_time(train, t):
    arr = explicit(train)
    assert train.count_before(t) == sum(1 for a in arr if a < t - 1e-9)
    assert train.count_before(t, inclusive=True) == sum(1 for a in arr if a <= t + 1e-9)
    for a in arr[:5]:  # exactly at a flit's time
        assert train.count_before(a, inclusive=True) == sum(1 for x in arr if x <= a + 1e-9)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 100.0), min_size=1, max_size=60))
def test_from_times_keeps_every_time(ts):
    ts = sorted(ts)
    t = Train.from_times(np.array(ts))
    assert close(explicit(t), ts)


@settings(max_examples=200, deadline=None)
@given(trains(), trains())
def test_first_difference_finds_the_first_differing_flit(a, b):
    n = min(a.n, b.n)
    a = Train(n, arr=np.array(explicit(a)[:n]))
    b2 = Train(n, arr=np.array(explicit(b)[:n]))
    k = first_difference(a, b2, 0)
    diffs = [j for j in range(n) if abs(a.at(j) - b2.at(j)) > 1e-9]
    assert k == (diffs[0] if diffs else n)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([0.0, 0.0, 3.0, 7.5]) | st.floats(0.0, 30.0), st.integers(0, 20)), min_size=1, max_size=8),
    st.sampled_from([8.0, 2.0, 1.0]) | st.floats(0.5, 10.0),
)
def test_union_is_the_channels_bursts_in_time_order(progs, b):
    if sum(c for _, c in progs) == 0:
        return
    expect = sorted(st0 + m * b for st0, c in progs for m in range(1, c + 1))
    got = union(progs, b)
    assert got.n == len(expect)
    assert close(explicit(got), expect)


def test_an_aligned_union_is_a_handful_of_segments_however_long():
    """Eight idle channels, 4 MiB: groups, not 16384 flit times."""
    t = union([(10.0, 2048)] * 8, 8.0)
    assert t.arr is None and len(t.segs) <= 2
    served = fifo(t, 1.0, 0.0)  # a 256 GB/s port drains the groups exactly as they come
    assert served.arr is None and len(served.segs) == 1
    assert served.last() == 10.0 + 8.0 + 16384 * 1.0


def test_train_stays_small_along_a_long_route():
    train = Train.burst(1000, 0.0)
    for i in range(50):
        train = fifo(train, [1.0, 0.5, 2.0, 1 / 3][i % 4], 0.0).shift(2.0)
    assert train.arr is None and len(train.segs) <= 3


@given(trains(), services, st.floats(0.0, 50.0), st.data())
def test_times_of_any_range_are_the_flits_times_once_worked_out_and_asked_again(t, s, d, data):
    # a train fifo() planned from flit k_from on holds segments from there: its times start there too
    k_from = data.draw(st.integers(0, t.n - 1))
    out = fifo(t, s, d, k_from)
    for train, first in ((t, 0), (out, k_from)):
        want = [train.at(k) for k in range(first, train.n)]
        for _ in range(2):  # the second time from the train's own copy
            k = data.draw(st.integers(0, train.n))
            stop = data.draw(st.none() | st.integers(k, train.n))
            got = train.times(k, stop).tolist()
            lo = max(k, first) - first
            hi = len(want) if stop is None else max(stop, first) - first
            assert got == want[lo:hi]
