"""Indexing (issue 24 item 1): ``tl.topk`` and ``tl.argmax`` compute what numpy does and cost
what docs/tl.md says (PE_MATH work: elements × ceil(log2(k + 1)) for a top-k, elements for an
argmax), as single ops and as composite kinds; ``tl.gather`` and ``tl.scatter`` move one DMA per
row at the row's real address, after the index is ready, with the logical bytes of ADR-0064 D2."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from kernelkit import PE0, busy, dispatches, events, rng_array, run1

import kernbench.tl as tl
from kernbench.errors import KernelError
from kernbench.events.types import EventKind, StallReason
from kernbench.pe.commands import GatherCmd
from kernbench.pe.opkinds import compare_passes
from kernbench.pe.requests import Issue
from kernbench.runtime.api import Runtime

TCM_GBPS = 512.0  # cube1's pe.attrs: tcm_bw_gbps
MATH_LANES, MATH_PIPE = 64, 4  # math_elems_per_cycle, math_pipeline_cycles (1 GHz)
SINGLE_FIXED, R = 8.0, 0.0625  # fixed_per_single_op_cmd_cycles, byte_cycles_recip


@pytest.fixture
def rt(cube1):
    return Runtime(cube1)


def math_ns(elems):
    return MATH_PIPE + math.ceil(elems / MATH_LANES)


def op_log(result, pe=PE0):
    return result.op_logs[pe]


# --- topk and argmax ----------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3, 8, 64])
def test_topk_gives_the_k_largest_of_each_row_and_their_columns_largest_first(rt, k):
    X = rng_array((32, 64), 1)
    X[3, 10] = X[3, 20] = 9.0  # a tie: the lower column first
    got = {}

    def kern(x):
        v, i = tl.topk(tl.load(x), k)
        got["v"], got["i"] = v.numpy(), i.numpy()

    run1(rt, kern, rt.deploy(X), record=False)
    order = np.argsort(-X.astype(np.float32), axis=1, kind="stable")[:, :k]
    assert got["i"].dtype == np.int32 and got["v"].dtype == np.float16
    np.testing.assert_array_equal(got["i"], order)
    np.testing.assert_array_equal(got["v"], np.take_along_axis(X, order, axis=1))
    np.testing.assert_array_equal(got["v"], -np.sort(-X, axis=1)[:, :k])
    assert list(got["i"][3, :2]) == [10, 20] if k > 1 else got["i"][3, 0] == 10


def test_compare_passes_is_ceil_log2_of_k_plus_one():
    assert [compare_passes(k) for k in (1, 2, 3, 4, 7, 8, 64)] == [1, 2, 2, 3, 3, 4, 7]


@pytest.mark.parametrize("k", [1, 2, 8])
def test_topk_is_one_command_charged_elements_times_log2_k_compares(rt, k):
    X = rng_array((32, 64), 2)

    def kern(x):
        t = tl.wait(tl.load(x))
        tl.topk(t, k)

    r = run1(rt, kern, rt.deploy(X))
    (entry,) = [e for e in op_log(r) if e["cmd"] == "MathPairCmd"]
    assert entry["op"] == "compute/math.topk"
    assert entry["logical_bytes"] == 35 and entry["dispatch_cycles"] == SINGLE_FIXED + 35 * R
    (m,) = busy(r, "math")
    assert m.end_ns - m.t_ns == pytest.approx(math_ns(32 * 64 * math.ceil(math.log2(k + 1))))
    fetch, store = busy(r, "fs")
    assert fetch.end_ns - fetch.t_ns == pytest.approx(32 * 64 * 2 / TCM_GBPS)
    assert store.end_ns - store.t_ns == pytest.approx((32 * k * 2 + 32 * k * 4) / TCM_GBPS)  # values f16 + indices int32


def test_both_topk_results_are_ready_when_its_store_ends(rt):
    def kern(x):
        v, i = tl.topk(tl.wait(tl.load(x)), 4)
        tl.exp(v)
        tl.scale(i, 1.0)

    r = run1(rt, kern, rt.deploy(rng_array((32, 64), 3)))
    spans = busy(r, "fs")
    topk_store = next(e for e in spans if e.label == "store topk")
    assert next(e for e in spans if e.label == "fetch exp").t_ns >= topk_store.end_ns
    assert next(e for e in spans if e.label == "fetch scale").t_ns >= topk_store.end_ns


def test_argmax_gives_the_first_largest_column_for_one_compare_per_element(rt):
    X = rng_array((32, 64), 4)
    X[5, 7] = X[5, 9] = 10.0
    got = {}

    def kern(x):
        got["a"] = tl.argmax(tl.wait(tl.load(x))).numpy()

    r = run1(rt, kern, rt.deploy(X))
    assert got["a"].dtype == np.int32 and got["a"].shape == (32, 1)
    np.testing.assert_array_equal(got["a"][:, 0], np.argmax(X, axis=1))
    assert got["a"][5, 0] == 7
    (entry,) = [e for e in op_log(r) if e["cmd"] == "MathCmd"]
    assert entry["op"] == "compute/math.argmax" and entry["logical_bytes"] == 23
    (m,) = busy(r, "math")
    assert m.end_ns - m.t_ns == pytest.approx(math_ns(32 * 64))
    _, store = busy(r, "fs")
    assert store.end_ns - store.t_ns == pytest.approx(32 * 4 / TCM_GBPS)


def test_the_indexing_kinds_run_in_a_composite_at_the_same_work(rt):
    X = rng_array((16, 64), 5)  # 2 KiB: one step
    got = {}

    def kern(x):
        v, i, a = tl.zeros((16, 3)), tl.zeros((16, 3)), tl.zeros((16, 1))
        tl.composite(
            [
                tl.OpSpec("topk", {"x": tl.ref(x)}, v, extra={"k": 3}),
                tl.OpSpec("topk_indices", {"x": tl.ref(x)}, i, extra={"k": 3}),
                tl.OpSpec("argmax", {"x": tl.ref(x)}, a),
            ]
        )
        got["v"], got["i"], got["a"] = v.numpy(), i.numpy(), a.numpy()

    r = run1(rt, kern, rt.deploy(X))
    order = np.argsort(-X.astype(np.float32), axis=1, kind="stable")[:, :3]
    np.testing.assert_array_equal(got["i"], order)
    np.testing.assert_array_equal(got["v"], np.take_along_axis(X, order, axis=1).astype(np.float32))
    np.testing.assert_array_equal(got["a"][:, 0], np.argmax(X, axis=1))
    spans = {e.label: e.end_ns - e.t_ns for e in busy(r, "math")}
    assert spans["topk"] == spans["topk_indices"] == pytest.approx(math_ns(16 * 64 * 2))  # ceil(log2 4) = 2
    assert spans["argmax"] == pytest.approx(math_ns(16 * 64))


def test_topk_and_argmax_errors_name_the_handle_and_shape(cube1):
    for body, message in [
        (lambda t: tl.topk(t, 0), r"k must be an integer in 1\.\.128 \(the rows of h0:load .* \(64, 128\) are 128 long\), got 0"),
        (lambda t: tl.topk(t, 129), r"k must be an integer in 1\.\.128"),
        (lambda t: tl.argmax(t[0]), r"h0:load .*\[0\] \(128,\) has no rows"),
    ]:

        def kern(x, body=body):
            body(tl.load(x))

        rt = Runtime(cube1)
        with pytest.raises(KernelError, match=message):
            run1(rt, kern, rt.deploy(rng_array((64, 128), 6)), record=False)


# --- gather -------------------------------------------------------------------------------


def test_gather_picks_rows_by_a_handle_or_host_indices(rt):
    X = rng_array((64, 128), 7)
    picks = np.array([5, 63, 0, 5], dtype=np.int32)
    got = {}

    def kern(x, ix):
        got["host"] = tl.gather(x, [5, 63, 0, 5]).numpy()
        got["np"] = tl.gather(x[:, 32:96], np.array([[1], [2]])).numpy()
        got["handle"] = tl.gather(tl.ref(x), tl.load(ix)).numpy()

    run1(rt, kern, rt.deploy(X), rt.deploy(picks), record=False)
    np.testing.assert_array_equal(got["host"], X[picks])
    np.testing.assert_array_equal(got["np"], X[[1, 2], 32:96])
    np.testing.assert_array_equal(got["handle"], X[picks])


def _gather_spans(r):
    return [e for e in busy(r, "dma.rd") if e.label == "gather"]


def test_gather_is_one_dma_per_row_at_its_real_address_with_the_bytes_of_the_rows(rt):
    rows = [9, 2, 40]
    x = rt.deploy(rng_array((64, 128), 8), name="x")

    def kern(x):
        tl.wait(tl.gather(x[:, 0:64], rows))

    r = run1(rt, kern, x)
    (entry,) = [e for e in op_log(r) if e["cmd"] == "GatherCmd"]
    assert entry["op"] == "memory/gather" and entry["logical_bytes"] == 25 + 4 * len(rows)
    spans = _gather_spans(r)
    assert len(spans) == len(rows) and [s.value for s in spans] == [64 * 2] * 3
    assert sum(s.value for s in spans) == len(rows) * 64 * 2
    for a, b in itertools.pairwise(spans):
        assert b.t_ns >= a.end_ns  # one after another on the read channel
    (cmd,) = [req.cmd for req in r.command_logs[PE0].requests if isinstance(req, Issue) and isinstance(req.cmd, GatherCmd)]
    assert [(g.starts, g.run_bytes) for g in cmd.rows] == [((x.offset + row * 256,), 128) for row in rows]
    (landed,) = events(r, EventKind.LOAD_COMPLETE)
    assert landed.t_ns == spans[-1].end_ns and landed.value == 3 * 128


def test_a_gather_takes_the_time_of_its_rows_one_dma_each_not_of_one_block(cube1):
    """Model identity: a gather's reads are the reads of one-row loads of its rows, back to back;
    rows spread over the memory take another time than one block of the same bytes."""
    X = rng_array((256, 128), 9)

    def channel_busy(kern):
        rt = Runtime(cube1)
        r = run1(rt, kern, rt.deploy(X))
        return [s.end_ns - s.t_ns for s in busy(r, "dma.rd")], r

    spread = [0, 37, 101, 200]
    gathered, _ = channel_busy(lambda x: tl.wait(tl.gather(x, spread)))
    one_by_one, _ = channel_busy(lambda x: [tl.wait(tl.load(x[i])) for i in spread])
    assert gathered == pytest.approx(one_by_one)
    block, _ = channel_busy(lambda x: tl.wait(tl.load(x[0:4])))
    contiguous, _ = channel_busy(lambda x: tl.wait(tl.gather(x, [0, 1, 2, 3])))
    assert len(block) == 1 and len(contiguous) == 4
    assert sum(contiguous) != pytest.approx(block[0])
    assert sum(gathered) != pytest.approx(block[0])


def test_gather_waits_for_its_index_on_pe_cpu_and_on_the_read_channel(rt):
    X = rng_array((64, 128), 10)

    def kern(x, ix):
        i = tl.load(ix)  # lazy: the gather auto-waits for it
        tl.wait(tl.gather(x, i))
        best = tl.argmax(tl.wait(tl.load(x[0:4, 0:64])))  # made by PE_MATH: the DMAs wait for it
        tl.wait(tl.gather(x, best))

    r = run1(rt, kern, rt.deploy(X), rt.deploy(np.array([3, 1], dtype=np.int32)))
    stalls = [s for s in events(r, EventKind.STALL) if s.label == StallReason.LAZY_LOAD.value]
    first_gather = next(d for d in dispatches(r) if d.label == "GatherCmd")
    assert stalls[0].end_ns == first_gather.t_ns  # waited for the index's load, then dispatched
    argmax_store = next(e for e in busy(r, "fs") if e.label == "store argmax")
    assert _gather_spans(r)[2].t_ns >= argmax_store.end_ns  # the second gather's first row


def test_a_handle_index_costs_32_logical_bytes(rt):
    def kern(x, ix):
        tl.gather(x, tl.load(ix))

    r = run1(rt, kern, rt.deploy(rng_array((64, 128), 11)), rt.deploy(np.arange(8, dtype=np.int32)))
    (entry,) = [e for e in op_log(r) if e["cmd"] == "GatherCmd"]
    assert entry["logical_bytes"] == 32 and entry["dispatch_cycles"] == SINGLE_FIXED + 32 * R
    assert len(_gather_spans(r)) == 8


# --- scatter ------------------------------------------------------------------------------


def test_scatter_writes_rows_one_dma_each_after_the_value_is_ready(rt):
    X = rng_array((4, 128), 12)
    out = rt.empty((64, 128))

    def kern(x, out):
        t = tl.exp(tl.wait(tl.load(x)))
        tl.scatter(out, [10, 3, 10, 50], t)  # row 10 twice: the later value stays

    r = run1(rt, kern, rt.deploy(X), out)
    expected = np.zeros((64, 128), np.float16)
    e = np.exp(X.astype(np.float32)).astype(np.float16)
    expected[3], expected[50], expected[10] = e[1], e[3], e[2]
    np.testing.assert_array_equal(rt.read(out), expected)
    (entry,) = [x for x in op_log(r) if x["cmd"] == "ScatterCmd"]
    assert entry["op"] == "memory/scatter" and entry["logical_bytes"] == 25 + 4 * 4
    writes = [s for s in busy(r, "dma.wr") if s.label == "scatter"]
    assert [s.value for s in writes] == [256] * 4
    exp_store = next(s for s in busy(r, "fs") if s.label == "store exp")
    assert writes[0].t_ns >= exp_store.end_ns
    for a, b in itertools.pairwise(writes):
        assert b.t_ns >= a.end_ns


def test_scatter_by_an_index_handle_and_into_a_region(rt):
    X = rng_array((2, 32), 13)
    out = rt.empty((16, 64))

    def kern(x, ix, out):
        tl.scatter(out[:, 32:64], tl.load(ix), tl.load(x))

    run1(rt, kern, rt.deploy(X), rt.deploy(np.array([[7], [1]], dtype=np.int32)), out, record=False)
    got = rt.read(out)
    np.testing.assert_array_equal(got[[7, 1], 32:64], X)
    assert not got[:, :32].any() and np.count_nonzero(got.any(axis=1)) == 2


# --- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, error, message",
    [
        (
            lambda x, t: tl.gather(x, [0, 64]),
            IndexError,
            r"row 64 \(position 1 of the host-side index\) is out of range for x\[:\] \(64, 128\), rows 0\.\.63",
        ),
        (lambda x, t: tl.gather(x, [-1]), IndexError, r"row -1 \(position 0"),
        (lambda x, t: tl.gather(x, tl.full((3,), 70.0)), IndexError, r"row 70 \(position 0 of h\d+:full 70.0\)"),
        (lambda x, t: tl.gather(x, tl.scale(t[0:1, 0:4], 0.5)), ValueError, r"holds .* at position \d, not a row number"),
        (lambda x, t: tl.gather(x, []), ValueError, r"names no row"),
        (lambda x, t: tl.gather(t, [0]), TypeError, r"src: expected an HBM tensor"),
        (
            lambda x, t: tl.scatter(x, [1, 2], t),
            ValueError,
            r"value h0:load .* \(64, 128\) does not match 2 rows of x\[:\] \(64, 128\): \(2, 128\)",
        ),
        (lambda x, t: tl.scatter(x, [1], tl.ref(x)[0:1]), TypeError, r"only tl.composite can stream it"),
    ],
    ids=["past the end", "negative", "handle out of range", "not whole", "empty", "tcm src", "scatter shape", "scatter ref"],
)
def test_a_bad_gather_or_scatter_raises_one_clear_error(rt, body, error, message):
    def kern(x):
        body(x, tl.load(x))

    with pytest.raises(KernelError, match=message) as info:
        run1(rt, kern, rt.deploy(np.abs(rng_array((64, 128), 14)) + 1, name="x"), record=False)
    assert error.__name__ in str(info.value)


# --- replay and observation -----------------------------------------------------------------


def _routing_kernel(x, w, out):
    """An MoE-style step: score, pick the top 2 rows, gather them, project a column block, scatter back."""
    t = tl.load(x)
    scores = tl.rowsum(t[:, 0:64])  # a copy view, then a reduction: (64, 1)
    _, top = tl.topk(scores.T, 2)  # a free transpose: (1, 2)
    rows = tl.gather(x, top)  # 2 rows, one DMA each
    proj = tl.dot(rows, tl.load(w))
    tl.scatter(out, top.reshape(2), proj.reshape(2, 64)[:, 0:32])


def test_views_and_indexing_replay_with_identical_accounting_and_events(cube1):
    rt = Runtime(cube1)
    out = rt.empty((64, 32), np.float32)
    X, W = rng_array((64, 128), 15), rng_array((128, 64), 16)
    live = run1(rt, _routing_kernel, rt.deploy(X), rt.deploy(W), out)
    scores = X[:, 0:64].astype(np.float32).sum(axis=1).astype(np.float16)
    top = np.argsort(-scores.astype(np.float32), kind="stable")[:2]
    expected = np.zeros((64, 32), np.float32)
    expected[top] = (X[top].astype(np.float32) @ W.astype(np.float32))[:, 0:32]
    np.testing.assert_allclose(rt.read(out), expected, rtol=1e-5, atol=1e-5)
    quiet = rt.replay(live, record=False)
    again = rt.replay(live, record=True)
    assert [e["cmd"] for e in live.op_logs[PE0]] == [
        "DmaReadCmd",
        "CopyCmd",
        "MathCmd",
        "MathPairCmd",
        "GatherCmd",
        "DmaReadCmd",
        "GemmCmd",
        "CopyCmd",
        "ScatterCmd",
    ]
    for r in (quiet, again):
        assert r.latency_ns == live.latency_ns and r.op_logs == live.op_logs
        assert r.engine_busy_ns == live.engine_busy_ns and r.stall_ns == live.stall_ns
    stream = [(e.t_ns, e.kind, e.component, e.end_ns, e.label, e.value) for e in live.events]
    assert [(e.t_ns, e.kind, e.component, e.end_ns, e.label, e.value) for e in again.events] == stream


@pytest.mark.parametrize("k", [0, 65, 2.5, (2,)])
def test_a_composite_topk_with_a_bad_k_is_refused_before_it_is_issued(rt, k):
    def kern(x):
        tl.composite([tl.OpSpec("topk", {"x": tl.ref(x)}, tl.zeros((16, 2)), extra={"k": k})])

    with pytest.raises(KernelError, match=r"top-k: k must be an integer in 1\.\.64 \(the row length\)"):
        run1(rt, kern, rt.deploy(rng_array((16, 64), 17)), record=False)
