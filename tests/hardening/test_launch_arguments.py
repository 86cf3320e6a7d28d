"""Round 2, §8 (Python API): a PE is an index or an id, and a kernel's tensors are this runtime's.

``pes=[True]`` ran on PE 1 (``True`` is an int); a tensor deployed by another ``Runtime`` was
accepted, and its offset then named bytes of this runtime's memory that hold something else.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench import tl
from kernbench.runtime.api import Runtime

RT = Runtime("cube1")
OTHER = Runtime("cube1")


def copy(a, out):
    tl.store(out.whole(), tl.load(a.whole()))


NOT_A_PE = st.one_of(
    st.booleans(),
    st.floats(allow_nan=True),
    st.none(),
    st.binary(max_size=3),
    st.lists(st.integers(0, 3), max_size=2),
    st.just(np.float32(1.0)),
    st.just(np.bool_(True)),
)


@settings(max_examples=60, deadline=None)
@given(pe=NOT_A_PE)
def test_a_pe_that_is_neither_an_index_nor_an_id_is_refused_by_type(pe):
    with pytest.raises(TypeError, match=r"a PE is an index \(int\) or an id \(str\), not "):
        RT.pe_id(pe)


@settings(max_examples=30, deadline=None)
@given(index=st.one_of(st.integers(-3, 10), st.integers(0, 7).map(np.int64)))
def test_an_integer_pe_is_its_index(index):
    ids = RT.pe_ids()
    if 0 <= index < len(ids):
        assert RT.pe_id(index) == ids[int(index)]
    else:
        with pytest.raises(ValueError, match=r"out of range 0\.\.7"):
            RT.pe_id(index)


#: where a tensor can sit in a launch: (args, kwargs) given the tensor and this runtime's output
PLACES = {
    "an argument": lambda t, out: ((t, out), {}),
    "a pointer into it": lambda t, out: ((t[0:2], out), {}),
    "a keyword argument": lambda t, out: ((), {"a": t, "out": out}),
    "inside a list": lambda t, out: (([t], out), {}),
    "inside a dict": lambda t, out: (({"x": (t,)}, out), {}),
}


@pytest.mark.parametrize("place", sorted(PLACES))
def test_a_tensor_of_another_runtime_is_refused_wherever_it_is(place):
    foreign = OTHER.deploy(np.ones((4, 4)), name="theirs")
    rt = Runtime("cube1")
    args, kwargs = PLACES[place](foreign, rt.empty((4, 4)))
    with pytest.raises(ValueError, match=r"tensor theirs was deployed by another Runtime"):
        rt.launch(copy, pes=[0], args=args, **kwargs)


def test_this_runtimes_tensors_are_taken_and_run():
    rt = Runtime("cube1")
    a, out = rt.deploy(np.arange(16.0).reshape(4, 4)), rt.empty((4, 4))
    rt.launch(copy, pes=[np.int64(0)], args=(a, out))
    rt.run()
    assert np.array_equal(rt.read(out), np.arange(16.0).reshape(4, 4).astype(np.float16))
