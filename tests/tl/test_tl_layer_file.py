"""A user's kernel file outside the package: RMSNorm then a SwiGLU MLP in bfloat16 with tl.rowmean,
tl.rsqrt, tl.mul_bcast_row and tl.silu, run as `kernbench run FILE --json --explain` — within 0.05 of
numpy in float32, its attribution summing to its latency, the softmax-free transcendental share
(rsqrt, silu) named apart."""

from __future__ import annotations

import json
import textwrap

import pytest

from kernbench.cli import main

LAYER = textwrap.dedent(
    '''
    import numpy as np
    from kernbench import kernel, tl

    T, D, F = 16, 128, 256  # tokens, hidden, FFN


    def layer(x, w_norm, w_gate, w_up, w_down, out):
        h = tl.load(x)
        inv = tl.rsqrt(tl.add(tl.rowmean(tl.mul(h, h)), tl.full((1, 1), 1e-6, tl.bfloat16)))
        n = tl.mul_bcast_row(tl.mul_bcast(h, inv), tl.load(w_norm))
        gate = tl.dot(n, tl.load(w_gate), out_dtype=tl.bfloat16)
        up = tl.dot(n, tl.load(w_up), out_dtype=tl.bfloat16)
        tl.store(out, tl.dot(tl.mul(tl.silu(gate), up), tl.load(w_down), out_dtype=tl.bfloat16))


    @kernel(topology="cube1")
    def rmsnorm_swiglu(rt):
        """RMSNorm then a SwiGLU MLP on one PE, bfloat16."""
        rng = np.random.default_rng(0)
        X = rng.standard_normal((T, D))
        W = [rng.uniform(0.5, 1.5, (1, D)), rng.standard_normal((D, F)) / np.sqrt(D),
             rng.standard_normal((D, F)) / np.sqrt(D), rng.standard_normal((F, D)) / np.sqrt(F)]
        x, *w = [rt.deploy(a, dtype=tl.bfloat16) for a in (X, *W)]
        out = rt.empty((T, D), dtype=tl.bfloat16)
        rt.launch(layer, pes=[0], args=(x, *w, out))

        def check():
            f = [a.array.astype(np.float32) for a in (x, *w)]
            xs, wn, wg, wu, wd = f
            n = xs / np.sqrt((xs * xs).mean(axis=1, keepdims=True) + 1e-6) * wn
            g, u = n @ wg, n @ wu
            want = (g / (1 + np.exp(-g)) * u) @ wd
            return float(np.abs(rt.read(out).astype(np.float32) - want).max())

        return check
    '''
)


def test_rmsnorm_then_swiglu_in_bfloat16_runs_from_a_file_within_005_and_explains_itself(tmp_path, capsys):
    path = tmp_path / "layer.py"
    path.write_text(LAYER)
    capsys.readouterr()
    assert main(["run", str(path), "--json", "--explain"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["max_abs_err"] <= 0.05
    by_cause = rec["attribution"]["by_cause"]
    assert sum(by_cause.values()) == pytest.approx(rec["latency_ns"], abs=1e-6)
    assert by_cause.get("math (transcendental)", 0) > 0  # rsqrt and silu on the special-function pipe
