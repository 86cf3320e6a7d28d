"""The probe's table, invariant verdicts and breakdowns as plain text (rich).

Rendered into a string at a fixed width with no colour, so the output reads
the same on a terminal, in a pipe and in a snapshot file.
"""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.table import Table

from kernbench.sizes import size_label
from kernbench_probes.breakdown import Breakdown
from kernbench_probes.results import PAPER_REFERENCE, ProbeResult

WIDTH = 120
VERDICT = {True: "PASS", False: "FAIL", None: "SKIP"}


def _console(buf: io.StringIO) -> Console:
    return Console(file=buf, width=WIDTH, color_system=None, force_terminal=False, highlight=False, markup=False, emoji=False)


def _table(result: ProbeResult) -> Table:
    first = result.sizes[0]
    paper = result.topology == "paper"
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    t.add_column("case")
    t.add_column("target")
    t.add_column(f"latency ns ({size_label(first)})", justify="right")
    if paper:
        t.add_column("paper", justify="right")
    for s in result.sizes:
        t.add_column(f"Util% {size_label(s)}", justify="right")
        if paper:
            t.add_column("paper", justify="right")
    for r in result.rows:
        ref = PAPER_REFERENCE.get(r.case.key)
        cells = [r.case.label, r.case.memory, f"{r.latency_ns[first]:.1f}"]
        if paper:
            cells.append(f"{ref[0]:.1f}" if ref else "")
        for s in result.sizes:
            cells.append(f"{r.util_pct[s]:.1f}")
            if paper:
                v = ref[1].get(size_label(s)) if ref else None
                cells.append(f"{v:.1f}" if v is not None else "")
        t.add_row(*cells)
    return t


def _breakdown(label: str, b: Breakdown) -> Table:
    t = Table(title=f"{label}: where the time went", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    t.add_column("where")
    t.add_column("cause")
    t.add_column("ns", justify="right")
    for where, cause, ns in b.rows():
        t.add_row(where, cause, f"{ns:.3f}")
    t.add_section()
    for cause, ns in b.by_cause().items():
        t.add_row("", f"all {cause}", f"{ns:.3f}")
    t.add_row("", "latency", f"{b.latency_ns:.3f}")
    charged = sum(c.ns for c in b.charges if c.what != "queueing")
    t.add_row("", "graph's own charges", f"{charged:.3f}")
    t.add_row("", "simulated − charges", f"{b.charges[-1].ns:.3f}")
    return t


def render_text(result: ProbeResult, breakdowns: dict[str, Breakdown] | None = None) -> str:
    buf = io.StringIO()
    con = _console(buf)
    sizes = ", ".join(size_label(s) for s in result.sizes)
    timing = "" if result.timing == "fast" else f" · timing {result.timing}"
    con.print(f"DMA probe · topology {result.topology} · source {result.source} · sizes {sizes} · idle machine{timing}")
    con.print()
    con.print(_table(result))
    con.print()
    con.print("Util% = (size / latency) / bottleneck-edge bandwidth of the data path")
    con.print()
    con.print("invariants")
    for v in result.invariants:
        con.print(f"  {VERDICT[v.ok]}  {v.name}: {v.detail}")
    if breakdowns:
        first = result.sizes[0]
        for r in result.rows:
            con.print()
            con.print(_breakdown(f"{r.case.label} ({r.case.op} {size_label(first)})", breakdowns[r.case.key]))
    return "".join(line.rstrip() + "\n" for line in buf.getvalue().splitlines())
