"""Flit trains in closed form.

A train of ``n`` flits is described by *pieces* ``(a, r, k0)``: flit ``k``
is at the point of observation at time ``max(a + (k - k0)·r)`` over the
pieces with ``k0 <= k``. The representation is closed under the two things
a route does to a train:

* a fixed delay (node overhead, propagation) adds to every ``a``;
* a FIFO edge with per-flit service ``s`` that is free from time ``F``
  turns arrivals ``A(k)`` into departures
  ``D(k) = max(D(k-1), A(k)) + s`` with ``D(-1) = F``, whose unrolled form
  is ``max(F + (k+1)·s, max_j≤k A(j) + (k-j+1)·s)``; for one piece the inner
  max sits at ``j = k`` when ``r >= s`` and at ``j = k0`` otherwise, so each
  piece maps to ``(a + s, max(r, s), k0)`` and the edge adds ``(F + s, s, 0)``.

This is the exact flit-by-flit FIFO result, computed in O(pieces) per edge
instead of O(flits); pieces that can never be the maximum are pruned, so a
train rarely carries more than a handful.
"""

from __future__ import annotations

Piece = tuple[float, float, int]


def at(pieces: list[Piece], k: int) -> float:
    """Time of flit ``k``."""
    best = float("-inf")
    for a, r, k0 in pieces:  # a plain loop: this is the engine's hottest line
        if k0 <= k:
            v = a + (k - k0) * r
            if v > best:
                best = v
    return best


def shift(pieces: list[Piece], d: float) -> list[Piece]:
    return [(a + d, r, k0) for a, r, k0 in pieces]


def through_edge(pieces: list[Piece], s: float, free_ns: float) -> list[Piece]:
    """Departure times from a FIFO edge of per-flit service ``s``, free at ``free_ns``."""
    out = [(a + s, r if r > s else s, k0) for a, r, k0 in pieces]
    # The edge's own piece matters only if it is busy past some flit-0 arrival.
    if not any(k0 == 0 and a >= free_ns for a, _, k0 in pieces):
        out.append((free_ns + s, s, 0))
    return out if len(out) == 1 else prune(out)


def prune(pieces: list[Piece]) -> list[Piece]:
    """Drop pieces dominated by another for every flit they cover."""
    if len(pieces) < 2:
        return list(pieces)
    pieces = sorted(pieces, key=_order)
    kept: list[Piece] = []
    for a, r, k0 in pieces:
        dominated = False
        for a2, r2, k02 in kept:
            # kept pieces start no later (sorted by k0); dominates if at k0 it is
            # already no earlier and it grows at least as fast.
            if r2 >= r and a2 + (k0 - k02) * r2 >= a:
                dominated = True
                break
        if not dominated:
            kept.append((a, r, k0))
    return kept


def _order(p: Piece) -> tuple[int, float, float]:
    return (p[2], -p[1], -p[0])


def restrict(pieces: list[Piece], c0: int, c1: int) -> list[Piece]:
    """The sub-train of flits ``c0 … c1-1``, renumbered from 0."""
    out = []
    for a, r, k0 in pieces:
        if k0 >= c1:
            continue
        if k0 <= c0:
            out.append((a + (c0 - k0) * r, r, 0))
        else:
            out.append((a, r, k0 - c0))
    return prune(out)
