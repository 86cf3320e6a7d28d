"""Which transfers the DMA probe measures, chosen from the topology itself.

From a source PE the probe reads its own HBM slice, the nearest slice at
another router of the same CUBE half, the nearest slice in the other half,
and the nearest and farthest slice of every other CUBE (any SIP); the host
writes to and reads from the source's slice. Nothing names a node id: each
case is found from node kinds, attachments and the routers' ``half`` attr,
and a case the topology cannot offer (one CUBE: no remote slice; no host:
no H2D/D2H) is simply absent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import simpy

from kernbench.errors import RouteError
from kernbench.sim.network import Mode, Network, TransferResult
from kernbench.topology.graph import Graph, Node, Route

Op = Literal["read", "write"]


@dataclass(frozen=True, slots=True)
class Case:
    key: str  # stable id used in --json ("local", "cross-cube-best", …)
    label: str  # what the table prints
    op: Op  # "read": memory → initiator data; "write": initiator → memory, then an ack
    initiator: str
    memory: str


# The probe's rows, in hop-distance order, then the host transfers.
CASE_LABELS: dict[str, str] = {
    "local": "PE → local HBM",
    "same-half": "PE → same-half HBM",
    "cross-half": "PE → cross-half HBM",
    "cross-cube-best": "PE → cross-CUBE (best)",
    "cross-cube-worst": "PE → cross-CUBE (worst)",
    "h2d-write": "Host → HBM (H2D write)",
    "d2h-read": "HBM → Host (D2H read)",
}
HOP_ORDER = ("local", "same-half", "cross-half", "cross-cube-best", "cross-cube-worst")


def simulate(graph: Graph, op: Op, initiator: str, memory: str, size_bytes: int, mode: Mode = "fast") -> float:
    """Latency of one transfer on a fresh, idle machine."""
    latency: float = transfer(graph, op, initiator, memory, size_bytes, mode).latency_ns
    return latency


def transfer(
    graph: Graph, op: Op, initiator: str, memory: str, size_bytes: int, mode: Mode = "fast", explain: bool = False
) -> TransferResult:
    """One transfer on a fresh, idle machine (``explain``: with where its time went)."""
    env = simpy.Environment()
    net = Network(env, graph, mode=mode, explain=explain)
    start = net.read if op == "read" else net.write
    proc = start(initiator, memory, 0, size_bytes)
    env.run()
    done = proc.value
    assert isinstance(done, TransferResult), "the transfer finished: nothing else runs on the machine"
    return done


def _natural(node_id: str) -> tuple[int | str, ...]:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", node_id))


def _attached_router(graph: Graph, node_id: str) -> Node | None:
    for succ in graph.successors[node_id]:
        n = graph.nodes[succ]
        if n.kind == "router":
            return n
    return None


_Signature = tuple[float | tuple[float, float, float], ...]  # what a route's timing depends on


def _signature(route: Route) -> _Signature:
    return (route.src_overhead_ns, *((h.edge.bw_gbps, h.prop_ns, h.next_overhead_ns) for h in route.hops))


class CaseFinder:
    """Pick the probe's cases for one source PE, simulating candidates as needed."""

    def __init__(self, graph: Graph, source_pe: str, size_bytes: int):
        self.graph = graph
        self.initiator = f"{source_pe}.dma"
        node = graph.nodes.get(self.initiator)
        if node is None or node.kind != "pe_dma":
            pes = sorted({n.id.rsplit(".", 1)[0] for n in graph.nodes_of_kind("pe_dma")}, key=_natural)
            hint = f"; e.g. {pes[0]}" if pes else ""
            raise RouteError(f"--source {source_pe!r} is not a PE of topology {graph.name!r}{hint}")
        self.sip, self.cube, self.pe = node.attrs["sip"], node.attrs["cube"], node.attrs["pe"]
        self.size_bytes = size_bytes
        self.slices = sorted(graph.nodes_of_kind("hbm_slice"), key=lambda n: _natural(n.id))
        self._memo: dict[tuple[Op, _Signature, _Signature, int, int, float], float] = {}
        self.simulated = 0

    def latency(self, op: Op, initiator: str, memory: str) -> float:
        """Simulated latency, shared between candidates whose routes time alike."""
        g = self.graph
        mem = g.nodes[memory].attrs
        key = (
            op,
            _signature(g.route(initiator, memory)),
            _signature(g.route(memory, initiator)),
            mem["channels"],
            mem["burst_bytes"],
            mem["channel_bw_gbps"],
        )
        if key not in self._memo:
            self._memo[key] = simulate(g, op, initiator, memory, self.size_bytes)
            self.simulated += 1
        return self._memo[key]

    def _nearest(self, candidates: list[Node], worst: bool = False) -> str | None:
        if not candidates:
            return None
        scored = [(self.latency("read", self.initiator, n.id), i) for i, n in enumerate(candidates)]
        # Ties go to the first candidate in natural id order, for min and max alike.
        pick = max(scored, key=lambda s: (s[0], -s[1])) if worst else min(scored)
        return candidates[pick[1]].id

    def find(self) -> list[Case]:
        g = self.graph
        own = [n for n in self.slices if (n.attrs["sip"], n.attrs["cube"]) == (self.sip, self.cube)]
        remote = [n for n in self.slices if (n.attrs["sip"], n.attrs["cube"]) != (self.sip, self.cube)]
        home = _attached_router(g, self.initiator)
        half = home.attrs.get("half") if home is not None else None
        home_id = home.id if home is not None else None

        def router_of(n: Node) -> Node | None:
            return _attached_router(g, n.id)

        def in_half(pred: Callable[[object], bool]) -> list[Node]:
            out = []
            for n in own:
                r = router_of(n)
                if r is not None and r.id != home_id and r.attrs.get("half") is not None and pred(r.attrs["half"]):
                    out.append(n)
            return out

        local = next((n.id for n in own if n.attrs["slice"] == self.pe), None)
        picks: dict[str, str | None] = {"local": local}
        if half is not None:
            picks["same-half"] = self._nearest(in_half(lambda h: h == half))
            picks["cross-half"] = self._nearest(in_half(lambda h: h != half))
        picks["cross-cube-best"] = self._nearest(remote)
        picks["cross-cube-worst"] = self._nearest(remote, worst=True)
        cases = [Case(k, CASE_LABELS[k], "read", self.initiator, m) for k in HOP_ORDER if (m := picks.get(k)) is not None]
        if "host" in g.nodes and local is not None:
            cases.append(Case("h2d-write", CASE_LABELS["h2d-write"], "write", "host", local))
            cases.append(Case("d2h-read", CASE_LABELS["d2h-read"], "read", "host", local))
        return cases
