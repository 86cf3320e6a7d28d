"""A composite's DMA_READ of streamed ``tl.ref`` tiles starts when the command
arrives, not when its unrelated TCM inputs are ready (found building GQA: the
feeder used to put each V tile's HBM read on the serial m/l/O chain, making
the composite variants slower than ``primitive``).
"""

import numpy as np

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


def test_streamed_read_overlaps_the_producer_of_a_tcm_input():
    rt = Runtime("cube1")
    w = rt.deploy(np.ones((256, 64), np.float16), pe=0)
    rt.launch(_kernel, pes=[0], args=(w,))
    r = rt.run(record=True)
    math_end = max(e.end_ns for e in r.events if e.kind is EventKind.ENGINE_BUSY and e.component == f"{PE0}.math")
    reads = [e for e in r.events if e.kind is EventKind.ENGINE_BUSY and e.component == f"{PE0}.dma.rd"]
    assert reads and min(e.t_ns for e in reads) < math_end
