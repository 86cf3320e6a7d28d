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

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

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


class _Builder:
    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.spec = spec
        self.nodes: list[Node] = []
        self.edges: list[Edge] = []
        self.cube = spec["cube"]
        mesh = spec["sip"]["mesh"]
        self.width, self.height = mesh["width"], mesh["height"]
        self._cpu_attrs: dict[str, Any] | None = None

    def node(self, node_id: str, kind: str, overhead_ns: float = 0.0, **attrs: Any) -> None:
        self.nodes.append(Node(node_id, kind, overhead_ns, _freeze(attrs)))

    def link(self, a: str, b: str, link: Mapping[str, Any], kind: str) -> None:
        for src, dst in ((a, b), (b, a)):
            self.edges.append(Edge(src, dst, link["bw_gbps"], link["prop_ns"], kind, len(self.edges)))  # indexed as the graph keeps it

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
                self.node(chiplet, "io_chiplet", io["overhead_ns"], sip=s)
                self.link(chiplet, f"{cube_id(s, io['attach_cube'])}.{io['attach']}", io["link"], "io")
        ring = spec["system"]["sip_ring"]
        if n_sips > 1:
            pairs = {tuple(sorted((s, (s + 1) % n_sips))) for s in range(n_sips)}
            for a, b in sorted(pairs):
                self.link(io_id(a), io_id(b), ring, "pcie")
        host = spec["system"]["host"]
        if host is not None:
            self.node("host", "host", host["overhead_ns"])
            self.link("host", io_id(host["attach_sip"]), host["link"], "pcie")
        frozen = _freeze(dict(spec))
        router = _Router(frozen, _template_paths(_template_key(self.cube)))
        return Graph(spec["name"], self.nodes, self.edges, spec["flit_bytes"], frozen, lambda g, a, b: router.route(a, b))

    def _cube(self, prefix: str, s: int, c: int) -> None:
        cube = self.cube
        x, y = c % self.width, c // self.width
        for name, r in sorted(cube["routers"].items()):
            self.node(f"{prefix}.{name}", "router", r["overhead_ns"], half=r["half"], x=x, y=y)
        for link in cube["links"]:
            self.link(f"{prefix}.{link['a']}", f"{prefix}.{link['b']}", link, "noc")
        attrs = self.spec["pe"]["attrs"]
        cpu_attrs = self._pe_attrs()
        pes = cube["pes"]
        overheads = {
            "cpu": attrs["cpu_overhead_ns"],
            "sched": attrs["sched_overhead_ns"],
            "dma": pes["dma_overhead_ns"],
            "ipcq": attrs["ipcq_overhead_ns"],
        }
        for p, router in enumerate(pes["attach"]):
            pe = f"{prefix}.pe{p}"
            for engine in PE_ENGINES:
                extra = cpu_attrs if engine == "cpu" else {}
                self.node(f"{pe}.{engine}", f"pe_{engine}", overheads.get(engine, 0.0), sip=s, cube=c, pe=p, **extra)
            self.link(f"{pe}.dma", f"{prefix}.{router}", pes["link"], "pe_port")
            self.link(f"{pe}.ipcq", f"{prefix}.{router}", pes["link"], "pe_port")
            tcm = {"bw_gbps": attrs["tcm_bw_gbps"], "prop_ns": 0.0}
            for engine in ("dma", "gemm", "math", "ipcq"):
                self.link(f"{pe}.{engine}", f"{pe}.tcm", tcm, "pe_internal")
        hbm = cube["hbm"]
        n_ch = hbm["channels_per_slice"]
        for k, router in enumerate(hbm["attach"]):
            sl = f"{prefix}.hbm.slice{k}"
            self.node(
                sl,
                "hbm_slice",
                hbm["overhead_ns"],
                sip=s,
                cube=c,
                slice=k,
                channels=n_ch,
                channel_bw_gbps=hbm["channel_bw_gbps"],
                burst_bytes=hbm["burst_bytes"],
                capacity_bytes=hbm["slice_capacity_bytes"],
                **{k: hbm[k] for k in ("banks_per_channel", "row_bytes", "trcd_ns", "trp_ns", "trefi_ns", "trfc_ns")},
            )
            self.link(sl, f"{prefix}.{router}", hbm["link"], "hbm_port")
            for ch in range(n_ch):
                pc = f"{prefix}.hbm.pc{k * n_ch + ch}"
                self.node(pc, "hbm_pc", 0.0, slice=k, channel=ch)
                pc_link = {"bw_gbps": hbm["channel_bw_gbps"], "prop_ns": 0.0}
                self.link(sl, pc, pc_link, "hbm_channel")
        sram = cube["sram"]
        if sram is not None:
            self.node(
                f"{prefix}.sram",
                "sram",
                sram["overhead_ns"],
                sip=s,
                cube=c,
                channels=1,
                channel_bw_gbps=sram["bw_gbps"],
                burst_bytes=self.spec["flit_bytes"],
                capacity_bytes=sram["capacity_bytes"],
            )
            self.link(f"{prefix}.sram", f"{prefix}.{sram['attach']}", sram["link"], "sram_port")
        m_cpu = cube["m_cpu"]
        if m_cpu is not None:
            self.node(f"{prefix}.m_cpu", "m_cpu", m_cpu["overhead_ns"], sip=s, cube=c)
            self.link(f"{prefix}.m_cpu", f"{prefix}.{m_cpu['attach']}", m_cpu["link"], "m_cpu_port")

    def _pe_attrs(self) -> dict[str, Any]:
        """The PE attributes every ``pe_cpu`` node carries, their nested tables frozen once for all PEs."""
        if self._cpu_attrs is None:
            self._cpu_attrs = {k: _freeze(v) for k, v in self.spec["pe"]["attrs"].items()}
        return self._cpu_attrs

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
                self.node(phy, "ucie_phy", ucie["phy_overhead_ns"], sip=s, cube=c, side=d)
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


class _Router:
    """The routes of one topology, each built from named legs (see the module docstring).

    A route leaves its source's CUBE (through the mesh to the IO chiplet when
    it leaves the SIP), goes round the SIP ring, and enters the destination's
    CUBE the same way; every leg returns its own nodes and :meth:`route`
    joins them, dropping a node repeated where two legs meet.
    """

    def __init__(self, spec: Mapping[str, Any], template: CubePaths):
        self.spec = spec
        self.template = template
        self.shape = GridShape.of(spec)
        self.ucie_at = spec["cube"]["ucie_attach"]
        self.io = spec["sip"]["io_chiplet"]
        self.sips = spec["system"]["sips"]

    def route(self, src: str, dst: str) -> list[str]:
        """Node path ``src → … → dst``."""
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
        if node == "host":
            return self.spec["system"]["host"]["attach_sip"], None
        if n.sip is not None and n.cube is None and n.local == "io":
            return n.sip, None
        if n.sip is None or n.cube is None:
            raise RouteError(f"cannot route {way} {node!r}")
        return n.sip, (n.cube, _attach_router(self.spec, n))

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
        return self.io["attach_cube"], self.io["attach"]


def _attach_router(spec: Mapping[str, Any], n: NodeId) -> str:
    """The router a NoC endpoint inside a CUBE hangs off."""
    cube = spec["cube"]
    local = n.local
    router: str
    if n.pe is not None:
        router = cube["pes"]["attach"][n.pe]
    elif n.slice is not None:
        router = cube["hbm"]["attach"][n.slice]
    elif local in ("sram", "m_cpu"):
        router = cube[local]["attach"]
    elif local in cube["routers"]:
        router = local
    else:
        raise RouteError(f"{local!r} is not a NoC endpoint (use a PE's dma/ipcq, an HBM slice, sram)")
    return router
