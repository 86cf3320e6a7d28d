"""Every all-reduce algorithm sums its inputs on any PE set and payload, on mesh and
torus, without deadlock; reduce-scatter and all-gather leave the right segments
(issue 11, section 2)."""

from __future__ import annotations

import numpy as np
import pytest
from allreduce_kit import allreduce, exact_sum, integer_inputs, random_inputs, run_collective

from kernbench import collectives, tl
from kernbench.collectives import ALGORITHMS, Ring
from kernbench.kernels.allreduce import tolerance
from kernbench.topology.compile import load_topology


@pytest.fixture(scope="module")
def grids():
    return {name: load_topology(name) for name in ("torus2x3", "mesh2x3", "paper_torus")}


ONE_PER_CUBE = [f"sip0.cube{c}.pe0" for c in range(6)]

# (topology, PEs in program order, grid rows): one PE per CUBE of the 2x3 grids, three PEs
# of one CUBE, four scattered PEs of a 2x2 mesh in a scrambled order, two PEs on different
# SIPs of the paper topology.
PE_SETS = [
    ("torus2x3", ONE_PER_CUBE, 3),
    ("mesh2x3", ONE_PER_CUBE, 3),
    ("cube1", ["sip0.cube0.pe0", "sip0.cube0.pe3", "sip0.cube0.pe5"], 1),
    ("sip2x2", [30, 5, 17, 2], 2),
    ("paper", ["sip0.cube0.pe0", "sip1.cube15.pe7"], 1),
]

# elements per PE, chunk bytes: one element; fewer elements than PEs; a count no PE set
# divides; several chunks per segment with a ragged last one
PAYLOADS = [(1, 64), (5, 64), (1001, 4096), (3001, 512)]


def _topology(name, grids, request):
    return grids[name] if name in grids else request.getfixturevalue(name)


@pytest.mark.parametrize("algo", ALGORITHMS)
@pytest.mark.parametrize("topo, pes, rows", PE_SETS, ids=[f"{t}-{len(p)}pe" for t, p, _ in PE_SETS])
@pytest.mark.parametrize("n, chunk", PAYLOADS, ids=[f"{n}el" for n, _ in PAYLOADS])
def test_all_reduce_of_whole_numbers_is_exact_everywhere(grids, request, algo, topo, pes, rows, n, chunk):
    inputs = integer_inputs(len(pes), n, seed=n)
    outs, _ = allreduce(_topology(topo, grids, request), pes, inputs, algo, chunk, rows)
    want = exact_sum(inputs)
    for out in outs:
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("algo", ALGORITHMS)
@pytest.mark.parametrize("topo", ["torus2x3", "mesh2x3"])
def test_float16_sum_is_within_the_stated_tolerance_and_identical_on_every_pe(grids, algo, topo):
    inputs = random_inputs(6, 4099, seed=3)
    outs, result = allreduce(grids[topo], ONE_PER_CUBE, inputs, algo, 2048, rows=3)
    ref = sum(x.astype(np.float32) for x in inputs)
    err = max(float(np.abs(o.astype(np.float32) - ref).max()) for o in outs)
    assert 0 < err <= tolerance(6, np.float16)
    for out in outs[1:]:  # every PE ends with the same bits, whatever the order of sums
        np.testing.assert_array_equal(out, outs[0])
    assert result.latency_ns > 0


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_float32_payloads_sum_in_float32(grids, algo):
    inputs = random_inputs(6, 777, seed=4, dtype=np.float32)
    outs, _ = allreduce(grids["torus2x3"], ONE_PER_CUBE, inputs, algo, 1024, rows=3)
    ref = sum(x.astype(np.float64) for x in inputs)
    for out in outs:
        assert out.dtype == np.float32
        assert np.abs(out - ref).max() <= tolerance(6, np.float32)


def test_2d_on_a_grid_that_is_not_the_cube_grid(grids):
    # six PEs of one CUBE row as a 2 x 3 grid: rows of 3, columns of 2
    pes = [f"sip0.cube{c}.pe{p}" for c in (0, 1) for p in (0, 1, 2)]
    inputs = integer_inputs(6, 301)
    outs, _ = allreduce(grids["mesh2x3"], pes, inputs, "2d", 128, rows=2)
    for out in outs:
        np.testing.assert_array_equal(out, exact_sum(inputs))


# --- reduce-scatter and all-gather on their own --------------------------------


def _reduce_scatter(bufs, group, chunk, segs):
    segs[tl.program_id()] = collectives.reduce_scatter(bufs[tl.program_id()], group, chunk_bytes=chunk)


def _all_gather(bufs, group, chunk):
    collectives.all_gather(bufs[tl.program_id()], group, chunk_bytes=chunk)


@pytest.mark.parametrize("n", [7, 1000, 2053])
def test_reduce_scatter_leaves_each_pe_the_sum_of_its_own_segment(grids, n):
    inputs = integer_inputs(6, n, seed=n)
    segs: dict[int, tuple[int, int]] = {}
    outs, _ = run_collective(grids["torus2x3"], ONE_PER_CUBE, inputs, _reduce_scatter, 256, segs, rows=3)
    want = exact_sum(inputs)
    snake = collectives.Group(tuple(range(6)), 3).snake
    covered = []
    for prog, (a, b) in sorted(segs.items()):
        assert (a, b) == Ring.of(snake, prog, 0, n, 128).segment(snake.index(prog))
        np.testing.assert_array_equal(outs[prog][a:b], want[a:b])
        covered += range(a, b)
    assert sorted(covered) == list(range(n))  # the segments partition the buffer


@pytest.mark.parametrize("n", [5, 1000])
def test_all_gather_gives_everyone_every_owners_segment(grids, n):
    group = collectives.Group(tuple(range(6)), 3)
    snake = group.snake
    inputs = integer_inputs(6, n, seed=1)
    want = np.empty(n, np.float16)
    for prog in range(6):
        a, b = Ring.of(snake, prog, 0, n, 64).segment(snake.index(prog))
        want[a:b] = inputs[prog][a:b]
    outs, _ = run_collective(grids["mesh2x3"], ONE_PER_CUBE, inputs, _all_gather, 128, rows=3)
    for out in outs:
        np.testing.assert_array_equal(out, want)


# --- timing properties ----------------------------------------------------------


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_the_same_all_reduce_gives_the_same_latency_twice(grids, algo):
    inputs = integer_inputs(6, 2000)
    a = allreduce(grids["torus2x3"], ONE_PER_CUBE, inputs, algo, 1024, rows=3)[1].latency_ns
    b = allreduce(grids["torus2x3"], ONE_PER_CUBE, inputs, algo, 1024, rows=3)[1].latency_ns
    assert a == b


def test_chunks_pipeline_a_large_payload_but_each_message_pays_its_startup(grids):
    # 6 x 64 KiB segments. In 32 KiB messages one is on the wire while the last is added;
    # in 4 KiB messages the per-message startup (~55 ns against 32 ns of flits) dominates.
    inputs = integer_inputs(6, 6 * 32768)

    def latency(chunk):
        return allreduce(grids["torus2x3"], ONE_PER_CUBE, inputs, "ring", chunk, rows=3)[1].latency_ns

    whole = latency(65536)
    assert latency(32768) < 0.75 * whole
    assert latency(4096) > whole


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_on_the_2x3_grid_the_torus_is_not_slower_than_the_mesh(grids, algo):
    inputs = integer_inputs(6, 8192)
    mesh = allreduce(grids["mesh2x3"], ONE_PER_CUBE, inputs, algo, 4096, rows=3)[1].latency_ns
    torus = allreduce(grids["torus2x3"], ONE_PER_CUBE, inputs, algo, 4096, rows=3)[1].latency_ns
    assert torus <= mesh


def test_ipcq_carries_the_traffic(grids):
    inputs = integer_inputs(6, 4096)
    _, result = allreduce(grids["torus2x3"], ONE_PER_CUBE, inputs, "ring", 1024, rows=3)
    for pe in result.pes:
        busy = result.engine_busy_ns[pe]
        assert busy["ipcq"] > 0 and busy["math"] > 0 and busy["gemm"] == 0


@pytest.mark.parametrize("algo", ALGORITHMS)
@pytest.mark.parametrize("topo", ["paper", "paper_torus"])
def test_every_algorithm_completes_on_both_sips_of_mesh_and_torus(grids, request, algo, topo):
    # PE 0 of all 32 CUBEs, an 8 x 4 grid whose columns cross the PCIe ring between the SIPs;
    # a deadlock would raise DeadlockError naming who waits on what
    graph = _topology(topo, grids, request)
    pes = [f"sip{s}.cube{c}.pe0" for s in (0, 1) for c in range(16)]
    inputs = integer_inputs(32, 100)
    outs, result = allreduce(graph, pes, inputs, algo, 64, rows=8)
    assert len(result.pes) == 32
    for out in outs:
        np.testing.assert_array_equal(out, exact_sum(inputs))
