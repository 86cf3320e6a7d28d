"""bench --study llm-layer: every decode latency at least its HBM roofline, the far ones explained."""

from __future__ import annotations

import pytest

from kernbench.cli import main
from kernbench.layers.placement import Plan
from kernbench.layers.presets import PRESETS
from kernbench.studies import llm_layer
from kernbench.topology.compile import load_topology


@pytest.fixture(scope="module")
def quick_points():
    return list(llm_layer.sweep(llm_layer.QUICK))


@pytest.mark.slow  # (the quick grid's layers: half a minute)
def test_every_decode_latency_is_at_least_its_hbm_roofline(quick_points):
    decode = [p for p in quick_points if p.phase == "decode"]
    assert decode
    for p in decode:
        assert p.latency_ns >= p.bound_ns, p


@pytest.mark.slow  # (the quick grid's layers: half a minute)
def test_a_point_far_from_its_roofline_names_the_cause_that_dominates(quick_points):
    text = llm_layer.table(quick_points)
    for p in quick_points:
        line = next(ln for ln in text.splitlines() if ln.startswith(p.model) and f" {p.seq:>6} {p.tp:>3} " in ln and p.phase in ln)
        if p.ratio > llm_layer.RATIO_EXPLAINED:
            assert line.rstrip().endswith(p.dominant) and p.dominant
        else:
            assert not line.rstrip().endswith(p.dominant)


@pytest.mark.slow  # (the quick grid's layers: half a minute)
def test_the_split_covers_the_critical_path(quick_points):
    for p in quick_points:
        assert p.compute_ns + p.memory_ns + p.comm_ns == pytest.approx(p.latency_ns, rel=1e-6)
        assert p.comm_ns > 0  # the all-reduces are on the path


def test_the_roofline_is_weights_and_kv_over_the_slices_bandwidth_by_hand():
    shape = PRESETS["llama3-70b"]
    plan = Plan(shape, "decode", 8, 8192, 32)
    weights = 8192 * (64 + 16) * 128 + 64 * 128 * 8192 + 3 * 8192 * 28672 + 2 * 8192
    kv = 8 * 8192 * 8 * 128 * 2
    assert llm_layer.roofline_bytes(shape, plan) == 2 * (weights + kv)
    graph = load_topology("paper")
    pes = [f"sip0.cube{c}.pe{i}" for c in range(4) for i in range(8)]
    assert llm_layer.hbm_gbps(graph, pes) == 32 * 8 * 32.0  # 8 pseudo-channels × 32 GB/s each
    mx = PRESETS["mixtral-8x7b"]
    one = Plan(mx, "decode", 1, 1024, 8)  # one token: top-2, two experts' weights
    assert llm_layer.roofline_bytes(mx, one) == 2 * (mx.weight_elements() - 6 * 3 * 4096 * 14336 + 1024 * 8 * 128 * 2)


def test_bench_study_llm_layer_prints_the_table_and_the_plot(monkeypatch, capsys):
    monkeypatch.setattr(llm_layer, "GRID", llm_layer.QUICK[:1])
    assert main(["bench", "--study", "llm-layer"]) == 0
    out = capsys.readouterr().out
    assert "roofline" in out and "tok/s (est.)" in out and "latency_us by seq" in out
