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
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
from numpy.typing import DTypeLike, NDArray

bfloat16: type[Any] = ml_dtypes.bfloat16
float8_e4m3fn: type[Any] = ml_dtypes.float8_e4m3fn
float8_e5m2: type[Any] = ml_dtypes.float8_e5m2

#: the ml_dtypes types kernbench knows, by name
ML_DTYPES: dict[str, np.dtype] = {np.dtype(t).name: np.dtype(t) for t in (bfloat16, float8_e4m3fn, float8_e5m2)}
#: types without an infinity: an infinite source value overflows them
NO_INF = frozenset({np.dtype(float8_e4m3fn)})


class NarrowingOverflowError(OverflowError):
    """A finite value does not fit the type it is stored or cast into."""


def is_float(dtype: DTypeLike) -> bool:
    """A floating-point type, numpy's or one of :data:`ML_DTYPES`."""
    d = np.dtype(dtype)
    return d.kind == "f" or d.name in ML_DTYPES


def largest(dtype: DTypeLike) -> float:
    """The largest finite value of a floating-point or integer type."""
    d = np.dtype(dtype)
    if d.kind in "iu":
        return float(np.iinfo(d).max)
    if d.kind == "b":
        return 1.0
    return float(ml_dtypes.finfo(d).max)  # type: ignore[no-untyped-call]


def check_storable(array: np.ndarray, what: str) -> None:
    """Refuse an array no memory can hold: object (or other non-numeric) dtypes."""
    d = array.dtype
    if d.kind in "OUSMmV" and d.name not in ML_DTYPES:
        raise TypeError(
            f"{what}: dtype {d} cannot be stored (object, string and other non-numeric arrays have no bytes to move); "
            "give a numeric array (float16, bfloat16, float8_e4m3fn, float8_e5m2, float32, an int type or bool)"
        )


HINT = "scale the values first, or use tl.cast(x, dtype, saturate=True)"


def narrow(values: NDArray[Any], dtype: DTypeLike, what: str, hint: str = HINT) -> NDArray[Any]:
    """``values`` as ``dtype``, refusing a finite value it cannot hold (see the module docstring)."""
    d = np.dtype(dtype)
    src = np.asarray(values)
    if src.dtype == d:
        return src
    if d.kind in "iub":
        return _to_int(src, d, what, hint)
    with np.errstate(over="ignore", invalid="ignore"):
        out = src.astype(d)
    if d.kind == "f" and d.itemsize >= 4:
        return out  # float32 (or wider) holds every value of every type here
    if d not in NO_INF and bool(np.isfinite(out).all()):
        return out
    bad = ~np.isfinite(out) & (np.isfinite(src) if d not in NO_INF else ~np.isnan(src))
    if bad.any():
        _raise(src, bad, d, what, hint)
    return out


def saturate(values: NDArray[Any], dtype: DTypeLike) -> NDArray[Any]:
    """Finite values and infinities clipped to ±(``dtype``'s largest finite value); NaN kept."""
    m = largest(dtype)
    return np.clip(np.asarray(values, dtype=np.float32), -m, m)


def _to_int(src: NDArray[Any], d: np.dtype, what: str, hint: str) -> NDArray[Any]:
    if src.dtype.kind in "iub":
        lo, hi = (0, 1) if d.kind == "b" else (np.iinfo(d).min, np.iinfo(d).max)
        if src.size and (src.min() < lo or src.max() > hi):
            _raise(src, (src < lo) | (src > hi), d, what, hint)
        return src.astype(d)
    f = np.asarray(src, dtype=np.float64)
    lo_f, hi_f = (0.0, 1.0) if d.kind == "b" else (float(np.iinfo(d).min), float(np.iinfo(d).max))
    bad = ~np.isfinite(f) | (f < lo_f) | (f > hi_f)
    if bad.any():
        _raise(src, bad, d, what, hint)
    return f.astype(d)


def _raise(src: NDArray[Any], bad: NDArray[np.bool_], d: np.dtype, what: str, hint: str) -> None:
    at = tuple(int(i) for i in np.argwhere(bad)[0])
    n = int(bad.sum())
    v = src[at] if at else src[()]
    extra = " (it has no infinity)" if d in NO_INF else ""
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
