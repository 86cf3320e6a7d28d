"""The text of ``kernbench run … --explain``: where every nanosecond of the latency went.

By cause and by component kind (each adds up to the latency), the ten
components with the most time on the critical path, then the path itself:
one line per span on it, a transfer's parts folded into one line.
"""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.table import Table

from kernbench.analysis.critical import Attribution, Segment
from kernbench.analysis.steps import Step, path_steps

WIDTH = 110


def explain_text(a: Attribution, path_lines: int | None = None) -> str:
    """The attribution as plain text (``path_lines``: at most this many lines of the path, the last ones)."""
    buf = io.StringIO()
    console = Console(file=buf, width=WIDTH, color_system=None, highlight=False, markup=False, emoji=False)
    total = a.latency_ns
    console.print(f"why {total:,.3f} ns: the critical path, {len(a.path)} segments from 0 to the end")
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
