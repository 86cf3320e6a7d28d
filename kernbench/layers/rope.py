"""Rotary position embedding on rows of head vectors; and the ``rope`` kernel.

A row ``x`` (one head of one token, length d) at position ``pos`` becomes
``x · cos(pos·f) + rotate_half(x) · sin(pos·f)``, ``f`` the (1, d) row of
frequencies ``theta^(−2i/d)`` (each repeated for the two halves) and
``rotate_half(x) = (−x[d/2:], x[:d/2])`` (the Llama/NeoX convention).

On the PE: the angles ``pos·f`` of a tile are one rank-1 ``tl.dot`` of the
rows' positions (a column) by ``f`` (a row), or ``f`` scaled by the one
position every row shares (decode); ``tl.cos`` and ``tl.sin`` run at the
transcendental rate; ``rotate_half`` is a ``tl.dot`` with the signed
permutation ``R`` (d × d, loaded once: see :func:`~kernbench.layers.tensors.rotation`),
which costs a GEMM of the tile against d columns instead of two column
copies and a concatenation the tile API does not have.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kernbench.tl as tl
from kernbench.handles import HbmTensor, TensorHandle
from kernbench.kernels.registry import Option, Params, Prepared, kernel
from kernbench.layers.tensors import ACTIVATION, DTYPES, TOLERANCE, Filler, f32, inv_freq, rotation
from kernbench.runtime.api import Runtime


def angles_of(positions: TensorHandle, freq: TensorHandle) -> tuple[TensorHandle, TensorHandle]:
    """``(cos, sin)`` of ``positions`` (rows, 1) × ``freq`` (1, d): (rows, d) float32 each."""
    a = tl.dot(positions, freq)
    return tl.cos(a), tl.sin(a)


def rope_rows(x: TensorHandle, cos: TensorHandle, sin: TensorHandle, rot: TensorHandle, dtype: Any = np.float32) -> TensorHandle:
    """RoPE of every row of ``x`` (rows, d): ``cos``/``sin`` are (rows, d), or one (1, d) row shared by all rows."""
    turned = tl.dot(x, rot)
    y = tl.zeros(x.shape, dtype)
    if cos.shape[0] == 1 and x.shape[0] != 1:
        ops = [tl.OpSpec("mul_bcast_row", {"a": x, "b": cos}, y), tl.OpSpec("mul_bcast_row", {"a": turned, "b": sin}, turned)]
    else:
        ops = [tl.OpSpec("mul", {"a": x, "b": cos}, y), tl.OpSpec("mul", {"a": turned, "b": sin}, turned)]
    tl.composite([*ops, tl.OpSpec("add", {"a": y, "b": turned}, y)], rw_handles=(y, turned))
    return y


def reference(x: np.ndarray, positions: np.ndarray, theta: float) -> np.ndarray:
    """float32 RoPE of rows ``x`` (rows, d) at ``positions`` (rows,)."""
    d = x.shape[-1]
    a = positions.astype(np.float32).reshape(-1, 1) @ inv_freq(d, theta)
    x = x.astype(np.float32)
    out: np.ndarray = x * np.cos(a) + (x @ rotation(d)) * np.sin(a)
    return out


def _rope_kernel(
    xs: list[HbmTensor], pos: list[HbmTensor], freq: list[HbmTensor], rot: list[HbmTensor], outs: list[HbmTensor], tile: int
) -> None:
    me = tl.program_id()
    x, out = xs[me], outs[me]
    f, r = tl.load(freq[me]), tl.load(rot[me])
    for r0 in range(0, x.shape[0], tile):
        r1 = min(x.shape[0], r0 + tile)
        cos, sin = angles_of(tl.load(pos[me][r0:r1, :]), f)
        tl.store(out[r0:r1, :], rope_rows(tl.load(x[r0:r1, :]), cos, sin, r))


def _check(p: Params, pes: int) -> list[str]:
    problems = []
    if p["pes"] > pes:
        problems.append(f"--pes {p['pes']}: the topology has {pes}")
    if p["tokens"] % p["pes"]:
        problems.append(f"--tokens {p['tokens']} must divide by --pes {p['pes']}")
    if p["head_dim"] % 2:
        problems.append(f"--head-dim {p['head_dim']} must be even (RoPE turns pairs)")
    return problems


@kernel(
    options=[
        Option("tokens", int, 256, "tokens (positions 0 … tokens − 1), split over the PEs", low=1, high=2**20),
        Option("heads", int, 8, "heads per token", low=1, high=1024),
        Option("head_dim", int, 128, "head dimension d", low=2, high=4096),
        Option("theta", float, 500000.0, "RoPE base (Llama 3: 500000)", low=1.0),
        Option("tile", int, 64, "rows (token × head) per tile", low=1, high=65536),
        Option("pes", int, 4, "PEs, each its share of the tokens", low=1, high=4096),
        Option("dtype", str, "bfloat16", "dtype of x and the output", tuple(DTYPES)),
        Option("seed", int, 0, "random seed of the inputs", low=0, high=2**32 - 1),
    ],
    check=_check,
    name="rope",
)
def rope_setup(rt: Runtime, tokens: int, heads: int, head_dim: int, theta: float, tile: int, pes: int, dtype: str, seed: int) -> Prepared:
    """Rotary position embedding of (token, head) rows (tl.cos, tl.sin; rotate-half as a GEMM)."""
    fill = Filler(rt, seed)
    dt, d, n = ACTIVATION[dtype], head_dim, tokens // pes
    xs, pos, freq, rot, outs = [], [], [], [], []
    for p in range(pes):
        xs.append(fill.random((n, heads, d), dt, 1.0, pe=p, name=f"x{p}").reshape(n * heads, d).tensor)
        rows = np.repeat(np.arange(p * n, (p + 1) * n, dtype=np.float32), heads).reshape(-1, 1)
        pos.append(fill.given(rows, np.float32, pe=p, name=f"pos{p}"))
        freq.append(fill.given(inv_freq(d, theta), np.float32, pe=p, name=f"freq{p}"))
        rot.append(fill.given(rotation(d), dt, pe=p, name=f"R{p}"))
        outs.append(rt.empty((n * heads, d), dt, pe=p, name=f"y{p}"))
    rt.launch(_rope_kernel, pes=range(pes), args=(xs, pos, freq, rot, outs, tile))

    def check() -> float:
        return max(float(np.abs(f32(o) - reference(f32(x), f32(q)[:, 0], theta)).max()) for x, q, o in zip(xs, pos, outs, strict=True))

    return Prepared(check, lambda result: {"tolerance": TOLERANCE[dtype]})
