"""How much work an op is: FLOPs of a GEMM, elements through PE_MATH.

The one definition the scheduler's service times use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernbench.pe.opkinds import WORK_FACTOR, op_kind


@dataclass(frozen=True, slots=True)
class GemmDims:
    """A GEMM's shape: ``m × k`` times ``k × n``, and how A and B are laid out."""

    m: int
    k: int
    n: int
    tk: int  # K per block of a K-step-major A (k when A is row-major)
    kstep_major: bool
    transpose_b: bool

    @classmethod
    def of(cls, shapes: list[tuple[int, ...]], extra: dict[str, Any]) -> GemmDims:
        a, b = shapes[0], shapes[1][-2:]
        t = bool(extra.get("transpose_b"))
        n = b[0] if t else b[1]
        if extra.get("a_kstep_major"):
            blocks, m, tk = a[-3:]
            return cls(m, blocks * tk, n, tk, True, t)
        m, k = a[-2:]
        return cls(m, k, n, k, False, t)

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.k * self.n


def op_work(kind: str, shapes: list[tuple[int, ...]], out_shape: tuple[int, ...] | None, extra: dict[str, Any]) -> float:
    """FLOPs of a GEMM, elements of a MATH op, from operand shapes."""
    k = op_kind(kind)
    if k.engine == "gemm":
        return GemmDims.of(shapes, extra).flops
    sizes = [_size(s) for s in shapes] + ([_size(out_shape)] if out_shape else [])
    return float(max(sizes)) * work_factor(kind, extra)


def work_factor(kind: str, extra: dict[str, Any]) -> int:
    """PE_MATH work per element of ``kind`` (1 but for the kinds of ``WORK_FACTOR``: a top-k's compares)."""
    f = WORK_FACTOR.get(kind)
    return 1 if f is None else f(extra)


def _size(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
