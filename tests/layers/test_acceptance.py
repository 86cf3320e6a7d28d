"""Issue 24's first "done when": a kernel file outside the package writes RMSNorm then a SwiGLU MLP in
bfloat16 with tl.rsqrt, tl.silu and a TCM slice; `kernbench run FILE --json --explain` is within 0.05 of
numpy and its attribution sums to the latency."""

from __future__ import annotations

import json
import textwrap

import pytest

from kernbench.cli import main

KERNEL_FILE = textwrap.dedent(
    """
    import numpy as np
    import ml_dtypes

    from kernbench import Option, kernel, tl

    BF16 = tl.bfloat16


    def norm_mlp(x, w_norm, w_gate_up, w_down, out, ffn):
        xt = tl.load(x)                                              # (rows, H) bfloat16
        ms = tl.rowmean(tl.mul(xt, xt))
        r = tl.rsqrt(tl.add(ms, tl.full(ms.shape, 1e-5)))
        h = tl.cast(tl.mul_bcast_row(tl.mul_bcast(xt, r), tl.load(w_norm)), BF16)
        gu = tl.dot(h, tl.load(w_gate_up))                          # (rows, 2·ffn): gate and up fused
        gate, up = gu[:, 0:ffn], gu[:, ffn : 2 * ffn]                # TCM slices (column blocks: copies)
        act = tl.cast(tl.mul(tl.silu(gate), up), BF16)
        tl.store(out, tl.dot(act, tl.load(w_down)))


    @kernel(options=[Option("rows", int, 16, "rows", low=1, high=256), Option("hidden", int, 256, "hidden", low=8, high=1024)])
    def rmsnorm_swiglu(rt, rows, hidden):
        ffn = 2 * hidden
        rng = np.random.default_rng(7)
        f32 = lambda a: np.asarray(a, np.float32)
        x = rng.uniform(-1, 1, (rows, hidden)).astype(np.float32)
        wn = rng.uniform(0.5, 1.5, (1, hidden)).astype(np.float32)
        wgu = (rng.uniform(-1, 1, (hidden, 2 * ffn)) * np.sqrt(3 / hidden)).astype(np.float32)
        wd = (rng.uniform(-1, 1, (ffn, hidden)) * np.sqrt(3 / ffn)).astype(np.float32)
        tx, tn, tgu, td = (rt.deploy(a, dtype=BF16) for a in (x, wn, wgu, wd))
        out = rt.empty((rows, hidden), np.float32)
        rt.launch(norm_mlp, pes=[0], args=(tx, tn, tgu, td, out, ffn))

        def check():
            xs, n, gu, d = f32(tx.array), f32(tn.array), f32(tgu.array), f32(td.array)
            h = xs / np.sqrt((xs * xs).mean(axis=1, keepdims=True) + 1e-5) * n
            g, u = h @ gu[:, :ffn], h @ gu[:, ffn:]
            ref = (g / (1 + np.exp(-g)) * u) @ d
            return float(np.abs(rt.read(out) - ref).max())

        return check
    """
)


@pytest.fixture
def kernel_file(tmp_path):
    path = tmp_path / "norm_mlp.py"
    path.write_text(KERNEL_FILE)
    return path


def test_a_kernel_file_of_rmsnorm_and_swiglu_in_bfloat16_runs_explained_within_numpy_tolerance(kernel_file, capsys):
    assert main(["run", str(kernel_file), "--json", "--explain"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["kernel"] == "rmsnorm-swiglu" and rec["data"] == "held"
    assert rec["max_abs_err"] is not None and rec["max_abs_err"] <= 0.05
    by_cause = rec["attribution"]["by_cause"]
    assert sum(by_cause.values()) == pytest.approx(rec["latency_ns"], rel=1e-9, abs=1e-6)
    assert by_cause.get("math (transcendental)", 0) > 0  # rsqrt and silu ran at their own rate
    assert rec["engine_busy_ns"]["gemm"] > 0


def test_the_same_kernel_file_without_data_has_the_same_latency(kernel_file, capsys):
    assert main(["run", str(kernel_file), "--json"]) == 0
    held = json.loads(capsys.readouterr().out)
    assert main(["run", str(kernel_file), "--json", "--no-data"]) == 0
    none = json.loads(capsys.readouterr().out)
    assert none["latency_ns"] == held["latency_ns"] and none["max_abs_err"] is None and none["data"] == "none"
