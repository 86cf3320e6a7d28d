"""How much work an op is: FLOPs of a GEMM, elements through PE_MATH.

The one definition the scheduler's service times use.
"""

from __future__ import annotations

from typing import Any

from kernbench.pe.opkinds import op_kind


def op_work(kind: str, shapes: list[tuple[int, ...]], out_shape: tuple[int, ...] | None, extra: dict[str, Any]) -> float:
    """FLOPs of a GEMM, elements of a MATH op, from operand shapes."""
    k = op_kind(kind)
    if k.engine == "gemm":
        (m, kk), b = shapes[0][-2:], shapes[1][-2:]
        n = b[0] if extra.get("transpose_b") else b[1]
        return 2.0 * m * kk * n
    sizes = [_size(s) for s in shapes] + ([_size(out_shape)] if out_shape else [])
    return float(max(sizes))


def _size(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
