"""GQA decode kernels: numerics vs numpy for all three variants, ADR-0064 TR2 /
TR9 / D7 on the real kernels, determinism and live/replay parity.

Tolerance: f16 inputs, f16 pre-scaled Q, f32 accumulation, f16 output —
max |err| vs the float32 numpy reference ≤ ``gqa_decode.TOLERANCE`` (4e-3).
"""

from __future__ import annotations

import numpy as np
import pytest

from kernbench.errors import CompositeCapError
from kernbench.events.types import EventKind
from kernbench.kernels import gqa_decode as gq
from kernbench.kernels import registry
from kernbench.runtime.api import Runtime

SMALL = dict(heads=8, kv_heads=1, head_dim=64, context=1000, tile=128, pes_per_head=0, seed=0)

SHAPES = {
    # context not a multiple of the tile, 8 PEs of one CUBE
    "cube1-ctx1000": ("cube1", SMALL),
    # one PE: no merge at all
    "single-pe": ("cube1", dict(SMALL, context=300, pes_per_head=1)),
    # two KV heads, G = 2, context an exact multiple of the tile
    "cube1-2kv": ("cube1", dict(SMALL, heads=4, kv_heads=2, head_dim=32, context=512, tile=64, pes_per_head=4)),
    # 16 PEs per head over 2 CUBEs: the merge tree crosses CUBEs; odd group count
    "sip2x2-cross-cube": ("sip2x2", dict(SMALL, heads=6, kv_heads=2, head_dim=32, context=515, tile=32, pes_per_head=16)),
}


def build(variant: str, topology: str = "cube1", overrides=(), extra_ops: int = 0, **shape):
    p = dict(SMALL, **shape, variant=variant)
    rt = Runtime(topology, list(overrides))
    prepared = gq.setup(rt, extra_ops=extra_ops, **p)
    return rt, prepared


def run(variant: str, topology: str = "cube1", record: bool = False, overrides=(), **shape):
    rt, prepared = build(variant, topology, overrides, **shape)
    return rt, prepared, rt.run(record=record)


@pytest.mark.parametrize("variant", gq.VARIANTS)
@pytest.mark.parametrize("case", list(SHAPES))
def test_variant_matches_numpy(variant, case):
    topology, shape = SHAPES[case]
    rt, prepared, result = run(variant, topology, **shape)
    err = prepared.check()
    assert err <= gq.TOLERANCE, f"{variant} on {case}: max |err| {err}"
    assert result.latency_ns >= dispatch_floor_ns(rt, result) > 0
    for pe, busy in result.engine_busy_ns.items():
        for engine in ("cpu", "gemm", "math", "dma.rd", "dma.wr", "ipcq"):
            # one command at a time per engine: no engine is busy longer than the run
            assert busy[engine] <= result.latency_ns + 1e-6, (pe, engine, busy[engine], result.latency_ns)


def dispatch_floor_ns(rt, result) -> float:
    """The longest PE_CPU program: every command's dispatch charge, one after another,
    recomputed from its logged logical bytes by the ADR-0064 formula
    (``FIXED(type) + logical_bytes × R`` cycles, D8: composites 40, single ops 8)."""
    attrs = rt.graph.nodes[f"{result.pes[0]}.cpu"].attrs
    cost, clock = attrs["pe_cost_model"], attrs["clock_freq_ghz"]

    def charge(entry) -> float:
        if entry["op"] == "cpu/cycles":
            return entry["dispatch_cycles"] / clock  # tl.cycles: exactly n cycles (D5)
        fixed = cost["fixed_per_cmd_cycles"] if entry["op"] == "composite" else cost["fixed_per_single_op_cmd_cycles"]
        return (fixed + entry["logical_bytes"] * cost["byte_cycles_recip"]) / clock + attrs["cpu_overhead_ns"]

    return max(sum(charge(e) for e in log) for log in result.op_logs.values())


def test_registered_with_params_and_default_topology():
    spec = registry.get("gqa_decode")
    assert spec.name == "gqa-decode" and spec.default_topology == "paper"
    names = {p.name for p in spec.params}
    assert {"variant", "heads", "kv_heads", "head_dim", "context", "tile", "pes_per_head"} <= names
    assert spec.defaults()["variant"] == "opt2"
    assert next(p for p in spec.params if p.name == "variant").choices == gq.VARIANTS


def test_reference_is_softmax_attention():
    rng = np.random.default_rng(1)
    Q = rng.standard_normal((4, 8)).astype(np.float16)
    K = rng.standard_normal((2, 5, 8)).astype(np.float16)
    V = rng.standard_normal((2, 5, 8)).astype(np.float16)
    out = gq.reference(Q, K, V)
    q = Q[3].astype(np.float64)
    s = K[1].astype(np.float64) @ q / np.sqrt(8)
    w = np.exp(s - s.max())
    w /= w.sum()
    np.testing.assert_allclose(out[3], w @ V[1].astype(np.float64), rtol=1e-5, atol=1e-6)


def test_bad_shapes_are_value_errors():
    with pytest.raises(ValueError, match="multiple of --kv-heads"):
        build("opt2", heads=6, kv_heads=4)
    with pytest.raises(ValueError, match="PEs"):
        build("opt2", kv_heads=2, heads=8, pes_per_head=8)
    with pytest.raises(ValueError, match="variant"):
        build("opt9")


# --- per-tile dispatch, from the DISPATCH events -----------------------------


def loop_dispatch_events(result, pe: str):
    """DISPATCH events of ``pe`` between its two tile-loop markers (CPU_WORK, 0 cycles)."""
    cpu = f"{pe}.cpu"
    evs = [e for e in result.events if e.component == cpu]
    marks = [e.seq for e in evs if e.kind is EventKind.CPU_WORK]
    assert len(marks) == 2, marks
    return [e for e in evs if e.kind is EventKind.DISPATCH and marks[0] < e.seq < marks[1]]


def per_tile_from_events(result, tiles_per_pe: dict[str, int]) -> float:
    cycles = sum(e.value for pe in tiles_per_pe for e in loop_dispatch_events(result, pe))
    return cycles / sum(tiles_per_pe.values())


def tiles_per_pe(result, shape) -> dict[str, int]:
    p = dict(SMALL, **shape)
    P = len(result.pes) // p["kv_heads"]
    ranges = gq._ranges(p["context"], P)
    return {pe: len(gq._tiles(b - a, p["tile"])) for i, pe in enumerate(result.pes) for a, b in [ranges[i % P]]}


def test_tr2_opt3_per_tile_dispatch_exceeds_twice_opt2():
    per = {}
    for v in ("opt3", "opt2"):
        _, prepared, result = run(v, record=True)
        per[v] = per_tile_from_events(result, tiles_per_pe(result, {}))
        # the summary (from the command log) agrees with the events
        assert prepared.summary(result)["dispatch_cycles_per_tile"] == pytest.approx(per[v], abs=1e-3)
    assert per["opt3"] > 2 * per["opt2"], per


def test_cmds_and_bytes_per_tile():
    got = {}
    for v in gq.VARIANTS:
        _, prepared, result = run(v)
        got[v] = prepared.summary(result)
    assert got["opt2"]["cmds_per_tile"] == 2
    assert got["opt3"]["cmds_per_tile"] == 11
    assert got["primitive"]["cmds_per_tile"] == 15
    # opt2 composite #2 stays well under the D7 cap
    assert got["opt2"]["bytes_per_tile"] < 1024


R_POINTS = (0.25, 0.0625, 0.03125)


def _r(r: float) -> str:
    return f"pe.attrs.pe_cost_model.byte_cycles_recip={r}"


def replay_at(rt, result, r: float):
    """Re-time ``result`` with another R: no kernel code runs."""
    return rt.replay(result, overrides=[_r(r)])


def test_registry_lists_every_kernel_after_a_direct_import():
    # this module imported gqa_decode directly before anything asked the registry
    assert {"gemm-primitive", "gemm-composite", "gqa-decode"} <= set(registry.kernels())


def test_tr9_sensitivity_to_r_via_replay():
    ratios = []
    base = {}
    for v in ("opt3", "opt2"):
        rt, prepared, result = run(v)
        base[v] = (rt, prepared, result)
    for r in R_POINTS:
        per = {}
        for v, (rt, prepared, result) in base.items():
            rep = replay_at(rt, result, r)
            per[v] = prepared.summary(rep)["dispatch_cycles_per_tile"]
        assert per["opt3"] > per["opt2"], (r, per)
        ratios.append(per["opt3"] / per["opt2"])
    # R decreasing along R_POINTS: the ratio increases monotonically
    assert ratios[0] < ratios[1] < ratios[2], ratios


def test_tr9_replay_at_one_point_equals_a_live_run():
    r = R_POINTS[0]
    for v in ("opt3", "opt2"):
        rt, prepared, result = run(v)
        rep = replay_at(rt, result, r)
        _, prepared_live, live = run(v, overrides=[_r(r)])
        assert rep.latency_ns == live.latency_ns
        assert rep.dispatch_cycles == live.dispatch_cycles
        assert prepared.summary(rep) == prepared_live.summary(live)


# --- D7 ----------------------------------------------------------------------


def test_d7_over_cap_recipe_raises_at_emit_time():
    rt, prepared = build("opt2", extra_ops=40)  # 10-op recipe + 40 copies > 1024 B
    with pytest.raises(ValueError) as info:
        rt.run()
    assert isinstance(info.value, CompositeCapError)
    assert "max_composite_logical_bytes=1024" in str(info.value)
    assert prepared.check() > gq.TOLERANCE  # nothing was written


def test_d7_lowered_cap_rejects_opt2_but_not_opt3():
    cap = ["pe.attrs.pe_cost_model.max_composite_logical_bytes=256"]
    rt, _prepared = build("opt2", overrides=cap)
    with pytest.raises(CompositeCapError, match="max_composite_logical_bytes=256"):
        rt.run()
    _, prepared3, _ = run("opt3", overrides=cap)
    assert prepared3.check() <= gq.TOLERANCE


def test_d7_within_cap_runs():
    # a few padding ops keep it under the cap and it still emits and is correct
    rt, prepared = build("opt2", extra_ops=2)
    rt.run()
    assert prepared.check() <= gq.TOLERANCE


# --- determinism and live/replay parity --------------------------------------


@pytest.mark.parametrize("variant", gq.VARIANTS)
def test_deterministic(variant):
    runs = [run(variant, "sip2x2", record=True, **SHAPES["sip2x2-cross-cube"][1])[2] for _ in range(2)]
    a, b = runs
    assert a.latency_ns == b.latency_ns
    assert a.op_logs == b.op_logs
    assert [(e.t_ns, e.kind, e.component, e.end_ns, e.label, e.value, e.detail) for e in a.events] == [
        (e.t_ns, e.kind, e.component, e.end_ns, e.label, e.value, e.detail) for e in b.events
    ]


@pytest.mark.parametrize("variant", gq.VARIANTS)
def test_live_replay_parity(variant):
    rt, _prepared, live = run(variant, "sip2x2", **SHAPES["sip2x2-cross-cube"][1])
    rep = rt.replay(live)
    assert rep.latency_ns == live.latency_ns
    assert rep.dispatch_cycles == live.dispatch_cycles
    assert rep.commands == live.commands
    assert rep.op_logs == live.op_logs
    assert rep.engine_busy_ns == live.engine_busy_ns


# --- the default shape -------------------------------------------------------


@pytest.fixture(scope="module")
def default_records():
    """The run record of each variant at the default shape on paper, as ``kernbench run gqa-decode --variant V --json``."""
    from kernbench.commands.run import prepare, report

    out = {}
    for variant in gq.VARIANTS:
        spec, _ns, rt, prepared, params = prepare("gqa-decode", ["--variant", variant])
        out[variant] = report(spec, rt, prepared, rt.run(), params)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("variant", gq.VARIANTS)
def test_default_shape_on_paper(default_records, variant):
    rec = default_records[variant]
    assert rec["max_abs_err"] <= gq.TOLERANCE
    assert rec["pes_per_head"] == 32 and rec["tiles"] == 8 * 256


def _table_rows(text: str, first_column: str) -> dict[str, list[str]]:
    """The rows of the Markdown table whose header starts with ``first_column``, by variant."""
    table = text.split(f"| {first_column} |", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].split("`")[1]] = cells[1:]
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("doc", ["docs/gqa.md"])  # (README's copy of the table moved there)
def test_the_gqa_tables_are_what_the_program_prints(default_records, doc):
    """docs/gqa.md's table of the three variants: every figure as the program computes it now."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / doc).read_text()
    for variant, cells in _table_rows(text, "variant").items():
        rec, util = default_records[variant], default_records[variant]["engine_util_pct"]
        want = [
            f"{rec['latency_ns']:,.0f} ns",
            f"{rec['cmds_per_tile']:g}",
            f"{rec['bytes_per_tile']:,.0f}",
            f"{rec['dispatch_cycles_per_tile']:.1f}",
            f"{util['cpu']:.1f} %",
            f"{util['dma.rd']:.1f} %",
        ]
        if len(cells) == 9:  # docs/gqa.md adds GEMM and MATH
            want += [f"{util['gemm']:.1f} %", f"{util['math']:.1f} %"]
        want.append(f"{rec['max_abs_err']:.1e}")
        assert cells == want, (doc, variant)
