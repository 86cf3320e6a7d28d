"""The two studies: simulator vs model at chosen points, the gap's attribution, the
`kernbench bench --study` tables, and the study goldens."""

from __future__ import annotations

import pytest

from kernbench.cli import main
from kernbench.commands import bench
from kernbench.studies import allreduce as ar
from kernbench.studies import gemm as g

# --- all-reduce ---------------------------------------------------------------


def test_a_small_mesh_ring_is_its_critical_pairs_channel_busy_back_to_back():
    # 4 KiB on the 2×3 mesh: the closing pair (3 hops, α 71 ns) sends 10 messages back to
    # back, which is what the model charges every step: only the first load and the last
    # add are left out
    p = ar.run_point("mesh2x3", "ring", 4096)
    assert p.model_ns == pytest.approx(10 * (71.0 + 3 * 2.0))
    assert 1.0 < p.ratio < 1.15


def test_small_torus_payloads_pay_the_per_step_software_path_the_alpha_beta_model_omits():
    # 4 KiB on the 2×3 torus: no pair is much slower than the rest (closing pair α 55.5 ns),
    # so the chain of steps is critical, and each step also waits for PE_CPU to wake,
    # dispatch the add and the send, and FETCH/MATH/STORE a tiny chunk: ~29 ns a step
    p = ar.run_point("torus2x3", "ring", 4096)
    assert 1.2 < p.ratio < 1.4
    assert p.alpha_term_ns > p.beta_term_ns


def test_one_chunk_per_step_adds_the_unoverlapped_sum_to_every_reduce_step():
    # 1 MiB on 6 PEs: 171 KiB segments, one message each; a reduce-scatter step also adds the
    # chunk (FETCH 2S/512 + MATH S/128 + STORE S/512 = 1.75·S·β) before it can go on:
    # (2.75 + 1) / 2 ≈ 1.9 times the β term
    p = ar.run_point("torus2x3", "ring", 1 << 20)
    assert 1.8 < p.ratio < 2.05
    assert p.max_abs_err <= p.tolerance


def test_pipelined_steps_make_the_ring_tight():
    p = ar.run_point("torus2x3", "ring", 4 << 20)
    assert 1.0 < p.ratio < 1.1


def test_the_torus_saves_startup_only():
    mesh = ar.run_point("mesh2x3", "ring", 4096)
    torus = ar.run_point("torus2x3", "ring", 4096)
    assert torus.sim_ns < mesh.sim_ns and torus.model_ns < mesh.model_ns
    assert mesh.beta_term_ns == torus.beta_term_ns  # same bytes, same 128 GB/s bottleneck


def test_allreduce_table_lists_every_algorithm_per_payload():
    pair = ("2×3", "mesh2x3", "torus2x3", "", (4096,))
    text = ar.table(list(ar.sweep([pair])))
    lines = text.splitlines()
    assert "α–β µs" in lines[0] and "torus/mesh" in lines[0]
    assert lines[2].split()[:2] == ["4KiB", "ring"] and lines[3].split()[0] == "2d" and lines[4].split()[0] == "tree"


# --- GEMM ------------------------------------------------------------------


def test_tile_count_sweep_tracks_the_model_and_approaches_the_steady_state():
    rows = g.tile_count_sweep((1, 16))
    (c1, r1, p1), (c16, r16, p16) = rows
    for c in (c1, c16, r1, r16):
        assert abs(c.gap_pts) < 0.1  # a lone composite is the ideal pipeline, in either layout
    for p in (p1, p16):
        assert abs(p.gap_pts) < 3
    assert c1.sim_eff_pct < c16.sim_eff_pct < c16.steady_eff_pct
    assert p16.bound == "recurrence" and c16.bound == "gemm"
    # A row-major: each K-step's column block drains one pseudo-channel (1,030 ns) where the
    # GEMM takes 532: the read channel bounds it at t_GEMM / (1,030 + 141) = 45.5 %
    assert r16.bound == "dma.rd" and r16.steady_eff_pct == pytest.approx(100 * 532.288 / 1171, abs=0.01)
    assert r16.sim_eff_pct < 45.5 < c16.sim_eff_pct


def test_the_attribution_adds_up_to_the_latency():
    (p,) = g.tiling_sweep(
        tilings=(dict(form="composite", tile_m=128, tile_n=128, tile_k=128, ksplit=2),), shape=dict(m=256, n=256, k=1024, pes=8)
    )
    assert p.sim.total == pytest.approx(p.sim_ns)
    assert p.model.total == pytest.approx(p.model_ns)


def test_a_second_composite_prefetching_steals_the_read_channel_from_the_first_ones_fill():
    (p,) = g.tiling_sweep(
        tilings=(dict(form="composite", tile_m=128, tile_n=128, tile_k=128, ksplit=1),), shape=dict(m=256, n=128, k=512, pes=1)
    )
    assert p.sim.lead_in - p.model.lead_in == pytest.approx(141.0)  # one 32 KiB read of the second composite
    assert p.sim.gaps == pytest.approx(p.model.gaps) == 0


# --- the bench command ---------------------------------------------------------


def test_bench_study_prints_both_tables_with_formulas(monkeypatch, capsys):
    monkeypatch.setattr(g, "TILE_COUNTS", (1, 4))
    monkeypatch.setattr(g, "TILINGS", g.TILINGS[:2])
    monkeypatch.setattr(g, "TILING_SHAPE", dict(m=256, n=256, k=256, pes=4))
    monkeypatch.setattr(ar, "PAIRS", (("2×3", "mesh2x3", "torus2x3", "", (4096,)),))
    assert main(["bench", "--study", "all"]) == 0
    out = capsys.readouterr().out
    assert "T = fill + (n − 1)·II + tail" in out and "Δ lead-in" in out
    assert "T = 2(p−1)·m·α_max + 2(p−1)·⌈N/p⌉·β" in out and "2×3: mesh2x3 vs torus2x3, 6 PEs" in out


def test_study_and_check_are_exclusive(capsys):
    assert main(["bench", "--study", "gemm", "--check"]) == 2
    err = capsys.readouterr().err
    assert "not allowed with argument" in err and err.count("\n") == 1


def test_study_points_are_pinned_in_the_goldens():
    names = set(bench.load_goldens(bench.GOLDENS))
    assert {
        "allreduce/torus2x3/ring/1MiB",
        "allreduce/mesh2x3/ring/1MiB",
        "allreduce/torus2x3/2d/1MiB",
        "allreduce/torus2x3/tree/1MiB",
    } <= names
    assert {"gemm-tiled/composite-16tiles", "gemm-tiled/primitive-16tiles", "gemm-tiled/composite-splitk4-8pe"} <= names


# --- docs/studies.md shows real output (README's tables moved there) ---------------

PAGE = (__import__("pathlib").Path(__file__).resolve().parents[2] / "docs" / "studies.md").read_text()


def _page_block(first_line_start: str) -> list[str]:
    """The lines of the page's first text block with a line starting ``first_line_start``, from that line."""
    blocks = [b.split("```", 1)[0].splitlines() for b in PAGE.split("```text\n")[1:]]
    block = next(b for b in blocks if any(line.startswith(first_line_start) for line in b))
    i = next(k for k, line in enumerate(block) if line.startswith(first_line_start))
    return block[i:]


def _all_reduce_rows_are_the_simulators(payloads: tuple[int, ...]) -> None:
    fresh = ar.table(list(ar.sweep([("2×3", "mesh2x3", "torus2x3", "", payloads)]))).splitlines()
    shown = _page_block(" payload  algo")
    assert shown[: len(fresh)] == fresh


def test_page_all_reduce_rows_up_to_64KiB_are_the_simulators():
    _all_reduce_rows_are_the_simulators((4096, 16384, 65536))


@pytest.mark.slow
def test_page_all_reduce_rows_up_to_256KiB_are_the_simulators():
    _all_reduce_rows_are_the_simulators((4096, 16384, 65536, 262144))


def test_page_gemm_rows_up_to_16_tiles_are_the_simulators():
    fresh = g.tile_count_table(g.tile_count_sweep((1, 2, 4, 8, 16))).splitlines()
    shown = _page_block("        composite, A K-step-major")
    assert shown[: len(fresh)] == fresh


def test_the_studies_pages_4x4_rows_at_4KiB_are_the_simulators():
    # the rows the page's α–β explanation quotes (ring 1.03 on the mesh, 1.61 on the torus)
    fresh = ar.table(list(ar.sweep([("4×4", "paper", "paper_torus", "sip0", (4096,))]))).splitlines()
    block = PAGE.split("```text\n4×4: paper vs paper_torus", 1)[1].split("```", 1)[0].splitlines()[1:]
    assert block[: len(fresh)] == fresh


@pytest.mark.slow
def test_the_studies_pages_tilings_table_is_the_simulators():
    fresh = g.tiling_table(g.tiling_sweep()).splitlines()
    assert _page_block("tiling ") == fresh
