"""A memory channel's share of a train, against indexing the train's times with numpy.

``sim.hbm.sub_train(train, (first, step, count))`` is the arrival train of
flits ``first, first + step, …`` of ``train`` (renumbered from 0): one
channel's bursts out of a transfer interleaved over several channels. The
closed form walks the train's segments; the oracle is
``train.times()[first + step * arange(count)]`` — the flit-by-flit times,
which :class:`~kernbench.sim.train.Train` computes segment by segment from
``a + (k − k0)·T`` without the sub-train logic.
"""

from __future__ import annotations

import numpy as np
import pytest

from kernbench.sim.hbm import sub_train
from kernbench.sim.train import Train


def evenly_spaced_segments(rng: np.random.Generator) -> Train:
    """A train of a few evenly spaced stretches (``p = 1``) of random lengths and pacing."""
    n_segs = int(rng.integers(1, 5))
    lengths = rng.integers(1, 12, n_segs)
    segs, k0, t = [], 0, float(rng.uniform(0, 5))
    for length in lengths:
        period = float(rng.choice([0.5, 1.0, 2.0, 3.25]))
        segs.append((k0, t, 0.0, 1, period))
        t += (int(length) - 1) * period + float(rng.uniform(0, 4))
        k0 += int(length)
    return Train(k0, segs)


@pytest.mark.parametrize("seed", range(40))
def test_a_channel_sub_train_is_every_step_th_flit_of_the_train(seed):
    rng = np.random.default_rng(seed)
    train = evenly_spaced_segments(rng)
    step = int(rng.integers(1, 6))
    first = int(rng.integers(0, min(step, train.n)))
    count = len(range(first, train.n, step))
    want = train.times()[first + step * np.arange(count)]
    got = sub_train(train, (first, step, count))
    assert got.n == count
    np.testing.assert_allclose(got.times(), want, rtol=0, atol=1e-9)
    for m in range(count):  # each flit on its own too (Train.at goes through the segment index)
        assert got.at(m) == pytest.approx(want[m], abs=1e-9)


def test_a_stretch_boundary_falling_between_two_of_the_channels_flits():
    # flits 0..4 every 1 ns from 0, flits 5..9 every 2 ns from 100; the channel takes 1, 4, 7
    train = Train(10, [(0, 0.0, 0.0, 1, 1.0), (5, 100.0, 0.0, 1, 2.0)])
    got = sub_train(train, (1, 3, 3))
    assert list(got.times()) == [1.0, 4.0, 104.0]
