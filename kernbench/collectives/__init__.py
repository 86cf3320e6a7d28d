"""Collectives on top of ``tl`` send/recv (PE_IPCQ): all-reduce, reduce-scatter, all-gather.

Call them inside a kernel, from every program of the group, with this
program's own 1-D buffer (an HBM tensor, usually in its own slice)::

    def kernel(bufs, group):
        collectives.all_reduce(bufs[tl.program_id()], group, algo="2d", chunk_bytes=64 * 1024)

The buffer is reduced in place: afterwards every member's buffer holds the
element-wise sum of all members' buffers. Each addition runs in float32 and
rounds to the buffer's dtype (what ``tl.add`` does). Payloads move as
messages of at most ``chunk_bytes`` so transfers pipeline; any element
count works (segments differ by at most one element).

Algorithms (:data:`ALGORITHMS`):

``ring``  reduce-scatter + all-gather around the group in snake order
          (:mod:`~kernbench.collectives.ring`): ``2(p − 1)`` steps.
``2d``    dimension by dimension on the group's grid
          (:mod:`~kernbench.collectives.grid2d`): ``2(rows − 1) + 2(cols − 1)`` steps.
``tree``  binary-tree reduce and broadcast, pipelined by chunk
          (:mod:`~kernbench.collectives.tree`): ``2⌈log₂ p⌉`` levels.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import DTypeLike

from kernbench import tl
from kernbench.collectives import grid2d, ring, tree
from kernbench.collectives.group import Group, Ring
from kernbench.handles import HbmTensor

__all__ = ["ALGORITHMS", "BUFFERS", "Group", "Ring", "all_gather", "all_reduce", "chunk_elements", "reduce_scatter"]


def _ring(buf: HbmTensor, g: Group, me: int, chunk: int) -> None:
    ring.all_reduce(buf, Ring.of(g.snake, me, 0, buf.shape[0], chunk))


def _tree(buf: HbmTensor, g: Group, me: int, chunk: int) -> None:
    tree.all_reduce(buf, g.snake, me, chunk)


def _grid2d(buf: HbmTensor, g: Group, me: int, chunk: int) -> None:
    grid2d.all_reduce(buf, g, chunk)


_ALL_REDUCE = {"ring": _ring, "2d": _grid2d, "tree": _tree}
ALGORITHMS = tuple(_ALL_REDUCE)

#: Chunk-sized TCM buffers each algorithm holds at once: chunk_bytes × this ≤ scratch.
BUFFERS = {"ring": ring.BUFFERS, "2d": grid2d.BUFFERS, "tree": tree.BUFFERS}


def chunk_elements(chunk_bytes: int, dtype: DTypeLike) -> int:
    size: int = np.dtype(dtype).itemsize
    if chunk_bytes < size or chunk_bytes % size:
        raise ValueError(f"chunk_bytes {chunk_bytes} must be a positive multiple of the {size} B element")
    return chunk_bytes // size


def _check_buffer(buf: HbmTensor) -> None:
    if len(buf.shape) != 1:
        raise ValueError(f"collectives work on 1-D buffers; {buf.name} has shape {buf.shape}")


def _group(group: Group | None) -> Group:
    return group if group is not None else Group(tuple(range(tl.num_programs())))


def all_reduce(buf: HbmTensor, group: Group | None = None, *, algo: str = "ring", chunk_bytes: int = 64 * 1024) -> None:
    """Every member's ``buf`` becomes the sum over the group (default: every program)."""
    _check_buffer(buf)
    g = _group(group)
    me = tl.program_id()
    g.where(me)  # a clear error if this program is not a member
    run = _ALL_REDUCE.get(algo)
    if run is None:
        raise ValueError(f"unknown all-reduce algorithm {algo!r}; choose one of {', '.join(ALGORITHMS)}")
    run(buf, g, me, chunk_elements(chunk_bytes, buf.dtype))


def reduce_scatter(buf: HbmTensor, group: Group | None = None, *, chunk_bytes: int = 64 * 1024) -> tuple[int, int]:
    """Ring reduce-scatter: returns ``[a, b)``, the elements of ``buf`` that now hold the group's sum.

    Member ``i`` of the snake order gets segment ``i`` of ``p`` (sizes differ by at most one).
    """
    _check_buffer(buf)
    g = _group(group)
    r = Ring.of(g.snake, tl.program_id(), 0, buf.shape[0], chunk_elements(chunk_bytes, buf.dtype))
    ring.reduce_scatter(buf, r)
    return r.segment(r.pos)


def all_gather(buf: HbmTensor, group: Group | None = None, *, chunk_bytes: int = 64 * 1024) -> None:
    """Ring all-gather: member ``i`` of the snake order contributes segment ``i`` of ``buf``; all get all."""
    _check_buffer(buf)
    g = _group(group)
    ring.all_gather(buf, Ring.of(g.snake, tl.program_id(), 0, buf.shape[0], chunk_elements(chunk_bytes, buf.dtype)))
