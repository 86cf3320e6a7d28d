"""Collectives on top of ``tl`` send/recv (PE_IPCQ): all-reduce, reduce-scatter, all-gather, all-to-all.

Call them inside a kernel, from every program of the group, with this
program's own buffer (an HBM tensor, usually in its own slice)::

    def kernel(bufs, group):
        collectives.all_reduce(bufs[tl.program_id()], group, algo="2d", chunk_bytes=64 * 1024)

**Buffers.** Any contiguous HBM tensor of any rank, or a contiguous region of
one (``x[2:4]``, ``x[1]``): a collective works on its *flat view*, the
elements in memory order, so an N-D tensor behaves as its ``reshape(-1)``. A
strided region (``x[:, 0:4]`` of a wider ``x``, every other row) is refused:
it is not one run of bytes. Element ranges below (segments, parts) are of the
flat view.

**Results, in place.** ``all_reduce``: every member's buffer becomes the
element-wise sum of all members' buffers. ``reduce_scatter``: each member's
own segment does. ``all_gather``: each member's own segment goes to everyone.
``all_to_all``: part ``j`` of member ``i`` (``p`` equal parts) goes to member
``j``, where it lands as part ``i`` — in place, or into ``out=`` if given.
Each addition runs in float32 and rounds to the buffer's dtype (what
``tl.add`` does). Payloads move as messages of at most ``chunk_bytes`` so
transfers pipeline; any element count works (segments differ by at most one
element), but all-to-all needs a multiple of ``p``.

All-reduce algorithms (:data:`ALGORITHMS`):

``ring``  reduce-scatter + all-gather around the group in snake order
          (:mod:`~kernbench.collectives.ring`): ``2(p − 1)`` steps.
``2d``    dimension by dimension on the group's grid
          (:mod:`~kernbench.collectives.grid2d`): ``2(rows − 1) + 2(cols − 1)`` steps.
``tree``  binary-tree reduce and broadcast, pipelined by chunk
          (:mod:`~kernbench.collectives.tree`): ``2⌈log₂ p⌉`` levels.

Reduce-scatter and all-gather are the ring's two halves (``p − 1`` steps
each); all-to-all is a pairwise exchange (:mod:`~kernbench.collectives.alltoall`):
``p − 1`` rounds (``p`` when ``p`` is odd).
"""

from __future__ import annotations

from numpy.typing import DTypeLike

from kernbench import tl
from kernbench.collectives import alltoall, grid2d, ring, tree
from kernbench.collectives.group import Group, Ring
from kernbench.dtypes import as_dtype
from kernbench.handles import HbmTensor, Ptr

__all__ = [
    "ALGORITHMS",
    "BUFFERS",
    "Buffer",
    "Group",
    "Ring",
    "all_gather",
    "all_reduce",
    "all_to_all",
    "chunk_elements",
    "flat",
    "reduce_scatter",
]

#: What a collective takes: a deployed tensor, or a region of one (contiguous either way).
Buffer = HbmTensor | Ptr


def _ring(buf: HbmTensor, g: Group, me: int, chunk: int) -> None:
    ring.all_reduce(buf, Ring.of(g.snake, me, 0, buf.shape[0], chunk))


def _tree(buf: HbmTensor, g: Group, me: int, chunk: int) -> None:
    tree.all_reduce(buf, g.snake, me, chunk)


def _grid2d(buf: HbmTensor, g: Group, me: int, chunk: int) -> None:
    grid2d.all_reduce(buf, g, chunk)


_ALL_REDUCE = {"ring": _ring, "2d": _grid2d, "tree": _tree}
ALGORITHMS = tuple(_ALL_REDUCE)

#: Chunk-sized TCM buffers each algorithm holds at once: chunk_bytes × this ≤ scratch.
BUFFERS = {"ring": ring.BUFFERS, "2d": grid2d.BUFFERS, "tree": tree.BUFFERS, "pairwise": alltoall.BUFFERS}


def chunk_elements(chunk_bytes: int, dtype: DTypeLike) -> int:
    size: int = as_dtype(dtype).itemsize
    if chunk_bytes < size or chunk_bytes % size:
        raise ValueError(f"chunk_bytes {chunk_bytes} must be a positive multiple of the {size} B element")
    return chunk_bytes // size


def flat(buf: Buffer, what: str = "collective") -> HbmTensor:
    """``buf``'s flat view: a 1-D tensor over the same bytes (writes reach ``buf``).

    ``buf`` is an HBM tensor of any rank or a region of one; it must be
    contiguous (one run of bytes, in row-major order).
    """
    if isinstance(buf, Ptr):
        view = buf.tensor.layout[(*buf.index, ...)]  # (writable, unlike the region's own view; layout: also with no data held)
        name, offset, base = buf.describe(), buf.offset, buf.tensor
    elif isinstance(buf, HbmTensor):
        view, name, offset, base = buf.layout, buf.name, buf.offset, buf
    else:
        raise TypeError(f"{what}: expected an HBM tensor (Runtime.deploy) or a region of one, not {type(buf).__name__}")
    if not view.flags.c_contiguous:
        raise ValueError(
            f"{what}: {name} of shape {tuple(view.shape)} is not contiguous in memory (a strided region); a collective "
            "works on one run of bytes: give it the whole tensor, a run of whole rows, or a contiguous copy"
        )
    if view.ndim == 1 and buf is base:
        return base
    return base.retargeted(name, offset, view.reshape(-1))


def _group(group: Group | None) -> Group:
    return group if group is not None else Group(tuple(range(tl.num_programs())))


def all_reduce(buf: Buffer, group: Group | None = None, *, algo: str = "ring", chunk_bytes: int = 64 * 1024) -> None:
    """Every member's ``buf`` becomes the sum over the group (default: every program)."""
    buf = flat(buf, "all_reduce")
    g = _group(group)
    me = tl.program_id()
    g.where(me)  # a clear error if this program is not a member
    run = _ALL_REDUCE.get(algo)
    if run is None:
        raise ValueError(f"unknown all-reduce algorithm {algo!r}; choose one of {', '.join(ALGORITHMS)}")
    run(buf, g, me, chunk_elements(chunk_bytes, buf.dtype))


def reduce_scatter(buf: Buffer, group: Group | None = None, *, chunk_bytes: int = 64 * 1024) -> tuple[int, int]:
    """Ring reduce-scatter: returns ``[a, b)``, the elements of ``buf``'s flat view that now hold the group's sum.

    Member ``i`` of the snake order gets segment ``i`` of ``p`` (sizes differ by at most one).
    """
    buf = flat(buf, "reduce_scatter")
    g = _group(group)
    g.where(tl.program_id())
    r = Ring.of(g.snake, tl.program_id(), 0, buf.shape[0], chunk_elements(chunk_bytes, buf.dtype))
    ring.reduce_scatter(buf, r)
    return r.segment(r.pos)


def all_gather(buf: Buffer, group: Group | None = None, *, chunk_bytes: int = 64 * 1024) -> None:
    """Ring all-gather: member ``i`` of the snake order contributes segment ``i`` of ``buf``'s flat view; all get all."""
    buf = flat(buf, "all_gather")
    g = _group(group)
    g.where(tl.program_id())
    ring.all_gather(buf, Ring.of(g.snake, tl.program_id(), 0, buf.shape[0], chunk_elements(chunk_bytes, buf.dtype)))


def all_to_all(buf: Buffer, group: Group | None = None, *, out: Buffer | None = None, chunk_bytes: int = 64 * 1024) -> None:
    """Pairwise all-to-all: part ``j`` of ``buf`` goes to member ``j``, where it lands as part ``i`` (this member's place).

    Parts: ``buf``'s flat view cut into ``p`` equal parts (``p`` = group size), in the
    group's program order (row-major, not the snake). With ``out=None`` the exchange is
    in place — ``buf`` ends holding what the others sent, part ``i`` untouched — which
    holds each payload once; with ``out`` (a buffer of the same size and dtype) ``buf``
    is left as it was and ``out`` gets the result, part ``i`` copied over from ``buf``.
    """
    src = flat(buf, "all_to_all")
    dst = src if out is None else flat(out, "all_to_all out")
    g = _group(group)
    me = tl.program_id()
    g.where(me)
    n, p = src.shape[0], g.size
    if n % p:
        raise ValueError(f"all_to_all: {src.name} has {n} elements, which do not cut into {p} equal parts (one per member)")
    if dst is not src and (dst.shape != src.shape or dst.dtype != src.dtype):
        raise ValueError(f"all_to_all: out {dst.name} ({dst.shape[0]} × {dst.dtype}) must match {src.name} ({n} × {src.dtype})")
    alltoall.all_to_all(src, dst, g.programs, me, chunk_elements(chunk_bytes, src.dtype))
    if dst is not src:
        a = g.programs.index(me) * (n // p)
        tl.store(dst[a : a + n // p], tl.load(src[a : a + n // p]))
