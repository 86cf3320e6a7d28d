"""The op kinds PE engines know: their numerics, engine, and how a composite streams them.

(Their work: :mod:`kernbench.pe.work`; the steps a composite cuts them into:
:mod:`kernbench.pe.steps`.)

One table; a new kind touches only this file. Numerics run in float32
(GEMM accumulates in float32) and are cast to the output's dtype by the
caller; they never look at time.

**Rates.** PE_MATH runs a kind at one of two rates (:attr:`OpKind.rate`):
``"plain"`` kinds (add, mul, max, compare, select, cast, …) at
``math_elems_per_cycle`` elements per cycle, ``"transcendental"`` kinds at
``math_transcendental_elems_per_cycle`` (the special-function pipe: exp, log,
sqrt, rsqrt, reciprocal, tanh, sigmoid, silu, gelu, sin, cos, pow), each
element taking :attr:`OpKind.passes` trips through it (pow: a log and an exp;
sigmoid and silu: an exp and a reciprocal; the plain multiply-adds around them
overlap in the plain lanes and are not charged apart). ``div`` stays plain
(the vector lanes divide). Why these, and the default rate: docs/extending.md,
"Transcendental rate".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kernbench.dtypes import largest

F32 = NDArray[np.float32]

RATES = ("plain", "transcendental")  # PE_MATH's two rates (the module docstring)
STEPS = ("k", "elements", "rows")  # the axes a composite streams along (kernbench.pe.steps)


@dataclass(frozen=True, slots=True)
class OpKind:
    name: str
    engine: str  # "gemm" or "math"
    arity: tuple[str, ...]  # operand names, in order
    fn: Callable[..., F32]  # operands (by position), then the params it takes (by name)
    params: tuple[str, ...] = ()  # OpSpec.extra keys the numerics use; others only describe
    doc: str = ""  # what it computes, one line (the tl reference's op-kind table: kernbench.tl.reference)
    steps: str = "elements"  # the axis a composite streams it along: "k", "elements" or "rows" (pe/steps.py)
    rate: str = "plain"  # PE_MATH's rate for it: "plain" (math_elems_per_cycle) or "transcendental"
    passes: int = 1  # trips through its rate's pipe per element (PE_MATH time of E elements: math(passes · E))
    shaped: bool = False  # its numerics take the result's shape (``shape=``): a kind with no operand to take it from

    def __post_init__(self) -> None:
        # a typo in the table would otherwise time a kind silently at the plain rate or stream it wrong
        if self.rate not in RATES or self.steps not in STEPS or self.passes < 1 or self.engine not in ("gemm", "math"):
            raise ValueError(f"op kind {self.name!r}: engine, steps, rate or passes out of range ({self})")

    def compute(self, operands: list[NDArray[np.generic]], extra: dict[str, Any], shape: tuple[int, ...] | None = None) -> F32:
        """The numerics, in float32; ``shape``: the result's, for a :attr:`shaped` kind."""
        kw = {k: v for k, v in extra.items() if k in self.params} if self.params else {}
        if self.shaped:
            kw["shape"] = shape
        return self.fn(*operands, **kw) if kw else self.fn(*operands)


def _f32(x: ArrayLike) -> F32:
    # numpy's cast, also for float16 tiles: kernbench.float16's is faster alone, but in a run
    # (a tile read cold, between engine steps) its extra passes cost more than they save
    return np.asarray(x, dtype=np.float32)


def _gemm(a: ArrayLike, b: ArrayLike, acc: ArrayLike | None = None, transpose_b: bool = False, a_kstep_major: bool = False) -> F32:
    """``a @ b``; ``a_kstep_major``: A given as its K-step blocks, ``(k / tk, m, tk)``."""
    b = _f32(b)
    a = _f32(a)
    if a_kstep_major:
        a = a.transpose(1, 0, 2).reshape(a.shape[1], -1)
    r = a @ (b.T if transpose_b else b)
    return r if acc is None else _f32(acc) + r


def _rowmax(x: ArrayLike) -> F32:
    # the ufunc's reduce is what ndarray.max calls, without its Python wrapper
    r: F32 = np.maximum.reduce(_f32(x), axis=-1, keepdims=True)  # (numpy's stubs: Any for a reduction with axis)
    return r


def _rowsum(x: ArrayLike) -> F32:
    r: F32 = np.add.reduce(_f32(x), axis=-1, keepdims=True)
    return r


def _reduce(fn: Callable[..., F32]) -> Callable[..., F32]:  # run(x, axis=None)
    def run(x: ArrayLike, axis: int | None = None) -> F32:
        return fn(_f32(x), axis=axis, keepdims=axis is not None)

    return run


def _binary(fn: Callable[[F32, F32], F32]) -> Callable[[ArrayLike, ArrayLike], F32]:
    return lambda a, b: fn(_f32(a), _f32(b))


def _unary(fn: Callable[[F32], F32]) -> Callable[[ArrayLike], F32]:
    def run(x: ArrayLike) -> F32:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # IEEE results (inf, nan) are the values
            return fn(_f32(x))

    return run


def _sigmoid(x: F32) -> F32:
    # 1 / (1 + e^-x) without overflow for large |x|
    return _f32(np.float32(0.5) * (np.tanh(np.float32(0.5) * x) + np.float32(1.0)))


GELU_C = np.float32(np.sqrt(2.0 / np.pi))


def _gelu(x: F32) -> F32:
    """The tanh form: 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³)))."""
    return _f32(np.float32(0.5) * x * (np.float32(1.0) + np.tanh(GELU_C * (x + np.float32(0.044715) * x * x * x))))


def _pow(x: ArrayLike, p: float = 1.0) -> F32:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.power(_f32(x), np.float32(p))


def _clamp(x: ArrayLike, lo: float = -np.inf, hi: float = np.inf) -> F32:
    return np.clip(_f32(x), np.float32(lo), np.float32(hi))


def _rowmean(x: ArrayLike) -> F32:
    f = _f32(x)
    return _f32(np.add.reduce(f, axis=-1, keepdims=True) / np.float32(f.shape[-1]))


def _where(mask: ArrayLike, a: ArrayLike, b: ArrayLike) -> F32:
    return np.where(np.asarray(mask) != 0, _f32(a), _f32(b))


def _causal_mask(q_offset: int = 0, k_offset: int = 0, shape: tuple[int, ...] | None = None) -> F32:
    """1 where key position ``k_offset + j`` is at or before query position ``q_offset + i``, else 0."""
    assert shape is not None and len(shape) == 2, "causal_mask makes a 2-D (queries, keys) mask"
    q = np.arange(shape[0], dtype=np.int64)[:, None] + int(q_offset)
    k = np.arange(shape[1], dtype=np.int64)[None, :] + int(k_offset)
    return (k <= q).astype(np.float32)


def _cast(x: ArrayLike, dtype: str | None = None, saturate: bool = False) -> F32:
    f = _f32(x)
    if saturate and dtype is not None:
        m = np.float32(largest(dtype))
        return np.clip(f, -m, m)
    return f


T = "transcendental"


OP_KINDS: dict[str, OpKind] = {
    k.name: k
    for k in [
        OpKind(
            "gemm",
            "gemm",
            ("a", "b"),
            _gemm,
            ("transpose_b", "a_kstep_major"),
            "a @ b (a @ b.T with transpose_b; a given as (k / tk, m, tk) blocks with a_kstep_major), accumulated in float32",
            "k",
        ),
        OpKind("add", "math", ("a", "b"), _binary(np.add), doc="a + b, numpy broadcasting"),
        OpKind("sub", "math", ("a", "b"), _binary(np.subtract), doc="a − b, numpy broadcasting"),
        OpKind("mul", "math", ("a", "b"), _binary(np.multiply), doc="a × b, numpy broadcasting"),
        OpKind("div", "math", ("a", "b"), _binary(np.divide), doc="a / b, numpy broadcasting"),
        OpKind("maximum", "math", ("a", "b"), _binary(np.maximum), doc="the larger of a and b, elementwise"),
        OpKind(
            "sub_bcast", "math", ("a", "b"), _binary(np.subtract), doc="a − b with b a (rows, 1) column (numerics as sub)", steps="rows"
        ),
        OpKind(
            "mul_bcast", "math", ("a", "b"), _binary(np.multiply), doc="a × b with b a (rows, 1) column (numerics as mul)", steps="rows"
        ),
        OpKind("div_bcast", "math", ("a", "b"), _binary(np.divide), doc="a / b with b a (rows, 1) column (numerics as div)", steps="rows"),
        OpKind("exp", "math", ("x",), _unary(np.exp), doc="e ** x, elementwise", rate=T),
        OpKind("scale", "math", ("x",), lambda x, factor=1.0: _f32(x) * np.float32(factor), ("factor",), "x × factor (default 1.0)"),
        OpKind("copy", "math", ("x",), _f32, doc="x unchanged (on PE_MATH; tl.copy goes through PE_FETCH_STORE only)"),
        OpKind("rowmax", "math", ("x",), _rowmax, doc="max along the last axis, kept as size 1: (rows, 1)", steps="rows"),
        OpKind("rowsum", "math", ("x",), _rowsum, doc="sum along the last axis, kept as size 1: (rows, 1)", steps="rows"),
        OpKind("rowmean", "math", ("x",), _rowmean, doc="mean along the last axis, kept as size 1: (rows, 1)", steps="rows"),
        OpKind("max", "math", ("x",), _reduce(np.max), ("axis",), "max over all elements (shape ()), or along axis kept as size 1", "rows"),
        OpKind("sum", "math", ("x",), _reduce(np.sum), ("axis",), "sum over all elements (shape ()), or along axis kept as size 1", "rows"),
        # unary, transcendental rate
        OpKind("sqrt", "math", ("x",), _unary(np.sqrt), doc="√x, elementwise (NaN below 0)", rate=T),
        OpKind("rsqrt", "math", ("x",), _unary(lambda x: _f32(np.float32(1.0) / np.sqrt(x))), doc="1 / √x, elementwise", rate=T),
        OpKind("reciprocal", "math", ("x",), _unary(lambda x: np.float32(1.0) / x), doc="1 / x, elementwise", rate=T),
        OpKind("log", "math", ("x",), _unary(np.log), doc="natural log of x, elementwise (−inf at 0, NaN below)", rate=T),
        OpKind("pow", "math", ("x",), _pow, ("p",), "x ** p, p a scalar (two passes: a log and an exp)", rate=T, passes=2),
        OpKind("tanh", "math", ("x",), _unary(np.tanh), doc="tanh x, elementwise", rate=T),
        OpKind(
            "sigmoid", "math", ("x",), _unary(_sigmoid), doc="1 / (1 + e ** −x) (two passes: an exp and a reciprocal)", rate=T, passes=2
        ),
        OpKind(
            "silu", "math", ("x",), _unary(lambda x: _f32(x * _sigmoid(x))), doc="x · sigmoid(x) (two passes, as sigmoid)", rate=T, passes=2
        ),
        OpKind("gelu", "math", ("x",), _unary(_gelu), doc="0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³))), the tanh form", rate=T),
        OpKind("sin", "math", ("x",), _unary(np.sin), doc="sin x (radians), elementwise", rate=T),
        OpKind("cos", "math", ("x",), _unary(np.cos), doc="cos x (radians), elementwise", rate=T),
        # unary and binary, plain rate
        OpKind("neg", "math", ("x",), _unary(np.negative), doc="−x, elementwise"),
        OpKind("abs", "math", ("x",), _unary(np.abs), doc="the absolute value of x, elementwise"),
        OpKind("minimum", "math", ("a", "b"), _binary(np.minimum), doc="the smaller of a and b, elementwise"),
        OpKind("clamp", "math", ("x",), _clamp, ("lo", "hi"), "x clipped to [lo, hi] (scalars)"),
        # broadcasts: a (rows, 1) column streamed with its rows; a (1, cols) row read once and held
        OpKind("add_bcast", "math", ("a", "b"), _binary(np.add), doc="a + b with b a (rows, 1) column (numerics as add)", steps="rows"),
        OpKind(
            "add_bcast_row", "math", ("a", "b"), _binary(np.add), doc="a + b with b a (1, cols) row, held (numerics as add)", steps="rows"
        ),
        OpKind(
            "sub_bcast_row",
            "math",
            ("a", "b"),
            _binary(np.subtract),
            doc="a − b with b a (1, cols) row, held (numerics as sub)",
            steps="rows",
        ),
        OpKind(
            "mul_bcast_row",
            "math",
            ("a", "b"),
            _binary(np.multiply),
            doc="a × b with b a (1, cols) row, held (numerics as mul)",
            steps="rows",
        ),
        OpKind(
            "div_bcast_row",
            "math",
            ("a", "b"),
            _binary(np.divide),
            doc="a / b with b a (1, cols) row, held (numerics as div)",
            steps="rows",
        ),
        # selection and conversion, plain rate
        OpKind("where", "math", ("mask", "a", "b"), _where, doc="a where mask ≠ 0, else b, elementwise (numpy broadcasting)"),
        OpKind(
            "causal_mask",
            "math",
            (),
            _causal_mask,
            ("q_offset", "k_offset"),
            "1 where k_offset + j ≤ q_offset + i, else 0, in out's (queries, keys) shape; no operand, no HBM traffic",
            shaped=True,
        ),
        OpKind("cast", "math", ("x",), _cast, ("dtype", "saturate"), "x unchanged, stored as out's dtype (saturate: clipped to its range)"),
    ]
}


def op_kind(name: str) -> OpKind:
    try:
        return OP_KINDS[name]
    except KeyError:
        import difflib

        g = difflib.get_close_matches(name, list(OP_KINDS), n=1)
        hint = f" (did you mean {g[0]!r}?)" if g else ""
        raise ValueError(f"unknown op kind {name!r}{hint}; known: {', '.join(sorted(OP_KINDS))}") from None


# --- indexing kinds (tl.topk, tl.argmax: kernbench/tl/indexing.py) ---------------------------
#
# Work. PE_MATH selects the top k of a row by a compare-and-insert of every element into a
# sorted k-entry buffer per row: a binary insertion takes ceil(log2(k + 1)) compares, so a
# top-k's work is its elements × ceil(log2(k + 1)) (an assumed rule: 1 pass for k = 1, the
# rate of rowmax; 2 for k = 2 or 3; 4 for k = 8). argmax is one compare per element, as
# rowmax. Indices are computed in float32 (exact below 2**24 columns) and cast by the caller.


def compare_passes(k: int) -> int:
    """Compares per element of a top-``k`` (a binary insertion into a sorted k-entry buffer)."""
    return max(1, math.ceil(math.log2(int(k) + 1)))


def _k_of(extra: dict[str, Any]) -> int:
    """A top-k's k for its work: ``extra["k"]`` (1 when absent; the numerics reject a bad one)."""
    k = extra.get("k", 1)
    return int(k) if isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 1 else 1


def _topk_order(x: ArrayLike, k: int) -> NDArray[np.int64]:
    """The column order of each row's ``k`` largest, largest first (ties: the lower column first)."""
    f = _f32(x)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= int(k) <= f.shape[-1]:
        raise ValueError(f"top-k: k must be an integer in 1..{f.shape[-1]} (the row length), got {k!r}")
    order: NDArray[np.int64] = np.argsort(-f, axis=-1, kind="stable")[..., : int(k)]
    return order


def _topk(x: ArrayLike, k: int = 1) -> F32:
    r: F32 = np.take_along_axis(_f32(x), _topk_order(x, k), axis=-1)
    return r


def _topk_indices(x: ArrayLike, k: int = 1) -> F32:
    return _topk_order(x, k).astype(np.float32)


def _argmax(x: ArrayLike) -> F32:
    r: F32 = np.argmax(_f32(x), axis=-1, keepdims=True).astype(np.float32)
    return r


INDEXING_KINDS = (
    OpKind(
        "topk",
        "math",
        ("x",),
        _topk,
        ("k",),
        "the k largest of each row (the last axis), largest first: (rows, k) (default k 1); work E × ceil(log2(k + 1))",
        "rows",
    ),
    OpKind(
        "topk_indices",
        "math",
        ("x",),
        _topk_indices,
        ("k",),
        "the columns of topk's values, as numbers (ties: the lower column first); work E × ceil(log2(k + 1))",
        "rows",
    ),
    OpKind("argmax", "math", ("x",), _argmax, doc="the column of each row's largest (the first of equals): (rows, 1)", steps="rows"),
)
OP_KINDS.update({k.name: k for k in INDEXING_KINDS})

# Per kind whose PE_MATH work is not its elements alone: the factor, from the op's extra.
WORK_FACTOR: dict[str, Callable[[dict[str, Any]], int]] = {
    "topk": lambda extra: compare_passes(_k_of(extra)),
    "topk_indices": lambda extra: compare_passes(_k_of(extra)),
}
