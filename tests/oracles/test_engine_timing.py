"""PE engine timings in closed form, computed here from the PE's parameters
(the topology's ``pe.attrs``) and the ADR-0064 byte table — never from a
number the simulator printed.

* dispatch: ``(FIXED(type) + logical_bytes × R) / clock + cpu_overhead_ns``,
  ``logical_bytes`` counted field by field from the ADR-0064 D2 table;
* PE_SCHEDULER: its overhead, then FETCH ``in_bytes / tcm_bw`` → engine →
  STORE ``out_bytes / tcm_bw``, each an in-order lane (FETCH and STORE are
  separate lanes);
* GEMM ``gemm_pipeline_cycles / clock + 2·m·k·n / (gemm_tflops · 1e3)``;
  MATH ``(math_pipeline_cycles + ceil(elems / lanes)) / clock``, ``lanes`` being
  ``math_elems_per_cycle`` for a plain op and ``math_transcendental_elems_per_cycle``
  for a transcendental one (exp);
* ``tl.cycles(n)``: ``n / clock``;
* DMA read and write channels hold one transfer at a time, each taking what
  the flit-by-flit reference (``oracle_flits``) says;
* a composite streams ``ceil(largest streamed operand / composite_tile_bytes)``
  tiles, reading each ``tl.ref`` chunk at most two tiles ahead of FETCH.

The clock runs at 2 GHz here so that cycles and nanoseconds differ.
"""

from __future__ import annotations

import itertools
from math import ceil

import numpy as np
import oracle_flits as ref
import pytest
from kernelkit import PE0, busy, dispatches, events, rng_array, run1

import kernbench.tl as tl
from kernbench.events.types import EventKind, StallReason
from kernbench.runtime.api import Runtime

CLOCK = ["pe.attrs.clock_freq_ghz=2.0"]

# ADR-0064 D2, field by field
FRAMING, OPCODE, ENUM, HANDLE, SCALAR, TUPLE_LEN = 4, 1, 1, 8, 4, 1
GEMM_CMD_BYTES = FRAMING + OPCODE + 3 * HANDLE + 3 * SCALAR  # a, b, out; m, k, n
MATH1_CMD_BYTES = FRAMING + OPCODE + TUPLE_LEN + 1 * HANDLE + HANDLE + TUPLE_LEN  # one input, out, no extra
EPS = 1e-9


@pytest.fixture
def rt():
    return Runtime("cube1", CLOCK)


def attrs(rt):
    return rt.graph.nodes[f"{PE0}.cpu"].attrs


def single_op_dispatch_ns(a, logical_bytes: int) -> float:
    c = a["pe_cost_model"]
    return (c["fixed_per_single_op_cmd_cycles"] + logical_bytes * c["byte_cycles_recip"]) / a["clock_freq_ghz"] + a["cpu_overhead_ns"]


def gemm_ns(a, m: int, k: int, n: float) -> float:
    return a["gemm_pipeline_cycles"] / a["clock_freq_ghz"] + 2.0 * m * k * n / (a["gemm_tflops"] * 1e3)


def math_ns(a, elems: float, lanes: str = "math_elems_per_cycle") -> float:
    return (a["math_pipeline_cycles"] + ceil(elems / a[lanes])) / a["clock_freq_ghz"]


def spans(r, engine: str, label: str | None = None, pe: str = PE0):
    return sorted((e for e in busy(r, engine, pe) if label is None or e.label.startswith(label)), key=lambda e: (e.t_ns, e.seq))


def test_the_clock_override_makes_cycles_and_ns_differ(rt):
    assert attrs(rt)["clock_freq_ghz"] == 2.0


def test_a_gemm_pays_dispatch_scheduler_fetch_engine_and_store_in_closed_form(rt):
    a = attrs(rt)
    m, k, n = 64, 96, 80
    held = {}

    def kern(x, y):
        xa, yb = tl.load(x), tl.load(y)
        tl.wait(xa)
        tl.wait(yb)
        held["out"] = tl.dot(xa, yb)

    r = run1(rt, kern, rt.deploy(rng_array((m, k), 1)), rt.deploy(rng_array((k, n), 2)))
    (d,) = [e for e in dispatches(r) if e.label == "GemmCmd"]
    assert d.end_ns - d.t_ns == pytest.approx(single_op_dispatch_ns(a, GEMM_CMD_BYTES), abs=EPS)
    (f,) = spans(r, "fs", "fetch")
    (g,) = spans(r, "gemm")
    (s,) = spans(r, "fs", "store")
    assert f.t_ns == pytest.approx(d.end_ns + a["sched_overhead_ns"], abs=EPS)
    assert f.end_ns - f.t_ns == pytest.approx((m * k + k * n) * 2 / a["tcm_bw_gbps"], abs=EPS)
    assert g.t_ns == pytest.approx(f.end_ns, abs=EPS)
    assert g.end_ns - g.t_ns == pytest.approx(gemm_ns(a, m, k, n), abs=EPS)
    assert s.t_ns == pytest.approx(g.end_ns, abs=EPS)
    assert s.end_ns - s.t_ns == pytest.approx(held["out"].nbytes / a["tcm_bw_gbps"], abs=EPS)
    assert held["out"].nbytes == m * n * 4  # tl.dot accumulates and returns float32


@pytest.mark.parametrize(
    "op, lanes", [(tl.neg, "math_elems_per_cycle"), (tl.exp, "math_transcendental_elems_per_cycle")], ids=["plain", "transcendental"]
)
def test_a_math_op_pays_its_pipeline_and_every_started_vector(rt, op, lanes):
    a = attrs(rt)
    held = {}

    def kern(x):
        xa = tl.load(x)
        tl.wait(xa)
        held["out"] = op(xa)

    r = run1(rt, kern, rt.deploy(rng_array((10, 30), 3)))  # 300 elements: 4.69 vectors of 64, 18.75 of 16
    (d,) = [e for e in dispatches(r) if e.label == "MathCmd"]
    assert d.end_ns - d.t_ns == pytest.approx(single_op_dispatch_ns(a, MATH1_CMD_BYTES), abs=EPS)
    (mth,) = spans(r, "math")
    assert mth.end_ns - mth.t_ns == pytest.approx(math_ns(a, 300, lanes), abs=EPS)
    (f,) = spans(r, "fs", "fetch")
    (s,) = spans(r, "fs", "store")
    assert f.end_ns - f.t_ns == pytest.approx(300 * 2 / a["tcm_bw_gbps"], abs=EPS)
    assert (mth.t_ns, s.t_ns) == pytest.approx((f.end_ns, mth.end_ns), abs=EPS)
    assert s.end_ns - s.t_ns == pytest.approx(held["out"].nbytes / a["tcm_bw_gbps"], abs=EPS)


def test_tl_cycles_costs_n_over_the_clock(rt):
    r = run1(rt, lambda: tl.cycles(1000))
    (w,) = [e for e in events(r, EventKind.CPU_WORK, f"{PE0}.cpu") if e.value == 1000]
    assert w.end_ns - w.t_ns == pytest.approx(1000 / attrs(rt)["clock_freq_ghz"], abs=EPS)


def test_a_full_scheduler_queue_stalls_until_the_oldest_command_completes(rt):
    a = attrs(rt)
    depth = a["sched_queue_depth"]
    extra = 4
    m = 128

    def kern(x, y):
        xa, yb = tl.load(x), tl.load(y)
        tl.wait(xa)
        tl.wait(yb)
        for _ in range(depth + extra):
            tl.dot(xa, yb)

    r = run1(rt, kern, rt.deploy(rng_array((m, m), 1)), rt.deploy(rng_array((m, m), 2)))
    ds = [e for e in dispatches(r) if e.label == "GemmCmd"]
    gs, ss = spans(r, "gemm"), spans(r, "fs", "store")
    fs = spans(r, "fs", "fetch")
    assert len(ds) == len(gs) == depth + extra
    # dispatches run back to back until the queue is full
    dur = single_op_dispatch_ns(a, GEMM_CMD_BYTES)
    for i in range(depth):
        assert ds[i].end_ns - ds[0].t_ns == pytest.approx((i + 1) * dur, abs=1e-6)
    # then command depth + j waits for command j to complete (its STORE), exactly `extra` times
    full = [e for e in events(r, EventKind.STALL, f"{PE0}.cpu") if e.label == StallReason.QUEUE_FULL.value]
    assert len(full) == extra
    for j, st in enumerate(full):
        assert st.end_ns == pytest.approx(ss[j].end_ns, abs=EPS)
        assert ds[depth + j].t_ns == pytest.approx(ss[j].end_ns, abs=EPS)
    # FETCH is its own in-order lane: each command's FETCH starts when it has arrived and the
    # previous FETCH is done — not behind the previous STORE, so it overlaps the previous GEMM
    for i in range(1, depth):
        assert fs[i].t_ns == pytest.approx(max(ds[i].end_ns + a["sched_overhead_ns"], fs[i - 1].end_ns), abs=EPS)
    assert fs[1].t_ns < gs[0].end_ns
    for g, s in zip(gs, ss, strict=False):
        assert s.t_ns == pytest.approx(g.end_ns, abs=EPS)
    # PE_GEMM runs the commands back to back, in order, one at a time
    for g0, g1 in itertools.pairwise(gs):
        assert g1.t_ns == pytest.approx(g0.end_ns, abs=EPS)
        assert g1.end_ns - g1.t_ns == pytest.approx(gemm_ns(a, m, m, m), abs=EPS)


def test_dma_channels_hold_one_transfer_each_and_a_write_waits_for_its_data(rt):
    g = rt.graph
    held = {}

    def kern(x, y, out):
        xa, yb = tl.load(x), tl.load(y)
        held["p"] = tl.dot(xa, yb)
        tl.store(out, held["p"])

    n = 128
    x, y = rt.deploy(rng_array((n, n), 1)), rt.deploy(rng_array((n, n), 2))
    out = rt.empty((n, n), dtype=np.float32)
    r = run1(rt, kern, x, y, out)
    rd = spans(r, "dma.rd")
    (wr,) = spans(r, "dma.wr")
    (st,) = spans(r, "fs", "store")
    read = ref.read_ns(g, f"{PE0}.dma", "sip0.cube0.hbm.slice0", [0], n * n * 2)
    assert [e.end_ns - e.t_ns for e in rd] == pytest.approx([read, read], abs=1e-6)
    assert rd[1].t_ns == pytest.approx(rd[0].end_ns, abs=EPS)  # one read channel
    assert wr.t_ns == pytest.approx(st.end_ns, abs=EPS)  # the write starts once the data is stored
    write = ref.write_ns(g, f"{PE0}.dma", "sip0.cube0.hbm.slice0", [0], n * n * 4)
    assert wr.end_ns - wr.t_ns == pytest.approx(write, abs=1e-6)


def test_a_composite_streams_tiles_at_most_two_ahead_of_fetch(rt):
    """add(streamed ref, TCM result of a long GEMM): reads race ahead while
    FETCH waits for the GEMM, but only two tile buffers deep."""
    a = attrs(rt)
    held = {}
    M, K, N = 256, 256, 250

    def kern(x, y, rr, out):
        xa, yb = tl.load(x), tl.load(y)
        p = held["p"] = tl.dot(xa, yb)
        tl.composite([tl.OpSpec("add", {"a": tl.ref(rr), "b": p}, tl.ref(out))])

    x, y = rt.deploy(rng_array((M, K), 1)), rt.deploy(rng_array((K, N), 2))
    rr = rt.deploy(rng_array((M, N), 3, np.float32), dtype=np.float32)
    out = rt.empty((M, N), dtype=np.float32)
    r = run1(rt, kern, x, y, rr, out)
    streamed = M * N * 4
    tiles = ceil(streamed / a["composite_tile_bytes"])  # 256000 B / 32 KiB: 7.8 -> 8
    reads = [e for e in spans(r, "dma.rd") if e.label.startswith("tile")]
    fetches = spans(r, "fs", "fetch add")
    maths = spans(r, "math")
    stores = spans(r, "fs", "store add")
    assert len(reads) == len(fetches) == len(maths) == len(stores) == tiles
    (p_stored,) = spans(r, "fs", "store gemm")
    assert fetches[0].t_ns == pytest.approx(p_stored.end_ns, abs=EPS)  # FETCH waits for its TCM input
    for i in range(1, tiles):
        free = fetches[i - 2].end_ns if i >= 2 else 0.0  # the buffer tile i reuses
        assert reads[i].t_ns == pytest.approx(max(reads[i - 1].end_ns, free), abs=EPS), i
    assert reads[2].t_ns > reads[1].end_ns + 100  # the buffers really were the limit
    fetch_ns = (streamed + held["p"].nbytes) / tiles / a["tcm_bw_gbps"]
    elems = M * N / tiles
    for f, mth, s in zip(fetches, maths, stores, strict=False):
        assert f.end_ns - f.t_ns == pytest.approx(fetch_ns, abs=EPS)
        assert mth.end_ns - mth.t_ns == pytest.approx(math_ns(a, elems), abs=EPS)
        assert s.end_ns - s.t_ns == pytest.approx(M * N * 4 / tiles / a["tcm_bw_gbps"], abs=EPS)


@pytest.mark.parametrize("transpose", [False, True])
def test_a_composite_gemm_splits_its_flops_over_the_tiles(rt, transpose):
    a = attrs(rt)
    m, k, n = 64, 384, 96  # B is 73,728 B of f16: 3 tiles of 32 KiB

    def kern(x, y):
        out = tl.zeros((m, n))
        tl.composite([tl.OpSpec("gemm", {"a": tl.ref(x), "b": tl.ref(y)}, out, extra={"transpose_b": transpose})])

    b = rng_array((n, k) if transpose else (k, n), 2)
    r = run1(rt, kern, rt.deploy(rng_array((m, k), 1)), rt.deploy(b))
    tiles = ceil(max(m * k, k * n) * 2 / a["composite_tile_bytes"])
    gs = spans(r, "gemm")
    assert len(gs) == tiles == 3
    for g in gs:
        assert g.end_ns - g.t_ns == pytest.approx(gemm_ns(a, m, k, n / tiles), abs=EPS)
