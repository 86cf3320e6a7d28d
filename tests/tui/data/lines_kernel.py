"""A small kernel of helper functions: the Source view's pinned recording (tests/tui/real_traces.py)."""

import numpy as np

import kernbench.tl as tl
from kernbench import kernel


def softmax_rows(s):
    m = tl.rowmax(s)
    p = tl.exp(tl.sub_bcast(s, m))
    return tl.mul_bcast(p, tl.rowsum(p))


def tile(q, k, v, out):
    s = tl.dot(tl.load(q), tl.load(k))
    p = softmax_rows(s)
    o = tl.dot(p, tl.load(v))
    tl.store(out, o)


def attention(qs, ks, vs, outs):
    me = tl.program_id()
    for _ in range(2):
        tile(qs[me], ks[me], vs[me], outs[me])


@kernel()
def lines_demo(rt):
    pes = 2
    qs = [rt.deploy(np.ones((16, 64), np.float16), pe=p) for p in range(pes)]
    ks = [rt.deploy(np.ones((64, 128), np.float16), pe=p) for p in range(pes)]
    vs = [rt.deploy(np.ones((128, 64), np.float16), pe=p) for p in range(pes)]
    outs = [rt.empty((16, 64), np.float32, pe=p) for p in range(pes)]
    rt.launch(attention, pes=list(range(pes)), args=(qs, ks, vs, outs))
