"""2D all-reduce, dimension by dimension, on the group's ``rows × cols`` grid.

1. reduce-scatter along this program's grid row (a ring of ``cols``) over
   the whole buffer: it now holds its row's sum of segment ``col``;
2. all-reduce that segment along its grid column (a ring of ``rows``):
   reduce-scatter, then all-gather;
3. all-gather along the row: every program has the whole sum.

Each program sends ``2·N·(1 − 1/p)`` bytes, as the flat ring does, but in
``2·(cols − 1) + 2·(rows − 1)`` steps instead of ``2·(p − 1)``, and every
step's neighbour is a grid neighbour.
"""

from __future__ import annotations

from kernbench import tl
from kernbench.collectives import ring
from kernbench.collectives.group import Group, Ring
from kernbench.handles import HbmTensor

BUFFERS = ring.BUFFERS


def all_reduce(buf: HbmTensor, group: Group, chunk: int) -> None:
    me = tl.program_id()
    r, c = group.where(me)
    row = Ring.of(group.grid_row(r), me, 0, buf.shape[0], chunk)
    ring.reduce_scatter(buf, row)
    lo, hi = row.segment(c)
    if hi > lo:
        ring.all_reduce(buf, Ring.of(group.grid_col(c), me, lo, hi, chunk))
    ring.all_gather(buf, row)
