"""float16 → float32 (kernbench.float16): numpy's cast, bit for bit, on every float16 and every layout."""

from __future__ import annotations

import numpy as np
import pytest

from kernbench.float16 import MIN_ELEMENTS, to_float32

EVERY_FLOAT16 = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.strides == b.strides and a.tobytes() == b.tobytes()


def test_every_float16_converts_to_numpys_bits_nans_infinities_and_subnormals_included() -> None:
    assert same_bits(to_float32(EVERY_FLOAT16), EVERY_FLOAT16.astype(np.float32))


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a,
        lambda a: a.T,  # Fortran order
        lambda a: a[:, 3:200:3],  # strided columns
        lambda a: a[::-2],  # negative stride
        lambda a: a.astype(">f2"),  # non-native byte order
        lambda a: a[:2, :2],  # small: numpy's cast
    ],
)
def test_any_layout_converts_as_numpy_converts_it(view) -> None:
    a = view(EVERY_FLOAT16.reshape(256, 256))
    assert same_bits(to_float32(a), a.astype(np.float32))


def test_the_threshold_is_where_the_fast_path_starts() -> None:
    a = EVERY_FLOAT16[: MIN_ELEMENTS - 1]
    assert same_bits(to_float32(a), a.astype(np.float32))
