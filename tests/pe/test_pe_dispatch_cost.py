"""ADR-0064 on the running PE_CPU: every recorded DISPATCH charge is
``FIXED(type) + logical_bytes × R`` (D1, D8) with ``logical_bytes`` per D2;
overrides (D4), the ``tl.cycles`` bypass (D5), no double count, the D7 cap."""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernelkit import PE0, dispatches, events, rng_array, run1

import kernbench.tl as tl
from kernbench.errors import CompositeCapError
from kernbench.events.bus import Bus, Recorder
from kernbench.events.types import EventKind
from kernbench.handles import HandleRef
from kernbench.pe.commands import CompositeCmd, OpSpec
from kernbench.pe.cost import DispatchCostModel
from kernbench.pe.opkinds import OP_KINDS
from kernbench.pe.requests import CommandLog, Issue
from kernbench.runtime.api import Runtime

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"

FIXED, FIXED1, R = 40.0, 8.0, 0.0625  # the ADR defaults cube1 ships


def charges(result, name: str) -> list[tuple[float, int]]:
    """(cycles, logical bytes) of every recorded DISPATCH of command ``name``."""
    return [(e.value, int(e.detail)) for e in dispatches(result) if e.label == name]


# --- kernels ---------------------------------------------------------------


def gemm_composite(a, b, out):
    x = tl.load(a)
    y = tl.load(b)
    o = tl.zeros((x.shape[0], y.shape[1]))
    tl.composite([tl.OpSpec("gemm", {"a": x, "b": y}, o, extra={"m": 64, "k": 64, "n": 64})], rw_handles=[o])
    tl.store(out, o)


def math_chain_composite(a, out):
    x = tl.load(a)
    t = tl.zeros(x.shape)
    m = tl.zeros((x.shape[0], 1))
    s = tl.zeros((x.shape[0], 1))
    tl.composite(
        [
            tl.OpSpec("scale", {"x": x}, t, extra={"factor": 0.5}),
            tl.OpSpec("rowmax", {"x": t}, m),
            tl.OpSpec("sub_bcast", {"a": t, "b": m}, t),
            tl.OpSpec("exp", {"x": t}, t),
            tl.OpSpec("rowsum", {"x": t}, s),
        ],
        rw_handles=[t, s],
    )
    tl.store(out, t)


def recipe_composite(a, b, out):
    """Ten ops: an attention-like recipe (scores, softmax merge, PV)."""
    q = tl.load(a)
    v = tl.load(b)
    s = tl.zeros((64, 64))
    m = tl.full((64, 1), -np.inf)
    m_new = tl.zeros((64, 1))
    corr = tl.zeros((64, 1))
    p = tl.zeros((64, 64))
    l = tl.zeros((64, 1))
    acc = tl.zeros((64, 64))
    ops = [
        tl.OpSpec("gemm", {"a": q, "b": v}, s, extra={"transpose_b": True, "m": 64, "k": 64, "n": 64}),
        tl.OpSpec("scale", {"x": s}, s, extra={"factor": 0.125}),
        tl.OpSpec("rowmax", {"x": s}, m_new),
        tl.OpSpec("maximum", {"a": m, "b": m_new}, m_new),
        tl.OpSpec("sub", {"a": m, "b": m_new}, corr),
        tl.OpSpec("exp", {"x": corr}, corr),
        tl.OpSpec("sub_bcast", {"a": s, "b": m_new}, p),
        tl.OpSpec("exp", {"x": p}, p),
        tl.OpSpec("rowsum", {"x": p}, l),
        tl.OpSpec("gemm", {"a": p, "b": v}, acc, extra={"accumulate": True, "m": 64, "k": 64, "n": 64}),
    ]
    tl.composite(ops, rw_handles=[acc, l, m_new])
    tl.store(out, acc)


@pytest.fixture
def rt(cube1):
    return Runtime(cube1)


def _launch_named(rt: Runtime, name: str):
    A, B = rng_array((64, 64), 1), rng_array((64, 64), 2)
    a, b, out = rt.deploy(A), rt.deploy(B), rt.empty((64, 64))
    if name == "gemm":
        return run1(rt, gemm_composite, a, b, out)
    if name == "math5":
        return run1(rt, math_chain_composite, a, out)
    return run1(rt, recipe_composite, a, b, out)


# --- D2 by hand --------------------------------------------------------------


def test_d3_anchor_single_gemm_composite_is_54_bytes_and_43_375_cycles(rt):
    r = _launch_named(rt, "gemm")
    assert charges(r, "CompositeCmd") == [(43.375, 54)]


@pytest.mark.parametrize(
    "name, ops, expected_bytes",
    [
        # framing 4 + ops len 1 + op bytes + rw len 1 + 8 per rw handle
        ("gemm", 1, 4 + 1 + (3 + 16 + 8 + 1 + 12) + 1 + 8),
        # scale(1 operand, factor float) rowmax(1) sub_bcast(2) exp(1) rowsum(1), 2 rw handles
        ("math5", 5, 4 + 1 + (3 + 8 + 8 + 1 + 4) + 4 * 0 + (3 + 8 + 8 + 1) * 3 + (3 + 16 + 8 + 1) + 1 + 16),
        ("recipe10", 10, None),
    ],
)
def test_recorded_dispatch_equals_fixed_plus_logical_bytes_times_r(rt, name, ops, expected_bytes):
    r = _launch_named(rt, name)
    comp = [e for e in dispatches(r) if e.label == "CompositeCmd"]
    assert len(comp) == 1
    cycles, nbytes = comp[0].value, int(comp[0].detail)
    entry = next(x for x in r.op_logs[PE0] if x["op"] == "composite")
    assert len(entry["ops"]) == ops
    assert entry["logical_bytes"] == nbytes
    if expected_bytes is not None:
        assert nbytes == expected_bytes
    assert cycles == pytest.approx(FIXED + nbytes * R, abs=1e-9)
    # the charge is paid on PE_CPU: its span is cycles / clock + the node overhead (2 ns)
    assert comp[0].end_ns - comp[0].t_ns == pytest.approx(cycles / 1.0 + 2.0)


def test_recipe_composite_counts_every_handle_slot_without_dedup(rt):
    r = _launch_named(rt, "recipe10")
    ((cycles, nbytes),) = charges(r, "CompositeCmd")
    per_op = {  # operands, out, extra bytes
        "gemm_t": (2, 1, 1 + 4 + 4 + 4),
        "scale": (1, 1, 4),
        "rowmax": (1, 1, 0),
        "maximum": (2, 1, 0),
        "sub": (2, 1, 0),
        "exp1": (1, 1, 0),
        "sub_bcast": (2, 1, 0),
        "exp2": (1, 1, 0),
        "rowsum": (1, 1, 0),
        "gemm_acc": (2, 1, 1 + 12),
    }
    ops_bytes = sum(3 + 8 * n + 8 * o + 1 + x for n, o, x in per_op.values())
    assert nbytes == 4 + 1 + ops_bytes + 1 + 8 * 3
    assert cycles == FIXED + nbytes * R


def test_d8_single_op_commands_pay_fixed_8_and_composites_fixed_40(rt):
    def k(a, b, out):
        x = tl.load(a)
        y = tl.load(b)
        z = tl.dot(x, y)
        w = tl.add(z, z)
        c = tl.copy(w)
        tl.store(out, c)

    A, B = rng_array((64, 64), 1), rng_array((64, 64), 2)
    r = run1(rt, k, rt.deploy(A), rt.deploy(B), rt.empty((64, 64), np.float32))
    names = [e.label for e in dispatches(r)]
    assert names == ["DmaReadCmd", "DmaReadCmd", "GemmCmd", "MathCmd", "CopyCmd", "DmaWriteCmd"]
    for e in dispatches(r):
        assert e.value == FIXED1 + int(e.detail) * R
    gemm = charges(r, "GemmCmd")[0]
    assert gemm == (FIXED1 + 41 * R, 4 + 1 + 24 + 12)
    assert charges(r, "DmaReadCmd")[0][1] == 4 + 8 + 8 + 4
    rc = _launch_named(Runtime(rt.graph), "gemm")
    assert charges(rc, "CompositeCmd")[0][0] - 54 * R == FIXED


def test_run_result_totals_match_the_recorded_dispatch_events(rt):
    r = _launch_named(rt, "recipe10")
    ds = dispatches(r)
    assert r.dispatch_cycles[PE0] == pytest.approx(sum(e.value for e in ds))
    assert r.commands[PE0] == len(ds)
    assert [x["dispatch_cycles"] for x in r.op_logs[PE0]] == [e.value for e in ds]


# --- hypothesis: generated composites through the replay path -----------------

_MATH_KINDS = sorted(k for k, v in OP_KINDS.items() if v.engine == "math")
_extra_value = st.one_of(
    st.booleans(),
    st.integers(-(2**31), 2**31 - 1),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.lists(st.integers(0, 4096), max_size=5).map(tuple),
    st.text(min_size=1, max_size=6),
)


def _hand_extra(v) -> int:
    if v is True or v is False:
        return 1
    if isinstance(v, tuple):
        return 1 + 4 * len(v)
    if isinstance(v, str):
        return 1
    return 4


@st.composite
def composites(draw, min_operands: int = 0):
    """A CompositeCmd of random op kinds, operand counts and extras, and its D2 size counted by hand."""
    pool = [HandleRef(i, f"h{i}", (64, 64), "float16") for i in range(6)]
    n_ops = draw(st.integers(1, 6))
    ops, hand = [], 4 + 1
    for _ in range(n_ops):
        if draw(st.booleans()):
            kind, n_in = "gemm", 2
        else:
            kind, n_in = draw(st.sampled_from(_MATH_KINDS)), draw(st.integers(min_operands, 4))
        operands = {f"in{j}": draw(st.sampled_from(pool)) for j in range(n_in)}  # repeats allowed
        out = draw(st.one_of(st.none(), st.sampled_from(pool)))
        if kind == "gemm" and out is None:
            out = pool[0]
        keys = draw(st.lists(st.sampled_from(["m", "k", "n", "f", "tag", "axes", "flag"]), unique=True, max_size=4))
        extra = {key: draw(_extra_value) for key in keys}
        ops.append(OpSpec(kind, operands, out, "tile", extra))
        hand += 1 + 1 + 1 + 8 * n_in + (8 if out is not None else 0) + 1 + sum(_hand_extra(v) for v in extra.values())
    rw = tuple(draw(st.lists(st.sampled_from(pool), max_size=3)))
    hand += 1 + 8 * len(rw)
    return CompositeCmd(tuple(ops), rw), hand


def test_logical_bytes_of_a_generated_composite_follows_d2(cube1):
    @given(composites())
    @settings(max_examples=300, deadline=None)
    def check(pair):
        cmd, hand = pair
        assert cmd.logical_bytes == hand

    check()


def _replay_log(rt: Runtime, *cmds):
    fake = types.SimpleNamespace(command_logs={PE0: CommandLog(0, 0, tuple(Issue(c) for c in cmds))}, kernel="replayed")
    return rt.replay(fake, record=True)


def test_recorded_cycles_of_a_generated_composite_equal_fixed_plus_bytes_times_r(cube1):
    rt = Runtime(cube1)

    @given(composites(min_operands=1))  # the engines need something to work on
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(pair):
        cmd, hand = pair
        r = _replay_log(rt, cmd)
        (e,) = dispatches(r)
        assert int(e.detail) == hand == cmd.logical_bytes
        assert e.value == pytest.approx(FIXED + hand * R, abs=1e-9)

    check()


# --- D4 overrides --------------------------------------------------------------


def _cube1_without_cost_block(tmp_path: Path, block: dict | None = None) -> Path:
    doc = yaml.safe_load((TOPOLOGIES / "cube1.yaml").read_text())
    del doc["pe"]["attrs"]["pe_cost_model"]
    if block is not None:
        doc["pe"]["attrs"]["pe_cost_model"] = block
    p = tmp_path / "cube1_variant.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def test_set_overrides_change_the_dispatch_and_the_identity_still_holds():
    rt = Runtime(
        "cube1",
        overrides=[
            "pe.attrs.pe_cost_model.fixed_per_cmd_cycles=100",
            "pe.attrs.pe_cost_model.fixed_per_single_op_cmd_cycles=3",
            "pe.attrs.pe_cost_model.byte_cycles_recip=0.25",
        ],
    )
    r = _launch_named(rt, "recipe10")
    for e in dispatches(r):
        fixed = 100 if e.label == "CompositeCmd" else 3
        assert e.value == pytest.approx(fixed + int(e.detail) * 0.25, abs=1e-9)
    default = _launch_named(Runtime("cube1"), "recipe10")
    assert r.total_dispatch_cycles > default.total_dispatch_cycles
    assert r.latency_ns > default.latency_ns


def test_dispatch_ns_converts_cycles_through_the_pe_clock():
    r = _launch_named(Runtime("cube1", overrides=["pe.attrs.clock_freq_ghz=2.0"]), "gemm")
    (e,) = [e for e in dispatches(r) if e.label == "CompositeCmd"]
    assert e.value == 43.375  # cycles do not depend on the clock
    assert e.end_ns - e.t_ns == pytest.approx(43.375 / 2.0 + 2.0)


def test_without_the_cost_block_the_adr_defaults_apply(tmp_path):
    bare = Runtime(_cube1_without_cost_block(tmp_path))
    shipped = Runtime("cube1")
    assert DispatchCostModel.from_attrs(bare.graph.node(f"{PE0}.cpu").attrs) == DispatchCostModel(clock_freq_ghz=1.0)
    a, b = _launch_named(bare, "recipe10"), _launch_named(shipped, "recipe10")
    assert [(e.label, e.value, e.detail) for e in dispatches(a)] == [(e.label, e.value, e.detail) for e in dispatches(b)]
    assert a.latency_ns == b.latency_ns


def test_a_partial_cost_block_defaults_the_missing_keys(tmp_path):
    rt = Runtime(_cube1_without_cost_block(tmp_path, {"byte_cycles_recip": 0.5}))
    r = _launch_named(rt, "gemm")
    for e in dispatches(r):
        fixed = FIXED if e.label == "CompositeCmd" else FIXED1
        assert e.value == fixed + int(e.detail) * 0.5


def test_an_invalid_cost_override_is_a_topology_error_naming_the_key():
    from kernbench.errors import TopologyError

    with pytest.raises(TopologyError, match="byte_cycles_recip"):
        Runtime("cube1", overrides=["pe.attrs.pe_cost_model.byte_cycles_recip=-1"])


# --- D5: tl.cycles bypass --------------------------------------------------------


@pytest.mark.parametrize("n", [1, 37, 1000])
def test_tl_cycles_spends_exactly_n_cycles_and_no_dispatch(rt, n):
    def k():
        tl.cycles(n)

    r = run1(rt, k)
    assert dispatches(r) == []
    (w,) = events(r, EventKind.CPU_WORK, f"{PE0}.cpu")
    assert w.value == n and w.end_ns - w.t_ns == n
    assert r.latency_ns == n
    assert r.dispatch_cycles[PE0] == 0 and r.commands[PE0] == 0
    assert r.op_logs[PE0] == [{"t_ns": 0, "op": "cpu/cycles", "cmd": "PeCpuOverheadCmd", "logical_bytes": 0, "dispatch_cycles": n}]


def test_tl_cycles_between_commands_delays_the_next_dispatch_by_n_ns(rt):
    def k(a):
        tl.load(a)
        tl.cycles(100)
        tl.load(a)

    r = run1(rt, k, rt.deploy(np.ones((8, 8))))
    d1, d2 = dispatches(r)
    assert d2.t_ns - d1.end_ns == 100


# --- no double count -----------------------------------------------------------


def _engine_spans(r):
    spans = {}
    for e in r.events:
        if e.kind is EventKind.ENGINE_BUSY:
            spans.setdefault(e.component.rsplit(".", 1)[-1] if not e.component.endswith((".rd", ".wr")) else e.component[-6:], []).append(
                round(e.end_ns - e.t_ns, 9)
            )
    return {k: sorted(v) for k, v in spans.items()}


@pytest.mark.parametrize("name", ["gemm", "math5", "recipe10", "primitives"])
def test_engine_busy_spans_do_not_change_with_the_dispatch_cost(name):
    zero = Runtime(
        "cube1",
        overrides=[
            "pe.attrs.pe_cost_model.fixed_per_cmd_cycles=0",
            "pe.attrs.pe_cost_model.fixed_per_single_op_cmd_cycles=0",
            "pe.attrs.pe_cost_model.byte_cycles_recip=0",
        ],
    )
    results = []
    for rt in (zero, Runtime("cube1")):
        if name == "primitives":

            def k(a, b, out):
                z = tl.dot(tl.load(a), tl.load(b))
                tl.store(out, tl.exp(tl.add(z, z)))

            # (small values: exp(2·z) stays finite, so numpy has no overflow to warn of)
            A, B = rng_array((64, 128), 1) / 16, rng_array((128, 64), 2) / 16
            results.append(run1(rt, k, rt.deploy(A), rt.deploy(B), rt.empty((64, 64))))
        else:
            results.append(_launch_named(rt, name))
    z, d = results
    assert z.total_dispatch_cycles == 0 < d.total_dispatch_cycles
    assert _engine_spans(z) == _engine_spans(d)
    for eng in ("gemm", "math", "dma.rd", "dma.wr", "fetch", "store"):
        assert z.engine_busy_ns[PE0][eng] == pytest.approx(d.engine_busy_ns[PE0][eng])
    assert d.latency_ns > z.latency_ns


# --- D7 cap ------------------------------------------------------------------------


def _fat_composite(n_ops: int):
    def k(a, out):
        x = tl.load(a)
        o = tl.zeros(x.shape)
        tl.composite([tl.OpSpec("add", {"a": x, "b": o}, o, extra={"tiles": (64, 64)}) for _ in range(n_ops)], rw_handles=[o])
        tl.store(out, o)  # never reached when over the cap

    return k


def test_a_composite_over_the_cap_raises_at_emit_time_and_nothing_after_it_is_dispatched(rt):
    # each op: 3 + 16 + 8 + 1 + 9 = 37 bytes; 28 ops -> 4+1+1036+1+8 = 1050 > 1024
    bus = Bus()
    rec = Recorder(bus)
    a, out = rt.deploy(np.ones((64, 64))), rt.empty((64, 64))
    rt.launch(_fat_composite(28), pes=[0], args=(a, out))
    with pytest.raises(ValueError) as info:
        rt.run(bus=bus)
    err = info.value
    assert isinstance(err, CompositeCapError)
    msg = str(err)
    assert "1050" in msg and "1024" in msg and "max_composite_logical_bytes" in msg
    assert "test_pe_dispatch_cost.py" in msg and "tl.composite(" in msg
    labels = [e.label for e in rec.events() if e.kind is EventKind.DISPATCH]
    assert labels == ["DmaReadCmd"]
    assert not any(e.kind is EventKind.ENGINE_BUSY and e.component.endswith("dma.wr") for e in rec.events())


def test_a_composite_within_the_cap_emits_normally(rt):
    a, out = rt.deploy(np.ones((64, 64))), rt.empty((64, 64))
    r = run1(rt, _fat_composite(27), a, out)  # 4+1+999+1+8 = 1013 bytes
    assert charges(r, "CompositeCmd") == [(FIXED + 1013 * R, 1013)]
    assert [e.label for e in dispatches(r)][-1] == "DmaWriteCmd"
    assert np.allclose(rt.read(out).astype(np.float32), 27.0)


def test_the_cap_is_overridable_and_inclusive():
    at = Runtime("cube1", overrides=["pe.attrs.pe_cost_model.max_composite_logical_bytes=54"])
    r = _launch_named(at, "gemm")
    assert charges(r, "CompositeCmd")[0][1] == 54
    below = Runtime("cube1", overrides=["pe.attrs.pe_cost_model.max_composite_logical_bytes=53"])
    with pytest.raises(CompositeCapError, match=r"54 logical bytes.*=53"):
        _launch_named(below, "gemm")


def test_replay_with_a_smaller_cap_rejects_the_recorded_composite(rt):
    r = _launch_named(rt, "gemm")
    with pytest.raises(CompositeCapError, match="54"):
        rt.replay(r, overrides=["pe.attrs.pe_cost_model.max_composite_logical_bytes=40"])


def test_descriptor_metadata_in_extra_such_as_shape_does_not_break_the_numerics(rt):
    def k(a, out):
        x = tl.load(a)
        o = tl.zeros(x.shape)
        tl.composite([tl.OpSpec("add", {"a": x, "b": x}, o, extra={"shape": (64, 64)})], rw_handles=[o])
        tl.store(out, o)

    a, out = rt.deploy(np.ones((64, 64))), rt.empty((64, 64))
    r = run1(rt, k, a, out)
    assert charges(r, "CompositeCmd")[0][1] == 4 + 1 + (3 + 16 + 8 + 1 + 9) + 1 + 8
