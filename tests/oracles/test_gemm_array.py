"""PE_GEMM is an R×C array (``docs/timing.md``, "PE_GEMM is an R×C array"): a GEMM takes
``⌈m/R⌉·⌈n/C⌉·k`` passes of ``2·R·C / (gemm_tflops·1000)`` ns, at the operands' dtype
ratio, plus the fill. The numbers here are the page's table, worked by hand on the paper
topology (R = C = 64, 8 TFLOP/s, fill 8 cycles at 1 GHz: one pass is 1.024 ns).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from kernelkit import busy, run1

import kernbench.tl as tl
from kernbench.runtime.api import Runtime


def one_dot(m: int, k: int, n: int, dtype=np.float16, sets=()):
    rt = Runtime("cube1", list(sets))

    def kernel():
        tl.dot(tl.full((m, k), 1.0, dtype), tl.full((k, n), 1.0, dtype))

    (g,) = busy(run1(rt, kernel), "gemm")
    return g.end_ns - g.t_ns


@pytest.mark.parametrize(
    "m, k, n, dtype, ns",
    [
        (128, 128, 128, np.float16, 8 + 512 * 1.024),  # full tiles: the paper's 8 TFLOP/s
        (8, 128, 128, np.float16, 8 + 256 * 1.024),  # decode: 8 of 64 rows, 8x the FLOPs' share
        (8, 128, 128, ml_dtypes.float8_e4m3fn, 8 + 256 * 1.024 / 2),  # fp8 at twice the peak
        (8, 128, 128, np.float32, 8 + 256 * 1.024 / 0.5),  # f32 at half
        (64, 96, 80, np.float16, 8 + 1 * 2 * 96 * 1.024),  # n = 80 needs two column passes
    ],
)
def test_a_gemm_takes_its_array_passes_at_its_dtypes_rate(m, k, n, dtype, ns):
    assert one_dot(m, k, n, dtype) == pytest.approx(ns)


def test_full_tiles_run_at_the_papers_peak_whatever_the_array_shape():
    flops_ns = 2 * 128**3 / 8000
    for r, c in ((64, 64), (32, 128), (128, 16)):
        assert one_dot(128, 128, 128, sets=(f"pe.attrs.gemm_array_rows={r}", f"pe.attrs.gemm_array_cols={c}")) == pytest.approx(
            8 + flops_ns
        )


def test_a_wider_array_slows_a_thin_gemm_and_never_a_full_one():
    thin = [one_dot(8, 128, 128, sets=(f"pe.attrs.gemm_array_rows={r}",)) for r in (8, 16, 32, 64)]
    assert thin == sorted(thin) and thin[0] == pytest.approx(8 + 2 * 8 * 128 * 128 / 8000)  # R = 8: no waste


def test_a_composite_gemm_step_pays_its_k_slice_through_the_array():
    rt = Runtime("cube1")
    m, k, n = 8, 2048, 128  # B is 512 KiB of f16: 16 steps of 128 K
    w = rt.deploy(np.ones((k, n), np.float16))

    def kernel(w):
        q = tl.full((m, k), 1.0, np.float16)
        acc = tl.zeros((m, n))
        tl.composite([tl.OpSpec("gemm", {"a": q, "b": tl.ref(w)}, acc)])

    gs = busy(run1(rt, kernel, w), "gemm")
    assert len(gs) == 16
    for g in gs:
        assert g.end_ns - g.t_ns == pytest.approx(8 + 1 * 2 * 128 * 1.024)
