"""The op kinds PE engines know: their numerics and engine (their work: :mod:`kernbench.pe.work`).

One table; a new kind touches only this file. Numerics run in float32
(GEMM accumulates in float32) and are cast to the output's dtype by the
caller; they never look at time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class OpKind:
    name: str
    engine: str  # "gemm" or "math"
    arity: tuple[str, ...]  # operand names, in order
    fn: Callable[..., np.ndarray]
    params: tuple[str, ...] = ()  # OpSpec.extra keys the numerics use; others only describe

    def compute(self, operands: list[np.ndarray], extra: dict) -> np.ndarray:
        return self.fn(*operands, **{k: v for k, v in extra.items() if k in self.params})


def _f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def _gemm(a, b, acc=None, transpose_b=False):
    b = _f32(b)
    r = _f32(a) @ (b.T if transpose_b else b)
    return r if acc is None else _f32(acc) + r


def _rowmax(x):
    return _f32(x).max(axis=-1, keepdims=True)


def _rowsum(x):
    return _f32(x).sum(axis=-1, keepdims=True)


def _reduce(fn):
    def run(x, axis=None):
        return fn(_f32(x), axis=axis, keepdims=axis is not None)

    return run


def _binary(fn):
    return lambda a, b: fn(_f32(a), _f32(b))


OP_KINDS: dict[str, OpKind] = {
    k.name: k
    for k in [
        OpKind("gemm", "gemm", ("a", "b"), _gemm, ("transpose_b",)),
        OpKind("add", "math", ("a", "b"), _binary(np.add)),
        OpKind("sub", "math", ("a", "b"), _binary(np.subtract)),
        OpKind("mul", "math", ("a", "b"), _binary(np.multiply)),
        OpKind("div", "math", ("a", "b"), _binary(np.divide)),
        OpKind("maximum", "math", ("a", "b"), _binary(np.maximum)),
        OpKind("sub_bcast", "math", ("a", "b"), _binary(np.subtract)),
        OpKind("mul_bcast", "math", ("a", "b"), _binary(np.multiply)),
        OpKind("div_bcast", "math", ("a", "b"), _binary(np.divide)),
        OpKind("exp", "math", ("x",), lambda x: np.exp(_f32(x))),
        OpKind("scale", "math", ("x",), lambda x, factor=1.0: _f32(x) * np.float32(factor), ("factor",)),
        OpKind("copy", "math", ("x",), _f32),
        OpKind("rowmax", "math", ("x",), _rowmax),
        OpKind("rowsum", "math", ("x",), _rowsum),
        OpKind("max", "math", ("x",), _reduce(np.max), ("axis",)),
        OpKind("sum", "math", ("x",), _reduce(np.sum), ("axis",)),
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
