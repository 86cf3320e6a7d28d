"""Found while building the GQA kernels, in code this work may not edit (pe/scheduler).

PE_SCHEDULER's composite feeder waits for *every* TCM input of a composite to
be ready before it issues the DMA_READ of its first streamed ``tl.ref``
tile. The read does not touch those inputs, so it could overlap with the
producer. In GQA opt2 / opt3 this puts each V tile's HBM read on the serial
m/l/O chain (the read waits for S and the previous tile's merge), which is
why at the default shape the composite variants are *slower* than
``primitive`` (whose lazy loads prefetch the next tile): same DMA busy time,
but the last read ends ~1.6x later.
"""

import numpy as np
import pytest

import kernbench.tl as tl
from kernbench.events.types import EventKind
from kernbench.runtime.api import Runtime

PE0 = "sip0.cube0.pe0"


def _kernel(w):
    x = tl.full((256, 256), 0.5)
    y = tl.zeros((256, 256))
    # A: slow TCM-only math producing y
    tl.composite([tl.OpSpec("exp", {"x": x}, y)] + [tl.OpSpec("scale", {"x": y}, y, extra={"factor": 0.5}) for _ in range(7)])
    z = tl.zeros((256, 64))
    # B: consumes y and streams W from HBM
    tl.composite([tl.OpSpec("gemm", {"a": y, "b": tl.ref(w)}, z, extra={"m": 256, "k": 256, "n": 64})])


@pytest.mark.xfail(strict=True, reason="scheduler: a composite's streamed tl.ref reads wait for its unrelated TCM inputs")
def test_streamed_read_overlaps_the_producer_of_a_tcm_input():
    rt = Runtime("cube1")
    w = rt.deploy(np.ones((256, 64), np.float16), pe=0)
    rt.launch(_kernel, pes=[0], args=(w,))
    r = rt.run(record=True)
    math_end = max(e.end_ns for e in r.events if e.kind is EventKind.ENGINE_BUSY and e.component == f"{PE0}.math")
    reads = [e for e in r.events if e.kind is EventKind.ENGINE_BUSY and e.component == f"{PE0}.dma.rd"]
    assert reads and min(e.t_ns for e in reads) < math_end
