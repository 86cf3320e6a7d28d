"""Pointers into HBM tensors: their first byte and region are numpy's own view's, whatever the basic index."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kernbench.handles import HbmTensor, Ptr
from kernbench.sim.region import region_of_view


@st.composite
def basic_index(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[object, ...]]:
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    index: list[object] = []
    for n in shape[: draw(st.integers(1, len(shape)))]:
        if draw(st.booleans()):
            index.append(draw(st.integers(-n, n - 1)))
        else:
            bound = st.none() | st.integers(-n, n)
            index.append(slice(draw(bound), draw(bound), draw(st.none() | st.sampled_from([1, 2, 3, -1, -2]))))
    return shape, tuple(index)


@given(basic_index(), st.sampled_from([np.float16, np.float32, np.int8]), st.integers(0, 4) | st.just(4096))
def test_offset_and_region_are_those_of_numpys_view(shape_index, dtype, offset) -> None:
    shape, index = shape_index
    array = np.arange(int(np.prod(shape))).astype(dtype).reshape(shape)
    view = array[(*index, ...)]  # a view, also of one element
    assume(view.size > 0)
    t = HbmTensor("t", "mem", offset, array)
    p = Ptr(t, index)
    assert p.offset == offset + view.ctypes.data - array.ctypes.data
    expect = region_of_view(array, view, offset)
    assert (p.region.starts, p.region.run_bytes) == (expect.starts, expect.run_bytes)
    assert np.array_equal(p.values(), array[index]) and p.shape == np.shape(array[index])


def test_one_element_has_an_address_too() -> None:
    p = HbmTensor("t", "mem", 64, np.zeros((4, 4), np.float16))[2, 3]
    assert (p.offset, p.nbytes, p.region.starts, p.region.run_bytes) == (64 + 22, 2, (86,), 2)


def test_values_are_the_current_values_read_only_and_read_is_a_copy() -> None:
    t = HbmTensor("t", "mem", 0, np.arange(12, dtype=np.float32).reshape(3, 4))
    p = t[1:, ::2]
    t.array[2, 0] = 99.0
    assert np.array_equal(p.values(), [[4.0, 6.0], [99.0, 10.0]])
    with pytest.raises(ValueError):
        p.values()[0, 0] = 1.0
    copy = p.read()
    copy[0, 0] = 1.0
    assert t.array[1, 0] == 4.0
