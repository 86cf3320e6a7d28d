"""The closed-form flit train equals a flit-by-flit FIFO, for any input
(kernbench.sim.train; issue 2, section 3)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.sim import train as tr

times = st.floats(min_value=0.0, max_value=200.0, allow_nan=False, allow_infinity=False)
rates = st.sampled_from([0.0, 0.25, 1 / 3, 0.5, 1.0, 2.0, 8.0]) | st.floats(0.0, 10.0)
services = st.sampled_from([0.25, 1 / 3, 0.5, 1.0, 2.0, 8.0]) | st.floats(0.01, 10.0)


@st.composite
def trains(draw):
    n = draw(st.integers(1, 40))
    pieces = [(draw(times), draw(rates), 0)]
    for _ in range(draw(st.integers(0, 4))):
        pieces.append((draw(times), draw(rates), draw(st.integers(0, n - 1))))
    return n, pieces


def brute_force(arrivals: list[float], s: float, free: float) -> list[float]:
    out, last = [], free
    for a in arrivals:
        last = max(last, a) + s
        out.append(last)
    return out


@settings(max_examples=300, deadline=None)
@given(trains(), services, times)
def test_through_edge_equals_a_flit_by_flit_fifo(train, s, free):
    n, pieces = train
    arrivals = [tr.at(pieces, k) for k in range(n)]
    expect = brute_force(arrivals, s, free)
    out = tr.through_edge(pieces, s, free)
    for k in range(n):
        assert abs(tr.at(out, k) - expect[k]) <= 1e-9 * max(1.0, expect[k])


@settings(max_examples=200, deadline=None)
@given(trains(), st.lists(st.tuples(services, st.floats(0.0, 10.0), times), min_size=1, max_size=6))
def test_a_chain_of_edges_equals_flit_by_flit(train, hops):
    """Several FIFOs with fixed delays between them (a route), pruning at each step."""
    n, pieces = train
    arrivals = [tr.at(pieces, k) for k in range(n)]
    for s, delay, free in hops:
        arrivals = [t + delay for t in brute_force(arrivals, s, free)]
        pieces = tr.shift(tr.through_edge(pieces, s, free), delay)
    for k in range(n):
        assert abs(tr.at(pieces, k) - arrivals[k]) <= 1e-9 * max(1.0, arrivals[k])


@settings(max_examples=200, deadline=None)
@given(trains())
def test_prune_never_changes_the_train(train):
    n, pieces = train
    pruned = tr.prune(pieces)
    assert len(pruned) <= len(pieces)
    for k in range(n):
        assert tr.at(pruned, k) == tr.at(pieces, k)


def test_train_stays_small_along_a_long_route():
    pieces = [(0.0, 0.0, 0)]
    for i in range(50):
        pieces = tr.shift(tr.through_edge(pieces, [1.0, 0.5, 2.0, 1 / 3][i % 4], 0.0), 2.0)
    assert len(pieces) <= 3
