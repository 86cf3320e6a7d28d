"""How much work an op is: FLOPs of a GEMM, elements through PE_MATH; and how long
PE_GEMM, an R×C array, takes for a GEMM of a given shape and dtype.

The one definition the scheduler's service times (and the analytic model) use.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
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


@dataclass(frozen=True, slots=True)
class GemmArray:
    """PE_GEMM as an ``rows × cols`` array (``docs/timing.md``, "PE_GEMM").

    A GEMM ``m × k`` by ``k × n`` takes ``⌈m / R⌉ · ⌈n / C⌉ · k`` array cycles plus the
    pipeline fill. The array cycle is what keeps the paper's peak at full tiles:
    ``2 · R · C`` FLOPs per cycle at ``gemm_tflops`` (f16/bf16) is
    ``2·R·C / (gemm_tflops · 1000)`` ns, scaled by the dtype's peak ratio
    (:meth:`peak_ratio`).
    """

    rows: int
    cols: int
    fill_ns: float
    cycle_ns: float  # one pass of the array at the f16 peak
    fp8_ratio: float
    f32_ratio: float

    @classmethod
    def from_attrs(cls, attrs: Mapping[str, Any]) -> GemmArray:
        r, c = attrs.get("gemm_array_rows", 64), attrs.get("gemm_array_cols", 64)
        return cls(
            r,
            c,
            attrs["gemm_pipeline_cycles"] / attrs["clock_freq_ghz"],
            2.0 * r * c / (attrs["gemm_tflops"] * 1e3),
            attrs.get("gemm_fp8_peak_ratio", 2.0),
            attrs.get("gemm_f32_peak_ratio", 0.5),
        )

    def peak_ratio(self, a_itemsize: int, b_itemsize: int) -> float:
        """The widest operand sets the rate: an f32 one the f32 ratio; fp8 only when both are
        (1-byte); f16 and bf16 the peak itself."""
        widest = max(a_itemsize, b_itemsize)
        if widest >= 4:
            return self.f32_ratio
        if widest <= 1:
            return self.fp8_ratio
        return 1.0

    def ns(self, m: int, n: int, k: float, ratio: float = 1.0) -> float:
        """PE_GEMM's time for ``m × k`` by ``k × n`` at the dtype's ``ratio`` (``k`` may be a
        composite step's slice)."""
        passes = math.ceil(m / self.rows) * math.ceil(n / self.cols)
        return self.fill_ns + passes * k * self.cycle_ns / ratio
