"""``kernbench compare A B``: two runs side by side, and what moved the latency.

Each side is a ``.kbtrace`` file or a run written as one argument, the
kernel and its ``kernbench run`` options: ``"gqa-decode --variant opt3"``,
``"gemm-primitive --layout naive --topology sip2x2"``. Both sides are read
(or simulated, events recorded) and summarized from their events alike:
latency, commands, dispatch cycles, per-engine utilization, PE_CPU stalls,
and the critical-path attribution; then B − A for each, the attribution
delta by cause, by component kind, and the components that gained or lost
the most. ``--json`` prints ``{"schema", "a", "b", "delta"}``: each side a run
record (:mod:`kernbench.record`, with ``side``: the side as written), the
delta B − A of its numbers under the same names.

Two run sides simulate at once, each in its own process, when this process
may use two CPUs; a line on stderr (a terminal only) says how each is doing.
``--trace``/``--perfetto`` inside a run side save that side's events.
"""

from __future__ import annotations

import argparse
import io
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from rich import box
from rich.console import Console
from rich.table import Table

from kernbench.analysis.summary import RunSummary, fidelity_of, summarize
from kernbench.cliargs import description
from kernbench.commands import fidelity_check
from kernbench.commands.run import wall_limit_in
from kernbench.commands.sides import RunSide, Side, SideError, TraceSide, check_side, parse_side
from kernbench.errors import KernbenchError
from kernbench.limits import supervised
from kernbench.outputs import to_json
from kernbench.printable import printable

if TYPE_CHECKING:
    from kernbench.events.tracefile import Trace

K = TypeVar("K", bound=Hashable)
WIDTH = 110
TOP_CHANGES = 10


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "compare", help="two runs (or trace files) side by side, and the attribution delta", description=description(__doc__)
    )
    p.add_argument("a", metavar="A", help='a .kbtrace file, or "KERNEL [options]" as for kernbench run')
    p.add_argument("b", metavar="B", help="the other side, the same way")
    p.add_argument("--json", action="store_true", help="print one JSON object {schema, a, b, delta}")
    p.add_argument(
        "--check-fidelity",
        action="store_true",
        help="rerun both sides at every level of the model (paper, credit, full) and say whether the winner holds "
        "(a trace side: its run made again as its metadata says)",
    )
    return p


def run(args: argparse.Namespace) -> int:
    checked: list[tuple[str, Side, Trace | argparse.Namespace]] = []
    for which, text in (("A", args.a), ("B", args.b)):  # check both before simulating either
        try:
            side = parse_side(text)
            with supervised(wall_limit_in(side.argv) if isinstance(side, RunSide) else None, f"compare {which}: {side.text}"):
                checked.append((which, side, check_side(side)))  # (a kernel file's import and option rules)
        except SideError as exc:
            raise KernbenchError(f"compare {which}: {exc}") from None
    _check_outputs_apart(checked)
    reruns = _reruns(checked) if args.check_fidelity else {}
    a, b = load_sides(checked)
    levels = _fidelity_levels(checked, a, b, reruns) if args.check_fidelity else None
    if args.json:
        out = compare_json(a, b)
        if levels is not None:
            out["fidelity_check"] = fidelity_check.compare_json(levels)
        print(to_json(out, indent=2, sort_keys=False))
    else:
        print(compare_text(a, b), end="")
        if levels is not None:
            print(fidelity_check.compare_text(levels), end="")
    return 0


def _reruns(checked: list[tuple[str, Side, Trace | argparse.Namespace]]) -> dict[str, list[str]]:
    """``--check-fidelity`` reruns each side: a trace's run as its metadata says it was made
    (:mod:`kernbench.commands.rerun`), by side; refused, saying why, when it does not say."""
    from kernbench.commands.rerun import NotRerunnable, rerun_argv

    out = {}
    for which, side, trace in checked:
        if isinstance(side, TraceSide):
            assert not isinstance(trace, argparse.Namespace)
            try:
                out[which] = rerun_argv(trace.metadata)
            except NotRerunnable as exc:
                raise KernbenchError(
                    f"compare {which}: --check-fidelity reruns each side, and {side.text} cannot be run again: {exc}"
                ) from None
    return out


def _fidelity_levels(
    checked: list[tuple[str, Side, Trace | argparse.Namespace]], a: RunSummary, b: RunSummary, reruns: Mapping[str, list[str]]
) -> list[fidelity_check.LevelCompare]:
    """Both sides at every level. A run side's level it ran at is not run again; a trace's run is made again at
    every level (``reruns``: its arguments), and its own level must give the trace's latency, or it is another run."""
    argv = {which: list(side.argv) if isinstance(side, RunSide) else reruns[which] for which, side, _ in checked}
    own = {which: _fidelity_of(what) for which, _side, what in checked}
    known = {own["A"]: (a.latency_ns, b.latency_ns)} if own["A"] == own["B"] and not reruns else {}
    levels = fidelity_check.compare_levels((argv["A"][0], argv["A"][1:]), (argv["B"][0], argv["B"][1:]), known)
    for which, summary in (("A", a), ("B", b)):
        if which in reruns:
            at = next(lv for lv in levels if lv.fidelity == own[which])
            again = at.a_ns if which == "A" else at.b_ns
            if again != summary.latency_ns:
                raise KernbenchError(
                    f"compare {which}: made again at {own[which]} fidelity, {summary.name} takes {again:,.3f} ns, not the trace's "
                    f"{summary.latency_ns:,.3f} ns: its kernel, topology or kernbench changed since it was saved, and the other "
                    "levels would be another run's"
                )
    return levels


def _fidelity_of(what: Trace | argparse.Namespace) -> str:
    """The level a side ran at: a run's option, a trace's metadata."""
    return str(what.fidelity) if isinstance(what, argparse.Namespace) else fidelity_of(what.metadata)


def _check_outputs_apart(checked: list[tuple[str, Side, Trace | argparse.Namespace]]) -> None:
    """Two sides may not write one file, nor write a trace the other side reads."""
    from kernbench.outputs import check_outputs

    outputs, inputs = [], []
    for which, side, what in checked:
        if isinstance(side, TraceSide):
            inputs.append(side.path)
        elif isinstance(what, argparse.Namespace):
            outputs += [(f"compare {which} --{flag}", path) for flag in ("trace", "perfetto") if (path := getattr(what, flag))]
    check_outputs(outputs, inputs=inputs)


def compare_json(a: RunSummary, b: RunSummary) -> dict[str, object]:
    """``--json``'s object: the two sides as run records and B − A (``kernbench.compare/1``)."""
    from kernbench.record import COMPARE_SCHEMA

    return {"schema": COMPARE_SCHEMA, "a": side_json(a), "b": side_json(b), "delta": delta(a, b)}


def side_json(s: RunSummary) -> dict[str, object]:
    return {"side": s.name, **s.as_json()}


SIDES = ("A", "B")
#: where each run side writes how far it has got, (t_ns, commands) per side in SIDES order: shared memory the
#: parent reads for its progress line (set in each side's process, or here when the sides run here)
_reached: Any = None


def _share_progress(reached: Any) -> None:
    global _reached
    _reached = reached


def _shared_progress() -> Any:
    """Memory the sides' processes can write their progress into, or None where the OS gives none
    (it is a file in a temporary folder: a full disk or ``ulimit -f`` refuse it; the line then says less)."""
    import multiprocessing

    try:
        return multiprocessing.get_context("spawn").Array("d", 2 * len(SIDES), lock=False)
    except OSError:
        return None


def load_sides(checked: list[tuple[str, Side, Trace | argparse.Namespace]]) -> list[RunSummary]:
    """Each side's summary: a trace's read here, the runs simulated (at once, in two processes, when two CPUs are free)."""
    from kernbench.progress import compare_progress, stderr_is_terminal
    from kernbench.sweep.executors import in_processes, in_this_process, usable_cpus

    out: dict[str, RunSummary] = {}
    tasks = [SideTask(which, side.argv) for which, side, _trace in checked if isinstance(side, RunSide)]
    shown = stderr_is_terminal()
    reached = _shared_progress() if shown else None
    _share_progress(reached)

    def so_far(which: str) -> tuple[float, int]:
        i = 2 * SIDES.index(which)
        return (reached[i], int(reached[i + 1])) if reached is not None else (0.0, 0)

    with compare_progress([which for which, _side, _trace in checked], shown, so_far) as done:
        for which, side, trace in checked:
            if isinstance(side, TraceSide):
                assert not isinstance(trace, argparse.Namespace)
                out[which] = summarize(trace.store, side.text, trace.metadata.end_ns or None, trace.metadata)
                done(which)
        jobs = min(len(tasks), usable_cpus())
        results = (
            in_processes(run_side, tasks, jobs, "a compare process", _share_progress if reached is not None else None, (reached,))
            if jobs > 1
            else in_this_process(run_side, tasks)
        )
        for which, summary, error in results:
            if error is not None:
                raise KernbenchError(f"compare {which}: {error}")
            assert summary is not None
            out[which] = summary
            done(which)
    return [out[which] for which, _side, _trace in checked]


@dataclass(frozen=True)
class SideTask:
    which: str  # A or B
    argv: tuple[str, ...]  # the kernel and its options


def run_side(task: SideTask) -> tuple[str, RunSummary | None, str | None]:
    """Simulate one run side, events recorded, to its summary (saving its ``--trace``/``--perfetto``);
    a failure comes back as its message. Runs in a process of its own, or here."""
    from kernbench.commands.run import _meta, figures_of, limits_of, prepare, report, save_outputs

    side = RunSide(task.argv)
    try:
        with supervised(wall_limit_in(side.options), side.text):  # its set-up, rules, run and check
            spec, ns, rt, prepared, params = prepare(side.kernel, side.options)
            progress = _progress_of(task.which)
            result = rt.run(record=True, limits=limits_of(ns), progress=progress)
            if progress is not None:  # where it ended (a run shorter than one report made none)
                progress(result.latency_ns, result.total_commands)
            data = report(spec, rt, prepared, result, params, overrides=ns.overrides)  # (its check and figures, as run --json's)
            meta = _meta(spec, rt, prepared, params, ns, result.latency_ns, data["max_abs_err"], figures=figures_of(data))
        store = result.store()
        if ns.trace or ns.perfetto:
            save_outputs(ns.trace, ns.perfetto, store, meta)
    except KernbenchError as exc:
        return task.which, None, str(exc)
    return task.which, summarize(store, side.text, result.latency_ns, meta), None


def _progress_of(which: str) -> Callable[[float, int], None] | None:
    """A run's ``progress(t_ns, commands)`` writing into the side's place in :data:`_reached` (None without it)."""
    reached, i = _reached, 2 * SIDES.index(which)
    if reached is None:
        return None

    def progress(t_ns: float, commands: int) -> None:
        reached[i], reached[i + 1] = t_ns, commands

    return progress


def delta(a: RunSummary, b: RunSummary) -> dict[str, object]:
    """B − A of every number of the run record, under its name; the attribution's by cause, component kind and component."""
    out: dict[str, object] = {
        "latency_ns": _round(b.latency_ns - a.latency_ns, 6),
        "latency_pct": round(_pct(b.latency_ns - a.latency_ns, a.latency_ns), 3),
        "pes": b.pes - a.pes,
        "commands": b.commands - a.commands,
        "dispatch_cycles": _round(b.dispatch_cycles - a.dispatch_cycles, 6),
        "stall_ns": _round(b.stall_ns - a.stall_ns, 6),
        "stall_ns_by_reason": _sub(b.stall_ns_by_reason, a.stall_ns_by_reason, 6),
        "engine_busy_ns": _sub(b.engine_busy_ns, a.engine_busy_ns, 6),
        "engine_util_pct": _sub(b.engine_util_pct(), a.engine_util_pct(), 3),
        "attribution": None,
    }
    if a.attribution is not None and b.attribution is not None:
        out["attribution"] = {
            "by_cause": _sub(b.attribution.by_cause, a.attribution.by_cause, 6),
            "by_component_kind": _sub(b.attribution.by_component_kind, a.attribution.by_component_kind, 6),
            "by_component": [{"component": c, "cause": cause, "ns": ns} for (c, cause), ns in _component_changes(a, b)],
            "by_line": _line_changes(a, b),
        }
    return out


def _line_changes(a: RunSummary, b: RunSummary) -> list[dict[str, object]] | None:
    """Per source line, A's and B's time on the critical path and B − A, most moved first — when both sides
    ran the same file(s) (their lines name the same files); None otherwise (line 42 of two files is not one line)."""
    from kernbench.analysis.lines import NO_LINE, by_source

    assert a.attribution is not None and b.attribution is not None
    la = {lc.key: lc for lc in by_source(a.attribution)}
    lb = {lc.key: lc for lc in by_source(b.attribution)}
    files_a = {lc.file for k, lc in la.items() if k != NO_LINE}
    files_b = {lc.file for k, lc in lb.items() if k != NO_LINE}
    if not files_a or files_a != files_b:
        return None
    keys = sorted(set(la) | set(lb), key=lambda k: (-abs(_ns(lb, k) - _ns(la, k)), k))
    return [
        {
            "name": (la.get(k) or lb[k]).name,
            "key": k,
            "a_ns": _round(_ns(la, k), 6),
            "b_ns": _round(_ns(lb, k), 6),
            "ns": _round(_ns(lb, k) - _ns(la, k), 6),
            "text": (la.get(k) or lb[k]).text,
        }
        for k in keys
    ]


def _ns(lines: Mapping[str, Any], key: str) -> float:
    lc = lines.get(key)
    return float(lc.ns) if lc is not None else 0.0


def _component_changes(a: RunSummary, b: RunSummary) -> list[tuple[tuple[str, str], float]]:
    assert a.attribution is not None and b.attribution is not None
    changes = _sub(b.attribution.by_component, a.attribution.by_component, 6)
    moved = [(k, v) for k, v in changes.items() if v != 0.0]
    return sorted(moved, key=lambda kv: (-abs(kv[1]), kv[0]))[:TOP_CHANGES]


def compare_text(a: RunSummary, b: RunSummary) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=WIDTH, color_system=None, highlight=False, markup=False, emoji=False)
    console.print(f"A  {printable(a.name)}", markup=False)  # (a side is what the user typed or a file's path: printed as text)
    console.print(f"B  {printable(b.name)}", markup=False)
    t = _table("", ("A", "B", "B − A"))
    t.add_row("latency ns", f"{a.latency_ns:,.3f}", f"{b.latency_ns:,.3f}", _signed(b.latency_ns - a.latency_ns, a.latency_ns))
    t.add_row("PEs", str(a.pes), str(b.pes), f"{b.pes - a.pes:+d}")
    t.add_row("commands", f"{a.commands:,}", f"{b.commands:,}", f"{b.commands - a.commands:+,d}")
    t.add_row(
        "dispatch cycles",
        f"{a.dispatch_cycles:,.1f}",
        f"{b.dispatch_cycles:,.1f}",
        _signed(b.dispatch_cycles - a.dispatch_cycles, a.dispatch_cycles),
    )
    ua, ub = a.engine_util_pct(), b.engine_util_pct()
    for e in ua:
        t.add_row(f"util % {e}", f"{ua[e]:.1f}", f"{ub[e]:.1f}", _delta(ub[e] - ua[e], 1))
    for reason in sorted(set(a.stall_ns_by_reason) | set(b.stall_ns_by_reason)):
        sa, sb = a.stall_ns_by_reason.get(reason, 0.0), b.stall_ns_by_reason.get(reason, 0.0)
        t.add_row(f"stalled ns: {reason}", f"{sa:,.1f}", f"{sb:,.1f}", _delta(sb - sa, 1))
    console.print(t)
    if a.attribution is None or b.attribution is None:
        why = a.why_no_attribution or b.why_no_attribution
        console.print(f"no attribution delta: {printable(str(why))}", markup=False)
        return buf.getvalue()
    for title, da, db in (
        ("critical path by cause", a.attribution.by_cause, b.attribution.by_cause),
        ("critical path by component kind", a.attribution.by_component_kind, b.attribution.by_component_kind),
    ):
        t = _table(title, ("A ns", "B ns", "B − A"))
        keys = sorted(set(da) | set(db), key=lambda k: (-abs(db.get(k, 0.0) - da.get(k, 0.0)), k))  # (ties by name: no hash order)
        for k in keys:
            t.add_row(k, f"{da.get(k, 0.0):,.3f}", f"{db.get(k, 0.0):,.3f}", _delta(db.get(k, 0.0) - da.get(k, 0.0)))
        t.add_row("total", f"{sum(da.values()):,.3f}", f"{sum(db.values()):,.3f}", _delta(sum(db.values()) - sum(da.values())))
        console.print(t)
    changes = _component_changes(a, b)
    t = _table(f"components that gained or lost the most on the path (top {TOP_CHANGES})", ("cause", "B − A ns"))
    for (comp, cause), ns in changes:
        t.add_row(comp, cause, _delta(ns))
    if not changes:
        t.add_row("(none: the paths spend the same time everywhere)", "", "")
    console.print(t)
    lines = _line_changes(a, b)
    if lines is None:
        console.print("no per-line delta: the sides do not run the same kernel file(s)")
        return buf.getvalue()
    t = _table(f"critical path by source line (the same file on both sides; the top {TOP_CHANGES} that moved)", ("A ns", "B ns", "B − A"))
    t.add_column("code", no_wrap=True, overflow="ellipsis", max_width=36)
    for row in lines[:TOP_CHANGES]:
        t.add_row(str(row["name"]), f"{row['a_ns']:,.3f}", f"{row['b_ns']:,.3f}", _delta(float(str(row["ns"]))), str(row["text"]))
    console.print(t)
    return buf.getvalue()


def _table(title: str, columns: tuple[str, ...]) -> Table:
    t = Table(box=box.SIMPLE_HEAD, title=title or None, title_justify="left", pad_edge=False)
    t.add_column("")
    for c in columns:
        t.add_column(c, justify="right")
    return t


def _sub(b: Mapping[K, float], a: Mapping[K, float], digits: int) -> dict[K, float]:
    """``b − a`` key by key (a key missing on one side counts 0), in first-seen order."""
    keys = list(dict.fromkeys([*a, *b]))
    return {k: _round(b.get(k, 0.0) - a.get(k, 0.0), digits) for k in keys}


def _round(x: float, digits: int) -> float:
    """``round`` without a negative zero: a difference that rounds away prints as 0, not -0."""
    return round(x, digits) + 0.0


def _delta(d: float, digits: int = 3) -> str:
    """A signed difference as shown: one that rounds to 0 at ``digits`` prints +0, never -0."""
    return f"{_round(d, digits):+,.{digits}f}"


def _signed(d: float, base: float) -> str:
    return f"{_delta(d)} ({_delta(_pct(d, base), 1)}%)" if base else _delta(d)


def _pct(d: float, base: float) -> float:
    return 100.0 * d / base if base else 0.0
