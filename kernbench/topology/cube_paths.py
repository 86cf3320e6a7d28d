"""Least-latency router paths inside one CUBE template, computed per source router when first asked for.

One Dijkstra from a source gives its paths to every router, ordered by
(latency rounded to 1e-9 ns, hop count, node names along the path): the
tie-break :mod:`kernbench.topology.compile` documents. A path is kept as a
:class:`_Trail` — its last router and the trail to the one before — so the
paths from one source share their prefixes and take memory proportional to
the routers, not to the sum of the path lengths (a chain of N routers held
as all-pairs tuples is N³/3 references: 2.8 GB at N = 1,000).

Only the sources a run routes from are searched (PEs', HBM slices' and
SRAM's attach routers and the UCIe attach router, a handful); at most
:data:`SOURCES_KEPT` sources' trees are kept, a search being O(links · log
routers).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

_Routers = tuple[tuple[str, float], ...]  # (name, overhead_ns)
_Links = tuple[tuple[str, str, float, float], ...]  # (a, b, bw_gbps, prop_ns)

SOURCES_KEPT = 64


class _Trail:
    """A path from the source: its last router and the trail before it (``None`` at the source).

    Compares as the tuple of its routers would, walking back only to where two
    trails meet: two trails of one search share every prefix they have in
    common, so the routers just after the meeting point decide.
    """

    __slots__ = ("before", "hops", "router")

    def __init__(self, before: _Trail | None, router: str) -> None:
        self.before = before
        self.router = router
        self.hops: int = 0 if before is None else before.hops + 1

    def routers(self) -> tuple[str, ...]:
        out = []
        trail: _Trail | None = self
        while trail is not None:
            out.append(trail.router)
            trail = trail.before
        return tuple(reversed(out))

    def __lt__(self, other: _Trail) -> bool:
        if self.hops != other.hops:
            return self.routers() < other.routers()
        a: _Trail | None = self
        b: _Trail | None = other
        first: tuple[str, str] | None = None
        while a is not b and a is not None and b is not None:
            first = (a.router, b.router)
            a, b = a.before, b.before
        return first is not None and first[0] < first[1]


class CubePaths:
    """The least-latency router paths of one CUBE template (routers and links as :func:`template_key` gives them)."""

    def __init__(self, routers: _Routers, links: _Links) -> None:
        overhead = dict(routers)
        adj: dict[str, list[tuple[str, float]]] = {r: [] for r in overhead}
        for a, b, bw, prop in links:
            for u, v in ((a, b), (b, a)):
                adj[u].append((v, prop + 1.0 / bw + overhead[v]))
        self._adj = {r: sorted(edges) for r, edges in adj.items()}
        self._trees: dict[str, Mapping[str, _Trail]] = {}  # in order of use

    def path(self, src: str, dst: str) -> tuple[str, ...] | None:
        """Routers from ``src`` to ``dst`` (both ends included), or ``None`` when no link joins them."""
        if src not in self._adj:
            return None
        trail = self._tree(src).get(dst)
        return None if trail is None else trail.routers()

    def _tree(self, src: str) -> Mapping[str, _Trail]:
        tree = self._trees.pop(src, None)  # and put back last: the least recently used go first
        if tree is None:
            tree = self._search(src)
        self._trees[src] = tree
        while len(self._trees) > SOURCES_KEPT:
            self._trees.pop(next(iter(self._trees)), None)
        return tree

    def _search(self, src: str) -> Mapping[str, _Trail]:
        heap: list[tuple[float, int, _Trail]] = [(0.0, 0, _Trail(None, src))]
        done: dict[str, _Trail] = {}
        while heap:
            cost, hops, trail = heapq.heappop(heap)
            here = trail.router
            if here in done:
                continue
            done[here] = trail
            for nxt, w in self._adj[here]:
                if nxt not in done:
                    heapq.heappush(heap, (round(cost + w, 9), hops + 1, _Trail(trail, nxt)))
        return done
