"""Where one isolated transfer's time went: simulated, and charged from the graph alone.

A case's breakdown is the simulated transfer's critical-flit journey — the
same parts ``kernbench run --explain`` attributes a kernel's transfers with
(:mod:`kernbench.sim.transit`, causes named as in
:mod:`kernbench.analysis.critical`) — checked against what the graph
charges independently of the engine (:func:`charges`, below).

The engine pays a transfer's latency on nodes and edges of its routes only
(see :mod:`kernbench.sim.network`). On an idle machine that latency is the
sum of

* the request (a read) — a zero-payload header: the overhead of every node
  it passes and the propagation of every edge;
* the memory's drain — the first burst on its pseudo-channel (a read), or
  the last burst's finish behind the train (a write);
* the data path's head flit — per node overhead, per edge serialization of
  one flit and propagation;
* the train — the other ``N − 1`` flits, one per bottleneck service time
  (the slowest edge's flit time, or a read's channel-array burst rate);
* the acknowledgement (a write) — overheads and propagation back;
* queueing — whatever the simulation took beyond all of that. It is zero on
  an idle machine; the probe shows it so that claim is checked, not assumed.

The charges here are read from the graph, independently of the engine; the
probe compares their sum with the simulated latency.
"""

from __future__ import annotations

from dataclasses import dataclass

import simpy

from kernbench.analysis.critical import TRANSIT_CAUSE
from kernbench.sim.network import Network
from kernbench.sim.transit import Part
from kernbench.topology.graph import Graph, Route
from kernbench_probes.cases import Case


@dataclass(frozen=True)
class Breakdown:
    """One case at one size: the simulated parts and the graph's own charges (closed by queueing)."""

    latency_ns: float
    parts: tuple[Part, ...]
    charges: list[Charge]

    def rows(self) -> list[tuple[str, str, float]]:
        """(component, cause, ns) along the journey, consecutive equal pairs joined."""
        out: list[tuple[str, str, float]] = []
        for p in self.parts:
            cause = TRANSIT_CAUSE.get(p.cause, p.cause)
            if out and out[-1][0] == p.component and out[-1][1] == cause:
                out[-1] = (p.component, cause, out[-1][2] + p.ns)
            else:
                out.append((p.component, cause, p.ns))
        return out

    def by_cause(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for p in self.parts:
            cause = TRANSIT_CAUSE.get(p.cause, p.cause)
            out[cause] = out.get(cause, 0.0) + p.ns
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def as_json(self) -> dict[str, object]:
        return {
            "by_cause": {k: round(v, 9) for k, v in self.by_cause().items()},
            "parts": [{"component": c, "cause": cause, "ns": round(ns, 9)} for c, cause, ns in self.rows()],
            "graph_charges_ns": round(sum(c.ns for c in self.charges if c.what != "queueing"), 9),
            "queueing_ns": round(self.charges[-1].ns, 9),
        }


@dataclass(frozen=True, slots=True)
class Charge:
    path: str  # request | memory | data | train | ack | queue
    what: str  # overhead | serialize | propagation | drain | train | queueing
    where: str  # node id, edge id, or pseudo-channel
    ns: float


def _header(path: str, route: Route, with_src: bool) -> list[Charge]:
    out = []
    if with_src and route.src_overhead_ns:
        out.append(Charge(path, "overhead", route.nodes[0], route.src_overhead_ns))
    for h in route.hops:
        if h.prop_ns:
            out.append(Charge(path, "propagation", h.edge.id, h.prop_ns))
        if h.next_overhead_ns:
            out.append(Charge(path, "overhead", h.edge.dst, h.next_overhead_ns))
    return out


def _head_flit(route: Route, with_src: bool) -> list[Charge]:
    out = []
    if with_src and route.src_overhead_ns:
        out.append(Charge("data", "overhead", route.nodes[0], route.src_overhead_ns))
    for h in route.hops:
        out.append(Charge("data", "serialize", h.edge.id, h.flit_ns))
        if h.prop_ns:
            out.append(Charge("data", "propagation", h.edge.id, h.prop_ns))
        if h.next_overhead_ns:
            out.append(Charge("data", "overhead", h.edge.dst, h.next_overhead_ns))
    return out


def _slowest(route: Route) -> tuple[float, str]:
    hop = max(route.hops, key=lambda h: h.flit_ns)  # first of equals, in path order
    return hop.flit_ns, hop.edge.id


def charges(graph: Graph, case: Case, size_bytes: int) -> list[Charge]:
    """The critical-path charges of ``case`` at ``size_bytes``, queueing excluded."""
    mem = Network(simpy.Environment(), graph).memory(case.memory)
    n = -(-size_bytes // graph.flit_bytes)
    # a contiguous region from offset 0: flit j on channel j mod channels
    period = mem.channels
    firsts = list(range(min(n, period)))
    there = graph.route(case.initiator, case.memory)
    back = graph.route(case.memory, case.initiator)
    if case.op == "read":
        out = _header("request", there, with_src=True)
        rate, where = _slowest(back)
        if mem.burst_ns / period > rate and n > period:
            # Channels slower than the path: the last round of bursts decides —
            # its channel drains M+1 bursts back to back, then the flits after
            # it follow behind the path's bottleneck.
            last_round = (n - 1) // period
            drained = last_round + 1
            ch = mem.channel_name(firsts[0])
            out.append(Charge("memory", "drain", f"{ch} {drained} bursts back to back", drained * mem.burst_ns))
            out += _head_flit(back, with_src=False)
            rest = n - 1 - period * last_round
            out.append(Charge("train", "train", f"{rest} flits × {rate:.4g} ns at {where}", rest * rate))
            return out
        out.append(Charge("memory", "drain", f"{mem.channel_name(firsts[0])} first burst", mem.burst_ns))
        out += _head_flit(back, with_src=False)
        out.append(Charge("train", "train", f"{n - 1} flits × {rate:.4g} ns at {where}", (n - 1) * rate))
        return out
    out = _head_flit(there, with_src=True)
    rate, where = _slowest(there)
    out.append(Charge("train", "train", f"{n - 1} flits × {rate:.4g} ns at {where}", (n - 1) * rate))
    # Each channel j finishes its bursts j, j+period, … either right behind
    # the last one's arrival or, if the train outpaces it, count·burst after
    # its first arrival; the transfer waits for the latest channel.
    finish, neg_j = max(
        (
            max((j + (count - 1) * period) * rate + mem.burst_ns, j * rate + count * mem.burst_ns),
            -j,
        )
        for j in range(len(firsts))
        if (count := (n - j + period - 1) // period) > 0
    )
    out.append(Charge("memory", "drain", f"{mem.channel_name(firsts[-neg_j])} last burst", finish - (n - 1) * rate))
    out += _header("ack", back, with_src=False)
    return out


def with_queueing(graph: Graph, case: Case, size_bytes: int, latency_ns: float) -> list[Charge]:
    """The charges plus the queueing line that closes them to ``latency_ns``."""
    out = charges(graph, case, size_bytes)
    rest = latency_ns - sum(c.ns for c in out)
    if abs(rest) < 1e-9:
        rest = 0.0
    out.append(Charge("queue", "queueing", "simulated − sum of the above", rest))
    return out
