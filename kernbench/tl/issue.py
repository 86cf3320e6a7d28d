"""How a ``tl`` op takes its operands and becomes one PE command.

The rooms of ``tl`` (:mod:`kernbench.tl.elementwise`, :mod:`kernbench.tl.reductions`,
…) share these: an operand is checked to be a TCM handle, its value read once it
has landed, and a PE_MATH op runs its numerics through :func:`math_op` — the one
place every single-op PE_MATH call computes (the op kind's numerics, in float32)
and issues its ``MathCmd``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from kernbench.dtypes import as_dtype, narrow
from kernbench.handles import TensorHandle
from kernbench.pe.commands import MathCmd
from kernbench.pe.opkinds import op_kind
from kernbench.tl.context import current


def expect_handle(x: Any, what: str) -> None:
    """``x`` must be a TCM handle (a ``tl.ref`` is not): a ``TypeError`` naming ``what`` otherwise."""
    if not isinstance(x, TensorHandle):
        raise TypeError(f"{what}: expected a TensorHandle, got {type(x).__name__}")
    if x.ref.space != "tcm":
        raise TypeError(f"{what}: {x.name} is an HBM tl.ref; only tl.composite can stream it")


def out_dtype(*xs: TensorHandle) -> np.dtype:
    """The dtype an op on ``xs`` returns: ``numpy.result_type`` of theirs."""
    return np.result_type(*[x.dtype for x in xs if isinstance(x, TensorHandle)])


def data(h: TensorHandle) -> np.ndarray:
    """A TCM handle's value: there once ``ctx.need`` has returned (loads and receives landed)."""
    assert h.data is not None, f"{h.name} has no value yet"
    return h.data


def math_op(
    kind: str,
    inputs: tuple[TensorHandle, ...],
    extra: dict[str, Any] | None = None,
    *,
    dtype: DTypeLike | None = None,
    shape: tuple[int, ...] | None = None,
) -> TensorHandle:
    """One PE_MATH op of ``kind`` on ``inputs``: numerics now (float32), narrowed to ``dtype``
    (the operands' by default; an overflow raises: :func:`kernbench.dtypes.narrow`), then its
    ``MathCmd``; the result's handle. ``shape``: the result's, for a kind with no operand."""
    ctx = current()
    for i, x in enumerate(inputs):
        expect_handle(x, f"tl.{kind} operand {i}")
    ctx.need(inputs)
    extra = extra or {}
    k = op_kind(kind)
    target = out_dtype(*inputs) if dtype is None else as_dtype(dtype)
    r = narrow(k.compute([data(x) for x in inputs], extra, shape), target, f"tl.{kind} result")
    out = ctx.new_handle(r.shape, r.dtype, kind, r)
    ctx.issue(MathCmd(kind, tuple(x.ref for x in inputs), out.ref, dict(extra)))
    return out
