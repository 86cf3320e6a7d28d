"""The α–β model of an all-reduce: startups plus per-byte cost, from the topology.

One message of ``S`` bytes from PE_IPCQ to PE_IPCQ over an idle route
costs (the model's own wormhole rule, no fitting)::

    t(S) = α + ⌈S / F⌉ · F · β
    α    = header + Σ flit_ns − max flit_ns    (overheads + propagation + filling the wormhole)
    β    = 1 / bottleneck bandwidth            (ns per byte; F = flit bytes)

``header`` is the route's node overheads plus propagation; every term is a
sum of topology parameters (``Route.header_ns``, ``Hop.flit_ns``). A
program's PE_IPCQ sends one message at a time, so an algorithm's time is
its busiest channel's messages, each paying ``α`` — the mean over the
pairs the algorithm uses, since data visits each of them equally often —
plus its bytes at ``β`` of the narrowest route:

ring (p ranks, m = ⌈N / (p·c)⌉ messages per segment)
    T = 2(p − 1)·m·α + 2(p − 1)·N/p·β
2d (rows R × cols C, one ring per dimension, phases in sequence)
    T = 2(C − 1)·⌈N/(C·c)⌉·α_row + 2(C − 1)·N/C·β  +  2(R − 1)·⌈N/(p·c)⌉·α_col + 2(R − 1)·N/p·β
tree (binary, height h, k = ⌈N / c⌉ chunks)
    T = (h + d + (k − 1)·s)·(α + c·β)
    d: messages on the way down to the last leaf (a parent sends to its
    first child, then its second); s: the most messages one rank sends
    per chunk (3 for an interior rank: up, and down twice)

What it leaves out, on purpose: the time to add a received chunk before it
can be sent on (FETCH, PE_MATH, STORE: about 1.75·S·β for a float16 chunk;
it overlaps the wire once a step has several chunks), PE_CPU dispatch, the
program's own HBM traffic (reading its contribution, writing the result:
the slice's 256 GB/s is shared by reads and writes), and queueing where two
streams share a link (a tree parent's two children). Those are the
residuals the study reports.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from kernbench.collectives.group import Group, Ring, pieces
from kernbench.topology.graph import Graph

#: The formulas each prediction evaluates (N bytes per PE, p PEs, c bytes per message).
FORMULAS = {
    "ring": "T = 2(p−1)·m·α + 2(p−1)·⌈N/p⌉·β,  m = ⌈N/(p·c)⌉",
    "2d": "T = 2(C−1)·⌈N/(C·c)⌉·α_row + 2(C−1)·N/C·β + 2(R−1)·⌈N/(p·c)⌉·α_col + 2(R−1)·N/p·β",
    "tree": "T = (h + d + (k−1)·s)·(α + c·β),  k = ⌈N/c⌉",
}


@dataclass(frozen=True, slots=True)
class MessageCost:
    """α and β of one PE-to-PE route."""

    src: str
    dst: str
    alpha_ns: float
    flit_ns: float
    flit_bytes: int
    hops: int

    @property
    def beta_ns_per_byte(self) -> float:
        return self.flit_ns / self.flit_bytes

    @property
    def bottleneck_gbps(self) -> float:
        return self.flit_bytes / self.flit_ns

    def flits(self, nbytes: int) -> int:
        return -(-nbytes // self.flit_bytes)

    def ns(self, nbytes: int) -> float:
        return self.alpha_ns + self.flits(nbytes) * self.flit_ns


def message_cost(graph: Graph, src_pe: str, dst_pe: str) -> MessageCost:
    """α, β of a message from ``src_pe``'s PE_IPCQ to ``dst_pe``'s."""
    route = graph.route(f"{src_pe}.ipcq", f"{dst_pe}.ipcq")
    worst = max(h.flit_ns for h in route.hops)
    alpha = route.header_ns + sum(h.flit_ns for h in route.hops) - worst
    return MessageCost(src_pe, dst_pe, alpha, worst, graph.flit_bytes, len(route))


def typical(graph: Graph, pairs: list[tuple[str, str]]) -> MessageCost:
    """One α and β for the pairs an algorithm uses: α their mean (data visits each pair
    equally often), β that of the narrowest route (it paces the rest)."""
    costs = [message_cost(graph, a, b) for a, b in sorted(set(pairs))]
    alpha = sum(c.alpha_ns for c in costs) / len(costs)
    hops = sum(c.hops for c in costs) / len(costs)
    return MessageCost("", "", alpha, max(c.flit_ns for c in costs), graph.flit_bytes, round(hops))


@dataclass(frozen=True, slots=True)
class Phase:
    """One stretch of an algorithm: its critical channel's messages, flits, and their cost."""

    name: str
    messages: int
    flits: int
    cost: MessageCost

    @property
    def alpha_term_ns(self) -> float:
        return self.messages * self.cost.alpha_ns

    @property
    def beta_term_ns(self) -> float:
        return self.flits * self.cost.flit_ns

    @property
    def ns(self) -> float:
        return self.alpha_term_ns + self.beta_term_ns


@dataclass(frozen=True, slots=True)
class Prediction:
    algo: str
    formula: str
    phases: tuple[Phase, ...]

    @property
    def ns(self) -> float:
        return sum(p.ns for p in self.phases)

    @property
    def alpha_term_ns(self) -> float:
        return sum(p.alpha_term_ns for p in self.phases)

    @property
    def beta_term_ns(self) -> float:
        return sum(p.beta_term_ns for p in self.phases)


@dataclass(frozen=True, slots=True)
class Problem:
    """What the model needs: the group, where its programs run, the payload and its chunking."""

    graph: Graph
    group: Group
    pes: tuple[str, ...]  # PE id of each program
    elements: int
    itemsize: int
    chunk: int  # elements per message

    def pe(self, program: int) -> str:
        return self.pes[program]


def _ring_sends(pr: Problem, ring: Ring, segments: list[int]) -> tuple[int, int]:
    """(messages, flits) of sending these segments of the ring, cut as the kernel cuts them."""
    msgs = flits = 0
    for s in segments:
        for a, b in ring.pieces(s):
            msgs += 1
            flits += -(-(b - a) * pr.itemsize // pr.graph.flit_bytes)
    return msgs, flits


def _ring_phase(
    pr: Problem, name: str, rings: list[tuple[int, ...]], lo_hi: Callable[[int], tuple[int, int]], sends: Callable[[int, int], list[int]]
) -> Phase:
    """A phase on one or more rings at once; the busiest member's channel decides."""
    pairs: list[tuple[str, str]] = []
    worst = (0, 0)
    for members in rings:
        q = len(members)
        if q == 1:
            continue
        for i, me in enumerate(members):
            pairs.append((pr.pe(me), pr.pe(members[(i + 1) % q])))
            ring = Ring.of(members, me, *lo_hi(me), pr.chunk)
            worst = max(worst, _ring_sends(pr, ring, sends(i, q)), key=lambda mf: (mf[1], mf[0]))
    if not pairs:
        return Phase(name, 0, 0, MessageCost("", "", 0.0, 0.0, pr.graph.flit_bytes, 0))
    return Phase(name, worst[0], worst[1], typical(pr.graph, pairs))


def _rs(i: int, q: int) -> list[int]:
    """Segments a ring member sends in reduce-scatter: pos−1, then pos−2 … pos−(q−1)."""
    return [i - 1 - k for k in range(q - 1)]


def _ag(i: int, q: int) -> list[int]:
    """… in all-gather: its own, then the ones it passes on (pos−1 … pos−(q−2))."""
    return [i - k for k in range(q - 1)]


def _allreduce_ring(i: int, q: int) -> list[int]:
    return _rs(i, q) + _ag(i, q)


def ring_model(pr: Problem) -> Prediction:
    order = pr.group.snake
    n = pr.elements
    phase = _ring_phase(pr, "ring", [order], lambda me: (0, n), _allreduce_ring)
    return Prediction("ring", FORMULAS["ring"], (phase,))


def grid2d_model(pr: Problem) -> Prediction:
    g, n = pr.group, pr.elements
    rows = [g.grid_row(r) for r in range(g.rows)]
    cols = [g.grid_col(c) for c in range(g.cols)]
    row_seg = {me: Ring.of(g.grid_row(g.where(me)[0]), me, 0, n, pr.chunk).segment(g.where(me)[1]) for me in g.programs}
    phases = (
        _ring_phase(pr, "row reduce-scatter", rows, lambda me: (0, n), _rs),
        _ring_phase(pr, "column all-reduce", cols, lambda me: row_seg[me], _allreduce_ring),
        _ring_phase(pr, "row all-gather", rows, lambda me: (0, n), _ag),
    )
    return Prediction("2d", FORMULAS["2d"], phases)


def tree_model(pr: Problem) -> Prediction:
    order = pr.group.snake
    q = len(order)
    runs = pieces(0, pr.elements, pr.chunk)
    k = len(runs)
    big = max(b - a for a, b in runs)
    kids = {i: [c for c in (2 * i + 1, 2 * i + 2) if c < q] for i in range(q)}
    pairs = [(pr.pe(order[c]), pr.pe(order[i])) for i in range(q) for c in kids[i]]
    pairs += [(b, a) for a, b in pairs]
    if not pairs:
        return Prediction("tree", "T = 0 (one rank)", ())
    height = max(int(math.log2(i + 1)) for i in range(q))
    down = max(_down_messages(i) for i in range(q) if not kids[i])
    per_chunk = max((0 if i == 0 else 1) + len(kids[i]) for i in range(q))
    messages = height + down + (k - 1) * per_chunk
    cost = typical(pr.graph, pairs)
    flits = messages * cost.flits(big * pr.itemsize)
    return Prediction("tree", FORMULAS["tree"], (Phase("tree", messages, flits, cost),))


def _down_messages(leaf: int) -> int:
    """Messages on the broadcast path from the root to ``leaf`` (a second child waits for the first)."""
    n = 0
    while leaf:
        n += 1 if leaf % 2 == 1 else 2
        leaf = (leaf - 1) // 2
    return n


MODELS: dict[str, Callable[[Problem], Prediction]] = {"ring": ring_model, "2d": grid2d_model, "tree": tree_model}


def predict(algo: str, pr: Problem) -> Prediction:
    return MODELS[algo](pr)
