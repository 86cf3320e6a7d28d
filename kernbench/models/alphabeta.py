"""The α–β model of a collective (all-reduce, reduce-scatter, all-gather, all-to-all): startups plus per-byte cost, from the topology.

One message of ``S`` bytes from PE_IPCQ to PE_IPCQ over an idle route
costs (the model's own wormhole rule, no fitting)::

    t(S) = α + ⌈S / F⌉ · F · β
    α    = header + Σ flit_ns − max flit_ns    (overheads + propagation + filling the wormhole)
    β    = 1 / bottleneck bandwidth            (ns per byte; F = flit bytes)

``header`` is the route's node overheads plus propagation; every term is a
sum of topology parameters (``Route.header_ns``, ``Hop.flit_ns``), and
every pair of PEs has its own. A program's PE_IPCQ sends one message at a
time, each taking its own pair's ``t(S)``, so an algorithm is a sequence of
*steps* — in each, every rank sends its messages back to back — and a step
lasts as long as its *critical pair*: the sender whose messages, at its own
pair's α and β, take longest (:class:`Step`). The model sums the steps:

ring (p ranks in snake order, m = ⌈N / (p·c)⌉ messages per segment)
    T = Σ over 2(p − 1) steps of max over ranks (m·α_pair + ⌈N/p⌉·β)
      = 2(p − 1)·m·α_max + 2(p − 1)·⌈N/p⌉·β     (every step uses every pair)
2d (rows R × cols C, one ring per dimension, phases in sequence)
    T = 2(C − 1)·⌈N/(C·c)⌉·α_row,max + 2(C − 1)·N/C·β  +  2(R − 1)·⌈N/(p·c)⌉·α_col,max + 2(R − 1)·N/p·β
tree (binary, k = ⌈N / c⌉ chunks)
    T = up + down + (k − 1)·per_chunk, each message at its own pair's α + c·β:
    up: the first chunk from a leaf to the root (the costliest such path);
    down: from the root to a leaf, a second child waiting for its elder
    sibling's message (the costliest such path); per_chunk: the most one
    rank sends per chunk (an interior rank: up once, down twice)

The other collectives, on the same terms:

reduce-scatter, all-gather (the ring's two halves, in snake order)
    T = Σ over (p − 1) steps of max over ranks (m·α_pair + ⌈N/p⌉·β)
      = (p − 1)·m·α_max + (p − 1)·⌈N/p⌉·β
all-to-all (pairwise exchange, p − 1 rounds for even p, p for odd)
    T = Σ over rounds of max over exchanging ranks (m·α_pair + N/p·β),  m = ⌈N/(p·c)⌉:
    in each round every rank sends its part for one partner (the circle
    method, :func:`kernbench.collectives.alltoall.partner`), so a round lasts
    as long as its slowest pair — here the pairs are not neighbours, and the
    farthest pair of a round sets it.

What it leaves out, on purpose: the time to add a received chunk before it
can be sent on (FETCH, PE_MATH, STORE: about 1.75·S·β for a float16 chunk;
it overlaps the wire once a step has several chunks), PE_CPU dispatch, the
program's own HBM traffic (reading its contribution, writing the result:
the slice's 256 GB/s is shared by reads and writes), and queueing where two
streams share a link (a tree parent's two children). Those are the
residuals the study reports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kernbench.collectives.alltoall import partner, rounds
from kernbench.collectives.group import Group, Ring, pieces
from kernbench.topology.graph import Graph

#: The formulas each prediction evaluates (N bytes per PE, p PEs, c bytes per message;
#: α_max: the critical pair's, per step).
FORMULAS = {
    "ring": "T = 2(p−1)·m·α_max + 2(p−1)·⌈N/p⌉·β,  m = ⌈N/(p·c)⌉",
    "2d": "T = 2(C−1)·⌈N/(C·c)⌉·α_row,max + 2(C−1)·N/C·β + 2(R−1)·⌈N/(p·c)⌉·α_col,max + 2(R−1)·N/p·β",
    "tree": "T = up + down + (k−1)·per_chunk,  each message α_pair + c·β,  k = ⌈N/c⌉",
    "reduce-scatter": "T = (p−1)·m·α_max + (p−1)·⌈N/p⌉·β,  m = ⌈N/(p·c)⌉",
    "all-gather": "T = (p−1)·m·α_max + (p−1)·⌈N/p⌉·β,  m = ⌈N/(p·c)⌉",
    "all-to-all": "T = Σ over rounds of max over pairs (m·α_pair + N/p·β),  m = ⌈N/(p·c)⌉,  p−1 rounds (p if odd)",
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


@dataclass(frozen=True, slots=True)
class Step:
    """Messages one sender sends back to back over one pair: a step's critical pair."""

    cost: MessageCost
    messages: int
    flits: int

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
class Phase:
    """One stretch of an algorithm: its steps, each charged to its critical pair."""

    name: str
    steps: tuple[Step, ...]

    @property
    def messages(self) -> int:
        return sum(s.messages for s in self.steps)

    @property
    def flits(self) -> int:
        return sum(s.flits for s in self.steps)

    @property
    def alpha_term_ns(self) -> float:
        return sum(s.alpha_term_ns for s in self.steps)

    @property
    def beta_term_ns(self) -> float:
        return sum(s.beta_term_ns for s in self.steps)

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


def _segment_sends(pr: Problem, ring: Ring, segment: int) -> tuple[int, int]:
    """(messages, flits) of sending one segment of the ring, cut as the kernel cuts it."""
    msgs = flits = 0
    for a, b in ring.pieces(segment):
        msgs += 1
        flits += -(-(b - a) * pr.itemsize // pr.graph.flit_bytes)
    return msgs, flits


def _critical(steps: list[Step]) -> Step:
    """The step's critical pair: the sender whose messages take longest (ties: the first)."""
    return max(steps, key=lambda s: s.ns)


def _ring_phase(
    pr: Problem, name: str, rings: list[tuple[int, ...]], lo_hi: Callable[[int], tuple[int, int]], sends: Callable[[int, int], list[int]]
) -> Phase:
    """A phase on one or more rings at once: at each step every member sends a segment to
    its right neighbour, and the step lasts as long as its critical pair."""
    by_step: dict[int, list[Step]] = {}
    for members in rings:
        q = len(members)
        if q == 1:
            continue
        for i, me in enumerate(members):
            cost = message_cost(pr.graph, pr.pe(me), pr.pe(members[(i + 1) % q]))
            ring = Ring.of(members, me, *lo_hi(me), pr.chunk)
            for j, segment in enumerate(sends(i, q)):
                msgs, flits = _segment_sends(pr, ring, segment)
                by_step.setdefault(j, []).append(Step(cost, msgs, flits))
    return Phase(name, tuple(_critical(by_step[j]) for j in sorted(by_step)))


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
    if q == 1:
        return Prediction("tree", "T = 0 (one rank)", ())
    runs = pieces(0, pr.elements, pr.chunk)
    k = len(runs)
    flits = -(-max(b - a for a, b in runs) * pr.itemsize // pr.graph.flit_bytes)

    def msg(src: int, dst: int) -> Step:
        """One chunk from rank ``src`` to rank ``dst`` (positions in the snake order)."""
        return Step(message_cost(pr.graph, pr.pe(order[src]), pr.pe(order[dst])), 1, flits)

    kids = {i: [c for c in (2 * i + 1, 2 * i + 2) if c < q] for i in range(q)}
    leaves = [i for i in range(q) if not kids[i]]
    up = max((_path_up(i, msg) for i in leaves), key=_ns)
    down = max((_path_down(i, msg) for i in leaves), key=_ns)
    per_rank = [([msg(i, (i - 1) // 2)] if i else []) + [msg(i, c) for c in kids[i]] for i in range(q)]
    busiest = max(per_rank, key=_ns)
    steady = [Step(s.cost, (k - 1) * s.messages, (k - 1) * s.flits) for s in busiest] if k > 1 else []
    return Prediction(
        "tree",
        FORMULAS["tree"],
        (Phase("up", tuple(up)), Phase("down", tuple(down)), Phase("pipelined chunks", tuple(steady))),
    )


def _ns(steps: list[Step]) -> float:
    return sum(s.ns for s in steps)


def _path_up(leaf: int, msg: Callable[[int, int], Step]) -> list[Step]:
    """The first chunk's messages from ``leaf`` up to the root."""
    out = []
    while leaf:
        parent = (leaf - 1) // 2
        out.append(msg(leaf, parent))
        leaf = parent
    return out


def _path_down(leaf: int, msg: Callable[[int, int], Step]) -> list[Step]:
    """The messages on the broadcast path from the root to ``leaf``: a second child waits
    for its parent's message to the first."""
    out = []
    while leaf:
        parent = (leaf - 1) // 2
        if leaf % 2 == 0:
            out.append(msg(parent, leaf - 1))
        out.append(msg(parent, leaf))
        leaf = parent
    return out[::-1]


def reduce_scatter_model(pr: Problem) -> Prediction:
    phase = _ring_phase(pr, "reduce-scatter", [pr.group.snake], lambda me: (0, pr.elements), _rs)
    return Prediction("ring", FORMULAS["reduce-scatter"], (phase,))


def all_gather_model(pr: Problem) -> Prediction:
    phase = _ring_phase(pr, "all-gather", [pr.group.snake], lambda me: (0, pr.elements), _ag)
    return Prediction("ring", FORMULAS["all-gather"], (phase,))


def all_to_all_model(pr: Problem) -> Prediction:
    """Each round charged to its critical pair; each rank's part for its partner cut as the kernel cuts it."""
    members = pr.group.programs
    p = len(members)
    part = pr.elements // p
    steps = []
    for r in range(rounds(p)):
        sends = []
        for i in range(p):
            j = partner(i, r, p)
            if j != i:
                runs = pieces(j * part, (j + 1) * part, pr.chunk)
                flits = sum(-(-(b - a) * pr.itemsize // pr.graph.flit_bytes) for a, b in runs)
                sends.append(Step(message_cost(pr.graph, pr.pe(members[i]), pr.pe(members[j])), len(runs), flits))
        if sends:
            steps.append(_critical(sends))
    return Prediction("pairwise", FORMULAS["all-to-all"], (Phase("pairwise exchange", tuple(steps)),))


MODELS: dict[str, Callable[[Problem], Prediction]] = {"ring": ring_model, "2d": grid2d_model, "tree": tree_model}

#: Every collective's models, by algorithm (all-reduce's are :data:`MODELS`).
COLLECTIVE_MODELS: dict[str, dict[str, Callable[[Problem], Prediction]]] = {
    "all-reduce": MODELS,
    "reduce-scatter": {"ring": reduce_scatter_model},
    "all-gather": {"ring": all_gather_model},
    "all-to-all": {"pairwise": all_to_all_model},
}


def predict(algo: str, pr: Problem, op: str = "all-reduce") -> Prediction:
    """The model of collective ``op`` (all-reduce by default) run with ``algo``."""
    return COLLECTIVE_MODELS[op][algo](pr)
