"""The hop-distance DMA probe (paper Table "probe-pe-dma"): ``kernbench-tui probe``.

From one PE, a DMA read of each size from its local HBM slice, the nearest
slice in the same half of the CUBE, the nearest in the other half, and the
nearest and farthest slice of any other CUBE; then a host→device write and
a device→host read of the source's slice. Each transfer runs alone on a
fresh machine. The table gives the latency at the first size and, per size,

    Util% = (size_bytes / latency_ns) / bottleneck_gbps × 100

where ``bottleneck_gbps`` is the slowest edge of the route the data takes
(memory → initiator for a read, initiator → memory for a write). Then the
invariants the paper names, each with a verdict; exit status 1 if one fails.

Uses only kernbench's public API: topology loading, ``Graph.route`` and the
``Network`` transfer primitives.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from kernbench import sizes
from kernbench.cliargs import OptionParser, description
from kernbench.errors import KernbenchError
from kernbench.outputs import to_json as to_json_text
from kernbench.sim.network import Mode
from kernbench.sizes import size_label
from kernbench.topology.compile import load_topology
from kernbench.topology.graph import Graph
from kernbench_probes.breakdown import Breakdown, with_queueing
from kernbench_probes.cases import HOP_ORDER, CaseFinder, simulate, transfer
from kernbench_probes.results import ProbeResult, Row, Verdict

DEFAULT_SOURCE = "sip0.cube0.pe0"
DEFAULT_SIZES = "32KiB,1MiB"
SHORT = {"local": "local", "same-half": "same-half", "cross-half": "cross-half", "cross-cube-best": "best", "cross-cube-worst": "worst"}


MAX_SIZE_BYTES = 2**30


def parse_size(text: str) -> int:
    """``32KiB`` → 32768; ``1MiB``, ``256B``, ``4096`` (bytes) alike; 1 B .. 1 GiB."""
    try:
        n = sizes.parse_size(text)
    except ValueError:
        n = 0
    if not 0 < n <= MAX_SIZE_BYTES:
        raise argparse.ArgumentTypeError(f"bad size {text!r}: use a count of B, KiB, MiB or GiB from 1 B to 1 GiB")
    return n


def parse_sizes(text: str) -> list[int]:
    sizes = [parse_size(t) for t in text.split(",") if t.strip()]
    if not sizes:
        raise argparse.ArgumentTypeError("--sizes needs at least one size")
    return sizes


def run_probe(graph: Graph, source: str = DEFAULT_SOURCE, sizes: Sequence[int] = (2**15, 2**20), mode: Mode = "fast") -> ProbeResult:
    """The probe table; ``mode`` times the measured transfers (the case choice is always timed fast)."""
    finder = CaseFinder(graph, source, sizes[0])
    rows = []
    for case in finder.find():
        data = graph.route(case.memory, case.initiator) if case.op == "read" else graph.route(case.initiator, case.memory)
        bw = data.bottleneck_gbps
        lat = {s: simulate(graph, case.op, case.initiator, case.memory, s, mode) for s in sizes}
        util = {s: 100.0 * (s / lat[s]) / bw for s in sizes}
        rows.append(Row(case, lat, util, bw))
    first = sizes[0]
    return ProbeResult(graph.name, source, tuple(sizes), tuple(rows), tuple(check_invariants(rows, first)), finder.simulated, mode)


def check_invariants(rows: Sequence[Row], size: int) -> list[Verdict]:
    lat = {r.case.key: r.latency_ns[size] for r in rows}
    out = []
    chain = [k for k in HOP_ORDER if k in lat]
    name = "latency monotonic in hop distance"
    if len(chain) < 2:
        out.append(Verdict(name, None, "fewer than two hop distances on this topology"))
    else:
        parts = [f"{SHORT[chain[0]]} {lat[chain[0]]:.1f}"]
        ok = True
        for a, b in pairwise(chain):
            step_ok = round(lat[a], 9) <= round(lat[b], 9)
            ok &= step_ok
            parts.append(f"{'≤' if step_ok else '>'} {SHORT[b]} {lat[b]:.1f}")
        out.append(Verdict(name, ok, " ".join(parts)))
    name = "D2H read >= H2D write"
    if "d2h-read" in lat and "h2d-write" in lat:
        d, h = lat["d2h-read"], lat["h2d-write"]
        out.append(Verdict(name, round(d, 9) >= round(h, 9), f"D2H {d:.1f} vs H2D {h:.1f}"))
    else:
        out.append(Verdict(name, None, "no host on this topology"))
    name = "cross-CUBE best < worst"
    if "cross-cube-best" in lat and "cross-cube-worst" in lat:
        best, worst = lat["cross-cube-best"], lat["cross-cube-worst"]
        out.append(Verdict(name, round(best, 9) < round(worst, 9), f"best {best:.1f} vs worst {worst:.1f}"))
    else:
        out.append(Verdict(name, None, "one CUBE: no remote slice"))
    return out


def breakdowns(graph: Graph, result: ProbeResult) -> dict[str, Breakdown]:
    """Per case at the first size: where the simulated transfer's time went, and the graph's own charges."""
    size = result.sizes[0]
    out = {}
    for r in result.rows:
        c = r.case
        done = transfer(graph, c.op, c.initiator, c.memory, size, result.timing, explain=True)
        out[c.key] = Breakdown(done.latency_ns, done.parts, with_queueing(graph, c, size, done.latency_ns))
    return out


def to_json(result: ProbeResult, parts: dict[str, Breakdown] | None = None) -> dict[str, Any]:
    """The table and verdicts; latency and Util% are given per size (``{"32KiB": …, "1MiB": …}``);
    with ``parts`` each row also has its ``"breakdown"`` at the first size."""
    doc: dict[str, Any] = {
        "topology": result.topology,
        "timing": result.timing,
        "source": result.source,
        "sizes": [size_label(s) for s in result.sizes],
        "rows": [
            {
                "case": r.case.key,
                "target": r.case.memory,
                "latency_ns": {size_label(s): round(r.latency_ns[s], 6) for s in result.sizes},
                "util_pct": {size_label(s): round(r.util_pct[s], 6) for s in result.sizes},
            }
            for r in result.rows
        ],
        "invariants": [{"name": v.name, "ok": v.ok, "detail": v.detail} for v in result.invariants],
    }
    if parts is not None:
        for row in doc["rows"]:
            row["breakdown"] = parts[row["case"]].as_json()
    return doc


def build_parser(prog: str = "kernbench-tui probe") -> argparse.ArgumentParser:
    p = OptionParser(prog=prog, description=description(__doc__))
    p.add_argument("--topology", default=None, metavar="NAME|PATH", help="named topology or YAML file (default: paper)")
    p.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help="override a topology value (repeatable)"
    )
    p.add_argument("--source", default=DEFAULT_SOURCE, help=f"source PE (default: {DEFAULT_SOURCE})")
    p.add_argument(
        "--sizes", type=parse_sizes, default=parse_sizes(DEFAULT_SIZES), help=f"comma-separated transfer sizes (default: {DEFAULT_SIZES})"
    )
    p.add_argument("--json", action="store_true", help="print the table and verdicts as JSON")
    p.add_argument(
        "--breakdown",
        action="store_true",
        help="where each case's time went at the first size (as `kernbench run --explain` attributes it), "
        "checked against the graph's own charges",
    )
    p.add_argument(
        "--timing",
        choices=("fast", "oracle"),
        default="fast",
        help="fast: trains in closed form (default); oracle: every flit as its own step (same results, slower)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        graph = load_topology(args.topology, args.overrides)
        result = run_probe(graph, args.source, args.sizes, args.timing)
        parts = breakdowns(graph, result) if args.breakdown else None
    except KernbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(to_json_text(to_json(result, parts), indent=2, ensure_ascii=False))
    else:
        from kernbench_probes.render import render_text

        sys.stdout.write(render_text(result, parts))
    return 0 if result.passed else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
