"""The SwiGLU MLP, ``(silu(h·Wg) ⊙ (h·Wu))·Wd``, tensor-parallel; and the ``swiglu-mlp`` kernel.

Each of the ``tp`` PEs holds FFN columns ``[p·fl, (p+1)·fl)`` of ``Wg`` and
``Wu`` (H × fl each) and the matching rows of ``Wd`` (fl × H), in its own
HBM slice. Per tile of rows, three composites: the gate and up GEMMs in one
(both weights streamed from HBM as ``tl.ref`` operands, one step per
``composite_tile_bytes`` of the larger), ``silu`` then ``mul`` in one (two
PE_MATH passes, ``silu`` at the transcendental rate), and the down GEMM
whose (rows × H) result goes straight to this PE's partial-sum buffer in
HBM. An all-reduce over the ``tp`` PEs then sums the partials.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kernbench.tl as tl
from kernbench.collectives import ALGORITHMS, all_reduce
from kernbench.collectives.group import Group
from kernbench.handles import HbmTensor, Ptr, TensorHandle
from kernbench.kernels.registry import Option, Params, Prepared, kernel
from kernbench.layers.tensors import ACTIVATION, DTYPES, TOLERANCE, Filler, f32
from kernbench.runtime.api import Runtime


def swiglu(
    h: TensorHandle,
    wg: HbmTensor | Ptr,
    wu: HbmTensor | Ptr,
    wd: HbmTensor | Ptr,
    out: HbmTensor | Ptr | TensorHandle,
    dtype: Any,
    *,
    accumulate: bool = False,
) -> None:
    """This PE's share of the MLP of ``h`` (rows, H), written to ``out`` (rows, H): a partial sum, in HBM or (a TCM
    handle, ``accumulate``: added to it) in TCM."""
    rows, f = h.shape[0], wg.shape[1]
    g, u = tl.zeros((rows, f), dtype), tl.zeros((rows, f), dtype)
    tl.composite([tl.OpSpec("gemm", {"a": h, "b": tl.ref(wg)}, g), tl.OpSpec("gemm", {"a": h, "b": tl.ref(wu)}, u)])
    tl.composite([tl.OpSpec("silu", {"x": g}, g), tl.OpSpec("mul", {"a": g, "b": u}, g)], rw_handles=(g,))
    del u
    target = out if isinstance(out, TensorHandle) else tl.ref(out)
    extra = {"accumulate": True} if accumulate else {}
    tl.composite([tl.OpSpec("gemm", {"a": g, "b": tl.ref(wd)}, target, extra=extra)], rw_handles=(target,) if accumulate else ())


def reference(h: np.ndarray, wg: np.ndarray, wu: np.ndarray, wd: np.ndarray) -> np.ndarray:
    """float32 SwiGLU MLP of the rows of ``h``."""
    g = h @ wg
    out: np.ndarray = ((g / (1.0 + np.exp(-g))) * (h @ wu)) @ wd
    return out


def _mlp_kernel(xs: list[HbmTensor], ws: list[tuple[HbmTensor, HbmTensor, HbmTensor]], bufs: list[HbmTensor], tile: int, algo: str) -> None:
    me = tl.program_id()
    x, (wg, wu, wd), buf = xs[me], ws[me], bufs[me]
    for r0 in range(0, x.shape[0], tile):
        r1 = min(x.shape[0], r0 + tile)
        swiglu(tl.load(x[r0:r1, :]), wg, wu, wd, buf[r0:r1, :], buf.dtype)
    all_reduce(buf, Group(tuple(range(tl.num_programs()))), algo=algo)


def _check(p: Params, pes: int) -> list[str]:
    problems = []
    if p["tp"] > pes:
        problems.append(f"--tp {p['tp']}: the topology has {pes} PEs")
    if p["ffn"] % p["tp"]:
        problems.append(f"--ffn {p['ffn']} must divide by --tp {p['tp']}")
    return problems


@kernel(
    options=[
        Option("tokens", int, 16, "rows (tokens)", low=1, high=65536),
        Option("hidden", int, 1024, "hidden size H", low=1, high=65536),
        Option("ffn", int, 2048, "FFN size (split over the PEs)", low=1, high=2**20),
        Option("tp", int, 4, "PEs (tensor-parallel degree)", low=1, high=4096),
        Option("tile", int, 16, "rows per tile", low=1, high=65536),
        Option("allreduce", str, "ring", "all-reduce algorithm of the partial sums", ALGORITHMS),
        Option("dtype", str, "bfloat16", "dtype of the weights (activations: bfloat16 for fp8)", tuple(DTYPES)),
        Option("seed", int, 0, "random seed of the inputs", low=0, high=2**32 - 1),
    ],
    check=_check,
    name="swiglu-mlp",
)
def mlp_setup(rt: Runtime, tokens: int, hidden: int, ffn: int, tp: int, tile: int, allreduce: str, dtype: str, seed: int) -> Prepared:
    """Tensor-parallel SwiGLU MLP: gate/up columns and down rows split over PEs, then an all-reduce."""
    fill = Filler(rt, seed)
    wdt, adt, f = DTYPES[dtype], ACTIVATION[dtype], ffn // tp
    x0 = fill.random((tokens, hidden), adt, 1.0, pe=0, name="x0")
    xs = [x0] + [rt.deploy(x0.layout, dtype=adt, pe=p, name=f"x{p}") for p in range(1, tp)]  # (the input, on every PE)
    ws = [
        (
            fill.weight((hidden, f), wdt, hidden, pe=p, name=f"Wg{p}"),
            fill.weight((hidden, f), wdt, hidden, pe=p, name=f"Wu{p}"),
            fill.weight((f, hidden), wdt, ffn, pe=p, name=f"Wd{p}"),
        )
        for p in range(tp)
    ]
    bufs = [rt.empty((tokens, hidden), adt, pe=p, name=f"y{p}") for p in range(tp)]
    rt.launch(_mlp_kernel, pes=range(tp), args=(xs, ws, bufs, tile, allreduce))

    def check() -> float:
        h = f32(x0)
        ref = sum(reference(h, f32(wg), f32(wu), f32(wd)) for wg, wu, wd in ws)
        return float(np.abs(f32(bufs[0]) - ref).max())

    return Prepared(check, lambda result: {"tolerance": TOLERANCE[dtype]})
