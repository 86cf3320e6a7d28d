"""``tl``'s elementwise ops: one PE_MATH op each, on TCM handles.

Every op here computes through :func:`kernbench.tl.issue.math_op` (its op kind's
numerics in :mod:`kernbench.pe.opkinds`, float32 inside, cast to the operands'
dtype) and issues one ``MathCmd``; its cost is the module docstring of
:mod:`kernbench.tl`'s *single-op compute on PE_MATH*.
"""

from __future__ import annotations

from kernbench.handles import TensorHandle
from kernbench.tl.issue import math_op


def add(a: TensorHandle, b: TensorHandle) -> TensorHandle:
    """``a + b`` elementwise on PE_MATH (numpy broadcasting).

    Shapes:
        ``a`` and ``b`` broadcast as in numpy; the result has the broadcast shape.
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(a.dtype, b.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``add``, 31 logical bytes (framing, opcode, two
          input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``a`` and ``b``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(a.nbytes + b.nbytes), math(E),
          store(the result's bytes), E the largest element count of ``a``, ``b`` and the result.
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not);
        ``ValueError`` if the shapes do not broadcast.
    Example:
        s = tl.add(tl.load(x), tl.load(y))
        assert s.shape == (64, 128) and s.dtype == np.float16
    """
    return math_op("add", (a, b))


def sub(a: TensorHandle, b: TensorHandle) -> TensorHandle:
    """``a − b`` elementwise on PE_MATH (numpy broadcasting).

    Shapes:
        ``a`` and ``b`` broadcast as in numpy; the result has the broadcast shape.
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(a.dtype, b.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``sub``, 31 logical bytes (framing, opcode, two
          input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``a`` and ``b``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(a.nbytes + b.nbytes), math(E),
          store(the result's bytes), E the largest element count of ``a``, ``b`` and the result.
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not);
        ``ValueError`` if the shapes do not broadcast.
    Example:
        d = tl.sub(tl.load(x), tl.load(y))
        assert d.shape == (64, 128)
    """
    return math_op("sub", (a, b))


def mul(a: TensorHandle, b: TensorHandle) -> TensorHandle:
    """``a × b`` elementwise on PE_MATH (numpy broadcasting).

    Shapes:
        ``a`` and ``b`` broadcast as in numpy; the result has the broadcast shape.
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(a.dtype, b.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``mul``, 31 logical bytes (framing, opcode, two
          input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``a`` and ``b``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(a.nbytes + b.nbytes), math(E),
          store(the result's bytes), E the largest element count of ``a``, ``b`` and the result.
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not);
        ``ValueError`` if the shapes do not broadcast.
    Example:
        p = tl.mul(tl.load(x), tl.load(y))
        assert p.shape == (64, 128)
    """
    return math_op("mul", (a, b))


def div(a: TensorHandle, b: TensorHandle) -> TensorHandle:
    """``a / b`` elementwise on PE_MATH (numpy broadcasting).

    Shapes:
        ``a`` and ``b`` broadcast as in numpy; the result has the broadcast shape.
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(a.dtype, b.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``div``, 31 logical bytes (framing, opcode, two
          input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``a`` and ``b``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(a.nbytes + b.nbytes), math(E),
          store(the result's bytes), E the largest element count of ``a``, ``b`` and the result.
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not);
        ``ValueError`` if the shapes do not broadcast.
    Example:
        q = tl.div(tl.load(x), tl.load(y))  # y is positive
        assert q.shape == (64, 128)
    """
    return math_op("div", (a, b))


def maximum(a: TensorHandle, b: TensorHandle) -> TensorHandle:
    """The larger of ``a`` and ``b``, elementwise on PE_MATH (numpy broadcasting).

    Shapes:
        ``a`` and ``b`` broadcast as in numpy; the result has the broadcast shape.
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(a.dtype, b.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``maximum``, 31 logical bytes (framing, opcode, two
          input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``a`` and ``b``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(a.nbytes + b.nbytes), math(E),
          store(the result's bytes), E the largest element count of ``a``, ``b`` and the result.
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not);
        ``ValueError`` if the shapes do not broadcast.
    Example:
        t = tl.load(x)
        relu = tl.maximum(t, tl.zeros((1, 128), np.float16))  # a row broadcast down the columns
        assert relu.shape == (64, 128) and relu.numpy().min() >= 0
    """
    return math_op("maximum", (a, b))


def exp(x: TensorHandle) -> TensorHandle:
    """``e ** x`` elementwise on PE_MATH.

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype.
    Cost:
        - Command: ``MathCmd`` of op kind ``exp``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not).
    Example:
        e = tl.exp(tl.load(x))
        assert e.shape == (64, 128) and e.numpy().min() > 0
    """
    return math_op("exp", (x,))


def scale(x: TensorHandle, factor: float) -> TensorHandle:
    """``x × factor`` elementwise on PE_MATH, ``factor`` a Python number.

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32 (``factor`` as float32); the result has ``x``'s dtype.
    Cost:
        - Command: ``MathCmd`` of op kind ``scale``, 27 logical bytes (the unary 23 and
          ``factor``, a float scalar, 4).
        - PE_CPU: auto-wait on ``x``; dispatch(27), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not); ``ValueError`` or
        ``TypeError`` if ``factor`` is not a number (``float(factor)`` fails).
    Example:
        half = tl.scale(tl.load(x), 0.5)
        assert half.shape == (64, 128) and half.dtype == np.float16
    """
    return math_op("scale", (x,), {"factor": float(factor)})


def mul_bcast(x: TensorHandle, col: TensorHandle) -> TensorHandle:
    """``x × col`` with ``col`` a (rows, 1) column applied along each row, on PE_MATH.

    The numerics are ``tl.mul``'s (numpy broadcasting, so any shapes that
    broadcast are accepted); the command names kind ``mul_bcast``, and the model
    times it as any PE_MATH op.

    Shapes:
        ``x`` (rows, cols) and ``col`` (rows, 1) give (rows, cols); in general ``x`` and ``col``
        broadcast as in numpy and the result has the broadcast shape.
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(x.dtype, col.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``mul_bcast``, 31 logical bytes (framing, opcode, two
          input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x`` and ``col``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes + col.nbytes), math(E),
          store(the result's bytes), E the largest element count of ``x``, ``col`` and the result.
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not);
        ``ValueError`` if the shapes do not broadcast.
    Example:
        t = tl.load(x)
        scaled = tl.mul_bcast(t, tl.rowmax(t))
        assert scaled.shape == (64, 128)
    """
    return math_op("mul_bcast", (x, col))


def sub_bcast(x: TensorHandle, col: TensorHandle) -> TensorHandle:
    """``x − col`` with ``col`` a (rows, 1) column applied along each row, on PE_MATH.

    The numerics are ``tl.sub``'s (numpy broadcasting, so any shapes that
    broadcast are accepted); the command names kind ``sub_bcast``, and the model
    times it as any PE_MATH op.

    Shapes:
        ``x`` (rows, cols) and ``col`` (rows, 1) give (rows, cols); in general ``x`` and ``col``
        broadcast as in numpy and the result has the broadcast shape.
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(x.dtype, col.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``sub_bcast``, 31 logical bytes (framing, opcode, two
          input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x`` and ``col``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes + col.nbytes), math(E),
          store(the result's bytes), E the largest element count of ``x``, ``col`` and the result.
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not);
        ``ValueError`` if the shapes do not broadcast.
    Example:
        t = tl.load(x)
        shifted = tl.sub_bcast(t, tl.rowmax(t))  # the softmax shift: every row's max is 0
        assert shifted.shape == (64, 128) and float(tl.max(shifted).numpy()) == 0.0
    """
    return math_op("sub_bcast", (x, col))
