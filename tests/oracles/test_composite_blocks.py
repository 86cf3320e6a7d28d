"""A composite's steps never split a K-step-major block, and its read-ahead is bounded
(``kernbench/pe/steps.py``, ``kernbench/pe/composite.py``, ``docs/timing.md``):

* a GEMM with a K-step-major A (``(k / tk, m, tk)``) streams whole blocks: as many per step
  as fit in ``composite_tile_bytes``, at least one (F4 of issue 27: 96 × 128 blocks of f16
  are 24 KiB, so the 32 KiB default holds one per step, as the 24 KiB setting does);
* a step's FETCH waits until the engines are done with the step ``composite_buffers``
  (2) back: FETCH — and DMA_READ behind it — run at most that many steps ahead.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from kernelkit import busy, run1

import kernbench.tl as tl
from kernbench.cli import main
from kernbench.runtime.api import Runtime

F4 = ["run", "gemm-tiled", "--topology", "cube1", "--form", "composite", "--m", "96", "--n", "64", "--k", "2048"]
F4 += ["--tile-m", "96", "--tile-n", "64", "--tile-k", "128", "--pes", "1", "--json"]


def latency(capsys, *extra: str) -> float:
    assert main(F4 + list(extra)) == 0
    return float(json.loads(capsys.readouterr().out)["latency_ns"])


def test_the_f4_reproducers_default_is_no_slower_than_its_block_aligned_run(capsys):
    default = latency(capsys)
    aligned = latency(capsys, "--set", "pe.attrs.composite_tile_bytes=24576")
    assert default <= aligned


def test_a_kstep_major_step_holds_whole_blocks():
    rt = Runtime("cube1")
    m, k, n, tk = 96, 2048, 64, 128  # 16 blocks of 96 × 128 f16 = 24 KiB; B's 128 rows of 64 are 16 KiB
    A = np.ones((k // tk, m, tk), np.float16)
    a, b = rt.deploy(A), rt.deploy(np.ones((k, n), np.float16))

    def kernel(a, b):
        acc = tl.zeros((m, n))
        tl.composite([tl.OpSpec("gemm", {"a": tl.ref(a), "b": tl.ref(b)}, acc, extra={"a_kstep_major": True})])

    r = run1(rt, kernel, a, b)
    sizes = [e.value for e in busy(r, "dma.rd")]  # per step: A's piece, then B's
    assert len(busy(r, "gemm")) == 16 and len(sizes) == 32
    assert set(sizes[0::2]) == {m * tk * 2}  # every A read is exactly one block
    assert set(sizes[1::2]) == {tk * n * 2}


def test_two_blocks_a_step_when_two_fit():
    rt = Runtime("cube1", ["pe.attrs.composite_tile_bytes=49152"])
    m, k, n, tk = 96, 2048, 64, 128
    a, b = rt.deploy(np.ones((k // tk, m, tk), np.float16)), rt.deploy(np.ones((k, n), np.float16))

    def kernel(a, b):
        acc = tl.zeros((m, n))
        tl.composite([tl.OpSpec("gemm", {"a": tl.ref(a), "b": tl.ref(b)}, acc, extra={"a_kstep_major": True})])

    gs = busy(run1(rt, kernel, a, b), "gemm")
    assert len(gs) == 8
    for g in gs:  # 2 blocks = 256 K: ⌈96/64⌉·⌈64/64⌉·256 passes of 1.024 ns + 8
        assert g.end_ns - g.t_ns == pytest.approx(8 + 2 * 1 * 256 * 1.024)


@pytest.mark.parametrize("buffers", [1, 2, 3])
def test_fetch_runs_at_most_composite_buffers_steps_ahead_of_the_gemm(buffers):
    rt = Runtime("cube1", [f"pe.attrs.composite_buffers={buffers}"])
    m, k, n = 128, 2048, 128  # B: 512 KiB, 16 steps; a step's GEMM 4·128 passes (532 ns) vs its FETCH 128 ns
    w = rt.deploy(np.ones((k, n), np.float16))

    def kernel(w):
        x = tl.full((m, k), 1.0, np.float16)
        acc = tl.zeros((m, n))
        tl.composite([tl.OpSpec("gemm", {"a": x, "b": tl.ref(w)}, acc)])

    r = run1(rt, kernel, w)
    gs, fs = busy(r, "gemm"), [f for f in busy(r, "fetch") if f.label.startswith("fetch gemm")]
    assert len(gs) == len(fs) == 16
    for i in range(buffers, 16):
        assert fs[i].t_ns >= gs[i - buffers].end_ns - 1e-9
    # the GEMM is the bottleneck: the bound is what holds FETCH back, so it starts exactly then
    assert fs[15].t_ns == pytest.approx(gs[15 - buffers].end_ns)
