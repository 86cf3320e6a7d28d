"""Which bytes of a memory a transfer touches: runs of contiguous bytes.

Contract. A :class:`Region` is the byte layout of a tensor region as the
hardware sees it: equal-length *runs* of contiguous bytes at real addresses,
in the region's logical (C) order — one run for a contiguous block, one per
row for a column block of a matrix, one per element group for any strided
view (:func:`region_of_view`). It answers which bursts it touches
(:meth:`Region.bursts`: each once, in address order) and which runs a part
of it is (:meth:`Region.chunk`, :meth:`Region.select`). That memories move
whole bursts, each on the channel its address selects, is
``docs/timing.md``, "Memory".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True, slots=True, eq=False)
class Region:
    """Runs of ``run_bytes`` at byte ``starts`` (logical order) of one memory."""

    starts: tuple[int, ...]
    run_bytes: int

    def __post_init__(self) -> None:
        if self.run_bytes <= 0 or not self.starts:
            raise ValueError("a region needs at least one run of at least one byte")
        if min(self.starts) < 0:
            raise ValueError(f"a region cannot start at a negative address ({min(self.starts)})")

    @classmethod
    def contiguous(cls, offset: int, nbytes: int) -> Region:
        return cls((int(offset),), int(nbytes))

    @classmethod
    def strided(cls, offset: int, run_bytes: int, stride_bytes: int, runs: int) -> Region:
        """``runs`` runs of ``run_bytes``, ``stride_bytes`` apart from ``offset``."""
        if stride_bytes == run_bytes or runs == 1:
            return cls.contiguous(offset, run_bytes * runs)
        return cls(tuple(int(offset) + i * int(stride_bytes) for i in range(runs)), int(run_bytes))

    @property
    def nbytes(self) -> int:
        return len(self.starts) * self.run_bytes

    @property
    def is_contiguous(self) -> bool:
        return len(self.starts) == 1

    @property
    def first_byte(self) -> int:
        return min(self.starts)

    def bursts(self, burst_bytes: int) -> NDArray[np.int64] | range:
        """The burst numbers (``address // burst_bytes``) it touches, ascending, each once."""
        if len(self.starts) == 1:
            a = self.starts[0]
            return range(a // burst_bytes, (a + self.run_bytes - 1) // burst_bytes + 1)
        starts = np.asarray(self.starts, dtype=np.int64)
        first = starts // burst_bytes
        last = (starts + self.run_bytes - 1) // burst_bytes
        span = int((last - first).max()) + 1
        if span == 1:
            return np.unique(first)
        ids = first[:, None] + np.arange(span, dtype=np.int64)[None, :]
        ids = ids[ids <= last[:, None]]
        return np.unique(ids)

    def chunk(self, lo: int, hi: int) -> Region:
        """Logical bytes ``[lo, hi)`` of the region (a tile of a streamed operand)."""
        if not 0 <= lo < hi <= self.nbytes:
            raise ValueError(f"chunk [{lo}, {hi}) outside a region of {self.nbytes} bytes")
        rb = self.run_bytes
        if len(self.starts) == 1:
            return Region.contiguous(self.starts[0] + lo, hi - lo)
        r0, o0 = divmod(lo, rb)
        r1, o1 = divmod(hi - 1, rb)
        if r0 == r1:
            return Region.contiguous(self.starts[r0] + o0, hi - lo)
        # whole runs keep their length; a partial first or last run is its own
        # run, so represent the chunk at the smallest common run: the pieces'
        # bursts are what count, and they are the same either way
        pieces = [(self.starts[r0] + o0, rb - o0)] + [(self.starts[r], rb) for r in range(r0 + 1, r1)]
        pieces.append((self.starts[r1], o1 + 1))
        if o0 == 0 and o1 == rb - 1:
            return Region(tuple(p[0] for p in pieces), rb)
        return _from_pieces(pieces)

    def select(self, starts: NDArray[np.int64], length: int) -> Region:
        """Logical bytes ``[s, s + length)`` for each ``s`` of ``starts`` (ascending, not
        overlapping), in that order: the part of a tensor one step of a composite moves —
        a column block of a row-major matrix is one such run per row."""
        rb = self.run_bytes
        if len(self.starts) == 1:
            return _runs(self.starts[0] + starts, length)
        run, off = np.divmod(starts, rb)
        if bool((off + length <= rb).all()):  # each inside one run of the region
            return _runs(np.asarray(self.starts, dtype=np.int64)[run] + off, length)
        pieces: list[tuple[int, int]] = []
        for s in starts.tolist():
            part = self.chunk(s, s + length)
            pieces += [(a, part.run_bytes) for a in part.starts]
        return _from_pieces(pieces)

    @staticmethod
    def joined(parts: list[Region]) -> Region:
        """The parts one after another in logical order (each a region of the same memory)."""
        if len(parts) == 1:
            return parts[0]
        if len({p.run_bytes for p in parts}) == 1:
            return _runs(np.asarray([a for p in parts for a in p.starts], dtype=np.int64), parts[0].run_bytes)
        return _from_pieces([(a, p.run_bytes) for p in parts for a in p.starts])


def _runs(starts: NDArray[np.int64], length: int) -> Region:
    """Runs of ``length`` bytes at ``starts``: one run when they follow each other."""
    if len(starts) == 1 or bool((np.diff(starts) == length).all()):
        return Region.contiguous(int(starts[0]), length * len(starts))
    return Region(tuple(starts.tolist()), length)


def _from_pieces(pieces: list[tuple[int, int]]) -> Region:
    """A region from runs of unequal length: split into runs of their common divisor."""
    from math import gcd

    g = 0
    for _, ln in pieces:
        g = gcd(g, ln)
    starts = tuple(a + i * g for a, ln in pieces for i in range(ln // g))
    return Region(starts, g)


def byte_distance(base: NDArray[np.generic], view: NDArray[np.generic]) -> int:
    """Bytes from ``base``'s first element to ``view``'s (``ctypes.data`` is the data
    pointer, read without building ``__array_interface__``'s dict)."""
    return view.ctypes.data - base.ctypes.data


def region_of_view(base: NDArray[np.generic], view: NDArray[np.generic], base_offset: int) -> Region:
    """The runs of ``view`` (a numpy view into the C-contiguous ``base``) at ``base_offset``.

    Raises ``ValueError`` for an array that is not a view of ``base``
    (fancy indexing copies: its bytes have no address in ``base``).
    """
    if view.base is None and view is not base:
        raise ValueError("not a view of the tensor (fancy indexing copies): use slices")
    first = byte_distance(base, view)
    if view.flags.c_contiguous:
        return Region.contiguous(base_offset + first, view.nbytes)
    item = view.itemsize
    shape = list(view.shape)
    strides = list(view.strides)
    # drop unit dimensions, then merge the innermost dims that are contiguous
    dims = [(n, st) for n, st in zip(shape, strides, strict=True) if n != 1]
    run = item
    while dims and dims[-1][1] == run:
        n, _ = dims.pop()
        run *= n
    if not dims:
        return Region.contiguous(base_offset + first, run)
    offs = np.zeros(1, dtype=np.int64)
    for n, st in dims:
        offs = (offs[:, None] + np.arange(n, dtype=np.int64)[None, :] * st).reshape(-1)
    starts = base_offset + first + offs
    if (starts < base_offset).any():
        raise ValueError("a view with negative strides reaches before the tensor")
    return Region(tuple(int(x) for x in starts), run)
