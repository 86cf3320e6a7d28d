"""The compiled hardware graph: nodes, directed edges, cached routes.

Immutable once built. Node ids are stable dotted names
(``sip0.cube5.pe3.dma``, ``sip0.cube5.r2``, ``sip0.cube5.hbm.pc12``); an
edge's id is ``"src->dst"``. Every edge carries ``bw_gbps`` and ``prop_ns``,
every node its ``overhead_ns``: the only places a latency may be paid.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from types import MappingProxyType
from typing import Any

from kernbench.errors import RouteError
from kernbench.frozen import quick_init

# The longest route kernbench simulates. A transfer's simulation re-plans its
# control flit from the hop where a FIFO's state changed, so its cost in time
# and memory grows with the square of its hops (a 2-PE all-reduce over 1,000
# hops: 63 MB, 5 s; over 8,000: 1.4 GB, 98 s). The longest route of the
# largest machine the node limit admits (2 SIPs of 9×9 paper CUBEs) is 103
# hops; the paper machine's 43.
MAX_ROUTE_HOPS = 1_024


@quick_init
@dataclass(frozen=True, slots=True)
class Node:
    id: str
    kind: str
    overhead_ns: float = 0.0
    attrs: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@quick_init
@dataclass(frozen=True, slots=True)
class Edge:
    src: str
    dst: str
    bw_gbps: float
    prop_ns: float
    kind: str
    index: int = -1

    @property
    def id(self) -> str:
        return f"{self.src}->{self.dst}"

    def serialize_ns(self, size_bytes: float) -> float:
        """Time to put ``size_bytes`` on the wire (GB/s ≡ bytes/ns)."""
        return size_bytes / self.bw_gbps


@quick_init
@dataclass(frozen=True, slots=True)
class Hop:
    """One edge of a route as the engine needs it, with the node after it."""

    edge: Edge
    flit_ns: float
    prop_ns: float
    next_overhead_ns: float
    edge_id: str  # the edge's id, interned: one string object per edge however many routes (and events) name it


@quick_init
@dataclass(frozen=True, slots=True)
class Route:
    nodes: tuple[str, ...]
    hops: tuple[Hop, ...]
    src_overhead_ns: float

    @property
    def edges(self) -> tuple[Edge, ...]:
        return tuple(h.edge for h in self.hops)

    @property
    def header_ns(self) -> float:
        """Latency of a zero-payload control packet: overheads + propagation."""
        return self.src_overhead_ns + sum(h.prop_ns + h.next_overhead_ns for h in self.hops)

    @property
    def bottleneck_gbps(self) -> float:
        return min(h.edge.bw_gbps for h in self.hops) if self.hops else float("inf")

    def __len__(self) -> int:
        return len(self.hops)


class Graph:
    """Nodes, edges and a route function (cached) over them."""

    def __init__(
        self,
        name: str,
        nodes: list[Node],
        edges: list[Edge],
        flit_bytes: int,
        spec: Mapping[str, Any],
        router: Callable[[Graph, str, str], Sequence[str]],
    ) -> None:
        self.name = name
        self.flit_bytes = flit_bytes
        self.spec = spec
        self.nodes: Mapping[str, Node] = MappingProxyType({n.id: n for n in nodes})
        indexed = [e if e.index == i else Edge(e.src, e.dst, e.bw_gbps, e.prop_ns, e.kind, i) for i, e in enumerate(edges)]
        self.edges: tuple[Edge, ...] = tuple(indexed)
        self._edge_by_pair: dict[tuple[str, str], Edge] = {(e.src, e.dst): e for e in indexed}
        self._out: dict[str, list[str]] = {n.id: [] for n in nodes}
        for e in indexed:
            self._out[e.src].append(e.dst)
        self._successors: Mapping[str, tuple[str, ...]] | None = None
        self._router = router
        self._routes: dict[tuple[str, str], Route] = {}

    def edge(self, src: str, dst: str) -> Edge:
        try:
            return self._edge_by_pair[(src, dst)]
        except KeyError:
            raise RouteError(f"no edge {src}->{dst}") from None

    @property
    def successors(self) -> Mapping[str, tuple[str, ...]]:
        """Each node's successors, by name; sorted when first asked for (a run asks only :meth:`edges_from`,
        of a few nodes, and a re-timing compiles its graph again)."""
        if self._successors is None:
            self._successors = MappingProxyType({k: tuple(sorted(v)) for k, v in self._out.items()})
        return self._successors

    def edges_from(self, src: str) -> tuple[Edge, ...]:
        """The edges leaving ``src``, by destination."""
        return tuple(self._edge_by_pair[(src, d)] for d in sorted(self._out.get(src, ())))

    def node(self, node_id: str) -> Node:
        try:
            return self.nodes[node_id]
        except KeyError:
            import difflib

            guess = difflib.get_close_matches(node_id, list(self.nodes), n=1)
            hint = f" (did you mean {guess[0]!r}?)" if guess else ""
            raise RouteError(f"unknown node {node_id!r}{hint}") from None

    def route(self, src: str, dst: str) -> Route:
        """The route from ``src`` to ``dst``, computed once and cached."""
        key = (src, dst)
        cached = self._routes.get(key)
        if cached is not None:
            return cached
        nodes = self.nodes
        if src not in nodes or dst not in nodes:
            self.node(src)
            self.node(dst)  # (raise the unknown one's error)
        path = self._router(self, src, dst)
        if len(path) - 1 > MAX_ROUTE_HOPS:
            raise RouteError(
                f"the route from {src} to {dst} is {len(path) - 1:,} hops; the limit is {MAX_ROUTE_HOPS:,} "
                "(a transfer's simulation cost grows with the square of its hops): shorten the router chains "
                "in cube.links or attach the ends nearer (cube.pes.attach, cube.hbm.attach, cube.ucie_attach)"
            )
        hops = []
        for a, b in pairwise(path):
            e = self._edge_by_pair.get((a, b))
            if e is None:  # the router's path leaves the graph: src or dst is not attached where routes run
                raise RouteError(f"no route from {src} to {dst}: no edge {a}->{b}")
            hops.append(Hop(e, self.flit_bytes / e.bw_gbps, e.prop_ns, nodes[b].overhead_ns, sys.intern(e.id)))
        route = Route(tuple(map(sys.intern, path)), tuple(hops), nodes[src].overhead_ns)  # (names interned: see Hop.edge_id)
        self._routes[key] = route
        return route

    def nodes_of_kind(self, kind: str) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind == kind]

    def kind_counts(self) -> tuple[Counter[str], Counter[str]]:
        return Counter(n.kind for n in self.nodes.values()), Counter(e.kind for e in self.edges)
