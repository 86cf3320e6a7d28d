"""The ideal-pipeline model: stage times by hand, its DMA rule against the engine, and
how it compares with gemm-tiled in the simulator."""

from __future__ import annotations

import pytest
import simpy

from kernbench.kernels import registry
from kernbench.kernels.gemm_tiled import Tiling
from kernbench.models.pipeline import Engines, dma_ns, predict
from kernbench.runtime.api import Runtime
from kernbench.sim.network import Network

PE = "sip0.cube0.pe0"


def tiling(**kw) -> Tiling:
    p = dict(registry.get("gemm-tiled").defaults(), **kw)
    return Tiling(p["m"], p["n"], p["k"], p["tile_m"], p["tile_n"], p["tile_k"], p["ksplit"], p["pes"], p["form"], p["layout"])


def simulate(**kw):
    spec = registry.get("gemm-tiled")
    rt = Runtime("cube1")
    prepared = spec.prepare(rt, dict(spec.defaults(), **kw))
    result = rt.run()
    return result, prepared


@pytest.mark.parametrize("size", [256, 2048, 16384, 32768, 65536, 131072])
@pytest.mark.parametrize("op", ["read", "write"])
def test_the_dma_rule_is_the_engines_answer_for_an_idle_contiguous_transfer(cube1, size, op):
    env = simpy.Environment()
    net = Network(env, cube1)
    done = getattr(net, op)(f"{PE}.dma", "sip0.cube0.hbm.slice0", 0, size)
    env.run()
    assert done.value.latency_ns == pytest.approx(dma_ns(cube1, PE, "sip0.cube0.hbm.slice0", size))


def test_dma_rule_by_hand(cube1):
    # 32 KiB local: request header 2 + first burst 256 B / 32 GB/s = 8 + data header 2
    # + flits 1 + 1 + 127 more at the 256 GB/s port = 141 (the paper's probe row)
    assert dma_ns(cube1, PE, "sip0.cube0.hbm.slice0", 32768) == 141.0


def test_stage_times_by_hand(cube1):
    e = Engines.of(cube1, PE)
    assert e.gemm_ns(128, 128, 128) == pytest.approx(8 + 2 * 128**3 / 8000)  # full tiles: pipeline cycles + flops at 8 TFLOP/s
    assert e.gemm_ns(8, 128, 128) == pytest.approx(8 + 1 * 2 * 128 * 2 * 64 * 64 / 8000)  # m = 8: a whole 64-row pass per K
    assert e.tcm_ns(65536) == 128.0  # 64 KiB at 512 GB/s
    assert e.math_ns(16384) == 4 + 256  # 16384 elements on 64 lanes + 4 cycles
    m = predict(cube1, tiling(form="primitive", m=128, n=128, k=1024, pes=1))
    assert m.recurrence_ns == 256 + 260 + 128  # FETCH sum and partial, MATH add, STORE sum
    assert (m.tiles, m.bound) == (8, "recurrence")


def test_composite_model_by_hand(cube1):
    # K 256: A's row block 128 x 256 f16 = 64 KiB -> two K-steps of 128; A K-step-major, so each
    # step's A is one contiguous 32 KiB block (141 ns), as is B's (141); C accumulates in the GEMM
    # engine and is stored (32 KiB at 512 GB/s: 64 ns) and written (141) once, after the last step
    m = predict(cube1, tiling(form="composite", m=128, n=128, k=256, pes=1))
    issue = (40 + 47 * 0.0625) + 2 + 1  # composite dispatch (47 logical bytes) + cpu and scheduler overheads
    gemm = 8 + 2 * 128**2 * 128 / 8000
    fill = issue + 141 + 141 + 128 + gemm
    assert m.tiles == 2
    assert m.fill_ns == pytest.approx(fill)
    assert m.ii_ns == pytest.approx(gemm) and m.bound == "gemm"
    assert m.tail_ns == pytest.approx(64 + 141)
    assert m.ns == pytest.approx(fill + m.ii_ns + 64 + 141)


def test_a_row_major_a_makes_the_composite_wait_on_one_pseudo_channel(cube1):
    # K 2048: 16 K-steps; A row-major has rows 4 KiB apart, so a step's column block (128 rows of
    # 256 B) has every burst on one of the slice's 8 channels: 128 x 8 ns + 6 = 1,030 ns, then B's
    # 141: the read channel, not the GEMM (532 ns), sets the pace
    m = predict(cube1, tiling(form="composite", layout="naive", m=128, n=128, k=2048, pes=1))
    assert m.tiles == 16 and m.bound == "dma.rd"
    assert m.ii_ns == pytest.approx(1030 + 141)


@pytest.mark.parametrize("starts, run", [([0], 32768), ([r * 4096 for r in range(128)], 256), ([r * 1024 for r in range(64)], 512)])
def test_the_read_rule_is_the_engines_answer_for_an_idle_strided_read(cube1, starts, run):
    from kernbench.models.pipeline import read_ns
    from kernbench.sim.region import Region

    env = simpy.Environment()
    net = Network(env, cube1)
    done = net.read(f"{PE}.dma", "sip0.cube0.hbm.slice0", region=Region(tuple(starts), run))
    env.run()
    assert done.value.latency_ns == pytest.approx(read_ns(cube1, PE, "sip0.cube0.hbm.slice0", starts, run))


@pytest.mark.parametrize("layout", ["tiled", "naive"])
@pytest.mark.parametrize("steps", [1, 2, 4, 8, 16])
def test_a_lone_composite_is_exactly_the_ideal_pipeline(cube1, steps, layout):
    # the composite scheduler is this pipeline; with one PE nothing else shares its engines
    result, _ = simulate(form="composite", layout=layout, m=128, n=128, k=128 * steps, pes=1)
    model = predict(cube1, tiling(form="composite", layout=layout, m=128, n=128, k=128 * steps, pes=1))
    assert result.latency_ns == pytest.approx(model.ns)


@pytest.mark.parametrize("steps", [1, 4, 16])
def test_the_primitive_form_is_within_five_percent_of_its_model(cube1, steps):
    result, _ = simulate(form="primitive", m=128, n=128, k=128 * steps, pes=1)
    model = predict(cube1, tiling(form="primitive", m=128, n=128, k=128 * steps, pes=1)).ns
    assert abs(result.latency_ns / model - 1) < 0.05


def test_efficiency_climbs_with_tile_count_as_the_fill_is_amortized():
    effs = []
    for n in (1, 4, 16):
        result, prepared = simulate(form="composite", m=128, n=128, k=128 * n, pes=1)
        effs.append(prepared.summary(result)["mac_eff_pct"])
    assert effs[0] < 50 < effs[1] < 90 < effs[2]


@pytest.mark.parametrize(
    "kw",
    [
        dict(form="primitive", pes=4),
        dict(form="composite", pes=4),
        dict(form="primitive", pes=8, ksplit=2),
        dict(form="composite", pes=8, ksplit=4, k=2048),
        dict(form="primitive", pes=3, m=192, n=128, tile_m=64, tile_n=64, tile_k=64),
        dict(form="composite", pes=2, m=128, n=384, tile_n=128, k=512, tile_k=256),
    ],
)
def test_gemm_tiled_numerics_match_numpy(kw):
    result, prepared = simulate(**kw)
    assert prepared.check() < 0.1  # f16 inputs in [0.5, 2), f32 accumulation, f16 output of magnitude ≲ 60
    s = prepared.summary(result)
    assert 0 < s["mac_eff_pct"] <= 100 and 0 < s["model_mac_eff_pct"] <= 100


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(m=200), "m (200) must be a multiple of tile_m (128)"),
        (dict(k=1000), "k (1000) must be a multiple of tile_k × ksplit"),
        (dict(pes=6, ksplit=4, k=2048), "pes (6) must be a multiple of ksplit (4)"),
        (dict(pes=9), "pes 9: the topology has 8 PEs"),
        (dict(form="primitive", tile_m=256, tile_n=256, tile_k=256, m=256, n=256), "need 1835008 B of TCM scratch"),
        (dict(form="fused"), "form must be one of primitive, composite"),
        (dict(tile_k=0), "--tile-k 0: must be in 1..8192"),
    ],
)
def test_bad_tilings_are_clear_errors(capsys, kw, message):
    from kernbench.cli import main

    argv = ["run", "gemm-tiled"] + [x for k, v in kw.items() for x in (f"--{k.replace('_', '-')}", str(v))]
    if "form" in kw and kw["form"] not in ("primitive", "composite"):
        assert main(argv) == 2
        assert "--form 'fused': choose one of primitive, composite" in capsys.readouterr().err
        with pytest.raises(ValueError, match=message):
            Tiling.of(dict(registry.get("gemm-tiled").defaults(), **kw), 8, 2**20)
        return
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_run_gemm_tiled_prints_efficiency_and_model(capsys):
    from kernbench.cli import main

    assert main(["run", "gemm-tiled", "--form", "primitive", "--pes", "2", "--m", "256", "--n", "128", "--k", "512"]) == 0
    out = capsys.readouterr().out
    assert "mac_eff_pct" in out and "model_mac_eff_pct" in out and "fill + (n − 1)·II + tail" in out
    assert "gemm-tiled (primitive) on cube1 · 2 PE(s)" in out
