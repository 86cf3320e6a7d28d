"""A FIFO's same-instant order, checked against its stated rule by Lindley's recursion.

``Fifo.finish_before(t, seq)`` promises: flits arriving at ``t`` itself count
when their transfer's ``seq`` is *lower* than ``seq`` — same-instant flits are
served in ``seq`` order, so a transfer never queues behind its own flits nor
behind a later transfer's. The expected times here are ``D_i = max(D_{i-1},
A_i) + s`` over the flits the rule says come first, computed in the test.
"""

from __future__ import annotations

import pytest

from kernbench.sim.fifo import Fifo, Passage
from kernbench.sim.train import Train

S = 2.0  # ns per flit
T = 10.0  # every flit arrives then


def lindley_last(arrivals: list[float], s: float) -> float:
    d = 0.0
    for a in sorted(arrivals):
        d = max(d, a) + s
    return d


@pytest.fixture
def fifo() -> Fifo:
    f = Fifo("edge", S)
    f.arrive(Passage(5, 50, Train.burst(3, T)), now=0.0)  # transfer seq 5: three flits at T
    return f


@pytest.mark.parametrize(
    ("seq", "ahead"),
    [
        (4, 0),  # an earlier transfer's flit at T goes first
        (5, 0),  # the transfer's own control flit does not wait behind its own data
        (6, 3),  # a later transfer's waits for all three
    ],
)
def test_flits_arriving_at_t_count_only_for_a_higher_seq(fifo, seq, ahead):
    expected = lindley_last([T] * ahead, S) if ahead else T
    assert fifo.finish_before(T, seq) == pytest.approx(expected)
    assert fifo.depth_flits(T, seq) == pytest.approx(ahead)


def test_strictly_before_t_none_of_them_count(fifo):
    assert fifo.finish_before(T) == pytest.approx(T)
    assert fifo.finish_before(T + 1.0, 0) == pytest.approx(lindley_last([T] * 3, S))
