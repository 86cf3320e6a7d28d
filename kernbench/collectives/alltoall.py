"""All-to-all by pairwise exchange: every pair of members swaps its parts once.

Member ``i`` (its place in the group's program order) cuts its buffer into
``p`` equal parts; part ``j`` goes to member ``j``, where it lands as part
``i``. The pairs are the rounds of a round-robin tournament (the circle
method): ``p − 1`` rounds for an even ``p``, ``p`` for an odd one (each
member sits out one), and in each round every member exchanges with exactly
one other — both send at once, over the two directions of their route.

In round ``r`` member ``i`` sends its part ``j`` (``j`` = its partner) and
receives ``j``'s part ``i`` into the same place: the part it has just sent.
So the exchange can be in place. Each part moves as messages of at most
``chunk`` elements; the next message's data is read from HBM while the
last one is on the wire, and a received chunk is stored once it has landed.
"""

from __future__ import annotations

from kernbench import tl
from kernbench.collectives.group import pieces
from kernbench.handles import HbmTensor

#: Chunk buffers a member holds in TCM at once (the next chunk to send, the one received).
BUFFERS = 2


def rounds(p: int) -> int:
    """Rounds of the pairwise exchange among ``p`` members."""
    return p - 1 if p % 2 == 0 else p


def partner(i: int, r: int, p: int) -> int:
    """Member ``i``'s partner in round ``r`` (``i`` itself: it sits the round out).

    The circle method on ``n`` = p rounded up to even: member ``n − 1`` meets
    member ``r``; any other ``i`` meets ``(2r − i) mod (n − 1)``. Each round is a
    perfect matching of the ``n`` (with odd ``p``, the partner of the missing
    member ``p`` sits out), and every pair meets in exactly one round.
    """
    n = p + p % 2
    if i == n - 1:
        j = r
    elif i == r:
        j = n - 1
    else:
        j = (2 * r - i) % (n - 1)
    return i if j >= p else j


def all_to_all(src: HbmTensor, dst: HbmTensor, members: tuple[int, ...], me: int, chunk: int) -> None:
    """Send part ``j`` of ``src`` to ``members[j]``; receive its part ``me`` into part ``j`` of ``dst``.

    ``src`` and ``dst`` are 1-D of the same length (a multiple of ``p``) and
    may be the same tensor. This member's own part is not moved: the caller
    copies it when ``dst`` is not ``src``.
    """
    p = len(members)
    pos = members.index(me)
    part = src.shape[0] // p
    runs = [
        (members[j], a, b) for r in range(rounds(p)) if (j := partner(pos, r, p)) != pos for a, b in pieces(j * part, (j + 1) * part, chunk)
    ]
    if not runs:
        return
    _, a, b = runs[0]
    ahead = [tl.load(src[a:b])]  # the next chunk to send, read from HBM ahead of its turn
    for k, (peer, a, b) in enumerate(runs):
        # the peer sends its part `pos` cut as ours is: the same sizes, in the same order
        fut = tl.recv_async(peer, (b - a,), dst.dtype)
        tl.send(peer, ahead.pop())  # (the send waits for it to land; then its buffer is free)
        if k + 1 < len(runs):
            _, a2, b2 = runs[k + 1]
            ahead.append(tl.load(src[a2:b2]))  # read while this chunk is on the wire
        tl.store(dst[a:b], tl.wait(fut))
        del fut
