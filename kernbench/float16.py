"""float16 → float32: numpy's own cast, bit for bit, at about half its cost on large arrays.

numpy converts float16 one element at a time (about 1.4 ns each) unless its
build assumes F16C, which the wheels' baseline does not; the GQA reference
converts the whole float16 KV cache (tens of millions of elements), a tile
at a time. Four whole-array operations give
the same bits: place sign, exponent and mantissa where a float32 keeps them,
then multiply by 2^112 to rebias the exponent (15 → 127) — exact, and it
turns a float16 subnormal, now a float32 subnormal, into the float32 normal
of the same value. Only infinities and NaNs (exponent 31) need one more
step: their exponent must become 255, not 143. ``tests/test_float16.py``
checks all 65,536 float16 values.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

#: Below this many elements numpy's cast is the cheaper (four calls cost more than the work they save).
MIN_ELEMENTS = 4096

_REBIAS = np.float32(2.0**112)  # 2^(127 - 15)
_SIGN_EXP_MANT = np.int32(-0x70000001)  # 0x8FFFFFFF: bit 31 and bits 0..27 of a shifted, sign-extended float16
_INF_NAN_MIN = np.float32(2.0**16)  # what exponent 31 becomes (finite float16s stay below 65520)
_TO_EXP_255 = np.int32((255 - 143) << 23)
_SMALLEST = np.float32(2.0**-149)  # a float32 subnormal: zero when the CPU treats subnormal inputs as zero (DAZ)
_NATIVE = np.dtype(np.float16)


def to_float32(x: NDArray[np.float16]) -> NDArray[np.float32]:
    """``x.astype(np.float32)``, the same bits (NaN payloads and signalling NaNs included)."""
    if x.size < MIN_ELEMENTS or x.dtype != _NATIVE or _SMALLEST * _REBIAS == 0:  # (DAZ would flush subnormals)
        return x.astype(np.float32)
    bits = x.view(np.int16).astype(np.int32)  # sign-extended: the sign is bit 31 (and bits 15..30)
    bits <<= 13  # exponent and mantissa to bits 23..27 and 13..22
    bits &= _SIGN_EXP_MANT  # sign copies out of bits 28..30
    out = bits.view(np.float32)
    out *= _REBIAS
    # (the reductions themselves, not ndarray.max/min: their Python wrappers cost as much as a pass)
    if np.maximum.reduce(out, axis=None) >= _INF_NAN_MIN or np.minimum.reduce(out, axis=None) <= -_INF_NAN_MIN:
        bits[np.abs(out) >= _INF_NAN_MIN] += _TO_EXP_255
    return out
