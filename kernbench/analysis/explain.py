"""The text of ``kernbench run … --explain``: where every nanosecond of the latency went.

By cause and by component kind (each adds up to the latency), the ten
components with the most time on the critical path, then the path itself:
one line per span on it, a transfer's parts folded into one line.
"""

from __future__ import annotations

import io
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from kernbench.analysis.critical import Attribution, Segment
from kernbench.analysis.lines import By, by_source
from kernbench.analysis.steps import Step, path_steps

WIDTH = 110


def explain_text(a: Attribution, path_lines: int | None = None, by: str = "cause") -> str:
    """The attribution as plain text (``path_lines``: at most this many lines of the path, the last ones;
    ``by="line"`` / ``"function"``: the path's time per source line / function of the kernel instead)."""
    buf = io.StringIO()
    console = Console(file=buf, width=WIDTH, color_system=None, highlight=False, markup=False, emoji=False)
    total = a.latency_ns
    console.print(f"why {total:,.3f} ns: the critical path, {len(a.path)} segments from 0 to the end")
    if by in ("line", "function"):
        console.print(lines_table(a, "line" if by == "line" else "function"))
        return buf.getvalue()
    for title, table in (("by cause", a.by_cause), ("by component kind", a.by_component_kind)):
        t = Table(box=box.SIMPLE_HEAD, title=title, title_justify="left", pad_edge=False)
        t.add_column(title.split()[-1])
        t.add_column("ns", justify="right")
        t.add_column("%", justify="right")
        for k, ns in table.items():
            t.add_row(k, f"{ns:,.3f}", f"{_pct(ns, total):.1f}")
        t.add_row("total", f"{sum(table.values()):,.3f}", f"{_pct(sum(table.values()), total):.1f}")
        console.print(t)
    t = Table(box=box.SIMPLE_HEAD, title="top 10 components on the path", title_justify="left", pad_edge=False)
    for col, justify in (("component", "left"), ("cause", "left"), ("ns", "right"), ("%", "right")):
        t.add_column(col, justify=justify)  # type: ignore[arg-type]  # rich's JustifyMethod literal
    for comp, cause, ns in a.top(10):
        t.add_row(comp, cause, f"{ns:,.3f}", f"{_pct(ns, total):.1f}")
    console.print(t)
    lines = path_text(a.path)
    shown = lines if path_lines is None or len(lines) <= path_lines else lines[-path_lines:]
    console.print(
        f"the path ({len(lines)} steps{'' if shown is lines else f', the last {len(shown)}'}): start–end ns, where, what, why then"
    )
    for line in shown:
        console.print(line, soft_wrap=True, markup=False)
    return buf.getvalue()


def lines_table(a: Attribution, by: By = "line", top: int = 25) -> Table:
    """The path's time per source line (function), most first, with the causes inside each."""
    rows = by_source(a, by)
    total = a.latency_ns
    shown = rows[:top]
    title = f"by source {by} ({len(rows)} {by}s{'' if len(shown) == len(rows) else f', the top {len(shown)}'}; they sum to the latency)"
    t = Table(box=box.SIMPLE_HEAD, title=title, title_justify="left", pad_edge=False)
    t.add_column(by, no_wrap=True)
    t.add_column("ns", justify="right", no_wrap=True)
    t.add_column("%", justify="right", no_wrap=True)
    t.add_column("causes inside", max_width=36)
    t.add_column("code", no_wrap=True, overflow="ellipsis", max_width=40)
    for lc in shown:
        causes = ", ".join(f"{c} {_pct(ns, lc.ns):.0f}%" for c, ns in list(lc.causes.items())[:2])
        t.add_row(lc.name, f"{lc.ns:,.3f}", f"{_pct(lc.ns, total):.1f}", causes, lc.text or lc.function)
    if len(shown) < len(rows):
        rest = sum(lc.ns for lc in rows[len(shown) :])
        t.add_row(f"{len(rows) - len(shown)} more", f"{rest:,.3f}", f"{_pct(rest, total):.1f}", "", "")
    t.add_row("total", f"{sum(lc.ns for lc in rows):,.3f}", f"{_pct(sum(lc.ns for lc in rows), total):.1f}", "", "")
    return t


def what_if_text(d: dict[str, Any]) -> str:
    """``--what-if``'s record (:func:`kernbench.analysis.whatif.deltas_json`) as text."""
    buf = io.StringIO()
    console = Console(file=buf, width=WIDTH, color_system=None, highlight=False, markup=False, emoji=False)
    before, after = float(d["before_ns"]), float(d["latency_ns"])
    console.print(f"what if {', '.join(d['changes'])}: the recorded commands re-timed (the kernel did not run again)")
    console.print(f"latency {before:,.3f} ns -> {after:,.3f} ns: {after - before:+,.3f} ns ({_pct(after - before, before):+.1f} %)")
    t = Table(box=box.SIMPLE_HEAD, title="by cause", title_justify="left", pad_edge=False)
    for col in ("cause", "before ns", "after ns", "delta ns"):
        t.add_column(col, justify="left" if col == "cause" else "right")
    causes = sorted(d["by_cause"].items(), key=lambda kv: (-abs(kv[1]["after"] - kv[1]["before"]), kv[0]))
    for cause, v in causes:
        t.add_row(cause, f"{v['before']:,.3f}", f"{v['after']:,.3f}", f"{round(v['after'] - v['before'], 6) + 0.0:+,.3f}")
    console.print(t)
    t = Table(box=box.SIMPLE_HEAD, title="by source line (most moved first)", title_justify="left", pad_edge=False)
    for col in ("line", "before ns", "after ns", "delta ns"):
        t.add_column(col, justify="left" if col == "line" else "right")
    for row in d["by_line"]:
        t.add_row(row["name"], f"{row['before']:,.3f}", f"{row['after']:,.3f}", f"{round(row['delta'], 6) + 0.0:+,.3f}")
    console.print(t)
    return buf.getvalue()


def speedups_text(d: dict[str, Any]) -> str:
    """``--speedups``' record as a small table: each top line, and what the run gains if it took 0 or half its time."""
    buf = io.StringIO()
    console = Console(file=buf, width=WIDTH, color_system=None, highlight=False, markup=False, emoji=False)
    total = float(d["latency_ns"])
    console.print("speedups: the run's gain if a line's work took no time / half its time (re-timed, overlap counted)")
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("line", "on path ns", "%", "gain if 0", "%", "gain if ½", "%"):
        t.add_column(col, justify="left" if col == "line" else "right", no_wrap=True)
    t.add_column("code", no_wrap=True, overflow="ellipsis", max_width=30)
    for r in d["lines"]:
        t.add_row(
            r["name"],
            f"{r['path_ns']:,.1f}",
            f"{_pct(r['path_ns'], total):.1f}",
            f"{r['gain_if_zero_ns']:,.1f}",
            f"{_pct(r['gain_if_zero_ns'], total):.1f}",
            f"{r['gain_if_half_ns']:,.1f}",
            f"{_pct(r['gain_if_half_ns'], total):.1f}",
            r["text"],
        )
    console.print(t)
    return buf.getvalue()


def path_text(path: tuple[Segment, ...] | list[Segment]) -> list[str]:
    """One line per step of the path (:func:`~kernbench.analysis.steps.path_steps`): a transfer's parts
    folded into its line; consecutive spans of one component for one cause (a run of dispatches, of MATH
    ops) share a line."""
    lines = []
    for step in path_steps(path):
        first = step.first
        if step.transfer:
            parts = " · ".join(f"{k} {v:,.1f}" for k, v in step.parts())
            lines.append(f"{_when(step)}  {step.what}: {parts}  [{step.via}]")
        else:
            lines.append(f"{_when(step)}  {first.component}  {step.cause}: {step.what}  [{step.via}]")
    return lines


def _when(step: Step) -> str:
    return f"{step.start_ns:>12,.1f} – {step.end_ns:>12,.1f}"


def _pct(ns: float, total: float) -> float:
    return 100.0 * ns / total if total > 0 else 0.0
