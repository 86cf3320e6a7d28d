"""Input data for the shipped kernels."""

from __future__ import annotations

import math
import sys

import numpy as np


def random_f16(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """float16 values of random sign and magnitude in [0.5, 2), drawn as bits.

    Drawing normal float32 numbers and casting them costs about 30 ns per
    element; setting a float16's sign and mantissa at random with the
    exponent pinned to 14 or 15 costs 2 — and a large KV cache is tens of
    millions of elements. Timing never looks at the values; numerics are
    checked against a float32 reference of these same inputs.
    """
    bits = random_u16(rng, math.prod(shape)).reshape(shape)
    bits &= 0x87FF  # keep the sign, the mantissa and the exponent's lowest bit
    bits |= 0x3800  # exponent 14 or 15: magnitudes in [0.5, 2)
    return bits.view(np.float16)


def random_u16(rng: np.random.Generator, n: int) -> np.ndarray:
    """``rng.integers(0, 0xFFFF, n, np.uint16, endpoint=True)``: the same numbers, ``rng`` left in the same state.

    numpy draws full-range uint16s two to a 32-bit output of the bit
    generator, low half first, and PCG64 (``default_rng``'s) hands out its
    64-bit outputs as two 32-bit ones, low half first. So four uint16s are
    the little-endian quarters of one 64-bit output — PCG64's raw output,
    drawn at a quarter of the calls — when no half of a 64-bit output is
    pending and the count is whole 64-bit outputs; otherwise they are drawn
    16 bits at a time as numpy would.
    """
    bitgen = rng.bit_generator
    if type(bitgen) is np.random.PCG64 and sys.byteorder == "little" and n % 4 == 0 and not bitgen.state["has_uint32"]:
        raw: np.ndarray = bitgen.random_raw(n // 4)  # (uint64)
        return raw.view(np.uint16)
    return rng.integers(0, 0xFFFF, size=n, dtype=np.uint16, endpoint=True)


def placeholder(shape: tuple[int, ...], dtype: np.typing.DTypeLike = np.float16) -> np.ndarray:
    """An array of ``shape`` holding one zero (every element the same, broadcast): what a set-up hands
    ``Runtime.deploy`` in a run that holds no data (``--no-data``), which keeps only shape and dtype."""
    return np.broadcast_to(np.zeros((), dtype), shape)
