"""Tree all-reduce: reduce up a binary tree, broadcast back down, chunk by chunk.

Rank ``i`` (in the group's snake order) has parent ``(i − 1) // 2`` and
children ``2i + 1``, ``2i + 2``. For every chunk of the buffer a rank adds
its children's partial sums to its own elements and sends the result to
its parent; the root stores the total and sends it down at once. Every
other rank first streams all its chunks up, then receives the totals from
its parent, stores them and passes them to its children — so messages
pipeline in both directions and no rank waits on a message it has not yet
made possible. ``⌈log₂ p⌉`` levels instead of the ring's ``p − 1`` steps,
at the price of every interior rank moving the whole buffer three times
(up once, down twice).
"""

from __future__ import annotations

from kernbench import tl
from kernbench.collectives.group import pieces
from kernbench.handles import HbmTensor

#: Chunk buffers a rank holds in TCM at once (own / running sum, two children's, new sum).
BUFFERS = 4


def all_reduce(buf: HbmTensor, order: tuple[int, ...], me: int, chunk: int) -> None:
    pos = order.index(me)
    kids = [order[c] for c in (2 * pos + 1, 2 * pos + 2) if c < len(order)]
    parent = order[(pos - 1) // 2] if pos else None
    runs = pieces(0, buf.shape[0], chunk)
    for a, b in runs:
        futs = [tl.recv_async(k, (b - a,), buf.dtype) for k in kids]
        acc = tl.load(buf[a:b])
        while futs:
            acc = tl.add(acc, tl.wait(futs.pop(0)))
        if parent is None:
            tl.store(buf[a:b], acc)
            for k in kids:
                tl.send(k, acc)
        else:
            tl.send(parent, acc)
        del acc
    if parent is None:
        return
    for a, b in runs:
        got = tl.wait(tl.recv_async(parent, (b - a,), buf.dtype))
        tl.store(buf[a:b], got)
        for k in kids:
            tl.send(k, got)
        del got
