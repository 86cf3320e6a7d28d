"""``tl``'s reductions: a row or axis reduction on PE_MATH, on TCM handles.

As the elementwise ops, each computes through :func:`kernbench.tl.issue.math_op`
and issues one ``MathCmd``. ``max`` and ``sum`` shadow Python's builtins here and
in ``tl``: write them ``tl.max``, ``tl.sum``.
"""

from __future__ import annotations

from kernbench.handles import TensorHandle
from kernbench.tl.issue import math_op


def max(x: TensorHandle, axis: int | None = None) -> TensorHandle:  # shadows the builtin: tl vocabulary
    """The largest element of ``x``, over all of it or along ``axis``, on PE_MATH.

    Write it as ``tl.max``: imported by name it would shadow Python's builtin ``max``.

    Shapes:
        With ``axis=None`` the result has shape ``()``; with an ``axis`` it keeps that axis
        as size 1 (``numpy.max(x, axis, keepdims=True)``).
    Dtypes:
        Computed in float32; the result has ``x``'s dtype.
    Cost:
        - Command: ``MathCmd`` of op kind ``max``, 23 logical bytes; 27 with an ``axis`` (an int
          scalar, 4).
        - PE_CPU: auto-wait on ``x``; dispatch(23 or 27), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(elements of ``x``),
          store(the result's bytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not); numpy's
        ``AxisError`` (a ``ValueError``) for an axis ``x`` does not have.
    Example:
        t = tl.load(x)
        assert tl.max(t).shape == ()  # over every element
        assert tl.max(t, axis=0).shape == (1, 128)  # per column, kept 2-D
    """
    return math_op("max", (x,), {"axis": axis} if axis is not None else None)


def sum(x: TensorHandle, axis: int | None = None) -> TensorHandle:  # shadows the builtin: tl vocabulary
    """The sum of the elements of ``x``, over all of it or along ``axis``, on PE_MATH.

    Write it as ``tl.sum``: imported by name it would shadow Python's builtin ``sum``.

    Shapes:
        With ``axis=None`` the result has shape ``()``; with an ``axis`` it keeps that axis
        as size 1 (``numpy.sum(x, axis, keepdims=True)``).
    Dtypes:
        Computed in float32; the result has ``x``'s dtype.
    Cost:
        - Command: ``MathCmd`` of op kind ``sum``, 23 logical bytes; 27 with an ``axis`` (an int
          scalar, 4).
        - PE_CPU: auto-wait on ``x``; dispatch(23 or 27), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(elements of ``x``),
          store(the result's bytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not); numpy's
        ``AxisError`` (a ``ValueError``) for an axis ``x`` does not have.
    Example:
        t = tl.load(y)
        total = tl.sum(t)
        assert total.shape == () and total.dtype == np.float16
        assert tl.sum(t, axis=1).shape == (64, 1)
    """
    return math_op("sum", (x,), {"axis": axis} if axis is not None else None)


def rowmax(x: TensorHandle) -> TensorHandle:
    """The maximum of each row (along the last axis) on PE_MATH.

    Shapes:
        (rows, cols) gives (rows, 1): the last axis kept as size 1.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype.
    Cost:
        - Command: ``MathCmd`` of op kind ``rowmax``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(elements of ``x``),
          store(the result's bytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not).
    Example:
        m = tl.rowmax(tl.load(x))
        assert m.shape == (64, 1)
    """
    return math_op("rowmax", (x,))


def rowsum(x: TensorHandle) -> TensorHandle:
    """The sum of each row (along the last axis) on PE_MATH.

    Shapes:
        (rows, cols) gives (rows, 1): the last axis kept as size 1.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype.
    Cost:
        - Command: ``MathCmd`` of op kind ``rowsum``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(elements of ``x``),
          store(the result's bytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not).
    Example:
        t = tl.exp(tl.load(x))
        probs = tl.div(t, tl.rowsum(t))  # a softmax, rows summing to 1
        assert probs.shape == (64, 128)
    """
    return math_op("rowsum", (x,))


def rowmean(x: TensorHandle) -> TensorHandle:
    """The mean of each row (along the last axis) on PE_MATH, at the plain rate.

    Shapes:
        (rows, cols) gives (rows, 1): the last axis kept as size 1.
    Dtypes:
        Summed in float32 and divided by cols in float32; the result has ``x``'s dtype.
    Cost:
        - Command: ``MathCmd`` of op kind ``rowmean``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(elements of ``x``),
          store(the result's bytes); the divide by cols is not charged apart.
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not).
    Example:
        m = tl.rowmean(tl.load(x))
        assert m.shape == (64, 1)
        assert np.allclose(m.numpy(), x.array.astype(np.float32).mean(axis=1, keepdims=True), atol=1e-3)
    """
    return math_op("rowmean", (x,))
