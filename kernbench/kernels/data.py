"""Input data for the shipped kernels."""

from __future__ import annotations

import numpy as np


def random_f16(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """float16 values of random sign and magnitude in [0.5, 2), drawn as bits.

    Drawing normal float32 numbers and casting them costs about 30 ns per
    element; setting a float16's sign and mantissa at random with the
    exponent pinned to 14 or 15 costs 2 — and a large KV cache is tens of
    millions of elements. Timing never looks at the values; numerics are
    checked against a float32 reference of these same inputs.
    """
    bits = rng.integers(0, 0xFFFF, size=shape, dtype=np.uint16, endpoint=True)
    bits &= 0x87FF  # keep the sign, the mantissa and the exponent's lowest bit
    bits |= 0x3800  # exponent 14 or 15: magnitudes in [0.5, 2)
    return bits.view(np.float16)
