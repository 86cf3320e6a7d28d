"""The PE_MATH ops of issue 24, each against an oracle written here: its numerics against numpy
in float32 (a tolerance per dtype), and the cycles it is charged against the hand arithmetic of its
docs/tl.md entry — dispatch ``(FIXED + B × R) / clock + cpu_overhead_ns`` with B counted field by
field, PE_MATH ``(math_pipeline_cycles + ceil(passes · E / lanes)) / clock`` with ``lanes`` the plain
or the transcendental rate. The rates, passes and byte counts below are the docs', typed in again,
not read from the op kinds table."""

from __future__ import annotations

from math import ceil

import numpy as np
import pytest
from kernelkit import PE0, busy, dispatches, events, run1

import kernbench.tl as tl
from kernbench.analysis.critical import attribute
from kernbench.errors import KernelError
from kernbench.events.types import EventKind
from kernbench.pe.commands import OpSpec as CmdOpSpec
from kernbench.pe.steps import op_steps
from kernbench.runtime.api import Runtime
from kernbench.topology.compile import load_topology

# distinct rates, so a kind charged at the wrong one shows: 2 GHz, 64 plain lanes, 8 transcendental
SETS = ["pe.attrs.clock_freq_ghz=2.0", "pe.attrs.math_transcendental_elems_per_cycle=8"]
EPS = 1e-9
FRAMING, OPCODE, HANDLE, SCALAR, TUPLE_LEN, ENUM = 4, 1, 8, 4, 1, 1


def cmd_bytes(inputs: int, extra: int = 0) -> int:
    return FRAMING + OPCODE + TUPLE_LEN + inputs * HANDLE + HANDLE + TUPLE_LEN + extra


@pytest.fixture(scope="module")
def graph():
    return load_topology("cube1", SETS)


@pytest.fixture
def rt(graph):
    return Runtime(graph)


def a_of(rt):
    return rt.graph.nodes[f"{PE0}.cpu"].attrs


def gelu_ref(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def sigmoid_ref(x):
    return 1 / (1 + np.exp(-x))


# name -> (call, numpy float32 reference, values to feed, rate, passes per element, extra logical bytes)
T, P = "transcendental", "plain"
POS = "positive"
UNARY = {
    "sqrt": (lambda t: tl.sqrt(t), np.sqrt, POS, T, 1, 0),
    "rsqrt": (lambda t: tl.rsqrt(t), lambda x: 1 / np.sqrt(x), POS, T, 1, 0),
    "reciprocal": (lambda t: tl.reciprocal(t), lambda x: 1 / x, POS, T, 1, 0),
    "log": (lambda t: tl.log(t), np.log, POS, T, 1, 0),
    "pow": (lambda t: tl.pow(t, 3.0), lambda x: x**3, "normal", T, 2, SCALAR),
    "tanh": (lambda t: tl.tanh(t), np.tanh, "normal", T, 1, 0),
    "sigmoid": (lambda t: tl.sigmoid(t), sigmoid_ref, "normal", T, 2, 0),
    "silu": (lambda t: tl.silu(t), lambda x: x * sigmoid_ref(x), "normal", T, 2, 0),
    "gelu": (lambda t: tl.gelu(t), gelu_ref, "normal", T, 1, 0),
    "sin": (lambda t: tl.sin(t), np.sin, "normal", T, 1, 0),
    "cos": (lambda t: tl.cos(t), np.cos, "normal", T, 1, 0),
    "neg": (lambda t: tl.neg(t), np.negative, "normal", P, 1, 0),
    "abs": (lambda t: tl.abs(t), np.abs, "normal", P, 1, 0),
    "clamp": (lambda t: tl.clamp(t, -0.5, 0.75), lambda x: np.clip(x, -0.5, 0.75), "normal", P, 1, 2 * SCALAR),
    "rowmean": (lambda t: tl.rowmean(t), lambda x: x.mean(axis=1, keepdims=True), "normal", P, 1, 0),
}
# tolerance of a result rounded to the dtype: a few of its ulps, relative, and as much absolute near 0
TOL = {np.dtype(np.float32): 2e-6, np.dtype(np.float16): 2e-3, np.dtype(tl.bfloat16): 1.6e-2}


def values(kind: str, shape, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(0.25, 4.0, shape) if kind == POS else rng.standard_normal(shape)


def run_unary(rt, op, x: np.ndarray, dtype):
    held = {}
    t = rt.deploy(x, dtype=dtype, name="x")

    def kern(x):
        xa = tl.wait(tl.load(x))
        held["out"] = op(xa)

    r = run1(rt, kern, t)
    return r, held["out"], t.array.astype(np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, tl.bfloat16], ids=["f32", "f16", "bf16"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_a_unary_op_equals_numpy_in_float32_rounded_to_its_operand_dtype(rt, name, dtype):
    op, ref, feed, *_ = UNARY[name]
    _, out, stored = run_unary(rt, op, values(feed, (16, 40)), dtype)
    assert out.dtype == np.dtype(dtype)
    tol = TOL[np.dtype(dtype)]
    np.testing.assert_allclose(out.numpy().astype(np.float32), ref(stored), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_a_unary_op_is_charged_its_dispatch_bytes_and_its_rate_and_passes_on_pe_math(rt, name):
    a = a_of(rt)
    op, _, feed, rate, passes, extra = UNARY[name]
    elems = 10 * 30  # 300: 4.69 vectors of 64, 37.5 of 8
    r, out, _ = run_unary(rt, op, values(feed, (10, 30)), np.float16)
    (d,) = [e for e in dispatches(r) if e.label == "MathCmd"]
    c = a["pe_cost_model"]
    assert d.end_ns - d.t_ns == pytest.approx(
        (c["fixed_per_single_op_cmd_cycles"] + cmd_bytes(1, extra) * c["byte_cycles_recip"]) / a["clock_freq_ghz"] + a["cpu_overhead_ns"],
        abs=EPS,
    )
    lanes = a["math_transcendental_elems_per_cycle"] if rate == T else a["math_elems_per_cycle"]
    assert lanes == (8 if rate == T else 64)
    (m,) = busy(r, "math")
    assert m.end_ns - m.t_ns == pytest.approx((a["math_pipeline_cycles"] + ceil(passes * elems / lanes)) / a["clock_freq_ghz"], abs=EPS)
    fetch, store = sorted((e for e in busy(r, "fs")), key=lambda e: e.t_ns)
    assert fetch.end_ns - fetch.t_ns == pytest.approx(elems * 2 / a["tcm_bw_gbps"], abs=EPS)
    assert store.end_ns - store.t_ns == pytest.approx(out.nbytes / a["tcm_bw_gbps"], abs=EPS)


def test_the_transcendental_rate_is_a_parameter_set_changes_the_time_and_nothing_else():
    times = {}
    for lanes in (4, 16):
        rt = Runtime(load_topology("cube1", [f"pe.attrs.math_transcendental_elems_per_cycle={lanes}"]))
        r, out, _ = run_unary(rt, lambda t: tl.log(t), values(POS, (8, 64)), np.float16)
        (m,) = busy(r, "math")
        times[lanes] = (m.end_ns - m.t_ns, out.numpy().tobytes())
    a = load_topology("cube1").nodes[f"{PE0}.cpu"].attrs
    assert times[4][0] == pytest.approx((a["math_pipeline_cycles"] + 512 / 4) / a["clock_freq_ghz"])
    assert times[16][0] == pytest.approx((a["math_pipeline_cycles"] + 512 / 16) / a["clock_freq_ghz"])
    assert times[4][1] == times[16][1]  # numerics never depend on timing


def test_a_transcendental_rate_of_zero_is_refused_when_the_topology_loads():
    with pytest.raises(Exception, match="math_transcendental_elems_per_cycle"):
        load_topology("cube1", ["pe.attrs.math_transcendental_elems_per_cycle=0"])


@pytest.mark.parametrize(
    "name, call, ref",
    [
        ("minimum", lambda a, b: tl.minimum(a, b), np.minimum),
        ("add_bcast", lambda a, b: tl.add_bcast(a, b), np.add),
        ("add_bcast_row", lambda a, b: tl.add_bcast_row(a, b), np.add),
        ("sub_bcast_row", lambda a, b: tl.sub_bcast_row(a, b), np.subtract),
        ("mul_bcast_row", lambda a, b: tl.mul_bcast_row(a, b), np.multiply),
        ("div_bcast_row", lambda a, b: tl.div_bcast_row(a, b), np.divide),
    ],
)
def test_a_binary_or_broadcast_op_equals_numpy_and_is_charged_at_the_plain_rate(rt, name, call, ref):
    a = a_of(rt)
    rows, cols = 12, 40
    b_shape = {"minimum": (rows, cols), "add_bcast": (rows, 1)}.get(name, (1, cols))
    x = np.random.default_rng(1).standard_normal((rows, cols))
    y = np.random.default_rng(2).uniform(0.5, 1.5, b_shape)
    held = {}
    tx, ty = rt.deploy(x, name="x"), rt.deploy(y, name="y")

    def kern(x, y):
        xa, yb = tl.wait(tl.load(x)), tl.wait(tl.load(y))
        held["out"] = call(xa, yb)

    r = run1(rt, kern, tx, ty)
    f = np.float32
    np.testing.assert_allclose(held["out"].numpy().astype(f), ref(tx.array.astype(f), ty.array.astype(f)), rtol=2e-3, atol=2e-3)
    (m,) = busy(r, "math")
    assert m.label == name
    assert m.end_ns - m.t_ns == pytest.approx((a["math_pipeline_cycles"] + ceil(rows * cols / 64)) / a["clock_freq_ghz"], abs=EPS)
    (d,) = [e for e in dispatches(r) if e.label == "MathCmd"]
    assert r.op_logs[PE0][-1]["logical_bytes"] == cmd_bytes(2) == 31
    assert d.end_ns > d.t_ns


@pytest.mark.parametrize("call", [lambda a, b: tl.add_bcast(a, b), lambda a, b: tl.mul_bcast_row(a, b)])
def test_a_broadcast_operand_of_the_wrong_shape_is_refused_naming_both_shapes(rt, call):
    tx, ty = rt.deploy(np.ones((8, 16)), name="x"), rt.deploy(np.ones((8, 16)), name="y")

    def kern(x, y):
        call(tl.load(x), tl.load(y))

    with pytest.raises(KernelError, match=r"\(8, 16\)"):
        run1(rt, kern, tx, ty)


def _ref(shape, nbytes_per_elem=2, hid=0, space="hbm"):
    from kernbench.handles import HandleRef

    return HandleRef(hid, f"h{hid}", shape, {2: "float16", 1: "uint8", 4: "float32"}[nbytes_per_elem], space)


def test_a_row_broadcast_kind_streams_x_by_rows_and_holds_its_row_read_once_at_the_first_step():
    rows, cols, n = 64, 128, 4
    x, row, out = _ref((rows, cols), hid=1), _ref((1, cols), hid=2), _ref((rows, cols), hid=3, space="tcm")
    st = op_steps(CmdOpSpec("mul_bcast_row", {"a": x, "b": row}, out), n)
    xs, rs = st.operands
    assert [p.nbytes for p in xs] == [rows // n * cols * 2] * n  # a quarter of the rows each step
    assert rs[0] is not None and rs[0].nbytes == cols * 2 and all(p is None for p in rs[1:])  # held
    assert list(st.work) == [rows // n * cols] * n


def test_a_column_broadcast_kind_streams_its_column_with_the_rows():
    rows, cols, n = 64, 128, 4
    x, col, out = _ref((rows, cols), hid=1), _ref((rows, 1), hid=2), _ref((rows, cols), hid=3, space="tcm")
    st = op_steps(CmdOpSpec("add_bcast", {"a": x, "b": col}, out), n)
    assert [p.nbytes for p in st.operands[1]] == [rows // n * 2] * n


def test_row_and_column_broadcast_kinds_stream_in_a_composite_with_the_numerics_of_numpy(rt):
    rows, cols = 256, 128  # 64 KiB of float16: two steps of 32 KiB
    x = np.random.default_rng(3).standard_normal((rows, cols))
    w = np.random.default_rng(4).uniform(0.5, 1.5, (1, cols))
    b = np.random.default_rng(5).standard_normal((rows, 1))
    tx, tw, tb = rt.deploy(x, name="x"), rt.deploy(w, name="w"), rt.deploy(b, name="b")
    held = {}

    def kern(x, w, b):
        acc = tl.zeros((rows, cols))
        tl.composite(
            [
                tl.OpSpec("mul_bcast_row", {"a": tl.ref(x), "b": tl.ref(w)}, acc),
                tl.OpSpec("add_bcast", {"a": acc, "b": tl.ref(b)}, acc),
            ],
            rw_handles=[acc],
        )
        held["acc"] = acc.numpy()

    r = run1(rt, kern, tx, tw, tb)
    f = np.float32
    np.testing.assert_allclose(held["acc"], tx.array.astype(f) * tw.array.astype(f) + tb.array.astype(f), rtol=1e-6)
    maths = busy(r, "math")
    assert [e.label for e in maths] == ["mul_bcast_row", "add_bcast"] * 2  # two steps


def test_where_selects_elementwise_and_keeps_the_dtype_of_its_values(rt):
    x = np.random.default_rng(6).standard_normal((16, 32))
    tx = rt.deploy(x, name="x")
    held = {}

    def kern(x):
        s = tl.load(x)
        m = tl.causal_mask(0, 0, (16, 32))
        held["w"] = tl.where(m, s, tl.full((1, 1), -np.inf, np.float16))

    r = run1(rt, kern, tx)
    keep = np.arange(32)[None, :] <= np.arange(16)[:, None]
    expected = np.where(keep, tx.array, np.float16(-np.inf))
    assert held["w"].dtype == np.float16
    np.testing.assert_array_equal(held["w"].numpy(), expected)
    assert r.op_logs[PE0][-1]["logical_bytes"] == cmd_bytes(3) == 39
    a = a_of(rt)
    mask_span, where_span = busy(r, "math")
    assert mask_span.label == "causal_mask"
    assert where_span.label == "where"
    assert where_span.end_ns - where_span.t_ns == pytest.approx(
        (a["math_pipeline_cycles"] + ceil(16 * 32 / 64)) / a["clock_freq_ghz"], abs=EPS
    )
    fetch = [e for e in busy(r, "fs") if e.label == "fetch where"]
    assert fetch[0].end_ns - fetch[0].t_ns == pytest.approx(
        (16 * 32 * 1 + 16 * 32 * 2 + 2) / a["tcm_bw_gbps"], abs=EPS
    )  # mask, s, the (1, 1)


@pytest.mark.parametrize("dtype, itemsize", [(tl.float8_e5m2, 1), (tl.bfloat16, 2), (np.float32, 4)], ids=["fp8", "bf16", "f32"])
def test_cast_is_a_plain_pass_and_stores_the_target_itemsize(rt, dtype, itemsize):
    a = a_of(rt)
    tx = rt.deploy(np.random.default_rng(9).standard_normal((10, 30)), name="x")
    held = {}

    def kern(x):
        held["c"] = tl.cast(tl.wait(tl.load(x)), dtype)

    r = run1(rt, kern, tx)
    np.testing.assert_array_equal(held["c"].numpy(), tx.array.astype(np.float32).astype(dtype))
    (m,) = busy(r, "math")
    assert m.end_ns - m.t_ns == pytest.approx((a["math_pipeline_cycles"] + ceil(300 / 64)) / a["clock_freq_ghz"], abs=EPS)
    (store,) = [e for e in busy(r, "fs") if e.label.startswith("store")]
    assert store.end_ns - store.t_ns == pytest.approx(300 * itemsize / a["tcm_bw_gbps"], abs=EPS)
    assert r.op_logs[PE0][-1]["logical_bytes"] == cmd_bytes(1, 2 * ENUM) == 25


@pytest.mark.parametrize("q_offset, k_offset", [(0, 0), (5, 0), (0, 7), (100, 96)])
def test_causal_mask_is_made_on_pe_math_with_no_dma_and_its_cost_is_a_plain_pass_over_its_elements(rt, q_offset, k_offset):
    a = a_of(rt)
    q, k = 24, 40
    held = {}

    def kern():
        held["m"] = tl.causal_mask(q_offset, k_offset, (q, k))

    r = run1(rt, kern)
    i, j = np.arange(q)[:, None] + q_offset, np.arange(k)[None, :] + k_offset
    np.testing.assert_array_equal(held["m"].numpy(), (j <= i).astype(np.uint8))
    assert held["m"].dtype == np.uint8 and held["m"].nbytes == q * k
    assert not busy(r, "dma.rd") and not busy(r, "dma.wr") and not events(r, EventKind.TRANSFER_START)
    (m,) = busy(r, "math")
    assert m.end_ns - m.t_ns == pytest.approx((a["math_pipeline_cycles"] + ceil(q * k / 64)) / a["clock_freq_ghz"], abs=EPS)
    (store,) = [e for e in busy(r, "fs") if e.label.startswith("store")]
    assert store.end_ns - store.t_ns == pytest.approx(q * k / a["tcm_bw_gbps"], abs=EPS)
    assert r.op_logs[PE0][-1]["logical_bytes"] == cmd_bytes(0, 2 * SCALAR) == 23


def test_causal_mask_as_a_composite_kind_takes_its_shape_from_out(rt):
    held = {}

    def kern():
        m = tl.zeros((8, 8), np.uint8)
        tl.composite([tl.OpSpec("causal_mask", {}, m, extra={"q_offset": 2, "k_offset": 0})])
        held["m"] = m.numpy()

    run1(rt, kern)
    np.testing.assert_array_equal(held["m"], np.tril(np.ones((8, 8), np.uint8), k=2))


def test_a_causal_mask_of_a_bad_shape_is_refused_naming_it(rt):
    with pytest.raises(KernelError, match=r"\(queries, keys\)"):
        run1(rt, lambda: tl.causal_mask(0, 0, (4, 0)))


def test_clamp_with_lo_above_hi_is_refused(rt):
    tx = rt.deploy(np.ones((4, 4)), name="x")
    with pytest.raises(KernelError, match=r"lo 2\.0 is above hi 1\.0"):
        run1(rt, lambda x: tl.clamp(tl.load(x), 2.0, 1.0), tx)


def test_explain_names_the_transcendental_share_and_the_attribution_sums_to_the_latency(rt):
    a = a_of(rt)
    tx = rt.deploy(np.random.default_rng(7).uniform(0.5, 2.0, (64, 128)), name="x")

    def kern(x):
        t = tl.load(x)
        tl.store(x, tl.add(tl.log(t), t))  # log: transcendental; add: plain

    r = run1(rt, kern, tx)
    at = attribute(r.events, r.latency_ns)
    assert sum(at.by_cause.values()) == pytest.approx(r.latency_ns, abs=1e-6)
    elems = 64 * 128
    assert at.by_cause["math (transcendental)"] == pytest.approx((a["math_pipeline_cycles"] + elems / 8) / a["clock_freq_ghz"], abs=EPS)
    assert at.by_cause["math"] == pytest.approx((a["math_pipeline_cycles"] + elems / 64) / a["clock_freq_ghz"], abs=EPS)


def test_a_kernel_of_the_new_ops_gives_the_same_event_stream_run_after_run(graph):
    def once():
        rt = Runtime(graph)
        tx = rt.deploy(np.random.default_rng(8).standard_normal((32, 64)), dtype=tl.bfloat16, name="x")

        def kern(x):
            t = tl.load(x)
            g = tl.gelu(tl.where(tl.causal_mask(0, 0, (32, 64)), t, tl.neg(t)))
            tl.store(
                x, tl.cast(tl.add_bcast(g, tl.rsqrt(tl.add(tl.rowmean(tl.mul(g, g)), tl.full((1, 1), 1.0, tl.bfloat16)))), tl.bfloat16)
            )

        r = run1(rt, kern, tx)
        return r.latency_ns, [(e.t_ns, e.kind, e.component, e.end_ns, e.label, e.value) for e in r.events], tx.array.tobytes()

    assert once() == once()


def test_an_op_kind_with_a_rate_or_axis_the_engines_do_not_know_is_refused_when_the_table_is_built():
    from kernbench.pe.opkinds import OpKind

    with pytest.raises(ValueError, match="out of range"):
        OpKind("expp", "math", ("x",), np.exp, rate="transcendentl")
    with pytest.raises(ValueError, match="out of range"):
        OpKind("rowz", "math", ("x",), np.exp, steps="row")
