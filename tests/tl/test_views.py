"""Views (issue 24 item 2): ``h[a:b, c:d]``, ``reshape`` and ``transpose`` on TCM handles, on
``tl.ref`` and on HBM regions. A view that is address arithmetic issues no command and costs
nothing (the ops that read it fetch its bytes, once its base is ready); one that moves data is
a ``CopyCmd`` through PE_FETCH_STORE, timed by hand from docs/tl.md; HBM views are regions of
the same bytes, moved at their real addresses."""

from __future__ import annotations

import numpy as np
import pytest
from kernelkit import PE0, busy, dispatches, events, rng_array, run1

import kernbench.tl as tl
from kernbench.errors import KernelError
from kernbench.events.types import EventKind, StallReason
from kernbench.runtime.api import Runtime
from kernbench.tl.context import current
from kernbench.tl.views import TensorView

TCM_GBPS = 512.0  # cube1's pe.attrs: tcm_bw_gbps
MATH_LANES, MATH_PIPE = 64, 4  # math_elems_per_cycle, math_pipeline_cycles (1 GHz)
SINGLE_FIXED, R = 8.0, 0.0625  # fixed_per_single_op_cmd_cycles, byte_cycles_recip


@pytest.fixture
def rt(cube1):
    return Runtime(cube1)


def cmds(result, pe=PE0):
    return [e["cmd"] for e in result.op_logs[pe]]


# --- TCM: free views ---------------------------------------------------------------


def test_a_row_block_is_free_and_an_op_on_it_fetches_its_bytes_once_the_base_has_landed(rt):
    X = rng_array((64, 128), 1)
    got = {}

    def k(x):
        t = tl.load(x)
        v = t[16:32]
        got["free"] = isinstance(v, TensorView) and v.ref.id == t.ref.id
        got["v"] = tl.exp(v).numpy()

    r = run1(rt, k, rt.deploy(X))
    assert got["free"]
    np.testing.assert_array_equal(got["v"], np.exp(X[16:32].astype(np.float32)).astype(np.float16))
    assert cmds(r) == ["DmaReadCmd", "MathCmd"]  # the view issued nothing
    # the exp waited (auto-wait, ADR-0062) for the base's load, then fetched 16 rows only
    (landed,) = events(r, EventKind.LOAD_COMPLETE)
    (stall,) = events(r, EventKind.STALL)
    assert stall.label == StallReason.LAZY_LOAD.value and stall.end_ns == landed.t_ns
    fetch, _store = busy(r, "fs")
    (math_span,) = busy(r, "math")
    assert fetch.end_ns - fetch.t_ns == pytest.approx(16 * 128 * 2 / TCM_GBPS)
    assert math_span.end_ns - math_span.t_ns == pytest.approx(MATH_PIPE + 16 * 128 / MATH_LANES)


def test_a_reshape_is_free_and_has_exactly_the_latency_of_the_base(cube1):
    X = rng_array((64, 128), 2)
    lat, vals = {}, {}
    for name, shape in (("base", None), ("reshaped", (128, 64)), ("3d", (4, -1, 32))):

        def k(x, shape=shape, name=name):
            t = tl.load(x)
            u = t if shape is None else t.reshape(shape)
            vals[name] = tl.exp(u).numpy().reshape(-1)

        rt = Runtime(cube1)
        r = run1(rt, k, rt.deploy(X))
        lat[name] = r.latency_ns
        assert cmds(r) == ["DmaReadCmd", "MathCmd"]
    assert lat["base"] == lat["reshaped"] == lat["3d"]
    np.testing.assert_array_equal(vals["base"], vals["3d"])


def test_views_compose_and_address_the_base_elements(rt):
    X = rng_array((8, 6, 4), 3)
    got = {}

    def k(x):
        t = tl.load(x)
        a = t[2:5]  # (3, 6, 4): whole rows
        b = a.reshape(18, 4)[5]  # one row of it: (4,)
        c = t[7, 2, 1:3]  # within one row
        d = tl.zeros((1, 32)).T  # a size-1 transpose: free
        got["free"] = [isinstance(h, TensorView) for h in (a, b, c, d)]
        got["a"], got["b"], got["c"], got["d"] = a.numpy(), b.numpy(), c.numpy(), d.shape

    r = run1(rt, k, rt.deploy(X))
    assert got["free"] == [True, True, True, True]
    assert cmds(r) == ["DmaReadCmd"]
    np.testing.assert_array_equal(got["a"], X[2:5])
    np.testing.assert_array_equal(got["b"], X[2:5].reshape(18, 4)[5])
    np.testing.assert_array_equal(got["c"], X[7, 2, 1:3])
    assert got["d"] == (32, 1)


def test_a_free_view_shares_its_base_scratch_and_keeps_the_base_alive(rt):
    used = {}

    def k(x):
        ctx = current()
        used["empty"] = ctx.scratch_used
        t = tl.wait(tl.load(x))
        used["base"] = ctx.scratch_used
        v = t[0:8].reshape(8, 2, 64)
        used["view"] = ctx.scratch_used
        del t
        used["base dropped"] = ctx.scratch_used  # the view keeps it
        used["value"] = v.numpy()
        del v
        used["both dropped"] = ctx.scratch_used

    X = rng_array((64, 128), 4)
    run1(rt, k, rt.deploy(X), record=False)
    nbytes = 64 * 128 * 2
    assert used["base"] == used["view"] == used["base dropped"] == used["empty"] + nbytes
    assert used["both dropped"] == used["empty"]
    np.testing.assert_array_equal(used["value"], X[0:8].reshape(8, 2, 64))


def test_a_composite_writing_a_view_writes_the_base_rows_and_later_readers_wait_for_it(rt, cube1):
    X, W = rng_array((64, 128), 5), rng_array((128, 64), 6)
    got = {}

    def k(x, w):
        acc = tl.zeros((64, 64))
        tl.composite([tl.OpSpec("gemm", {"a": tl.ref(x)[32:64], "b": tl.ref(w)}, acc[32:64])])
        got["acc"] = tl.exp(acc).numpy()  # reads the whole base: after the composite

    r = run1(rt, k, rt.deploy(X), rt.deploy(W))
    expected = np.zeros((64, 64), np.float32)
    expected[32:] = X[32:].astype(np.float32) @ W.astype(np.float32)
    np.testing.assert_allclose(got["acc"], np.exp(expected), rtol=1e-5)
    (gemm_store,) = [e for e in busy(r, "fs") if e.label.startswith("store") and "gemm" in e.label]
    fetch_exp = next(e for e in busy(r, "fs") if e.label == "fetch exp")
    assert fetch_exp.t_ns >= gemm_store.end_ns
    # the tl.ref view streamed its 32 rows only
    assert sum(e.value for e in busy(r, "dma.rd")) == 32 * 128 * 2 + 128 * 64 * 2


def test_a_free_view_of_a_computed_handle_is_read_once_the_producer_has_stored_it(rt):
    X = rng_array((64, 128), 13)
    got = {}

    def k(x):
        e = tl.exp(tl.wait(tl.load(x)))
        got["v"] = tl.scale(tl.view(e, (slice(8, 16),)), 2.0).numpy()

    r = run1(rt, k, rt.deploy(X))
    assert cmds(r) == ["DmaReadCmd", "MathCmd", "MathCmd"]
    exp_store = next(e for e in busy(r, "fs") if e.label == "store exp")
    scale_fetch = next(e for e in busy(r, "fs") if e.label == "fetch scale")
    assert scale_fetch.t_ns >= exp_store.end_ns
    assert scale_fetch.end_ns - scale_fetch.t_ns == pytest.approx(8 * 128 * 2 / TCM_GBPS)
    e = np.exp(X.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(got["v"], (e[8:16].astype(np.float32) * np.float32(2.0)).astype(np.float16))


# --- TCM: views that move data --------------------------------------------------------


def _copy_spans(r):
    return [e for e in busy(r, "fs") if e.label == "copy"]


@pytest.mark.parametrize(
    "make, ref_fn",
    [
        (lambda t: t[:, 32:64], lambda x: x[:, 32:64]),
        (lambda t: t[0:32:2], lambda x: x[0:32:2]),
        (lambda t: t[4:8, 100:], lambda x: x[4:8, 100:]),
        (lambda t: t.T, lambda x: x.T),
        (lambda t: tl.transpose(t.reshape(8, 8, 128), (1, 0, 2)), lambda x: x.reshape(8, 8, 128).transpose(1, 0, 2)),
    ],
    ids=["column block", "every other row", "block", "transpose", "permute"],
)
def test_a_view_that_moves_data_is_a_copy_through_fetch_store_of_its_bytes(rt, make, ref_fn):
    X = rng_array((64, 128), 7)
    got = {}

    def k(x):
        t = tl.wait(tl.load(x))
        ctx = current()
        before = ctx.scratch_used
        v = make(t)
        got["own scratch"] = ctx.scratch_used - before
        got["v"], got["nbytes"] = v.numpy(), v.nbytes

    r = run1(rt, k, rt.deploy(X))
    expected = ref_fn(X)
    np.testing.assert_array_equal(got["v"], expected)
    nbytes = expected.size * 2
    assert got["nbytes"] == got["own scratch"] == nbytes
    assert cmds(r) == ["DmaReadCmd", "CopyCmd"]
    log = r.op_logs[PE0][1]
    assert log["logical_bytes"] == 24 and log["dispatch_cycles"] == SINGLE_FIXED + 24 * R
    fetch, store = _copy_spans(r)
    assert fetch.end_ns - fetch.t_ns == pytest.approx(nbytes / TCM_GBPS)
    assert store.end_ns - store.t_ns == pytest.approx(nbytes / TCM_GBPS)
    assert store.t_ns == fetch.end_ns
    disp = dispatches(r)[1]
    assert fetch.t_ns == pytest.approx(disp.end_ns + 1.0)  # + sched_overhead_ns


def test_a_copy_view_of_a_pending_load_auto_waits_when_it_is_made(rt):
    def k(x):
        t = tl.load(x)
        t[:, 0:8]

    r = run1(rt, k, rt.deploy(rng_array((64, 128), 8)))
    (landed,) = events(r, EventKind.LOAD_COMPLETE)
    copy = next(d for d in dispatches(r) if d.label == "CopyCmd")
    assert copy.t_ns == landed.t_ns


# --- HBM regions and tl.ref ----------------------------------------------------------


def test_hbm_views_read_and_write_the_elements_they_name(rt):
    X = rng_array((64, 128), 9)
    out = rt.empty((128, 64), np.float16)
    got = {}

    def k(x, out):
        got["T"] = tl.load(x.T).numpy()
        got["block"] = tl.load(x[0:32, :][:, 64:128]).numpy()
        got["flat"] = tl.load(x[2:4].reshape(256)).numpy()
        got["rows"] = tl.load(x.reshape(8, 8, 128)[3]).numpy()
        tl.store(out.T, tl.load(x))  # out = x.T

    run1(rt, k, rt.deploy(X), out, record=False)
    np.testing.assert_array_equal(got["T"], X.T)
    np.testing.assert_array_equal(got["block"], X[0:32, 64:128])
    np.testing.assert_array_equal(got["flat"], X[2:4].reshape(256))
    np.testing.assert_array_equal(got["rows"], X[24:32])
    np.testing.assert_array_equal(rt.read(out), X.T)


def test_tl_ref_views_stream_the_elements_they_name_in_a_composite(rt):
    X, V = rng_array((64, 128), 17), rng_array((64, 128), 18)
    got = {}

    def k(x, v):
        acc = tl.zeros((64, 64))
        b = tl.ref(v).T  # (128, 64), strided: streamed at its elements' real addresses
        tl.composite([tl.OpSpec("gemm", {"a": tl.ref(x).reshape(64, 128), "b": b}, acc)])
        flat = tl.zeros((2, 64))
        tl.composite([tl.OpSpec("scale", {"x": tl.ref(x)[0:1].reshape(2, 64)}, flat, extra={"factor": 3.0})])
        got["acc"], got["flat"] = acc.numpy(), flat.numpy()

    run1(rt, k, rt.deploy(X), rt.deploy(V), record=False)
    np.testing.assert_allclose(got["acc"], X.astype(np.float32) @ V.T.astype(np.float32), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(got["flat"], X[0].astype(np.float32).reshape(2, 64) * 3)


def test_hbm_views_are_regions_at_the_real_addresses_and_issue_nothing(rt):
    X = rng_array((64, 128), 10)
    x = rt.deploy(X)
    flat = x[8:16].reshape(1024)
    assert flat.region.is_contiguous and flat.offset == x.offset + 8 * 128 * 2
    t = x.T
    assert t.shape == (128, 64) and t.region.run_bytes == 2
    starts = np.asarray(t.region.starts).reshape(128, 64)
    i, j = 5, 7  # element (i, j) of x.T is x[j, i]
    assert starts[i, j] == x.offset + (j * 128 + i) * 2
    assert set(t.region.bursts(256)) == set(x.whole().region.bursts(256))  # the same bursts, each once
    sub = x[:, 0:64][4:8]
    assert sub.region.starts == tuple(x.offset + r * 256 for r in range(4, 8)) and sub.region.run_bytes == 128

    def k(x):
        views = [x.T, x.reshape(128, 64), tl.ref(x)[0:4].T]
        assert [v.shape for v in views] == [(128, 64), (128, 64), (128, 4)]

    r = run1(rt, k, x)
    assert cmds(r) == [] and r.latency_ns == 0


def test_a_reshaped_contiguous_region_loads_in_the_time_of_the_region(cube1):
    lat = {}
    for name in ("rows", "reshaped"):

        def k(x, name=name):
            p = x[0:32]
            tl.wait(tl.load(p if name == "rows" else p.reshape(4, 1024)))

        rt = Runtime(cube1)
        lat[name] = run1(rt, k, rt.deploy(rng_array((64, 128), 11)), record=False).latency_ns
    assert lat["rows"] == lat["reshaped"]


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, message",
    [
        (lambda t, x: t[0:100], r"h0:load .*\(64, 128\): slice stop 100 is past the end of axis 0 \(size 64\)"),
        (lambda t, x: t[:, 130], r"\(64, 128\): index 130 out of range for axis 1 \(size 128\)"),
        (lambda t, x: t[5:5], r"empty block .*\(64, 128\)"),
        (lambda t, x: t.reshape(100, 3), r"cannot reshape h0:load .* \(64, 128\) \(8192 elements\) to \(100, 3\)"),
        (lambda t, x: tl.transpose(t, (0, 0)), r"axes \(0, 0\) are not a permutation of the 2 axes"),
        (lambda t, x: x[0:32][0:40], r"x\[0:32\]\(32, 128\): slice stop 40 is past the end of axis 0 \(size 32\)"),
        (lambda t, x: x.reshape(3, 5), r"cannot reshape x\[:\] \(64, 128\) \(8192 elements\) to \(3, 5\)"),
        (lambda t, x: x[:, 0:64].reshape(4096), r"reshaping the strided region x\[:,0:64\] \(64, 64\) to \(4096,\) would move data"),
        (lambda t, x: tl.ref(x)[64], r"\(64, 128\): index 64 out of range for axis 0"),
    ],
    ids=[
        "past the end",
        "index past the end",
        "empty",
        "reshape size",
        "bad axes",
        "hbm past the end",
        "hbm reshape size",
        "hbm strided reshape",
        "ref past the end",
    ],
)
def test_a_bad_view_raises_one_clear_error_naming_the_shape(rt, body, message):
    def k(x):
        t = tl.load(x)
        body(t, x)

    with pytest.raises(KernelError, match=message):
        run1(rt, k, rt.deploy(rng_array((64, 128), 12), name="x"), record=False)
