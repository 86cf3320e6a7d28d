"""Compile a validated topology spec into the immutable :class:`Graph`.

Routing is hierarchical and deterministic:

* inside a CUBE, the least-latency path over the router template (Dijkstra,
  ties broken by hop count then by node names), computed once per template;
* between CUBEs of a SIP, XY dimension order over the mesh, leaving and
  entering through the UCIe PHYs (``phy.e``/``phy.w``/``phy.n``/``phy.s``);
  in a torus dimension the shorter way round, ties broken by coordinate
  parity (:mod:`kernbench.topology.shape`);
* between SIPs, the shorter way round the ring of IO chiplets (ties go
  up), reaching the IO chiplet from its attach CUBE.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from kernbench.errors import RouteError, TopologyError
from kernbench.topology.graph import Edge, Graph, Node
from kernbench.topology.shape import GridShape
from kernbench.topology.spec import load_spec

PE_ENGINES = ("cpu", "sched", "dma", "fs", "gemm", "math", "ipcq", "tcm")
OPPOSITE = {"e": "w", "w": "e", "n": "s", "s": "n"}

_ID = re.compile(r"^sip(\d+)\.cube(\d+)\.(.+)$")


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
    return spec["system"]["sips"] * mesh["width"] * mesh["height"] * spec["cube"]["pes"]["count"]


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
        return MappingProxyType({k: _freeze(v) for k, v in obj.items()})
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

    def node(self, node_id: str, kind: str, overhead_ns: float = 0.0, **attrs: Any) -> None:
        self.nodes.append(Node(node_id, kind, overhead_ns, _freeze(attrs)))

    def link(self, a: str, b: str, link: Mapping[str, Any], kind: str) -> None:
        for src, dst in ((a, b), (b, a)):
            self.edges.append(Edge(src, dst, link["bw_gbps"], link["prop_ns"], kind))

    def build(self) -> Graph:
        spec = self.spec
        n_sips = spec["system"]["sips"]
        for s in range(n_sips):
            for c in range(self.width * self.height):
                self._cube(f"sip{s}.cube{c}", s, c)
            self._mesh(s)
            io = spec["sip"]["io_chiplet"]
            if io is not None:
                io_id = f"sip{s}.io"
                self.node(io_id, "io_chiplet", io["overhead_ns"], sip=s)
                attach = f"sip{s}.cube{io['attach_cube']}.{io['attach']}"
                self.link(io_id, attach, io["link"], "io")
        ring = spec["system"]["sip_ring"]
        if n_sips > 1:
            pairs = {tuple(sorted((s, (s + 1) % n_sips))) for s in range(n_sips)}
            for a, b in sorted(pairs):
                self.link(f"sip{a}.io", f"sip{b}.io", ring, "pcie")
        host = spec["system"]["host"]
        if host is not None:
            self.node("host", "host", host["overhead_ns"])
            self.link("host", f"sip{host['attach_sip']}.io", host["link"], "pcie")
        template = _template_paths(_template_key(self.cube))
        return Graph(
            spec["name"],
            self.nodes,
            self.edges,
            spec["flit_bytes"],
            _freeze(dict(spec)),
            lambda g, a, b: _route(g, template, a, b),
        )

    def _cube(self, prefix: str, s: int, c: int) -> None:
        cube = self.cube
        x, y = c % self.width, c // self.width
        for name, r in sorted(cube["routers"].items()):
            self.node(f"{prefix}.{name}", "router", r["overhead_ns"], half=r["half"], x=x, y=y)
        for link in cube["links"]:
            self.link(f"{prefix}.{link['a']}", f"{prefix}.{link['b']}", link, "noc")
        attrs = self.spec["pe"]["attrs"]
        pes = cube["pes"]
        for p, router in enumerate(pes["attach"]):
            pe = f"{prefix}.pe{p}"
            for engine in PE_ENGINES:
                overhead = {
                    "cpu": attrs["cpu_overhead_ns"],
                    "sched": attrs["sched_overhead_ns"],
                    "dma": pes["dma_overhead_ns"],
                    "ipcq": attrs["ipcq_overhead_ns"],
                }.get(engine, 0.0)
                extra = dict(attrs) if engine == "cpu" else {}
                self.node(f"{pe}.{engine}", f"pe_{engine}", overhead, sip=s, cube=c, pe=p, **extra)
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

    def _mesh(self, s: int) -> None:
        shape = GridShape.of(self.spec)
        if shape.cubes == 1:
            return
        ucie = self.spec["sip"]["ucie"]
        inner = self.cube["ucie_link"]
        for c in range(shape.cubes):
            sides = shape.neighbours(c)
            for d, _ in sides:
                phy = f"sip{s}.cube{c}.phy.{d}"
                self.node(phy, "ucie_phy", ucie["phy_overhead_ns"], sip=s, cube=c, side=d)
                self.link(phy, f"sip{s}.cube{c}.{self.cube['ucie_attach']}", inner, "ucie_port")
            # Each link once, from its east / south end (a wrap's is the last column / row).
            for d, nxt in sides:
                if d in ("e", "s"):
                    self.link(f"sip{s}.cube{c}.phy.{d}", f"sip{s}.cube{nxt}.phy.{OPPOSITE[d]}", ucie, "ucie")


# --- routing ---------------------------------------------------------------


def _template_key(cube: Mapping[str, Any]) -> tuple:
    """A hashable form of the CUBE template, for the route cache."""
    routers = tuple(sorted((k, v["overhead_ns"]) for k, v in cube["routers"].items()))
    links = tuple(
        (l["a"], l["b"], l["bw_gbps"], l["prop_ns"]) for l in cube["links"]  # noqa: E741
    )
    return routers, links


@lru_cache(maxsize=16)
def _template_paths(key: tuple) -> Mapping[tuple[str, str], tuple[str, ...]]:
    """All-pairs least-latency router paths within one CUBE template."""
    routers, links = key
    overhead = dict(routers)
    adj: dict[str, list[tuple[str, float]]] = {r: [] for r in overhead}
    for a, b, bw, prop in links:
        for u, v in ((a, b), (b, a)):
            adj[u].append((v, prop + 1.0 / bw + overhead[v]))
    paths: dict[tuple[str, str], tuple[str, ...]] = {}
    for src in sorted(overhead):
        heap: list[tuple[float, int, tuple[str, ...]]] = [(0.0, 0, (src,))]
        done: set[str] = set()
        while heap:
            cost, hops, path = heapq.heappop(heap)
            here = path[-1]
            if here in done:
                continue
            done.add(here)
            paths[(src, here)] = path
            for nxt, w in sorted(adj[here]):
                if nxt not in done:
                    heapq.heappush(heap, (round(cost + w, 9), hops + 1, path + (nxt,)))
    return MappingProxyType(paths)


def _split(node_id: str) -> tuple[int, int, str] | None:
    m = _ID.match(node_id)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), m.group(3)


def _attach_router(g: Graph, local: str) -> str:
    cube = g.spec["cube"]
    if local.startswith("pe"):
        p = int(local[2:].split(".")[0])
        return cube["pes"]["attach"][p]
    if local.startswith("hbm.slice"):
        return cube["hbm"]["attach"][int(local[len("hbm.slice"):])]
    if local in ("sram", "m_cpu"):
        return cube[local]["attach"]
    if local in cube["routers"]:
        return local
    raise RouteError(f"{local!r} is not a NoC endpoint (use a PE's dma/ipcq, an HBM slice, sram)")


def _route(g: Graph, template: Mapping[tuple[str, str], tuple[str, ...]], src: str, dst: str) -> list[str]:
    """Node path ``src → … → dst`` following the routing rules above."""
    spec = g.spec
    shape = GridShape.of(spec)
    ucie_at = spec["cube"]["ucie_attach"]
    io = spec["sip"]["io_chiplet"]
    n_sips = spec["system"]["sips"]

    # A "place" is (sip, cube, router) where the path is inside a CUBE.
    path: list[str] = [src]

    def inside(s: int, c: int, r_from: str, r_to: str) -> None:
        hops = template.get((r_from, r_to))
        if hops is None:
            raise RouteError(f"no path from {r_from} to {r_to} inside sip{s}.cube{c}")
        for r in hops:
            nid = f"sip{s}.cube{c}.{r}"
            if path[-1] != nid:
                path.append(nid)

    def across_mesh(s: int, c0: int, r0: str, c1: int, r1: str) -> None:
        if c0 == c1:
            inside(s, c0, r0, r1)
            return
        here, r_here = c0, r0
        for nxt, d in shape.steps(c0, c1):
            inside(s, here, r_here, ucie_at)
            path.append(f"sip{s}.cube{here}.phy.{d}")
            path.append(f"sip{s}.cube{nxt}.phy.{OPPOSITE[d]}")
            here, r_here = nxt, ucie_at
        inside(s, here, r_here, r1)

    def ring(s0: int, s1: int) -> None:
        up = (s1 - s0) % n_sips
        step = 1 if up <= n_sips - up else -1
        s = s0
        while s != s1:
            s = (s + step) % n_sips
            path.append(f"sip{s}.io")

    def io_place(s: int) -> tuple[int, str]:
        if io is None:
            raise RouteError(f"sip{s} has no IO chiplet: cannot leave or enter it")
        return io["attach_cube"], io["attach"]

    # Where the path starts.
    if src == "host" or src.endswith(".io"):
        s_here = spec["system"]["host"]["attach_sip"] if src == "host" else int(src[3:].split(".")[0])
        if src == "host":
            path.append(f"sip{s_here}.io")
        place = None
    else:
        parts = _split(src)
        if parts is None:
            raise RouteError(f"cannot route from {src!r}")
        s_here, c, local = parts
        place = (c, _attach_router(g, local))
        path.append(f"sip{s_here}.cube{c}.{place[1]}")

    # Where it ends.
    if dst == "host" or dst.endswith(".io"):
        s_dst = spec["system"]["host"]["attach_sip"] if dst == "host" else int(dst[3:].split(".")[0])
        target = None
    else:
        parts = _split(dst)
        if parts is None:
            raise RouteError(f"cannot route to {dst!r}")
        s_dst, c_dst, local_dst = parts
        target = (c_dst, _attach_router(g, local_dst))

    if place is not None and (target is None or s_here != s_dst):
        ci, ri = io_place(s_here)
        across_mesh(s_here, place[0], place[1], ci, ri)
        path.append(f"sip{s_here}.io")
        place = None
    if s_here != s_dst:
        ring(s_here, s_dst)
    if target is not None:
        if place is None:
            ci, ri = io_place(s_dst)
            path.append(f"sip{s_dst}.cube{ci}.{ri}")
            place = (ci, ri)
        across_mesh(s_dst, place[0], place[1], target[0], target[1])
    if path[-1] != dst:
        path.append(dst)
    # Drop immediate repeats (e.g. host→io when src is the io itself).
    out = [path[0]]
    for n in path[1:]:
        if n != out[-1]:
            out.append(n)
    return out
