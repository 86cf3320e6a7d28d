"""Tiled GEMM ``C = A @ B``, in two forms.

Each program computes a block of ``M / programs`` rows of C from its own
HBM slice (A's rows and C's rows live beside the PE; B is replicated into
every PE's slice, as a weight would be).

``gemm-primitive``
    single-op commands: per K-tile a lazy ``tl.load`` of A's and B's chunk
    (the next chunk's loads are issued before the current ``tl.dot``, so DMA
    overlaps compute), a ``tl.dot`` and a running ``tl.add``. A's K-chunks
    are column blocks of its row-major block: ``layout=tiled`` (default)
    stores each chunk contiguously, chunk after chunk, as a kernel writer
    would; ``layout=naive`` keeps A row-major, so a chunk's rows sit ``k × 2``
    bytes apart and fall on a few of the slice's pseudo-channels.
``gemm-composite``
    one ``tl.composite`` GEMM per program with A's block and B as ``tl.ref``
    operands: PE_SCHEDULER streams K step by step, no redispatch, each step
    reading the column block of A and the rows of B it consumes. ``layout``
    as above: ``tiled`` stores A's block K-chunk-major (``tile_k`` wide), so a
    step whose K is a whole number of chunks reads them contiguously.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from kernbench import tl
from kernbench.handles import HbmTensor, Ptr
from kernbench.kernels.registry import Option, Params, Prepared, kernel
from kernbench.runtime.api import Runtime


def gemm_primitive(
    a_chunks: list[Callable[[int], Ptr | HbmTensor]], b_copies: list[HbmTensor], c_blocks: list[HbmTensor], tile_k: int
) -> None:
    """Rows of C for this program: lazy chunked loads, dot, running add.

    ``a_chunks[me](i)`` is the region of A's K-chunk ``i`` (in either layout).
    """
    me = tl.program_id()
    a, b, c = a_chunks[me], b_copies[me], c_blocks[me]
    rows = c.shape[0]
    n_k = b.shape[0] // tile_k
    acc = None
    nxt = (tl.load(a(0)), tl.load(b[0:tile_k, :]))
    for i in range(n_k):
        a_t, b_t = nxt
        if i + 1 < n_k:
            k0 = (i + 1) * tile_k
            nxt = (tl.load(a(i + 1)), tl.load(b[k0 : k0 + tile_k, :]))
        part = tl.dot(a_t, b_t)
        acc = part if acc is None else tl.add(acc, part)
        del a_t, b_t, part
    assert acc is not None and acc.shape[0] == rows
    tl.store(c, acc)


def gemm_composite(a_blocks: list[HbmTensor], b_copies: list[HbmTensor], c_blocks: list[HbmTensor]) -> None:
    """One composite GEMM with HBM-resident operands and output (A row-major, or
    K-chunk-major as ``(k / tile_k, rows, tile_k)``)."""
    me = tl.program_id()
    a, b, c = a_blocks[me], b_copies[me], c_blocks[me]
    k, n = b.shape
    m = a.shape[-2]
    extra: dict[str, int | bool] = {"m": m, "k": k, "n": n}
    if len(a.shape) == 3:
        extra["a_kstep_major"] = True
    tl.composite([tl.OpSpec("gemm", {"a": tl.ref(a), "b": tl.ref(b)}, tl.ref(c), extra=extra)], rw_handles=())


MAX_DIM = 8192
MAX_INPUT_BYTES = 256 * 2**20  # A, the replicated Bs and C together, float16

_SHAPE = (
    Option("m", int, 256, "rows of A and C (split over the programs)", low=1, high=MAX_DIM),
    Option("n", int, 128, "columns of B and C", low=1, high=MAX_DIM),
    Option("k", int, 512, "inner dimension", low=1, high=MAX_DIM),
)
_RUN = (
    Option("pes", int, 4, "programs (PEs) to split M over", low=1, high=4096),
    Option("seed", int, 0, "random seed of the inputs", low=0, high=2**32 - 1),
)
_LAYOUT = Option("layout", str, "tiled", "A's K-chunks in HBM: tiled (each contiguous) or naive (row-major A)", ("tiled", "naive"))
PRIMITIVE_OPTIONS = (
    *_SHAPE,
    Option("tile_k", int, 128, "K-chunk per load (and of a tiled A)", low=1, high=MAX_DIM),
    *_RUN,
    _LAYOUT,
)
#: the composite streams K in steps of its own choosing; tile_k is only the width of a tiled A's K-chunks
COMPOSITE_OPTIONS = (
    *_SHAPE,
    Option("tile_k", int, 128, "width of A's K-chunks", low=1, high=MAX_DIM, only_with=(("layout", "tiled"),)),
    *_RUN,
    _LAYOUT,
)


def check_options(p: Params, pes_available: int, composite: bool = False) -> list[str]:
    """Rules between the options and against the topology (each option's range is checked before).
    A composite over a row-major A has no K-chunks: its ``tile_k`` is not used, so not checked."""
    m, n, k, pes, tile_k = p["m"], p["n"], p["k"], p["pes"], p["tile_k"]
    problems = []
    if pes > pes_available:
        problems.append(f"--pes {pes}: the topology has {pes_available} PEs")
    if m % pes:
        problems.append(f"--m {m} must divide by --pes {pes}")
    chunked = not composite or p["layout"] == "tiled"
    if chunked and k % tile_k:
        problems.append(f"--k {k} must divide by --tile-k {tile_k}")
    size = 2 * (m * k + pes * k * n + m * n)
    if size > MAX_INPUT_BYTES:
        problems.append(f"the inputs take {size / 2**20:,.0f} MiB (A, one B per PE, C); at most {MAX_INPUT_BYTES // 2**20} MiB")
    return problems


def _setup(rt: Runtime, p: Params, composite: bool) -> Prepared:
    m, n, k, pes = p["m"], p["n"], p["k"], p["pes"]
    problems = check_options(p, len(rt.pe_ids()), composite)
    if problems:
        raise ValueError("; ".join(problems))
    rng = np.random.default_rng(p["seed"])
    A = rng.standard_normal((m, k)).astype(np.float16)
    B = rng.standard_normal((k, n)).astype(np.float16)
    rows = m // pes
    tk = p["tile_k"]
    tiled_a = p.get("layout", "tiled") == "tiled"
    if composite and tiled_a:  # each program's block K-chunk-major: (k / tile_k, rows, tile_k)
        a_blocks = [
            rt.deploy(A[i * rows : (i + 1) * rows].reshape(rows, k // tk, tk).transpose(1, 0, 2), pe=i, name=f"A{i}") for i in range(pes)
        ]
    else:
        a_blocks = [] if tiled_a else [rt.deploy(A[i * rows : (i + 1) * rows], pe=i, name=f"A{i}") for i in range(pes)]
    b_copies = [rt.deploy(B, pe=i, name=f"B{i}") for i in range(pes)]
    outs = [rt.empty((rows, n), np.float16, pe=i, name=f"C{i}") for i in range(pes)]
    if composite:
        rt.launch(gemm_composite, pes=range(pes), args=(a_blocks, b_copies, outs))
    else:
        if not tiled_a:
            chunks = [lambda i, a=a: a[:, i * tk : (i + 1) * tk] for a in a_blocks]
        else:
            tiles = [
                [rt.deploy(A[r * rows : (r + 1) * rows, i * tk : (i + 1) * tk], pe=r, name=f"A{r}.{i}") for i in range(k // tk)]
                for r in range(pes)
            ]
            chunks = [lambda i, t=t: t[i] for t in tiles]
        rt.launch(gemm_primitive, pes=range(pes), args=(chunks, b_copies, outs, tk))
    ref = A.astype(np.float32) @ B.astype(np.float32)

    def check() -> float:
        got = np.concatenate([rt.read(c) for c in outs]).astype(np.float32)
        return float(np.abs(got - ref).max())

    return Prepared(check)


@kernel(
    options=PRIMITIVE_OPTIONS,
    name="gemm-primitive",
    description="tiled GEMM from single-op primitives with chunked lazy loads",
    check=check_options,
)
def setup_primitive(rt: Runtime, **p: Any) -> Prepared:
    return _setup(rt, p, composite=False)


@kernel(
    options=COMPOSITE_OPTIONS,
    name="gemm-composite",
    description="tiled GEMM as one tl.composite per PE, operands streamed by PE_SCHEDULER",
    check=functools.partial(check_options, composite=True),
)
def setup_composite(rt: Runtime, **p: Any) -> Prepared:
    return _setup(rt, p, composite=True)
