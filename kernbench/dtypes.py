"""The element types kernbench stores, and how a value is narrowed into one.

numpy's own (float16, float32, the integers, bool) and three from ``ml_dtypes``
(the package JAX uses): ``bfloat16`` (2 B), ``float8_e4m3fn`` and ``float8_e5m2``
(1 B each). Importing this module registers the ``ml_dtypes`` names with numpy,
so a dtype's name (``np.dtype(x).name``, what a :class:`~kernbench.handles.HandleRef`
holds) turns back into the same dtype with ``np.dtype(name)``. Bytes moved are
always ``elements × itemsize`` of the stored dtype.

**Narrowing** (:func:`narrow`): a store, a cast, a deploy and every op result
that rounds float32 values into a smaller type are checked, never silent. A
*finite* value that does not fit raises :class:`NarrowingOverflowError`, naming
where, the first offending value and its index, and the type's largest finite
value. What each type does with values that are not finite to begin with:

- float16, bfloat16, float8_e5m2: ±inf and NaN stay ±inf and NaN (IEEE).
- float8_e4m3fn has no infinity (its largest value is 448; the ``fn`` means
  finite and NaN only): ±inf raises too, as an overflow; NaN stays NaN.
- integer and bool types: NaN and ±inf raise; a value outside the type's range raises.

``tl.cast(x, dtype, saturate=True)`` is the one documented saturation: it clips
finite values to ±(largest finite value) first (as an fp8 conversion with
saturation does in hardware), and only then narrows.

``ml_dtypes`` is imported when one of its types is first asked for
(:func:`as_dtype` with its name, ``tl.bfloat16``, this module's attributes),
not with kernbench: its 0.7 extension takes ~0.65 s of CPU to import (it
registers casts and promotions between its twenty-odd types), which every
process would pay — each ``kernbench run``, sweep worker and debugger child —
while most runs never use a type of its own.
"""

from __future__ import annotations

from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike, NDArray

#: the ml_dtypes types kernbench knows, by name (numpy knows these names once ml_dtypes is imported)
ML_NAMES = ("bfloat16", "float8_e4m3fn", "float8_e5m2")
#: types without an infinity: an infinite source value overflows them
NO_INF_NAMES = frozenset({"float8_e4m3fn"})

if TYPE_CHECKING:  # (at run time: module __getattr__ below, importing ml_dtypes on first use)
    bfloat16: type[Any]
    float8_e4m3fn: type[Any]
    float8_e5m2: type[Any]


@cache
def ml_dtypes() -> ModuleType:
    """The ``ml_dtypes`` package, imported (and its types registered with numpy) on first call."""
    import ml_dtypes as package

    return package


def __getattr__(name: str) -> Any:
    if name in ML_NAMES:
        return getattr(ml_dtypes(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def as_dtype(dtype: DTypeLike) -> np.dtype:
    """``np.dtype(dtype)``, also for the name of an ml_dtypes type before that package is imported."""
    if isinstance(dtype, str) and dtype in ML_NAMES:
        ml_dtypes()
    return np.dtype(dtype)


def _no_inf(d: np.dtype) -> bool:
    return d.name in NO_INF_NAMES


class NarrowingOverflowError(OverflowError):
    """A finite value does not fit the type it is stored or cast into."""


def is_float(dtype: DTypeLike) -> bool:
    """A floating-point type, numpy's or one of :data:`ML_NAMES`."""
    d = as_dtype(dtype)
    return d.kind == "f" or d.name in ML_NAMES


def largest(dtype: DTypeLike) -> float:
    """The largest finite value of a floating-point or integer type."""
    d = as_dtype(dtype)
    if d.kind in "iu":
        return float(np.iinfo(d).max)
    if d.kind == "b":
        return 1.0
    if d.name in ML_NAMES:
        return float(ml_dtypes().finfo(d).max)
    return float(np.finfo(d).max)


def check_storable(array: np.ndarray, what: str) -> None:
    """Refuse an array no memory can hold: object (or other non-numeric) dtypes."""
    d = array.dtype
    if d.kind in "OUSMmV" and d.name not in ML_NAMES:
        raise TypeError(
            f"{what}: dtype {d} cannot be stored (object, string and other non-numeric arrays have no bytes to move); "
            "give a numeric array (float16, bfloat16, float8_e4m3fn, float8_e5m2, float32, an int type or bool)"
        )


HINT = "scale the values first, or use tl.cast(x, dtype, saturate=True)"


def narrow(values: NDArray[Any], dtype: DTypeLike, what: str, hint: str = HINT) -> NDArray[Any]:
    """``values`` as ``dtype``, refusing a finite value it cannot hold (see the module docstring).

    The result is the one full-size array made; the checks look at :data:`CHECK_ELEMENTS` elements
    at a time, so a large deploy is held once, not once plus a mask of its size."""
    d = as_dtype(dtype)
    src = np.asarray(values)
    if src.dtype == d:
        return src
    if d.kind in "iub":
        return _to_int(src, d, what, hint)
    with np.errstate(over="ignore", invalid="ignore"):
        out = src.astype(d)
    if d.kind == "f" and d.itemsize >= 4:
        return out  # float32 (or wider) holds every value of every type here
    if not _no_inf(d) and all(bool(np.isfinite(out[b]).all()) for b in _blocks(out)):
        return out

    def overflowed(b: Any) -> NDArray[np.bool_]:
        was = np.isfinite(src[b]) if not _no_inf(d) else ~np.isnan(src[b])
        return np.asarray(~np.isfinite(out[b]) & was)

    _refuse_any(src, overflowed, d, what, hint)
    return out


def saturate(values: NDArray[Any], dtype: DTypeLike) -> NDArray[Any]:
    """Finite values and infinities clipped to ±(``dtype``'s largest finite value); NaN kept."""
    m = largest(dtype)
    return np.clip(np.asarray(values, dtype=np.float32), -m, m)


def _to_int(src: NDArray[Any], d: np.dtype, what: str, hint: str) -> NDArray[Any]:
    lo, hi = (0, 1) if d.kind == "b" else (np.iinfo(d).min, np.iinfo(d).max)
    if src.dtype.kind in "iub":
        if src.size and (src.min() < lo or src.max() > hi):
            _refuse_any(src, lambda b: np.asarray((src[b] < lo) | (src[b] > hi)), d, what, hint)
        return src.astype(d)
    lo_f, hi_f = float(lo), float(hi)  # (compared in float64: a float16 source cannot hold 2**31 - 1)

    def outside(b: Any) -> NDArray[np.bool_]:
        f = np.asarray(src[b], dtype=np.float64)
        return np.asarray(~np.isfinite(f) | (f < lo_f) | (f > hi_f))

    _refuse_any(src, outside, d, what, hint)
    out = np.empty(src.shape, dtype=d)
    for b in _blocks(src):
        out[b] = np.asarray(src[b], dtype=np.float64).astype(d)
    return out


#: how many elements a narrowing check looks at at once (its temporaries: a few bytes each)
CHECK_ELEMENTS = 1 << 20


def _blocks(a: NDArray[Any]) -> list[Any]:
    """Index expressions that cover ``a`` in slices of its first axis of about :data:`CHECK_ELEMENTS`
    elements each (at least one row); ``...`` (all of it) when it is no larger than that."""
    if a.size <= CHECK_ELEMENTS or a.ndim == 0:
        return [...]
    step = max(1, CHECK_ELEMENTS // max(1, a.size // a.shape[0]))
    return [slice(i, i + step) for i in range(0, a.shape[0], step)]


def _refuse_any(src: NDArray[Any], bad_in: Any, d: np.dtype, what: str, hint: str) -> None:
    """Raise for the first element ``bad_in(block)`` marks (counting all of them), if there is one."""
    first: tuple[int, ...] | None = None
    n = 0
    for b in _blocks(src):
        bad = bad_in(b)
        count = int(bad.sum())
        if count and first is None:
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            first = (at[0] + b.start, *at[1:]) if isinstance(b, slice) else at
        n += count
    if first is not None:
        _raise(src, first, n, d, what, hint)


def _raise(src: NDArray[Any], at: tuple[int, ...], n: int, d: np.dtype, what: str, hint: str) -> None:
    v = src[at] if at else src[()]
    extra = " (it has no infinity)" if _no_inf(d) else ""
    span = (
        f"range {np.iinfo(d).min}..{np.iinfo(d).max}"
        if d.kind in "iu"
        else "range 0..1"
        if d.kind == "b"
        else f"largest finite ±{largest(d):g}"
    )
    raise NarrowingOverflowError(
        f"{what}: value {float(v)!r} at index {at} does not fit {d.name}{extra}, {span}"
        f" ({n} element{'s' if n != 1 else ''} out of range); {hint}"
    )
