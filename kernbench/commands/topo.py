"""``kernbench topo show|list``: what a topology compiles to.

``show`` prints node and edge counts by kind, the PE/CUBE/SIP hierarchy and
mesh or torus shape with its diameter, bandwidth facts (bisection over UCIe, the SIP ring, HBM per
PE, per CUBE and for the system) and one example route hop by hop with its
header latency; ``show --params`` every parameter with its unit and where
its value comes from (``[hw]``, ``[cal]``, the schema's default, ``--set``);
``show --yaml`` the resolved document, which loads back as the same
topology. ``list`` prints the named topologies that ship with kernbench.
All but ``--yaml`` take ``--json``.
"""

from __future__ import annotations

import argparse
import io
import re
from collections import Counter
from typing import Any

from rich import box
from rich.console import Console, JustifyMethod, RenderableType
from rich.table import Table
from rich.text import Text

from kernbench.cliargs import description
from kernbench.errors import KernbenchError
from kernbench.outputs import to_json
from kernbench.topology.compile import check_size, load_topology, pe_count
from kernbench.topology.digest import topology_digest
from kernbench.topology.graph import Graph, Route
from kernbench.topology.params import SOURCES, Param, parameters
from kernbench.topology.shape import GridShape
from kernbench.topology.spec import DEFAULT_TOPOLOGY, Resolved, load_resolved, load_spec, named_topologies
from kernbench.topology.yamlout import resolved_yaml, scalar, without_set

WIDTH = 120
PARAMS_WIDTH = 1 << 16  # room to measure any --params row (the table is printed at its own width)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = subparsers.add_parser("topo", help="inspect topologies", description=description(__doc__))
    sub = p.add_subparsers(dest="topo_command", metavar="ACTION", required=True)
    show = sub.add_parser("show", help="summarize a topology: counts, bandwidths, an example route")
    show.add_argument("topology", nargs="?", default=None, metavar="NAME|PATH", help="named topology or YAML file (default: paper)")
    show.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help="override a topology value (repeatable)"
    )
    show.add_argument(
        "--route", nargs=2, metavar=("SRC", "DST"), help="node ids of the example route (default: first PE's DMA to the last HBM slice)"
    )
    show.add_argument("--json", action="store_true", help="print one JSON object (with --params: a list, one object per parameter)")
    show.add_argument(
        "--params", action="store_true", help="list every parameter (after --set, defaults filled in) with its unit and provenance"
    )
    show.add_argument(
        "--yaml", action="store_true", help="print the resolved topology as YAML (after --set; name and description say it was changed)"
    )
    listing = sub.add_parser("list", help="list the named topologies")
    listing.add_argument("--json", action="store_true", help="print a JSON list")
    return p


def run(args: argparse.Namespace) -> int:
    if args.topo_command == "list":
        rows = list_data()
        text = to_json(rows, indent=2) + "\n" if args.json else render_list(rows)
    elif args.params or args.yaml:
        text = inspect_text(args)
    else:
        graph = load_topology(args.topology, args.overrides)
        ends = tuple(args.route) if args.route else None
        text = to_json(show_data(graph, ends), indent=2) + "\n" if args.json else render_show(graph, ends)
    print(text, end="")
    return 0


def list_data() -> list[dict[str, Any]]:
    out = []
    for name in named_topologies():
        spec = load_spec(name)
        out.append({"name": name, "pes": pe_count(spec), "description": spec.get("description") or ""})
    return out


def show_data(graph: Graph, route_ends: tuple[str, str] | None = None) -> dict[str, Any]:
    """What ``topo show`` prints, as numbers."""
    spec = graph.spec
    mesh = spec["sip"]["mesh"]
    nodes, edges = graph.kind_counts()
    slices = graph.nodes_of_kind("hbm_slice")
    doc: dict[str, Any] = {
        "name": graph.name,
        "description": spec.get("description") or "",
        "sips": spec["system"]["sips"],
        "mesh": {"width": mesh["width"], "height": mesh["height"]},
        "pes": len(graph.nodes_of_kind("pe_cpu")),
        "flit_bytes": graph.flit_bytes,
        "nodes": {"total": len(graph.nodes), **dict(sorted(nodes.items()))},
        "edges": {"total": len(graph.edges), **dict(sorted(edges.items()))},
        "topology_digest": topology_digest(spec),  # (what a run record on it says: docs/output.md)
    }
    if slices:
        a = slices[0].attrs
        doc["hbm_slice_gbps"] = a["channels"] * a["channel_bw_gbps"]
        doc["hbm_system_gbps"] = a["channels"] * a["channel_bw_gbps"] * len(slices)
    ends = route_ends or _default_route(graph)
    if ends is not None:
        route = graph.route(*ends)
        doc["example_route"] = {
            "src": ends[0],
            "dst": ends[1],
            "hops": [
                {
                    "edge": h.edge.id,
                    "kind": h.edge.kind,
                    "bw_gbps": h.edge.bw_gbps,
                    "prop_ns": h.prop_ns,
                    "flit_ns": h.flit_ns,
                    "next_overhead_ns": h.next_overhead_ns,
                }
                for h in route.hops
            ],
            "header_ns": route.header_ns,
            "bottleneck_gbps": route.bottleneck_gbps if route.hops else None,  # (a node to itself crosses no link)
        }
    return doc


# --- rendering ---------------------------------------------------------------


def _render(*items: RenderableType) -> str:
    buf = io.StringIO()
    con = Console(file=buf, width=WIDTH, color_system=None, force_terminal=False, highlight=False, markup=False, emoji=False)
    for item in items:
        con.print(item)
    return "".join(line.rstrip() + "\n" for line in buf.getvalue().splitlines())


def _natural(node_id: str) -> tuple[int | str, ...]:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", node_id))


def _gbps(x: float) -> str:
    return f"{x:g} GB/s"


def render_list(rows: list[dict[str, Any]] | None = None) -> str:
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col in ("name", "PEs", "description"):
        t.add_column(col)
    for row in rows if rows is not None else list_data():
        t.add_row(row["name"], str(row["pes"]), row["description"])
    return _render(t)


def _counts(graph: Graph) -> Table:
    nodes, edges = graph.kind_counts()
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    t.add_column("node kind")
    t.add_column("count", justify="right")
    t.add_column("  edge kind (directed)")
    t.add_column("count", justify="right")
    nk, ek = sorted(nodes.items()), sorted(edges.items())
    for i in range(max(len(nk), len(ek))):
        a = nk[i] if i < len(nk) else ("", "")
        b = ek[i] if i < len(ek) else ("", "")
        t.add_row(a[0], str(a[1]), f"  {b[0]}", str(b[1]))
    t.add_section()
    t.add_row("total", str(len(graph.nodes)), "  total", str(len(graph.edges)))
    return t


def _cut_links(graph: Graph, axis: int, size: int) -> tuple[int, float]:
    """UCIe links crossing the mid-plane of one SIP's mesh along ``axis`` (one direction)."""
    width = graph.spec["sip"]["mesh"]["width"]
    mid = size // 2
    links, bw = 0, 0.0
    for e in graph.edges:
        if e.kind != "ucie":
            continue
        a, b = graph.nodes[e.src].attrs, graph.nodes[e.dst].attrs
        if a["sip"] != 0:
            continue
        pa = (a["cube"] % width, a["cube"] // width)[axis]
        pb = (b["cube"] % width, b["cube"] // width)[axis]
        if pa < mid <= pb:
            links += 1
            bw += e.bw_gbps
    return links, bw


def _shape_text(shape: GridShape) -> str:
    if shape.cubes == 1:
        return "1 × 1"
    if not shape.is_torus:
        return f"{shape.width} × {shape.height} (XY routing over UCIe)"
    return f"{shape.describe()}, XY routing over UCIe the shorter way round"


def _facts(graph: Graph) -> Table:
    spec = graph.spec
    mesh = spec["sip"]["mesh"]
    sips = spec["system"]["sips"]
    slices = sorted(graph.nodes_of_kind("hbm_slice"), key=lambda n: _natural(n.id))
    cubes = sorted({(n.attrs["sip"], n.attrs["cube"]) for n in slices})
    pes = graph.nodes_of_kind("pe_cpu")
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, show_header=False)
    t.add_column("fact")
    t.add_column("value")
    t.add_row("SIPs × CUBEs × PEs", f"{sips} × {len(cubes) // max(sips, 1)} × {len(pes) // max(len(cubes), 1)} = {len(pes)} PEs")
    shape = GridShape.of(spec)
    kind = "torus" if shape.is_torus else "mesh"
    t.add_row(f"CUBE {kind} per SIP", _shape_text(shape))
    if shape.is_torus:
        t.add_row("torus tie-break", "half-way round: east/south from an even coordinate, west/north from an odd one")
    if shape.cubes > 1:
        t.add_row(f"{kind} diameter", f"{shape.diameter} UCIe hop(s) between the farthest CUBEs")
    sizes = [(axis, size, name) for axis, size, name in ((0, mesh["width"], "x"), (1, mesh["height"], "y")) if size > 1]
    balanced = [c for c in sizes if c[1] % 2 == 0]
    cuts = [(_cut_links(graph, axis, size), name) for axis, size, name in balanced or sizes]
    if cuts:
        (links, bw), name = min(cuts, key=lambda c: (c[0][1], c[1]))
        note = "" if balanced else "; no cut halves an odd grid, this one is the nearest"
        t.add_row(f"{kind} bisection (UCIe)", f"{_gbps(bw)} per direction ({links} links across the {name} mid-plane{note})")
    else:
        t.add_row("mesh bisection (UCIe)", "one CUBE per SIP: no UCIe links")
    ring = [
        e for e in graph.edges if e.kind == "pcie" and graph.nodes[e.src].kind == "io_chiplet" and graph.nodes[e.dst].kind == "io_chiplet"
    ]
    if ring:
        pairs = len({tuple(sorted((e.src, e.dst))) for e in ring})
        cut = 1 if pairs == 1 else 2
        t.add_row(
            "SIP ring (PCIe)",
            f"{sips} SIPs, {pairs} link(s) of {_gbps(ring[0].bw_gbps)} per direction; ring bisection {_gbps(cut * ring[0].bw_gbps)} per direction",
        )
    else:
        t.add_row("SIP ring (PCIe)", "one SIP: no ring")
    if "host" in graph.nodes:
        host = graph.edge("host", graph.successors["host"][0])
        t.add_row("host link", f"{_gbps(host.bw_gbps)}, {host.prop_ns:g} ns, to {host.dst}")
    if slices:
        a = slices[0].attrs
        per_slice = a["channels"] * a["channel_bw_gbps"]
        port = min(e.bw_gbps for e in graph.edges if e.src == slices[0].id and e.kind == "hbm_port")
        per_cube = per_slice * len(slices) / len(cubes)
        ch_per_cube = a["channels"] * len(slices) // len(cubes)
        t.add_row(
            "HBM per PE (slice)",
            f"{a['channels']} pseudo-channels × {_gbps(a['channel_bw_gbps'])} = {_gbps(per_slice)}; slice port {_gbps(port)}",
        )
        t.add_row("HBM per CUBE", f"{len(slices) // len(cubes)} slices, {ch_per_cube} pseudo-channels, {_gbps(per_cube)}")
        t.add_row("HBM system", f"{len(cubes)} CUBE(s), {_gbps(per_cube * len(cubes))}")
    sram = graph.nodes_of_kind("sram")
    if sram:
        link = next(e for e in graph.edges if e.src == sram[0].id)
        t.add_row("shared SRAM per CUBE", f"{sram[0].attrs['capacity_bytes'] // 2**20} MiB on a {_gbps(link.bw_gbps)} link")
    t.add_row("flit", f"{graph.flit_bytes} B")
    t.add_row("topology digest", topology_digest(spec))
    return t


def _default_route(graph: Graph) -> tuple[str, str] | None:
    dmas = sorted((n.id for n in graph.nodes_of_kind("pe_dma")), key=_natural)
    slices = sorted((n.id for n in graph.nodes_of_kind("hbm_slice")), key=_natural)
    return (dmas[0], slices[-1]) if dmas and slices else None


def _route_table(graph: Graph, route: Route) -> Table:
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("#", "right"),
        ("edge", "left"),
        ("kind", "left"),
        ("bw GB/s", "right"),
        ("prop ns", "right"),
        ("flit ns", "right"),
        ("next node overhead ns", "right"),
    )
    for col, just in columns:
        t.add_column(col, justify=just)
    for i, h in enumerate(route.hops, 1):
        t.add_row(str(i), h.edge.id, h.edge.kind, f"{h.edge.bw_gbps:g}", f"{h.prop_ns:g}", f"{h.flit_ns:.3g}", f"{h.next_overhead_ns:g}")
    return t


def render_show(graph: Graph, route_ends: tuple[str, str] | None = None) -> str:
    items: list[RenderableType] = [
        f"topology {graph.name} · {graph.spec.get('description') or ''}".rstrip(" ·"),
        "",
        _facts(graph),
        "",
        _counts(graph),
    ]
    ends = route_ends or _default_route(graph)
    if ends is not None:
        route = graph.route(*ends)
        one_flit = route.header_ns + sum(h.flit_ns for h in route.hops)
        items += [
            "",
            f"example route {ends[0]} → {ends[1]}: {len(route)} hops, source overhead {route.src_overhead_ns:g} ns",
            _route_table(graph, route),
            f"header latency (zero-payload packet: overheads + propagation) {route.header_ns:.3f} ns; "
            f"one {graph.flit_bytes} B flit {one_flit:.3f} ns; bottleneck {_gbps(route.bottleneck_gbps) if route.hops else 'none'}",
        ]
    return _render(*items)


# --- show --params / --yaml ------------------------------------------------------


def inspect_text(args: argparse.Namespace) -> str:
    """What ``topo show --params`` or ``--yaml`` prints."""
    refuse_flag_combinations(args)
    resolved = load_resolved(args.topology, args.overrides)
    check_size(resolved.spec)  # what is printed is a topology that compiles
    params = parameters(resolved)
    origin = args.topology or DEFAULT_TOPOLOGY
    if args.yaml:
        return resolved_yaml(resolved, params, origin)
    if args.json:
        return to_json([p.as_json() for p in params], indent=2) + "\n"
    return render_params(resolved, params)


def refuse_flag_combinations(args: argparse.Namespace) -> None:
    """``--route`` belongs to the summary, ``--json`` is not YAML: one ``error:`` line naming the flags."""
    if args.params and args.yaml:
        raise KernbenchError("--params lists the parameters and --yaml prints the document; give one of them")
    view = "--params" if args.params else "--yaml"
    if args.route:
        raise KernbenchError(f"--route picks the summary's example route; it does not apply to {view} (drop one of them)")
    if args.yaml and args.json:
        raise KernbenchError("--yaml prints YAML and --json prints JSON; give one of them (--json also goes with --params)")


#: the --params table's columns: heading, how it is justified
PARAM_COLUMNS: tuple[tuple[str, JustifyMethod], ...] = (
    ("parameter", "left"),
    ("value", "right"),
    ("unit", "left"),
    ("source", "left"),
    ("comment in the file (for a default: the schema's meaning)", "left"),
)


def render_params(resolved: Resolved, params: list[Param]) -> str:
    name, description = str(resolved.spec["name"]), str(resolved.spec.get("description") or "")
    counts = Counter(p.source for p in params)
    tally = ", ".join(f"{counts[s]} {s}" for s in SOURCES if counts[s])
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for heading, justify in PARAM_COLUMNS:
        t.add_column(heading, justify=justify, no_wrap=True)
    for p in params:
        t.add_row(*(Text(cell) for cell in (p.key, scalar(p.value), p.unit, p.source, _note(p))))
    return _render_unwrapped(
        Text(f"topology {name} · {description}".rstrip(" ·")),
        f"{len(params)} parameters: {tally}",
        "",
        t,
    )


def _render_unwrapped(*items: RenderableType) -> str:
    """Like :func:`_render`, one line per table row however long (so ``grep`` finds a whole row)."""
    buf = io.StringIO()
    con = Console(file=buf, width=PARAMS_WIDTH, color_system=None, force_terminal=False, highlight=False, emoji=False)
    con.width = max(con.measure(item).maximum for item in items)
    for item in items:
        con.print(item)
    return "".join(line.rstrip() + "\n" for line in buf.getvalue().splitlines())


def _note(p: Param) -> str:
    if p.source == "--set":
        return f"--set {p.set_by} · {without_set(p.was)}"
    if p.source == "default":
        return p.help
    return p.comment
