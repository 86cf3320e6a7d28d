"""``tl``'s elementwise ops: unary, binary, broadcast, selection and cast, one PE_MATH op each, on TCM handles.

Every op here computes through :func:`kernbench.tl.issue.math_op` (its op kind's
numerics in :mod:`kernbench.pe.opkinds`, float32 inside, narrowed to the result's
dtype by :func:`kernbench.dtypes.narrow`) and issues one ``MathCmd``; its cost is
:mod:`kernbench.tl`'s *single-op compute on PE_MATH*, at the plain rate (math) or
the transcendental one (tmath), as its op kind says. ``pow`` and ``abs`` shadow
Python's builtins here and in ``tl``: write them ``tl.pow``, ``tl.abs``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import DTypeLike

from kernbench.dtypes import as_dtype, check_storable
from kernbench.handles import TensorHandle
from kernbench.tl.issue import expect_handle, math_op, out_dtype


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
    """``e ** x`` elementwise on PE_MATH, at the transcendental rate.

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype.
    Cost:
        - Command: ``MathCmd`` of op kind ``exp``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), tmath(elements of ``x``),
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


def sqrt(x: TensorHandle) -> TensorHandle:
    """``√x`` elementwise on PE_MATH, at the transcendental rate.

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype (narrowed: kernbench.dtypes).
    Cost:
        - Command: ``MathCmd`` of op kind ``sqrt``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), tmath(elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not); a negative element gives NaN (IEEE), not an error.
    Example:
        r = tl.sqrt(tl.load(y))  # y is positive
        assert r.shape == (64, 128) and r.dtype == np.float16
        assert np.allclose(r.numpy(), np.sqrt(y.array.astype(np.float32)), rtol=1e-3)
    """
    return math_op("sqrt", (x,))


def rsqrt(x: TensorHandle) -> TensorHandle:
    """``1 / √x`` elementwise on PE_MATH, at the transcendental rate (one pass, as a hardware rsqrt).

    RMSNorm's scale: ``x · rsqrt(mean(x²) + eps)``.

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype (narrowed: kernbench.dtypes).
    Cost:
        - Command: ``MathCmd`` of op kind ``rsqrt``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), tmath(elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not); 0 gives inf, a negative element NaN (IEEE), not an error.
    Example:
        t = tl.load(x)
        ms = tl.rowmean(tl.mul(t, t))  # (64, 1), float16
        inv = tl.rsqrt(tl.add(ms, tl.full((1, 1), 1e-6, np.float16)))
        normed = tl.mul_bcast(t, inv)
        assert normed.shape == (64, 128)
        assert np.allclose(tl.rowmean(tl.mul(normed, normed)).numpy(), 1.0, atol=2e-2)
    """
    return math_op("rsqrt", (x,))


def reciprocal(x: TensorHandle) -> TensorHandle:
    """``1 / x`` elementwise on PE_MATH, at the transcendental rate (one pass, as a hardware reciprocal).

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype (narrowed: kernbench.dtypes).
    Cost:
        - Command: ``MathCmd`` of op kind ``reciprocal``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), tmath(elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not); 0 gives inf (IEEE), not an error.
    Example:
        r = tl.reciprocal(tl.load(y))
        assert np.allclose(r.numpy() * y.array, 1.0, rtol=2e-3)
    """
    return math_op("reciprocal", (x,))


def log(x: TensorHandle) -> TensorHandle:
    """The natural logarithm of ``x`` elementwise on PE_MATH, at the transcendental rate.

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype (narrowed: kernbench.dtypes).
    Cost:
        - Command: ``MathCmd`` of op kind ``log``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), tmath(elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not); 0 gives −inf, a negative element NaN (IEEE), not an error.
    Example:
        l = tl.log(tl.load(y))  # y in [0.5, 1.5]
        assert l.shape == (64, 128) and l.numpy().min() > -0.7
    """
    return math_op("log", (x,))


def pow(x: TensorHandle, p: float) -> TensorHandle:  # shadows the builtin: tl vocabulary
    """``x ** p`` elementwise on PE_MATH with ``p`` a Python number, at the transcendental rate (two passes: a log and an exp).

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32 (``p`` as float32); the result has ``x``'s dtype (narrowed: kernbench.dtypes).
    Cost:
        - Command: ``MathCmd`` of op kind ``pow``, 27 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths; ``p``, a float scalar, 4).
        - PE_CPU: auto-wait on ``x``; dispatch(27), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), tmath(2 × elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not); ``ValueError`` or ``TypeError`` if ``p`` is not a number; a negative base with a fractional ``p`` gives NaN (IEEE).
    Example:
        sq = tl.pow(tl.load(x), 2.0)
        assert sq.numpy().min() >= 0
        assert np.allclose(sq.numpy(), x.array.astype(np.float32) ** 2, rtol=1e-3, atol=1e-3)
    """
    return math_op("pow", (x,), {"p": float(p)})


def tanh(x: TensorHandle) -> TensorHandle:
    """``tanh x`` elementwise on PE_MATH, at the transcendental rate.

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype (narrowed: kernbench.dtypes).
    Cost:
        - Command: ``MathCmd`` of op kind ``tanh``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), tmath(elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not).
    Example:
        th = tl.tanh(tl.load(x))
        assert th.shape == (64, 128) and np.abs(th.numpy()).max() <= 1
    """
    return math_op("tanh", (x,))


def sigmoid(x: TensorHandle) -> TensorHandle:
    """``1 / (1 + e ** −x)`` elementwise on PE_MATH, at the transcendental rate (two passes: an exp and a reciprocal).

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype (narrowed: kernbench.dtypes).
    Cost:
        - Command: ``MathCmd`` of op kind ``sigmoid``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), tmath(2 × elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not).
    Example:
        s = tl.sigmoid(tl.load(x))
        v = s.numpy()
        assert v.min() >= 0 and v.max() <= 1
    """
    return math_op("sigmoid", (x,))


def silu(x: TensorHandle) -> TensorHandle:
    """``x · sigmoid(x)`` (SiLU, a.k.a. swish) elementwise on PE_MATH, at the transcendental rate (two passes, as ``tl.sigmoid``; the multiply is not charged apart).

    SwiGLU's gate: ``silu(x @ w_gate) · (x @ w_up)``.

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype (narrowed: kernbench.dtypes).
    Cost:
        - Command: ``MathCmd`` of op kind ``silu``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), tmath(2 × elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not).
    Example:
        t = tl.load(x)
        g = tl.mul(tl.silu(t), t)  # a SwiGLU-shaped product (gate and up the same here)
        assert g.shape == (64, 128) and g.dtype == np.float16
    """
    return math_op("silu", (x,))


def gelu(x: TensorHandle) -> TensorHandle:
    """GeLU in its tanh form, ``0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³)))``, elementwise on PE_MATH, at the transcendental rate (one pass: the tanh; the multiply-adds are not charged apart).

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype (narrowed: kernbench.dtypes).
    Cost:
        - Command: ``MathCmd`` of op kind ``gelu``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), tmath(elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not).
    Example:
        g = tl.gelu(tl.load(x))
        assert g.shape == (64, 128) and g.numpy().min() > -0.2
    """
    return math_op("gelu", (x,))


def sin(x: TensorHandle) -> TensorHandle:
    """``sin x`` (radians) elementwise on PE_MATH, at the transcendental rate.

    With ``tl.cos``, a rotary embedding's rotation: ``x · cos θ + rotate_half(x) · sin θ``.

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype (narrowed: kernbench.dtypes).
    Cost:
        - Command: ``MathCmd`` of op kind ``sin``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), tmath(elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not).
    Example:
        s = tl.sin(tl.load(x))
        assert np.abs(s.numpy()).max() <= 1
    """
    return math_op("sin", (x,))


def cos(x: TensorHandle) -> TensorHandle:
    """``cos x`` (radians) elementwise on PE_MATH, at the transcendental rate.

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype (narrowed: kernbench.dtypes).
    Cost:
        - Command: ``MathCmd`` of op kind ``cos``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), tmath(elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not).
    Example:
        t = tl.load(x)
        one = tl.add(tl.mul(tl.sin(t), tl.sin(t)), tl.mul(tl.cos(t), tl.cos(t)))
        assert np.allclose(one.numpy(), 1.0, atol=3e-3)
    """
    return math_op("cos", (x,))


def neg(x: TensorHandle) -> TensorHandle:
    """``−x`` elementwise on PE_MATH, at the plain rate.

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype (narrowed: kernbench.dtypes).
    Cost:
        - Command: ``MathCmd`` of op kind ``neg``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not).
    Example:
        n = tl.neg(tl.load(x))
        assert np.array_equal(n.numpy(), -x.array)
    """
    return math_op("neg", (x,))


def abs(x: TensorHandle) -> TensorHandle:  # shadows the builtin: tl vocabulary
    """``|x|`` elementwise on PE_MATH, at the plain rate.

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype (narrowed: kernbench.dtypes).
    Cost:
        - Command: ``MathCmd`` of op kind ``abs``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not).
    Example:
        a = tl.abs(tl.load(x))
        assert np.array_equal(a.numpy(), np.abs(x.array))
    """
    return math_op("abs", (x,))


def clamp(x: TensorHandle, lo: float, hi: float) -> TensorHandle:
    """``x`` clipped to ``[lo, hi]`` elementwise on PE_MATH, ``lo`` and ``hi`` Python numbers, at the plain rate.

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32 (``lo``, ``hi`` as float32); the result has ``x``'s dtype.
    Cost:
        - Command: ``MathCmd`` of op kind ``clamp``, 31 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths; ``lo`` and ``hi``, float scalars, 4 each).
        - PE_CPU: auto-wait on ``x``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not); ``ValueError`` if ``lo > hi`` or a bound is not a number.
    Example:
        c = tl.clamp(tl.load(x), -1.0, 1.0)
        assert c.numpy().min() >= -1 and c.numpy().max() <= 1
    """
    lo_f, hi_f = float(lo), float(hi)
    if not lo_f <= hi_f:
        raise ValueError(f"tl.clamp: lo {lo!r} is above hi {hi!r}")
    return math_op("clamp", (x,), {"lo": lo_f, "hi": hi_f})


def minimum(a: TensorHandle, b: TensorHandle) -> TensorHandle:
    """The smaller of ``a`` and ``b``, elementwise on PE_MATH (numpy broadcasting), at the plain rate.

    Shapes:
        ``a`` and ``b`` broadcast as in numpy; the result has the broadcast shape.
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(a.dtype, b.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``minimum``, 31 logical bytes (framing, opcode, two
          input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``a`` and ``b``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(a.nbytes + b.nbytes), math(E),
          store(the result's bytes), E the largest element count of ``a``, ``b`` and the result.
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not);
        ``ValueError`` if the shapes do not broadcast.
    Example:
        t = tl.load(x)
        neg_part = tl.minimum(t, tl.zeros((1, 128), np.float16))
        assert neg_part.shape == (64, 128) and neg_part.numpy().max() <= 0
    """
    return math_op("minimum", (a, b))


def _column(x: TensorHandle, col: TensorHandle, what: str) -> None:
    expect_handle(x, f"{what} x")
    expect_handle(col, f"{what} col")
    if len(x.shape) != 2 or tuple(col.shape) != (x.shape[0], 1):
        raise ValueError(f"{what}: col must be a ({x.shape[0] if x.shape else '?'}, 1) column for x {x.shape}, got {col.shape}")


def _row(x: TensorHandle, row: TensorHandle, what: str) -> None:
    expect_handle(x, f"{what} x")
    expect_handle(row, f"{what} row")
    if len(x.shape) != 2 or tuple(row.shape) != (1, x.shape[1]):
        raise ValueError(f"{what}: row must be a (1, {x.shape[-1] if x.shape else '?'}) row for x {x.shape}, got {row.shape}")


def add_bcast(x: TensorHandle, col: TensorHandle) -> TensorHandle:
    """``x + col`` with ``col`` a (rows, 1) column added along each row, on PE_MATH at the plain rate.

    As a single op it is ``tl.add``'s numerics and time; its kind, ``add_bcast``, streams
    in a composite by rows, ``col``'s rows beside ``x``'s (``tl.mul_bcast`` and
    ``tl.sub_bcast`` are its siblings; ``div_bcast`` is the kind of a column divide).

    Shapes:
        ``x`` (rows, cols) and ``col`` (rows, 1) give (rows, cols).
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(x.dtype, col.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``add_bcast``, 31 logical bytes (framing, opcode, two
          input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x`` and ``col``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes + col.nbytes), math(elements of
          ``x``), store(the result's bytes).
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not); ``ValueError``
        if ``x`` is not 2-D or ``col`` is not its (rows, 1) column.
    Example:
        t = tl.load(x)
        centred = tl.add_bcast(t, tl.neg(tl.rowmean(t)))  # every row's mean is now 0
        assert np.allclose(tl.rowmean(centred).numpy(), 0.0, atol=1e-2)
    """
    _column(x, col, "tl.add_bcast")
    return math_op("add_bcast", (x, col))


def add_bcast_row(x: TensorHandle, row: TensorHandle) -> TensorHandle:
    """``x + row`` with ``row`` a (1, cols) row added to every row of ``x`` (a bias), on PE_MATH at the plain rate.

    As a single op it is ``tl.add``'s numerics and time. Its kind, ``add_bcast_row``,
    streams in a composite by ``x``'s rows, and ``row`` is *held*: read (a ``tl.ref``)
    and fetched once, at the first step, and kept for the steps after — not re-read
    per step (the op kinds table, ``rows``).

    Shapes:
        ``x`` (rows, cols) and ``row`` (1, cols) give (rows, cols).
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(x.dtype, row.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``add_bcast_row``, 31 logical bytes (framing, opcode,
          two input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x`` and ``row``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes + row.nbytes), math(elements of
          ``x``), store(the result's bytes).
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not); ``ValueError``
        if ``x`` is not 2-D or ``row`` is not its (1, cols) row.
    Example:
        t = tl.load(x)
        bias = tl.load(y[0:1, :])  # (1, 128)
        r = tl.add_bcast_row(t, bias)
        assert np.allclose(r.numpy(), x.array + y.array[0:1, :], atol=1e-2)
    """
    _row(x, row, "tl.add_bcast_row")
    return math_op("add_bcast_row", (x, row))


def sub_bcast_row(x: TensorHandle, row: TensorHandle) -> TensorHandle:
    """``x − row`` with ``row`` a (1, cols) row taken from every row of ``x``, on PE_MATH at the plain rate.

    As ``tl.add_bcast_row`` (``row`` held in a composite), with ``tl.sub``'s numerics.

    Shapes:
        ``x`` (rows, cols) and ``row`` (1, cols) give (rows, cols).
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(x.dtype, row.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``sub_bcast_row``, 31 logical bytes (framing, opcode,
          two input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x`` and ``row``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes + row.nbytes), math(elements of
          ``x``), store(the result's bytes).
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not); ``ValueError``
        if ``x`` is not 2-D or ``row`` is not its (1, cols) row.
    Example:
        t = tl.load(x)
        r = tl.sub_bcast_row(t, tl.load(x[0:1, :]))
        assert float(np.abs(r.numpy()[0]).max()) == 0.0  # row 0 minus itself
    """
    _row(x, row, "tl.sub_bcast_row")
    return math_op("sub_bcast_row", (x, row))


def mul_bcast_row(x: TensorHandle, row: TensorHandle) -> TensorHandle:
    """``x × row`` with ``row`` a (1, cols) row (a norm's weight) applied to every row of ``x``, on PE_MATH at the plain rate.

    As ``tl.add_bcast_row`` (``row`` held in a composite), with ``tl.mul``'s numerics.

    Shapes:
        ``x`` (rows, cols) and ``row`` (1, cols) give (rows, cols).
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(x.dtype, row.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``mul_bcast_row``, 31 logical bytes (framing, opcode,
          two input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x`` and ``row``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes + row.nbytes), math(elements of
          ``x``), store(the result's bytes).
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not); ``ValueError``
        if ``x`` is not 2-D or ``row`` is not its (1, cols) row.
    Example:
        weight = tl.load(y[0:1, :])  # (1, 128), an RMSNorm weight
        r = tl.mul_bcast_row(tl.load(x), weight)
        assert np.allclose(r.numpy(), x.array * y.array[0:1, :], atol=1e-2)
    """
    _row(x, row, "tl.mul_bcast_row")
    return math_op("mul_bcast_row", (x, row))


def div_bcast_row(x: TensorHandle, row: TensorHandle) -> TensorHandle:
    """``x / row`` with ``row`` a (1, cols) row dividing every row of ``x``, on PE_MATH at the plain rate.

    As ``tl.add_bcast_row`` (``row`` held in a composite), with ``tl.div``'s numerics.

    Shapes:
        ``x`` (rows, cols) and ``row`` (1, cols) give (rows, cols).
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(x.dtype, row.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``div_bcast_row``, 31 logical bytes (framing, opcode,
          two input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x`` and ``row``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes + row.nbytes), math(elements of
          ``x``), store(the result's bytes).
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not); ``ValueError``
        if ``x`` is not 2-D or ``row`` is not its (1, cols) row.
    Example:
        r = tl.div_bcast_row(tl.load(x), tl.load(y[0:1, :]))  # y is positive
        assert np.allclose(r.numpy(), x.array / y.array[0:1, :], atol=2e-2)
    """
    _row(x, row, "tl.div_bcast_row")
    return math_op("div_bcast_row", (x, row))


def where(mask: TensorHandle, a: TensorHandle, b: TensorHandle) -> TensorHandle:
    """``a`` where ``mask`` is not 0, else ``b``, elementwise on PE_MATH (numpy broadcasting), at the plain rate.

    Shapes:
        ``mask``, ``a`` and ``b`` broadcast as in numpy; the result has the broadcast shape.
    Dtypes:
        ``mask`` any numeric or bool type (a ``tl.causal_mask`` is uint8); ``a`` and ``b``
        computed in float32; the result has ``numpy.result_type(a.dtype, b.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``where``, 39 logical bytes (framing, opcode, three
          input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``mask``, ``a`` and ``b``; dispatch(39), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(mask.nbytes + a.nbytes + b.nbytes),
          math(E), store(the result's bytes), E the largest element count of the operands
          and the result.
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not);
        ``ValueError`` if the shapes do not broadcast.
    Example:
        s = tl.load(x[0:64, 0:64])  # attention scores of 64 queries over 64 keys
        keep = tl.causal_mask(0, 0, (64, 64))
        masked = tl.where(keep, s, tl.full((1, 1), -np.inf, np.float16))
        assert np.isinf(masked.numpy()[0, 1]) and masked.numpy()[1, 0] == s.numpy()[1, 0]
    """
    expect_handle(mask, "tl.where mask")
    return math_op("where", (mask, a, b), dtype=out_dtype(a, b))


def causal_mask(q_offset: int, k_offset: int, shape: Sequence[int]) -> TensorHandle:
    """A (queries, keys) causal mask made on PE_MATH, with no operand and no HBM traffic: 1 where key ``k_offset + j`` is at or before query ``q_offset + i``, else 0.

    A PE_MATH op with no inputs: the engine writes the mask from the two
    offsets (an iota and a compare per element), so a causal attention tile
    costs one plain-rate pass over its elements instead of a mask loaded from
    HBM. In a composite, its kind ``causal_mask`` takes no operands and its
    ``out``'s shape (and ``extra`` ``q_offset``, ``k_offset``).

    Shapes:
        ``shape`` is (queries, keys), two positive ints; the mask has it.
    Dtypes:
        uint8 (0 or 1).
    Cost:
        - Command: ``MathCmd`` of op kind ``causal_mask``, 23 logical bytes (framing, opcode, no
          input handle, out handle, two tuple lengths, the two offsets, int scalars, 4 each).
        - PE_CPU: dispatch(23), single-op FIXED (nothing to wait for).
        - Engines: single-op compute on PE_MATH: fetch(0), math(queries × keys),
          store(queries × keys bytes); no DMA.
        - Scratch: queries × keys bytes, from now on.
    Errors:
        ``ValueError`` if ``shape`` is not two positive ints or an offset is not an int;
        ``ScratchError`` if it does not fit.
    Example:
        m = tl.causal_mask(2, 0, (4, 8))  # queries 2..5 over keys 0..7
        assert m.dtype == np.uint8 and m.numpy().sum(axis=1).tolist() == [3, 4, 5, 6]
    """
    dims = tuple(shape)
    if len(dims) != 2 or not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n > 0 for n in dims):
        raise ValueError(f"tl.causal_mask: shape must be (queries, keys), two positive ints; got {shape!r}")
    for name, v in (("q_offset", q_offset), ("k_offset", k_offset)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"tl.causal_mask: {name} must be an int, got {v!r}")
    extra = {"q_offset": int(q_offset), "k_offset": int(k_offset)}
    return math_op("causal_mask", (), extra, dtype=np.uint8, shape=(int(dims[0]), int(dims[1])))


def cast(x: TensorHandle, dtype: DTypeLike, saturate: bool = False) -> TensorHandle:
    """``x`` converted to ``dtype`` on PE_MATH, at the plain rate (``tl.bfloat16``, ``tl.float8_e4m3fn``, … or a numpy type).

    A value too large for ``dtype`` raises (kernbench.dtypes: never a silent
    inf or NaN); with ``saturate=True`` it is clipped to ±(the type's largest
    finite value) instead, as an fp8 conversion with saturation does.

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Any numeric ``x``; through float32; the result has ``dtype``.
    Cost:
        - Command: ``MathCmd`` of op kind ``cast``, 25 logical bytes (the unary 23, the dtype, an
          enum, 1, and ``saturate``, a flag, 1).
        - PE_CPU: auto-wait on ``x``; dispatch(25), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(elements of ``x``),
          store(the result's bytes, at ``dtype``'s itemsize).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not) or ``dtype`` is not
        numeric; ``NarrowingOverflowError`` (an ``OverflowError``) for a finite value ``dtype``
        cannot hold, without ``saturate``.
    Example:
        t = tl.load(x)
        b = tl.cast(t, tl.bfloat16)
        f8 = tl.cast(tl.scale(t, 1000.0), tl.float8_e4m3fn, saturate=True)  # clipped to ±448
        assert b.nbytes == 64 * 128 * 2 and f8.nbytes == 64 * 128
        assert float(np.abs(f8.numpy().astype(np.float32)).max()) == 448.0
    """
    expect_handle(x, "tl.cast x")
    target = as_dtype(dtype)
    check_storable(np.empty(0, dtype=target), "tl.cast dtype")
    extra = {"dtype": target.name, "saturate": bool(saturate)}
    return math_op("cast", (x,), extra, dtype=target)
