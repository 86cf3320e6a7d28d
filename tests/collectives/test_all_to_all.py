"""All-to-all (issue 24, item 4): part j of member i lands as part i of member j, in place or into
``out``, on any group size (odd ones sit a round out), any chunking, and N-D buffers; the
round-robin pairing meets every pair exactly once."""

from __future__ import annotations

import numpy as np
import pytest
from allreduce_kit import integer_inputs, run_collective
from hypothesis import given
from hypothesis import strategies as st

from kernbench import collectives, tl
from kernbench.collectives.alltoall import partner, rounds
from kernbench.errors import KernelError
from kernbench.runtime.api import Runtime
from kernbench.topology.compile import load_topology

ONE_PER_CUBE = [f"sip0.cube{c}.pe0" for c in range(6)]


@pytest.fixture(scope="module")
def torus():
    return load_topology("torus2x3")


def expected(inputs: list[np.ndarray]) -> list[np.ndarray]:
    """numpy's all-to-all: member i's result is part i of every member, in member order."""
    p = len(inputs)
    parts = [x.reshape(p, -1) for x in inputs]
    return [np.stack([parts[j][i] for j in range(p)]).reshape(inputs[i].shape) for i in range(p)]


def _in_place(bufs, group, chunk):
    collectives.all_to_all(bufs[tl.program_id()], group, chunk_bytes=chunk)


def _into(bufs, group, chunk, outs):
    collectives.all_to_all(bufs[tl.program_id()], group, out=outs[tl.program_id()], chunk_bytes=chunk)


@given(st.integers(1, 24))
def test_every_round_is_a_matching_and_every_pair_meets_exactly_once(p):
    met = set()
    for r in range(rounds(p)):
        mates = [partner(i, r, p) for i in range(p)]
        for i, j in enumerate(mates):
            assert mates[j] == i  # symmetric: i meets j when j meets i
            if j != i:
                met.add((min(i, j), max(i, j)))
        assert sum(j == i for i, j in enumerate(mates)) == p % 2  # only an odd group sits one out
    assert met == {(i, j) for i in range(p) for j in range(i + 1, p)}
    assert rounds(p) == (p - 1 if p % 2 == 0 else p)


# elements per PE (a multiple of 6), chunk bytes: one element per part; parts of several
# messages with a ragged last one; a part exactly one message
@pytest.mark.parametrize("n, chunk", [(6, 64), (6 * 1001, 512), (6 * 2048, 4096)], ids=["1el", "ragged", "whole"])
def test_in_place_all_to_all_transposes_the_parts(torus, n, chunk):
    inputs = integer_inputs(6, n, seed=n)
    want = expected(inputs)
    outs, result = run_collective(torus, ONE_PER_CUBE, inputs, _in_place, chunk, rows=3)
    for got, w in zip(outs, want, strict=True):
        np.testing.assert_array_equal(got, w)
    assert all(result.engine_busy_ns[pe]["ipcq"] > 0 and result.engine_busy_ns[pe]["math"] == 0 for pe in result.pes)


@pytest.mark.parametrize("pes", [["sip0.cube0.pe0", "sip0.cube3.pe2"], [f"sip0.cube{c}.pe1" for c in (0, 2, 4, 5, 1)]], ids=["2pe", "5pe"])
def test_groups_of_two_and_of_an_odd_size(torus, pes):
    inputs = integer_inputs(len(pes), len(pes) * 777, seed=2)
    outs, _ = run_collective(torus, pes, inputs, _in_place, 256)
    for got, w in zip(outs, expected(inputs), strict=True):
        np.testing.assert_array_equal(got, w)


def test_into_out_leaves_the_input_as_it_was(torus):
    rt = Runtime(torus)
    inputs = integer_inputs(6, 6 * 300, seed=5)
    bufs = [rt.deploy(x, pe=pe, dtype=x.dtype) for x, pe in zip(inputs, ONE_PER_CUBE, strict=True)]
    outs = [rt.empty(x.shape, x.dtype, pe=pe) for x, pe in zip(inputs, ONE_PER_CUBE, strict=True)]
    rt.launch(_into, pes=ONE_PER_CUBE, args=(bufs, collectives.Group(tuple(range(6)), 3), 128, outs))
    rt.run()
    for buf, out, x, w in zip(bufs, outs, inputs, expected(inputs), strict=True):
        np.testing.assert_array_equal(rt.read(buf), x)
        np.testing.assert_array_equal(rt.read(out), w)


def test_an_expert_parallel_buffer_of_rank_three_exchanges_its_first_axis(torus):
    # (p, tokens, hidden): member i's tokens for expert-holder j are x[j]; afterwards x[j] holds j's tokens for i
    inputs = [x.reshape(6, 4, 32) for x in integer_inputs(6, 6 * 4 * 32, seed=7)]
    outs, _ = run_collective(torus, ONE_PER_CUBE, inputs, _in_place, 1024, rows=3)
    for i, got in enumerate(outs):
        assert got.shape == (6, 4, 32)
        for j in range(6):
            np.testing.assert_array_equal(got[j], inputs[j][i])


def test_float32_parts_move_bit_for_bit(torus):
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(6 * 100).astype(np.float32) for _ in range(6)]
    outs, _ = run_collective(torus, ONE_PER_CUBE, inputs, _in_place, 1024, rows=3)
    for got, w in zip(outs, expected(inputs), strict=True):
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, w)


def test_the_same_all_to_all_gives_the_same_latency_twice(torus):
    inputs = integer_inputs(6, 6 * 512)
    a = run_collective(torus, ONE_PER_CUBE, inputs, _in_place, 256, rows=3)[1].latency_ns
    b = run_collective(torus, ONE_PER_CUBE, inputs, _in_place, 256, rows=3)[1].latency_ns
    assert a == b


def test_more_bytes_per_message_pay_fewer_startups(torus):
    inputs = integer_inputs(6, 6 * 8192)
    small = run_collective(torus, ONE_PER_CUBE, inputs, _in_place, 1024, rows=3)[1].latency_ns
    big = run_collective(torus, ONE_PER_CUBE, inputs, _in_place, 16384, rows=3)[1].latency_ns
    assert big < small


@pytest.mark.parametrize(
    "n, out, match",
    [
        (1001, None, r"all_to_all: \S+ has 1001 elements, which do not cut into 6 equal parts"),
        (600, (500,), r"all_to_all: out \S+ \(500 × float16\) must match \S+ \(600 × float16\)"),
    ],
)
def test_bad_buffers_are_kernel_errors_naming_sizes(torus, n, out, match):
    rt = Runtime(torus)
    bufs = [rt.deploy(np.zeros(n, np.float16), pe=pe) for pe in ONE_PER_CUBE]
    outs = [rt.empty(out, np.float16, pe=pe) for pe in ONE_PER_CUBE] if out else None

    def k(bufs, outs):
        me = tl.program_id()
        collectives.all_to_all(bufs[me], out=None if outs is None else outs[me])

    rt.launch(k, pes=ONE_PER_CUBE, args=(bufs, outs))
    with pytest.raises(KernelError, match=match) as info:
        rt.run()
    assert f"{__file__}:" in str(info.value)
