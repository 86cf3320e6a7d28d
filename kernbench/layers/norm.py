"""RMSNorm, ``y = x · rsqrt(mean(x²) + eps) · w``, on a tile of rows; and the ``rmsnorm`` kernel.

On a (rows, n) tile: ``tl.mul`` (x²), ``tl.rowmean``, ``tl.add`` of eps,
``tl.rsqrt`` (a transcendental op) — four single-op commands on (rows, 1)
columns after the first — then one composite scaling every row by its
column entry and every column by the weight row, written in the output's
dtype (two PE_MATH passes, no scratch for intermediates).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kernbench.tl as tl
from kernbench.handles import HbmTensor, TensorHandle
from kernbench.kernels.registry import Option, Params, Prepared, kernel
from kernbench.layers.tensors import ACTIVATION, DTYPES, TOLERANCE, Filler, f32
from kernbench.runtime.api import Runtime


def rmsnorm(x: TensorHandle, w: TensorHandle, eps: float, dtype: Any) -> TensorHandle:
    """RMSNorm of every row of ``x`` (rows, n) with weight row ``w`` (1, n), as a new (rows, n) tile of ``dtype``."""
    rows = x.shape[0]
    ms = tl.rowmean(tl.mul(x, x))
    r = tl.rsqrt(tl.add(ms, tl.full((rows, 1), eps)))
    y = tl.zeros(x.shape, dtype)
    tl.composite([tl.OpSpec("mul_bcast", {"a": x, "b": r}, y), tl.OpSpec("mul_bcast_row", {"a": y, "b": w}, y)], rw_handles=(y,))
    return y


def reference(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    """float32 RMSNorm of the rows of ``x`` with weight ``w`` (n,) or (1, n)."""
    x = x.astype(np.float32)
    y: np.ndarray = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + np.float32(eps)) * w.astype(np.float32).reshape(1, -1)
    return y


def _rmsnorm_kernel(xs: list[HbmTensor], w: list[HbmTensor], outs: list[HbmTensor], tile: int, eps: float) -> None:
    me = tl.program_id()
    x, out = xs[me], outs[me]
    wt = tl.load(w[me])
    for r0 in range(0, x.shape[0], tile):
        r1 = min(x.shape[0], r0 + tile)
        tl.store(out[r0:r1, :], rmsnorm(tl.load(x[r0:r1, :]), wt, eps, out.dtype))


def _check(p: Params, pes: int) -> list[str]:
    problems = []
    if p["pes"] > pes:
        problems.append(f"--pes {p['pes']}: the topology has {pes}")
    if p["rows"] % p["pes"]:
        problems.append(f"--rows {p['rows']} must divide by --pes {p['pes']}")
    return problems


@kernel(
    options=[
        Option("rows", int, 64, "rows (tokens) to normalize, split over the PEs", low=1, high=65536),
        Option("hidden", int, 4096, "row length (hidden size)", low=2, high=65536),
        Option("tile", int, 16, "rows per tile", low=1, high=4096),
        Option("pes", int, 4, "PEs, each its share of the rows", low=1, high=4096),
        Option("dtype", str, "bfloat16", "dtype of x, the weight and the output", tuple(DTYPES)),
        Option("seed", int, 0, "random seed of the inputs", low=0, high=2**32 - 1),
    ],
    check=_check,
    name="rmsnorm",
)
def rmsnorm_setup(rt: Runtime, rows: int, hidden: int, tile: int, pes: int, dtype: str, seed: int) -> Prepared:
    """RMSNorm of rows split over PEs (tl.rowmean, tl.rsqrt; a two-op composite for the scaling)."""
    fill = Filler(rt, seed)
    dt = ACTIVATION[dtype]
    n = rows // pes
    xs = [fill.random((n, hidden), dt, 1.0, pe=p, name=f"x{p}") for p in range(pes)]
    w = fill.rng.random((1, hidden), dtype=np.float32) + np.float32(0.5)  # (a norm's weight: near 1)
    ws = [fill.given(w, dt, pe=p, name=f"w{p}") for p in range(pes)]  # each PE its own copy, beside it
    outs = [rt.empty((n, hidden), dt, pe=p, name=f"y{p}") for p in range(pes)]
    eps = 1e-5
    rt.launch(_rmsnorm_kernel, pes=range(pes), args=(xs, ws, outs, tile, eps))

    def check() -> float:
        return max(float(np.abs(f32(o) - reference(f32(x), f32(ws[0]), eps)).max()) for x, o in zip(xs, outs, strict=True))

    return Prepared(check, lambda result: {"tolerance": TOLERANCE[dtype]})
