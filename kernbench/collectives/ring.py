"""Ring reduce-scatter and all-gather over IPCQ, chunk by chunk.

On a ring of ``q`` members over the range ``[lo, hi)`` (see
:class:`~kernbench.collectives.group.Ring`):

reduce-scatter
    step 0: send segment ``pos − 1`` to the right. Step ``k`` (0 … q − 2):
    receive segment ``pos − k − 2`` from the left, add this program's own
    elements of it (f32 arithmetic, rounded to the buffer's dtype) and send
    the sum on — except at the last step, where segment ``pos`` has every
    member's contribution and is stored in place.
all-gather
    send segment ``pos``; step ``k``: receive segment ``pos − k − 1`` from
    the left, store it and (but at the last step) send it on.

Every segment moves as messages of ``chunk`` elements, so while one chunk
is being added the next is already on the wire (``tl.send`` returns at
once; PE_IPCQ sends one message at a time, in program order). Both sides
of every (sender, receiver) pair cut segments identically, so messages
match in order. In-place is safe: each step reads a segment this program
has not written yet.
"""

from __future__ import annotations

from kernbench import tl
from kernbench.collectives.group import Ring
from kernbench.handles import HbmTensor

#: Chunk buffers a program holds in TCM at once (received, own, sum).
BUFFERS = 3
#: … in an all-gather alone (the chunk received, stored and sent on).
GATHER_BUFFERS = 1


def reduce_scatter(buf: HbmTensor, ring: Ring, *, forward: bool = False) -> None:
    """Leave the ring's sum of segment ``ring.pos`` in ``buf``.

    ``forward=True`` also sends each reduced chunk to the right as it is
    made: the first step of an all-gather (:func:`all_gather` with ``sent``).
    """
    q, me = ring.size, ring.pos
    if q == 1:
        return
    for a, b in ring.pieces(me - 1):
        tl.send(ring.right, tl.load(buf[a:b]))
    for k in range(q - 1):
        last = k == q - 2
        for a, b in ring.pieces(me - k - 2):
            part = tl.recv_async(ring.left, (b - a,), buf.dtype)
            own = tl.load(buf[a:b])
            acc = tl.add(tl.wait(part), own)
            if last:
                tl.store(buf[a:b], acc)
            if forward or not last:
                tl.send(ring.right, acc)
            del part, own, acc


def all_gather(buf: HbmTensor, ring: Ring, *, sent: bool = False) -> None:
    """Give every member each member's segment ``pos`` (``sent``: ours is already on its way)."""
    q, me = ring.size, ring.pos
    if q == 1:
        return
    if not sent:
        for a, b in ring.pieces(me):
            tl.send(ring.right, tl.load(buf[a:b]))
    for k in range(q - 1):
        last = k == q - 2
        for a, b in ring.pieces(me - k - 1):
            got = tl.wait(tl.recv_async(ring.left, (b - a,), buf.dtype))
            tl.store(buf[a:b], got)
            if not last:
                tl.send(ring.right, got)
            del got


def all_reduce(buf: HbmTensor, ring: Ring) -> None:
    """Reduce-scatter, then all-gather; the reduced chunks go straight on."""
    reduce_scatter(buf, ring, forward=True)
    all_gather(buf, ring, sent=True)
