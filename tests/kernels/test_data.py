"""Kernel input data: drawn fast, yet exactly the numbers (and generator state) numpy's plain draw gives."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernbench.kernels.data import random_f16, random_u16


def plain_u16(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 0xFFFF, size=n, dtype=np.uint16, endpoint=True)


@given(seed=st.integers(0, 2**32 - 1), sizes=st.lists(st.integers(0, 70), min_size=1, max_size=6))
def test_random_u16_draws_what_the_plain_draw_draws_and_leaves_the_same_state(seed: int, sizes: list[int]) -> None:
    # odd sizes leave half a 64-bit output pending: the next draw must start from it, as numpy's does
    fast, plain = np.random.default_rng(seed), np.random.default_rng(seed)
    for n in sizes:
        assert np.array_equal(random_u16(fast, n), plain_u16(plain, n))
        assert _live_state(fast) == _live_state(plain)
    assert np.array_equal(fast.integers(0, 2**32, size=5, dtype=np.uint32), plain.integers(0, 2**32, size=5, dtype=np.uint32))


def _live_state(rng: np.random.Generator) -> dict[str, object]:
    """What the next draws depend on: PCG64's pending 32-bit half only while one is pending."""
    state = dict(rng.bit_generator.state)
    if not state["has_uint32"]:
        del state["uinteger"]  # a stale half, overwritten before it is read
    return state


@pytest.mark.parametrize("bitgen", [np.random.MT19937, np.random.Philox, np.random.SFC64])
def test_random_u16_on_other_bit_generators_is_the_plain_draw(bitgen: type[np.random.BitGenerator]) -> None:
    fast, plain = np.random.Generator(bitgen(7)), np.random.Generator(bitgen(7))
    for n in (8, 3, 16):
        assert np.array_equal(random_u16(fast, n), plain_u16(plain, n))


def test_random_f16_is_float16_of_random_sign_with_magnitudes_in_half_to_two() -> None:
    x = random_f16(np.random.default_rng(0), (64, 128))
    assert x.dtype == np.float16 and x.shape == (64, 128)
    mag = np.abs(x.astype(np.float32))
    assert mag.min() >= 0.5 and mag.max() < 2.0
    assert (x < 0).any() and (x > 0).any()
