"""Compile a validated topology spec into the immutable :class:`Graph`.

Routing is hierarchical and deterministic:

* inside a CUBE, the least-latency path over the router template (Dijkstra,
  ties broken by hop count then by node names), searched once per template
  and source router (:mod:`kernbench.topology.cube_paths`);
* between CUBEs of a SIP, XY dimension order over the mesh, leaving and
  entering through the UCIe PHYs (``phy.e``/``phy.w``/``phy.n``/``phy.s``);
  in a torus dimension the shorter way round, ties broken by coordinate
  parity (:mod:`kernbench.topology.shape`);
* between SIPs, the shorter way round the ring of IO chiplets (ties go
  up), reaching the IO chiplet from its attach CUBE.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from kernbench.errors import RouteError, TopologyError
from kernbench.topology.cube_paths import CubePaths
from kernbench.topology.graph import Edge, Graph, Node
from kernbench.topology.ids import NodeId, cube_id, io_id
from kernbench.topology.shape import GridShape
from kernbench.topology.spec import load_spec

PE_ENGINES = ("cpu", "sched", "dma", "fs", "gemm", "math", "ipcq", "tcm")
OPPOSITE = {"e": "w", "w": "e", "n": "s", "s": "n"}


def load_topology(name_or_path: str | Path | None = None, overrides: list[str] | None = None) -> Graph:
    """Load, validate and compile a named topology or a YAML file."""
    return compile_spec(load_spec(name_or_path, overrides))


# The compiled graph's limits: about 5× the paper machine (4,675 nodes,
# 8,616 edges; e.g. 2 SIPs of 9×9 CUBEs fit), where `topo show` takes ~0.6 s
# and the DMA probe ~1.4 s. A larger topology fails at once, before anything
# is built.
MAX_GRAPH_NODES = 25_000
MAX_GRAPH_EDGES = 50_000


def compile_spec(spec: Mapping[str, Any]) -> Graph:
    check_size(spec)
    return _Builder(spec).build()


def check_size(spec: Mapping[str, Any]) -> None:
    """Refuse a topology whose graph would pass the limits (arithmetic only, nothing is built)."""
    nodes, edges = graph_size(spec)
    if nodes > MAX_GRAPH_NODES or edges > MAX_GRAPH_EDGES:
        mesh = spec["sip"]["mesh"]
        raise TopologyError(
            [
                f"compiles to {nodes:,} nodes and {edges:,} edges; the limit is {MAX_GRAPH_NODES:,} nodes and "
                f"{MAX_GRAPH_EDGES:,} edges ({spec['system']['sips']} SIP(s) of {mesh['width']}×{mesh['height']} "
                f"CUBEs of {spec['cube']['pes']['count']} PEs; reduce system.sips, sip.mesh or cube counts)"
            ],
            spec.get("name") or "<topology>",
        )


def pe_count(spec: Mapping[str, Any]) -> int:
    """PEs in the whole machine ``spec`` describes."""
    mesh = spec["sip"]["mesh"]
    count: int = spec["system"]["sips"] * mesh["width"] * mesh["height"] * spec["cube"]["pes"]["count"]
    return count


def graph_size(spec: Mapping[str, Any]) -> tuple[int, int]:
    """(nodes, directed edges) :class:`_Builder` will make for ``spec``, by arithmetic alone."""
    cube, sip, system = spec["cube"], spec["sip"], spec["system"]
    w, h, sips = sip["mesh"]["width"], sip["mesh"]["height"], system["sips"]
    pes, slices, channels = cube["pes"]["count"], len(cube["hbm"]["attach"]), cube["hbm"]["channels_per_slice"]
    extras = sum(cube[k] is not None for k in ("sram", "m_cpu"))
    cube_nodes = len(cube["routers"]) + pes * len(PE_ENGINES) + slices * (1 + channels) + extras
    cube_edges = 2 * len(cube["links"]) + pes * 12 + slices * 2 * (1 + channels) + 2 * extras
    pairs = (w - 1) * h + w * (h - 1)  # neighbouring CUBEs: one UCIe link, a PHY on each side
    sip_nodes = w * h * cube_nodes + 2 * pairs
    sip_edges = w * h * cube_edges + 2 * pairs * 2 + 2 * pairs
    io = sip["io_chiplet"] is not None
    nodes = sips * (sip_nodes + io)
    edges = sips * (sip_edges + 2 * io)
    if sips > 1:
        edges += 2 * (sips if sips > 2 else 1)
    if system["host"] is not None:
        nodes, edges = nodes + 1, edges + 2
    return nodes, edges


def _freeze(obj: Any) -> Any:
    if isinstance(obj, dict):
        return MappingProxyType({k: _freeze(v) if isinstance(v, (dict, list)) else v for k, v in obj.items()})
    if isinstance(obj, list):
        return tuple(_freeze(v) for v in obj)
    return obj


class _Ids(dict[str, str]):
    """The ids of one CUBE's routers by local name, each made once: the nodes and the edges at them
    hold one string, so the graph's dicts find them by identity."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def __missing__(self, name: str) -> str:
        self[name] = f"{self.prefix}.{name}"
        return self[name]


class _Builder:
    """Nodes and edges in the graph's order (edge indices are positions), one CUBE at a time.

    A compile is what every run, the TUI and a re-timing under a changed
    parameter pay first (the paper machine: 4,675 nodes, 8,616 edges), so the
    CUBE loops build their attribute tables directly and share the ones equal
    across nodes (a PE's engines, the pseudo-channels of every CUBE).
    """

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.spec = spec
        self.nodes: list[Node] = []
        self.edges: list[Edge] = []
        self.cube = spec["cube"]
        mesh = spec["sip"]["mesh"]
        self.width, self.height = mesh["width"], mesh["height"]
        self._cpu_attrs = {k: _freeze(v) for k, v in spec["pe"]["attrs"].items()}  # frozen once for every pe_cpu
        self._pc_attrs: dict[tuple[int, int], Mapping[str, Any]] = {}

    def node(self, node_id: str, kind: str, overhead_ns: float, attrs: Mapping[str, Any]) -> None:
        """A node; ``attrs`` frozen already (a MappingProxyType of scalars and frozen tables)."""
        self.nodes.append(Node(node_id, kind, overhead_ns, attrs))

    def link(self, a: str, b: str, link: Mapping[str, Any], kind: str) -> None:
        edges = self.edges
        i, bw, prop = len(edges), link["bw_gbps"], link["prop_ns"]
        edges.append(Edge(a, b, bw, prop, kind, i))  # indexed as the graph keeps it
        edges.append(Edge(b, a, bw, prop, kind, i + 1))

    def build(self) -> Graph:
        spec = self.spec
        n_sips = spec["system"]["sips"]
        for s in range(n_sips):
            for c in range(self.width * self.height):
                self._cube(cube_id(s, c), s, c)
            self._mesh(s)
            io = spec["sip"]["io_chiplet"]
            if io is not None:
                chiplet = io_id(s)
                self.node(chiplet, "io_chiplet", io["overhead_ns"], _freeze({"sip": s}))
                self.link(chiplet, f"{cube_id(s, io['attach_cube'])}.{io['attach']}", io["link"], "io")
        ring = spec["system"]["sip_ring"]
        if n_sips > 1:
            pairs = {tuple(sorted((s, (s + 1) % n_sips))) for s in range(n_sips)}
            for a, b in sorted(pairs):
                self.link(io_id(a), io_id(b), ring, "pcie")
        host = spec["system"]["host"]
        if host is not None:
            self.node("host", "host", host["overhead_ns"], _freeze({}))
            self.link("host", io_id(host["attach_sip"]), host["link"], "pcie")
        frozen = _freeze(dict(spec))
        return Graph(spec["name"], self.nodes, self.edges, spec["flit_bytes"], frozen, _router(_Routing.of(frozen)))

    def _cube(self, prefix: str, s: int, c: int) -> None:
        cube, node, link = self.cube, self.node, self.link
        x, y = c % self.width, c // self.width
        at = _Ids(prefix)
        for name, r in sorted(cube["routers"].items()):
            node(at[name], "router", r["overhead_ns"], MappingProxyType({"half": r["half"], "x": x, "y": y}))
        for noc in cube["links"]:
            link(at[noc["a"]], at[noc["b"]], noc, "noc")
        attrs, pes = self.spec["pe"]["attrs"], cube["pes"]
        overheads = {
            "cpu": attrs["cpu_overhead_ns"],
            "sched": attrs["sched_overhead_ns"],
            "dma": pes["dma_overhead_ns"],
            "ipcq": attrs["ipcq_overhead_ns"],
        }
        engines = [(f"pe_{e}", overheads.get(e, 0.0)) for e in PE_ENGINES]
        tcm_link, pe_link = {"bw_gbps": attrs["tcm_bw_gbps"], "prop_ns": 0.0}, pes["link"]
        for p, router in enumerate(pes["attach"]):
            ids = [f"{prefix}.pe{p}.{e}" for e in PE_ENGINES]
            cpu, _sched, dma, _fs, gemm, math, ipcq, tcm = ids
            where = MappingProxyType({"sip": s, "cube": c, "pe": p})  # every engine's but the CPU's, which adds the PE's
            cpu_attrs = MappingProxyType({"sip": s, "cube": c, "pe": p, **self._cpu_attrs})
            for engine, (kind, overhead) in zip(ids, engines, strict=True):
                node(engine, kind, overhead, cpu_attrs if engine is cpu else where)
            link(dma, at[router], pe_link, "pe_port")
            link(ipcq, at[router], pe_link, "pe_port")
            for engine in (dma, gemm, math, ipcq):
                link(engine, tcm, tcm_link, "pe_internal")
        hbm = cube["hbm"]
        n_ch = hbm["channels_per_slice"]
        pc_link = {"bw_gbps": hbm["channel_bw_gbps"], "prop_ns": 0.0}
        slice_attrs = {"channels": n_ch, "channel_bw_gbps": hbm["channel_bw_gbps"], "burst_bytes": hbm["burst_bytes"]}
        slice_attrs["capacity_bytes"] = hbm["slice_capacity_bytes"]
        slice_attrs |= {k: hbm[k] for k in ("banks_per_channel", "row_bytes", "trcd_ns", "trp_ns", "trefi_ns", "trfc_ns")}
        for k, router in enumerate(hbm["attach"]):
            sl = f"{prefix}.hbm.slice{k}"
            node(sl, "hbm_slice", hbm["overhead_ns"], _freeze({"sip": s, "cube": c, "slice": k, **slice_attrs}))
            link(sl, at[router], hbm["link"], "hbm_port")
            for ch in range(n_ch):
                pc = f"{prefix}.hbm.pc{k * n_ch + ch}"
                pc_attrs = self._pc_attrs.get((k, ch))
                if pc_attrs is None:  # the same in every CUBE
                    pc_attrs = self._pc_attrs[(k, ch)] = MappingProxyType({"slice": k, "channel": ch})
                node(pc, "hbm_pc", 0.0, pc_attrs)
                link(sl, pc, pc_link, "hbm_channel")
        sram = cube["sram"]
        if sram is not None:
            sram_attrs = {"sip": s, "cube": c, "channels": 1, "channel_bw_gbps": sram["bw_gbps"]}
            sram_attrs |= {"burst_bytes": self.spec["flit_bytes"], "capacity_bytes": sram["capacity_bytes"]}
            node(f"{prefix}.sram", "sram", sram["overhead_ns"], _freeze(sram_attrs))
            link(f"{prefix}.sram", at[sram["attach"]], sram["link"], "sram_port")
        m_cpu = cube["m_cpu"]
        if m_cpu is not None:
            node(f"{prefix}.m_cpu", "m_cpu", m_cpu["overhead_ns"], _freeze({"sip": s, "cube": c}))
            link(f"{prefix}.m_cpu", at[m_cpu["attach"]], m_cpu["link"], "m_cpu_port")

    def _mesh(self, s: int) -> None:
        shape = GridShape.of(self.spec)
        if shape.cubes == 1:
            return
        ucie = self.spec["sip"]["ucie"]
        inner = self.cube["ucie_link"]
        for c in range(shape.cubes):
            sides = shape.neighbours(c)
            for d, _ in sides:
                phy = f"{cube_id(s, c)}.phy.{d}"
                self.node(phy, "ucie_phy", ucie["phy_overhead_ns"], MappingProxyType({"sip": s, "cube": c, "side": d}))
                self.link(phy, f"{cube_id(s, c)}.{self.cube['ucie_attach']}", inner, "ucie_port")
            # Each link once, from its east / south end (a wrap's is the last column / row).
            for d, nxt in sides:
                if d in ("e", "s"):
                    self.link(f"{cube_id(s, c)}.phy.{d}", f"{cube_id(s, nxt)}.phy.{OPPOSITE[d]}", ucie, "ucie")


# --- routing ---------------------------------------------------------------


_TemplateKey = tuple[tuple[tuple[str, float], ...], tuple[tuple[str, str, float, float], ...]]  # (routers, links)


def _template_key(cube: Mapping[str, Any]) -> _TemplateKey:
    """A hashable form of the CUBE template, for the route cache."""
    routers = tuple(sorted((k, v["overhead_ns"]) for k, v in cube["routers"].items()))
    links = tuple(
        (l["a"], l["b"], l["bw_gbps"], l["prop_ns"])
        for l in cube["links"]  # noqa: E741
    )
    return routers, links


@lru_cache(maxsize=16)
def _template_paths(key: _TemplateKey) -> CubePaths:
    """The CUBE template's least-latency router paths (searched per source router on first use)."""
    return CubePaths(*key)


class _Routing(NamedTuple):
    """Everything a route's node path depends on, and nothing else (no PE, HBM or IO-link timing).

    Two topologies with equal routings route every pair along the same nodes
    (a re-timing under ``pe.attrs.tcm_bw_gbps`` compiles a new graph with the
    old routing), so they share one :class:`_Router` and its paths; each graph
    still builds its routes' hops from its own edges and nodes. The CUBE
    template is in whole, link bandwidths and propagation included: they decide
    its least-latency paths.
    """

    template: _TemplateKey
    pes_attach: tuple[str, ...]
    hbm_attach: tuple[str, ...]
    sram_attach: str | None
    m_cpu_attach: str | None
    ucie_attach: str
    io: tuple[int, str] | None  # the IO chiplet's attach CUBE and router
    sips: int
    host_sip: int | None
    shape: GridShape

    @classmethod
    def of(cls, spec: Mapping[str, Any]) -> _Routing:
        cube, io, host = spec["cube"], spec["sip"]["io_chiplet"], spec["system"]["host"]
        return cls(
            _template_key(cube),
            tuple(cube["pes"]["attach"]),
            tuple(cube["hbm"]["attach"]),
            None if cube["sram"] is None else cube["sram"]["attach"],
            None if cube["m_cpu"] is None else cube["m_cpu"]["attach"],
            cube["ucie_attach"],
            None if io is None else (io["attach_cube"], io["attach"]),
            spec["system"]["sips"],
            None if host is None else host["attach_sip"],
            GridShape.of(spec),
        )


@lru_cache(maxsize=8)
def _router(routing: _Routing) -> _Router:
    return _Router(routing, _template_paths(routing.template))


class _Router:
    """The routes of one routing (see :class:`_Routing`), each built from named legs (see the module docstring).

    A route leaves its source's CUBE (through the mesh to the IO chiplet when
    it leaves the SIP), goes round the SIP ring, and enters the destination's
    CUBE the same way; every leg returns its own nodes and :meth:`_search`
    joins them, dropping a node repeated where two legs meet. A path is kept
    once found (up to :data:`PATHS_KEPT`) for the graphs sharing the routing.
    """

    PATHS_KEPT = 16_384  # a run routes hundreds to thousands of pairs; a path is tens of names at most

    def __init__(self, routing: _Routing, template: CubePaths):
        self.routing = routing
        self.template = template
        self.shape, self.ucie_at, self.io, self.sips = routing.shape, routing.ucie_attach, routing.io, routing.sips
        self.routers = frozenset(name for name, _ in routing.template[0])
        self._paths: dict[tuple[str, str], tuple[str, ...]] = {}

    def __call__(self, graph: Graph, src: str, dst: str) -> tuple[str, ...]:
        """Node path ``src → … → dst`` (in any graph of this routing), its names interned (see
        :class:`~kernbench.topology.graph.Hop`)."""
        path = self._paths.get((src, dst))
        if path is None:
            if len(self._paths) >= self.PATHS_KEPT:
                self._paths.clear()
            path = self._paths[(src, dst)] = tuple(map(sys.intern, self._search(src, dst)))
        return path

    def _search(self, src: str, dst: str) -> list[str]:
        s_here, here = self._end(src, "from")
        s_dst, target = self._end(dst, "to")
        path = [src]
        if src == "host":
            path.append(io_id(s_here))
        if here is not None:
            path.append(f"{cube_id(s_here, here[0])}.{here[1]}")
            if target is None or s_here != s_dst:  # leave the CUBE mesh through the IO chiplet
                path += self._mesh(s_here, here, self._io_place(s_here))
                path.append(io_id(s_here))
                here = None
        path += self._ring(s_here, s_dst)
        if target is not None:
            if here is None:  # enter the mesh at the IO chiplet's CUBE
                here = self._io_place(s_dst)
                path.append(f"{cube_id(s_dst, here[0])}.{here[1]}")
            path += self._mesh(s_dst, here, target)
        path.append(dst)
        return [n for i, n in enumerate(path) if i == 0 or n != path[i - 1]]

    def _end(self, node: str, way: str) -> tuple[int, tuple[int, str] | None]:
        """(SIP, (CUBE, attach router)) of a route's end; no CUBE for the host or an IO chiplet."""
        n = NodeId.parse(node)
        if node == "host" and self.routing.host_sip is not None:
            return self.routing.host_sip, None
        if n.sip is not None and n.cube is None and n.local == "io":
            return n.sip, None
        if n.sip is None or n.cube is None:
            raise RouteError(f"cannot route {way} {node!r}")
        return n.sip, (n.cube, self._attach_router(n))

    def _attach_router(self, n: NodeId) -> str:
        """The router a NoC endpoint inside a CUBE hangs off."""
        local, routing = n.local, self.routing
        router: str | None = None
        if n.pe is not None:
            router = routing.pes_attach[n.pe]
        elif n.slice is not None:
            router = routing.hbm_attach[n.slice]
        elif local in ("sram", "m_cpu"):
            router = routing.sram_attach if local == "sram" else routing.m_cpu_attach
        elif local in self.routers:
            router = local
        if router is None:
            raise RouteError(f"{local!r} is not a NoC endpoint (use a PE's dma/ipcq, an HBM slice, sram)")
        return router

    def _inside(self, s: int, c: int, r_from: str, r_to: str) -> list[str]:
        """Routers from ``r_from`` to ``r_to`` inside one CUBE (the template's least-latency path)."""
        hops = self.template.path(r_from, r_to)
        if hops is None:
            raise RouteError(f"no path from {r_from} to {r_to} inside {cube_id(s, c)}")
        return [f"{cube_id(s, c)}.{r}" for r in hops]

    def _mesh(self, s: int, start: tuple[int, str], end: tuple[int, str]) -> list[str]:
        """From a router of one CUBE to a router of another, XY over SIP ``s``'s mesh via the UCIe PHYs."""
        (here, r_here), (c1, r1) = start, end
        path: list[str] = []
        for nxt, d in self.shape.steps(here, c1) if here != c1 else ():
            path += self._inside(s, here, r_here, self.ucie_at)
            path.append(f"{cube_id(s, here)}.phy.{d}")
            path.append(f"{cube_id(s, nxt)}.phy.{OPPOSITE[d]}")
            here, r_here = nxt, self.ucie_at
        return path + self._inside(s, here, r_here, r1)

    def _ring(self, s0: int, s1: int) -> list[str]:
        """IO chiplets from SIP ``s0`` to ``s1``, the shorter way round (ties go up)."""
        up = (s1 - s0) % self.sips
        step = 1 if up <= self.sips - up else -1
        path, s = [], s0
        while s != s1:
            s = (s + step) % self.sips
            path.append(io_id(s))
        return path

    def _io_place(self, s: int) -> tuple[int, str]:
        if self.io is None:
            raise RouteError(f"sip{s} has no IO chiplet: cannot leave or enter it")
        return self.io
