"""Every collective takes any contiguous HBM tensor of any rank, or a contiguous region of one, as
its flat view (issue 24, items 2 and 4); a strided region is refused with its shape named."""

from __future__ import annotations

import numpy as np
import pytest
from allreduce_kit import exact_sum, integer_inputs

from kernbench import collectives, tl
from kernbench.collectives import Group, Ring, flat
from kernbench.errors import KernelError
from kernbench.handles import HbmTensor
from kernbench.runtime.api import Runtime
from kernbench.topology.compile import load_topology

PES = [f"sip0.cube{c}.pe0" for c in range(6)]
GROUP = Group(tuple(range(6)), 3)


@pytest.fixture(scope="module")
def torus():
    return load_topology("torus2x3")


def _run(topology, inputs, body):
    """Deploy ``inputs[i]`` (any shape) beside PE i, run ``body(buf)`` in every program; the buffers after."""
    rt = Runtime(topology)
    bufs = [rt.deploy(x, pe=pe, dtype=x.dtype) for x, pe in zip(inputs, PES, strict=True)]

    def k(bufs):
        body(bufs[tl.program_id()])

    rt.launch(k, pes=PES, args=(bufs,))
    rt.run()
    return [rt.read(b) for b in bufs]


SHAPES = [(3, 5, 7), (12, 10), (1, 1, 1, 6)]


@pytest.mark.parametrize("shape", SHAPES, ids=["3d", "2d", "4d"])
@pytest.mark.parametrize("algo", collectives.ALGORITHMS)
def test_all_reduce_of_an_n_d_tensor_is_the_sum_in_its_shape(torus, shape, algo):
    n = int(np.prod(shape))
    inputs = [x.reshape(shape) for x in integer_inputs(6, n, seed=n)]
    outs = _run(torus, inputs, lambda b: collectives.all_reduce(b, GROUP, algo=algo, chunk_bytes=64))
    for out in outs:
        assert out.shape == shape
        np.testing.assert_array_equal(out, exact_sum(inputs))


def test_reduce_scatter_and_all_gather_of_a_matrix_work_on_its_flat_view(torus):
    shape = (10, 33)
    inputs = [x.reshape(shape) for x in integer_inputs(6, 330, seed=1)]
    segs = {}

    def rs(b):
        segs[tl.program_id()] = collectives.reduce_scatter(b, GROUP, chunk_bytes=128)

    outs = _run(torus, inputs, rs)
    want = exact_sum(inputs).reshape(-1)
    for prog, (a, b) in segs.items():
        assert (a, b) == Ring.of(GROUP.snake, prog, 0, 330, 64).segment(GROUP.snake.index(prog))
        np.testing.assert_array_equal(outs[prog].reshape(-1)[a:b], want[a:b])

    gathered = _run(torus, inputs, lambda b: collectives.all_gather(b, GROUP, chunk_bytes=128))
    whole = np.concatenate([inputs[prog].reshape(-1)[a:b] for prog, (a, b) in sorted(segs.items(), key=lambda kv: kv[1])])
    for out in gathered:
        np.testing.assert_array_equal(out.reshape(-1), whole)


def test_a_contiguous_region_is_reduced_and_the_rest_left_alone(torus):
    # rows 2..5 of an (8, 16) tensor: one run of bytes
    inputs = [x.reshape(8, 16) for x in integer_inputs(6, 128, seed=3)]
    outs = _run(torus, inputs, lambda b: collectives.all_reduce(b[2:6, :], GROUP, chunk_bytes=64))
    want = exact_sum([x[2:6] for x in inputs])
    for out, x in zip(outs, inputs, strict=True):
        np.testing.assert_array_equal(out[2:6], want)
        np.testing.assert_array_equal(out[:2], x[:2])
        np.testing.assert_array_equal(out[6:], x[6:])


def test_all_to_all_of_one_row_of_a_matrix(torus):
    inputs = [x.reshape(3, 12) for x in integer_inputs(6, 36, seed=4)]
    outs = _run(torus, inputs, lambda b: collectives.all_to_all(b[1], GROUP, chunk_bytes=64))
    for i, out in enumerate(outs):
        np.testing.assert_array_equal(out[1], np.array([inputs[j][1][2 * i : 2 * i + 2] for j in range(6)]).reshape(-1))
        np.testing.assert_array_equal(out[[0, 2]], inputs[i][[0, 2]])


@pytest.mark.parametrize(
    "op",
    [
        lambda b: collectives.all_reduce(b[:, 0:4], GROUP),
        lambda b: collectives.reduce_scatter(b[::2, :], GROUP),
        lambda b: collectives.all_gather(b[:, 1], GROUP),
        lambda b: collectives.all_to_all(b[:, 0:6], GROUP),
    ],
    ids=["all_reduce", "reduce_scatter", "all_gather", "all_to_all"],
)
def test_a_strided_region_is_refused_naming_it_and_its_shape(torus, op):
    rt = Runtime(torus)
    bufs = [rt.deploy(np.zeros((6, 12), np.float16), pe=pe) for pe in PES]

    def k(bufs):
        op(bufs[tl.program_id()])

    rt.launch(k, pes=PES, args=(bufs,))
    with pytest.raises(KernelError, match=r"\[[^]]*\] of shape \([\d, ]+\) is not contiguous in memory \(a strided region\)"):
        rt.run()


def test_the_flat_view_shares_the_tensors_bytes_and_address():
    t = HbmTensor("x", "sip0.cube0.hbm", 4096, np.arange(24, dtype=np.float16).reshape(2, 3, 4))
    f = flat(t)
    assert f.shape == (24,) and f.memory == t.memory and f.offset == 4096 and f.name == "x"
    f.array[5] = 99
    assert t.array[0, 1, 1] == 99
    assert flat(f) is f  # a 1-D tensor is its own flat view
    r = flat(t[1, 1:3])  # elements 16..23, 32 B in
    assert r.shape == (8,) and r.offset == 4096 + 32 and r.name == "x[1,1:3]"
    np.testing.assert_array_equal(r.array, np.arange(16, 24))
    with pytest.raises(TypeError, match=r"all_reduce: expected an HBM tensor .* not ndarray"):
        flat(np.zeros(4), "all_reduce")
