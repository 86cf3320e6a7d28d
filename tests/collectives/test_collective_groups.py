"""Groups and rings: grid rows and columns, snake order, segments that partition any payload."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernbench.collectives import Group, Ring, chunk_elements
from kernbench.collectives.group import pieces


def test_grid_rows_columns_and_snake_order():
    g = Group(tuple(range(6)), rows=3)
    assert (g.rows, g.cols) == (3, 2)
    assert g.grid_row(1) == (2, 3) and g.grid_col(1) == (1, 3, 5)
    assert g.where(5) == (2, 1)
    assert g.snake == (0, 1, 3, 2, 4, 5)


def test_the_most_square_grid():
    assert (Group.square(range(6)).rows, Group.square(range(16)).rows, Group.square(range(7)).rows) == (2, 4, 1)


@pytest.mark.parametrize(
    "programs, rows, message",
    [((), 1, "at least one program"), ((0, 1, 1), 1, "appears twice"), ((0, 1, 2), 2, "does not hold 3")],
)
def test_bad_groups_are_rejected(programs, rows, message):
    with pytest.raises(ValueError, match=message):
        Group(programs, rows)


def test_a_program_outside_the_group_is_named():
    with pytest.raises(ValueError, match="program 9 is not in the group"):
        Group((0, 1)).where(9)


def test_ring_neighbours_wrap_round():
    r = Ring.of((4, 7, 2), 4, 0, 10, 3)
    assert (r.left, r.right) == (2, 7)
    assert Ring.of((4, 7, 2), 2, 0, 10, 3).right == 4


@given(st.integers(0, 10_000), st.integers(0, 5000), st.integers(1, 17), st.integers(1, 300))
def test_segments_partition_the_range_and_differ_by_at_most_one(lo, width, q, chunk):
    hi = lo + width
    r = Ring(tuple(range(q)), 0, lo, hi, chunk)
    segs = [r.segment(i) for i in range(q)]
    assert segs[0][0] == lo and segs[-1][1] == hi
    assert all(a[1] == b[0] for a, b in pairwise(segs))
    sizes = [b - a for a, b in segs]
    assert max(sizes) - min(sizes) <= 1
    assert r.segment(-1) == segs[-1] and r.segment(q) == segs[0]
    for i in range(q):
        runs = r.pieces(i)
        assert sum(b - a for a, b in runs) == sizes[i]
        assert all(0 < b - a <= chunk for a, b in runs)


def test_pieces_of_an_empty_range_are_none():
    assert pieces(5, 5, 4) == []


def test_chunk_elements_needs_whole_elements():
    assert chunk_elements(4096, "float16") == 2048
    with pytest.raises(ValueError, match="multiple of the 4 B element"):
        chunk_elements(6, "float32")
