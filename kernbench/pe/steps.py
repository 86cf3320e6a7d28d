"""Which part of each tensor every step of a composite reads and writes.

Contract. PE_SCHEDULER streams a composite in ``n`` steps
(:mod:`kernbench.pe.composite`). Each op kind streams along one axis, its
:attr:`~kernbench.pe.opkinds.OpKind.steps` rule, cut into ``n`` near-equal
slices (``L·s // n`` … ``L·(s + 1) // n``):

``"k"`` (GEMM)
    step ``s`` is a slice ``[k0, k1)`` of the inner dimension. It reads that
    slice of A — a column block of a row-major ``(m, k)`` A, one run per row
    a row pitch apart; the blocks of a K-step-major A, stored as ``(k / tk,
    m, tk)`` (``extra["a_kstep_major"]``) — and of B, a block of rows (of
    columns with ``transpose_b``), and accumulates into C in the GEMM engine.
    C is final after the last step.
``"elements"`` (elementwise ops)
    every tensor of the result's size: elements ``[e0, e1)`` in logical order.
``"rows"`` (broadcasts along rows, row and axis reductions)
    every tensor with the op's row count: rows ``[r0, r1)``.

A tensor without the op's axis — a broadcast operand, a reduced or
accumulated result — is read and fetched whole at the first step, and
stored and written whole once it is final, after the last. A :class:`Piece`
is in the tensor's logical bytes; :meth:`Piece.region` puts it at the real
addresses of a ``tl.ref`` (:meth:`kernbench.sim.region.Region.select`). How
many steps a composite takes is :func:`step_count`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from kernbench.handles import HandleRef
from kernbench.pe.commands import OpSpec
from kernbench.pe.opkinds import op_kind
from kernbench.pe.work import GemmDims, work_factor
from kernbench.sim.region import Region

Group = tuple[NDArray[np.int64], int]  # runs of one length: their logical byte offsets, the length


@dataclass(frozen=True, slots=True, eq=False)
class Piece:
    """Logical bytes of one tensor (runs in its C order, in groups of equal length)."""

    groups: tuple[Group, ...]
    nbytes: int
    whole: bool = False  # the whole tensor

    @property
    def key(self) -> tuple[tuple[int, int, int, int], ...]:
        """What it covers, as (first, runs, stride, length) per group: equal keys, equal bytes."""
        return tuple((int(st[0]), len(st), int(st[1] - st[0]) if len(st) > 1 else 0, ln) for st, ln in self.groups)

    @classmethod
    def span(cls, lo: int, hi: int, nbytes: int) -> Piece:
        """Bytes ``[lo, hi)`` of a tensor of ``nbytes``."""
        return cls(((np.array([lo], dtype=np.int64), hi - lo),), hi - lo, lo == 0 and hi == nbytes)

    def region(self, whole: Region) -> Region:
        """Where its bytes are, given where the tensor's are."""
        if self.whole:
            return whole
        return Region.joined([whole.select(starts, length) for starts, length in self.groups])


def _window(base: int, row_bytes: int, r0: int, r1: int, c0: int, c1: int) -> Group:
    """Bytes ``[c0, c1)`` of rows ``r0 … r1 − 1`` of a matrix at ``base`` (all logical)."""
    if c0 == 0 and c1 == row_bytes:
        return np.array([base + r0 * row_bytes], dtype=np.int64), (r1 - r0) * row_bytes
    return base + c0 + row_bytes * np.arange(r0, r1, dtype=np.int64), c1 - c0


def _piece(groups: list[Group], total: int) -> Piece:
    """A piece of a tensor of ``total`` bytes (whole blocks one after another: one run)."""
    if len(groups) > 1 and all(len(s) == 1 for s, _ in groups):
        firsts = [int(s[0]) for s, _ in groups]
        if all(firsts[i + 1] == firsts[i] + groups[i][1] for i in range(len(groups) - 1)):
            groups = [(groups[0][0], sum(ln for _, ln in groups))]
    nbytes = sum(len(s) * ln for s, ln in groups)
    return Piece(tuple(groups), nbytes, nbytes == total and len(groups) == 1 and len(groups[0][0]) == 1)


def a_piece(d: GemmDims, k0: int, k1: int, item: int) -> Piece:
    """A's K-slice ``[k0, k1)``: a column block, or the blocks of a K-step-major A."""
    if not d.kstep_major:
        return _piece([_window(0, d.k * item, 0, d.m, k0 * item, k1 * item)], d.m * d.k * item)
    tk, block = d.tk, d.m * d.tk * item
    groups = [
        _window(b * block, tk * item, 0, d.m, (max(k0, b * tk) - b * tk) * item, (min(k1, (b + 1) * tk) - b * tk) * item)
        for b in range(k0 // tk, -(-k1 // tk))
    ]
    return _piece(groups, d.m * d.k * item)


def b_piece(d: GemmDims, k0: int, k1: int, item: int) -> Piece:
    """B's K-slice ``[k0, k1)``: a block of rows (of columns, B transposed)."""
    if d.transpose_b:
        return _piece([_window(0, d.k * item, 0, d.n, k0 * item, k1 * item)], d.n * d.k * item)
    return _piece([_window(0, d.n * item, k0, k1, 0, d.n * item)], d.n * d.k * item)


def slices(length: int, n: int) -> list[tuple[int, int]]:
    """``[0, length)`` cut into ``n`` near-equal slices (empty ones when ``length < n``)."""
    return [(length * s // n, length * (s + 1) // n) for s in range(n)]


@dataclass(frozen=True, slots=True)
class OpSteps:
    """One op, step by step: its operands' and result's pieces (``None``: not touched
    at that step) and its work (FLOPs of a GEMM, elements through PE_MATH; 0: idle)."""

    operands: tuple[tuple[Piece | None, ...], ...]  # per operand, per step
    out: tuple[Piece | None, ...]  # per step: the result's piece final then
    work: tuple[float, ...]


def axis_length(op: OpSpec) -> int:
    """How long the axis ``op`` streams along is (its K, its elements or its rows)."""
    shapes = [r.shape for r in op.operands.values()]
    rule = op_kind(op.kind).steps
    if rule == "k":
        return GemmDims.of(shapes, op.extra).k
    if rule == "elements":
        return math.prod(op.out.shape) if op.out is not None else math.prod(shapes[0])
    return shapes[0][0] if shapes[0] else 1


def _along(r: HandleRef, rule: str, length: int, lo: int, hi: int) -> Piece | None:
    """``r``'s piece for axis positions ``[lo, hi)`` (``None``: it has not the axis)."""
    if rule == "elements":
        if math.prod(r.shape) != length:
            return None
        item = r.nbytes // length
    elif not r.shape or r.shape[0] != length:
        return None
    else:
        item = r.nbytes // length  # bytes per row
    return Piece.span(lo * item, hi * item, r.nbytes) if hi > lo else Piece((), 0)


def op_steps(op: OpSpec, n: int) -> OpSteps:
    """``op``'s pieces and work at each of ``n`` steps."""
    refs = list(op.operands.values())
    rule = op_kind(op.kind).steps
    cuts = slices(axis_length(op), n)
    first = [s == 0 for s in range(n)]
    last = [s == n - 1 for s in range(n)]

    def whole_at(r: HandleRef, at: list[bool]) -> tuple[Piece | None, ...]:
        return tuple(Piece.span(0, r.nbytes, r.nbytes) if x else None for x in at)

    if rule == "k":
        d = GemmDims.of([r.shape for r in refs], op.extra)
        a, b = refs[0], refs[1]
        ia, ib = a.nbytes // (d.m * d.k), b.nbytes // (d.k * d.n)
        pieces = [
            tuple(a_piece(d, k0, k1, ia) if k1 > k0 else None for k0, k1 in cuts),
            tuple(b_piece(d, k0, k1, ib) if k1 > k0 else None for k0, k1 in cuts),
        ]
        pieces += [whole_at(r, first) for r in refs[2:]]
        out = whole_at(op.out, last) if op.out is not None else (None,) * n
        return OpSteps(tuple(pieces), out, tuple(2.0 * d.m * d.n * (k1 - k0) for k0, k1 in cuts))
    length = axis_length(op)
    tensors = [*refs, *([op.out] if op.out is not None else [])]
    work = [0.0] * n
    steps: list[tuple[Piece | None, ...]] = []
    for i, r in enumerate(tensors):
        along = [_along(r, rule, length, lo, hi) for lo, hi in cuts]
        if along[0] is None:  # without the axis: whole at the first step (an operand), the last (the result)
            steps.append(whole_at(r, first if i < len(refs) else last))
            continue
        per_position = math.prod(r.shape) / length  # elements
        for s, (lo, hi) in enumerate(cuts):
            work[s] = max(work[s], (hi - lo) * per_position)
        steps.append(tuple(p if p is not None and p.nbytes else None for p in along))
    if not any(work):  # nothing has the axis (a scalar op): all of it at the first step
        work[0] = float(max(math.prod(r.shape) for r in tensors))
    factor = work_factor(op.kind, op.extra)
    out = steps[len(refs)] if op.out is not None else (None,) * n
    return OpSteps(tuple(steps[: len(refs)]), out, tuple(w * factor for w in work) if factor != 1 else tuple(work))


def step_count(ops: tuple[OpSpec, ...], tile_bytes: int) -> int:
    """Steps of a composite: enough that no streamed piece — an HBM operand's or an HBM
    result's, along its op's axis — is much over ``tile_bytes``; no more than the
    longest axis has positions."""
    big, longest = 0, 1
    for op in ops:
        length = axis_length(op)
        longest = max(longest, length)
        rule = op_kind(op.kind).steps
        refs = list(op.operands.values())
        tensors = refs[:2] if rule == "k" else [*refs, *([op.out] if op.out is not None else [])]
        for r in tensors:
            if r.space == "hbm" and (rule == "k" or _along(r, rule, length, 0, length) is not None):
                big = max(big, r.nbytes)
    return max(1, min(-(-big // tile_bytes), longest))
