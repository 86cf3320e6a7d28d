"""bfloat16 and the two float8 types (ml_dtypes) through deploy, load, math, cast and store: bytes
moved are elements × itemsize, the math is float32 inside, names round-trip, and narrowing never
overflows silently (kernbench/dtypes.py says what each type does)."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from kernelkit import PE0, busy, fetch_store, run1

import kernbench.tl as tl
from kernbench.dtypes import NarrowingOverflowError, narrow
from kernbench.errors import KernelError
from kernbench.handles import HandleRef, dtype_name
from kernbench.runtime.api import Runtime

NEW = [tl.bfloat16, tl.float8_e4m3fn, tl.float8_e5m2]
ITEMSIZE = {"bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}


@pytest.fixture
def rt(cube1):
    return Runtime(cube1)


def test_the_tl_dtypes_are_the_ml_dtypes_types():
    assert (tl.bfloat16, tl.float8_e4m3fn, tl.float8_e5m2) == (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2)


def test_dtype_names_round_trip_in_a_fresh_interpreter_that_imports_only_the_handles():
    # a HandleRef (and so every command log, op log and record) holds a dtype by name
    code = (
        "import numpy as np, kernbench.handles as h, ml_dtypes as m\n"
        "for t in (m.bfloat16, m.float8_e4m3fn, m.float8_e5m2):\n"
        "    assert np.dtype(h.dtype_name(t)) == np.dtype(t), t\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr


@pytest.mark.parametrize("dtype", NEW, ids=lambda d: np.dtype(d).name)
def test_a_handle_of_a_new_dtype_counts_its_itemsize_in_bytes(dtype):
    name = dtype_name(dtype)
    assert HandleRef(0, "h", (8, 16), name).nbytes == 8 * 16 * ITEMSIZE[name]


@pytest.mark.parametrize("dtype", NEW, ids=lambda d: np.dtype(d).name)
def test_deploy_load_compute_and_store_move_elements_times_itemsize_and_compute_in_float32(rt, dtype):
    name = np.dtype(dtype).name
    x = np.random.default_rng(0).uniform(-2, 2, (32, 64))
    tx = rt.deploy(x, dtype=dtype, name="x")
    out = rt.empty((32, 64), dtype=dtype, name="out")
    assert tx.dtype == np.dtype(dtype) and tx.nbytes == 32 * 64 * ITEMSIZE[name]
    held = {}

    def kern(x, out):
        t = tl.load(x)
        held["t"] = t
        y = tl.add(tl.scale(t, 0.5), t)  # 1.5 x, rounded to the dtype
        held["y"] = y
        tl.store(out, y)

    r = run1(rt, kern, tx, out)
    assert held["t"].dtype == np.dtype(dtype) and held["y"].dtype == np.dtype(dtype)
    stored = tx.array.astype(np.float32)
    half = stored * np.float32(0.5)
    expected = (half.astype(dtype).astype(np.float32) + stored).astype(dtype)  # each op rounds its result
    np.testing.assert_array_equal(out.array, expected)
    rd, wr = busy(r, "dma.rd"), busy(r, "dma.wr")
    assert [e.value for e in rd] == [32 * 64 * ITEMSIZE[name]]
    assert [e.value for e in wr] == [32 * 64 * ITEMSIZE[name]]
    assert r.op_logs[PE0][0]["logical_bytes"] == 24  # dispatch bytes do not follow the dtype
    tcm = rt.graph.nodes[f"{PE0}.cpu"].attrs["tcm_bw_gbps"]
    fs = sorted(fetch_store(r), key=lambda e: (e.t_ns, e.seq))
    tile = 32 * 64 * ITEMSIZE[name]
    # scale: fetch x, store; add: fetch both, store — every TCM byte count at the itemsize
    assert [round((e.end_ns - e.t_ns) * tcm) for e in fs] == [tile, tile, 2 * tile, tile]


def test_an_op_on_two_dtypes_returns_numpys_result_type_bfloat16_with_float16_is_float32(rt):
    ta = rt.deploy(np.ones((4, 8)), dtype=tl.bfloat16, name="a")
    tb = rt.deploy(np.ones((4, 8)), name="b")
    held = {}

    def kern(a, b):
        held["s"] = tl.add(tl.load(a), tl.load(b))

    run1(rt, kern, ta, tb)
    assert held["s"].dtype == np.float32


@pytest.mark.parametrize(
    "dtype, big, what",
    [
        (np.float16, 70000.0, "largest finite ±65504"),
        (tl.float8_e4m3fn, 500.0, "largest finite ±448"),
        (tl.float8_e5m2, 70000.0, "largest finite ±57344"),
        (np.int8, 200.0, "range -128..127"),
    ],
)
def test_a_store_that_narrows_a_finite_value_out_of_range_raises_naming_the_region_and_the_range(rt, dtype, big, what):
    src = rt.deploy(np.full((4, 4), big, np.float32), dtype=np.float32, name="src")
    dst = rt.empty((4, 4), dtype=dtype, name="dst")

    def kern(src, dst):
        tl.store(dst, tl.load(src))

    with pytest.raises(KernelError, match=rf"tl\.store to dst\[:\].*{big!r}.*{what}") as e:
        run1(rt, kern, src, dst)
    assert "NarrowingOverflowError" in str(e.value)


def test_float8_e4m3fn_has_no_infinity_an_inf_raises_and_nan_stays_nan():
    with pytest.raises(NarrowingOverflowError, match="no infinity"):
        narrow(np.array([1.0, np.inf], np.float32), tl.float8_e4m3fn, "test")
    got = narrow(np.array([1.0, np.nan], np.float32), tl.float8_e4m3fn, "test")
    assert got[0] == 1.0 and np.isnan(got[1].astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float16, tl.bfloat16, tl.float8_e5m2], ids=lambda d: np.dtype(d).name)
def test_a_type_with_infinities_keeps_ieee_inf_and_nan_from_a_source_that_has_them(dtype):
    got = narrow(np.array([np.inf, -np.inf, np.nan], np.float32), dtype, "test").astype(np.float32)
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2])


def test_a_value_that_rounds_to_the_largest_finite_value_is_not_an_overflow():
    assert narrow(np.array([460.0], np.float32), tl.float8_e4m3fn, "test").astype(np.float32)[0] == 448.0


def test_an_op_result_that_overflows_its_dtype_raises(rt):
    tx = rt.deploy(np.full((4, 4), 12.0), name="x")  # exp(12) = 162755 > 65504

    with pytest.raises(KernelError, match=r"tl\.exp result.*float16"):
        run1(rt, lambda x: tl.exp(tl.load(x)), tx)


def test_cast_narrows_checked_and_saturate_clips_to_the_range(rt):
    tx = rt.deploy(np.array([[1.0, -1000.0, 1000.0, 3.0]]), dtype=np.float32, name="x")
    held = {}

    def kern(x):
        t = tl.load(x)
        held["sat"] = tl.cast(t, tl.float8_e4m3fn, saturate=True)
        held["bf"] = tl.cast(t, tl.bfloat16)

    r = run1(rt, kern, tx)
    assert held["sat"].numpy().astype(np.float32).tolist() == [[1.0, -448.0, 448.0, 3.0]]
    assert held["sat"].nbytes == 4 and held["bf"].nbytes == 8
    assert held["bf"].numpy().astype(np.float32).tolist() == [[1.0, -1000.0, 1000.0, 3.0]]
    assert [e["logical_bytes"] for e in r.op_logs[PE0] if e["cmd"] == "MathCmd"] == [25, 25]

    def unsaturated(x):
        tl.cast(tl.load(x), tl.float8_e4m3fn)

    rt2 = Runtime(rt.graph)
    with pytest.raises(KernelError, match=r"tl\.cast result.*-1000\.0.*float8_e4m3fn"):
        run1(rt2, unsaturated, rt2.deploy(np.array([[-1000.0]]), dtype=np.float32))


def test_deploy_refuses_an_object_array_with_a_clear_error(rt):
    with pytest.raises(TypeError, match="dtype object cannot be stored"):
        rt.deploy(np.array([object(), object()]), name="bad")


def test_deploy_refuses_a_value_out_of_the_target_range(rt):
    with pytest.raises(NarrowingOverflowError, match=r"Runtime\.deploy of w \(2,\).*float8_e5m2"):
        rt.deploy(np.array([1.0, 1e6]), dtype=tl.float8_e5m2, name="w")


def test_a_composite_out_of_a_narrow_dtype_is_checked_too(rt):
    tx = rt.deploy(np.full((4, 4), 100.0), name="x")

    def kern(x):
        out = tl.zeros((4, 4), tl.float8_e4m3fn)
        tl.composite([tl.OpSpec("scale", {"x": tl.ref(x)}, out, extra={"factor": 10.0})])

    with pytest.raises(KernelError, match=r"OpSpec scale into .*float8_e4m3fn"):
        run1(rt, kern, tx)


def test_a_large_deploy_is_held_once_not_once_plus_a_mask_of_its_size(rt):
    """From the hostile corpus (memory/deploy-huge-broadcast): deploying a float32 broadcast view of
    20000 x 20000 peaked at 1195 MiB for its 763 MiB of float16, the finiteness check's boolean mask
    (one byte an element) on top. The checks now look at CHECK_ELEMENTS at a time: the peak is the
    stored array and one block's temporaries (numpy reports its buffers to tracemalloc)."""
    import tracemalloc

    from kernbench import dtypes

    shape = (2000, 4 * dtypes.CHECK_ELEMENTS // 2000)  # four blocks' worth
    stored = 2 * shape[0] * shape[1]
    for target in (None, np.int8):
        tracemalloc.start()
        try:
            t = rt.deploy(np.broadcast_to(np.float32(1.5), shape), dtype=target)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        held = stored // (2 if target else 1)
        assert t.nbytes == held
        blocks = dtypes.CHECK_ELEMENTS * (8 + 1 + 1 + 1) if target else dtypes.CHECK_ELEMENTS * 2  # float64 + masks / masks
        assert peak < held + blocks + 2**20, (np.dtype(target or np.float16).name, peak, held)


def refusal(values, dtype) -> str:
    with pytest.raises(NarrowingOverflowError) as e:
        narrow(values, dtype, "x")
    return str(e.value)


@pytest.mark.parametrize("dtype", [np.float16, tl.float8_e4m3fn, np.int8, np.uint8, np.bool_], ids=lambda d: np.dtype(d).name)
def test_a_check_in_blocks_names_the_same_first_value_and_count_as_one_over_the_whole_array(monkeypatch, dtype):
    from kernbench import dtypes

    src = np.zeros((7, 5), np.float32)
    src[3, 2], src[3, 4], src[6, 0] = 1e9, -1e9, np.inf
    whole = refusal(src, dtype)
    monkeypatch.setattr(dtypes, "CHECK_ELEMENTS", 6)  # one row a block (five elements a row)
    blocked = refusal(src, dtype)
    assert blocked == whole
    bad = 2 if np.dtype(dtype) == np.float16 else 3  # (float16 keeps the source's inf: IEEE)
    assert "at index (3, 2)" in whole and f"({bad} elements out of range)" in whole
    if np.dtype(dtype).kind in "iub":
        ints = np.array([[0, 1], [300, -7]], np.int32)
        assert f"at index (1, 0) does not fit {np.dtype(dtype).name}" in refusal(ints, dtype)
    ok = narrow(np.arange(35, dtype=np.float32).reshape(7, 5) % 2, dtype, "z")
    assert ok.dtype == np.dtype(dtype) and ok.astype(np.float32).tolist() == (np.arange(35).reshape(7, 5) % 2).tolist()
