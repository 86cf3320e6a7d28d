"""``kernbench sweep KERNEL --grid KEY=V1,V2,…``: run a kernel over a grid of options and topology values.

Each point of the grid is one ``kernbench run`` (same checks, same result);
the points run in worker processes (``--jobs``) or on a Dask cluster
(``--scheduler``), and come back in grid order, the same whatever runs them.
Finished points are kept in an on-disk cache, so a re-run simulates only new
ones. Prints one row per point (``--json``: a JSON list of the points' run
records, each with its swept values as ``point``), writes them to ``--out``
(CSV: the records flattened, one row per point; JSON: as ``--json``), and ``--plot METRIC:KEY`` draws one metric
against one swept key in the terminal.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich import box
from rich.table import Table

from kernbench import usercode
from kernbench.cliargs import OptionParser
from kernbench.commands import fidelity_check
from kernbench.commands.run import (
    COMMON_OPTIONS,
    _Console,
    _metavar,
    kernel_description,
    kernel_params,
    limits_of,
    option_help,
    options_argv,
    parse_kernel_args,
    prepare,
    report,
    wall_limit_in,
)
from kernbench.errors import KernbenchError
from kernbench.kernels import files as kernel_files
from kernbench.kernels import registry
from kernbench.limits import supervised
from kernbench.outputs import check_outputs, to_json, write_text_atomic
from kernbench.printable import printable
from kernbench.progress import stderr_is_terminal, sweep_progress
from kernbench.sim.fidelity import FIDELITIES
from kernbench.sweep import cache as result_cache
from kernbench.sweep import plot as sweep_plot
from kernbench.sweep import table as sweep_table
from kernbench.sweep.executors import execute, usable_cpus
from kernbench.sweep.grid import TOPOLOGY_KEY, Point, grid_points, input_files, parse_axes, show
from kernbench.sweep.metrics import point_record
from kernbench.sweep.point import Outcome, Task, code_id, one_line
from kernbench.topology.spec import source_file

EPILOG = """\
KEY is an option of the kernel (context, variant, kv-heads, …), `topology`, or a
topology key path as --set takes it (sip.ucie.bw_gbps); each value is checked like
the option or the YAML value it sets. Points are the product of the --grid flags,
the first varying slowest. Options of the kernel not swept are given as for
`kernbench run` (--heads 16; `kernbench sweep KERNEL --help` lists them); one whose
flag is also a sweep flag (allreduce's --grid) is set with a one-value --grid
(--grid grid=3x2).

A point the kernel rejects (a combination of values it does not allow) or whose run
fails (a deadlock, a run limit) does not stop the others: its row has an empty
latency_ns and an `error` column, its error is printed on stderr as `error: point N
(KEY=VALUE, …): …`, the other rows are printed and written, and the exit status is 2.
Ctrl-C stops the workers and writes nothing (points already finished stay cached).

Results are cached in $XDG_CACHE_HOME/kernbench/sweep (~/.cache/kernbench/sweep),
keyed by kernel, options, the resolved topology, --timing, --fidelity, --explain, --no-data and the kernbench
version and source; --no-cache runs every point, --cache-dir puts the cache elsewhere.
"""

_KEEP = {"--topology", "--set", "--timing", "--fidelity", "--explain", "--no-data", "--max-commands-per-pe", "--max-sim-ns", "--max-wall-s"}


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of worker processes, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1 worker process, got {value}")
    return value


#: The sweep's own options, as (flag, argparse keywords); read before and after the kernel name, like `run`'s.
SWEEP_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--grid", dict(action="append", default=[], metavar="KEY=V1,V2,…", help="a swept key and its values (repeatable; see below)")),
    *((flag, kwargs) for flag, kwargs in COMMON_OPTIONS if flag in _KEEP),
    (
        "--jobs",
        dict(type=_jobs, default=None, metavar="N", help="worker processes (default: the CPUs this process may use; 1: in this process)"),
    ),
    (
        "--scheduler",
        dict(
            default=None,
            metavar="ADDRESS",
            help="run the points on the Dask cluster of this scheduler (tcp://host:8786; pip install 'kernbench[dask]')",
        ),
    ),
    ("--out", dict(default=None, metavar="FILE.csv|FILE.json", help="write every point's metrics, one row per point")),
    ("--json", dict(action="store_true", help="print the rows as a JSON list instead of a table")),
    (
        "--plot",
        dict(
            default=None,
            metavar="METRIC:KEY",
            help="draw METRIC (latency_ns, …) against the swept KEY, one line per value of the other keys",
        ),
    ),
    (
        "--check-fidelity",
        dict(
            action="store_true",
            help="rerun every point at the other levels of the model (paper, credit, full): per-level latencies, "
            "and whether the best point holds",
        ),
    ),
    ("--no-cache", dict(action="store_true", help="simulate every point (and do not store the results)")),
    ("--cache-dir", dict(default=None, metavar="DIR", help="where results are cached (default: $XDG_CACHE_HOME/kernbench/sweep)")),
)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "sweep",
        allow_abbrev=False,
        help="run a kernel over a grid of options and topology values",
        description="Run a kernel over a grid of options and topology values, one `kernbench run` per point.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("kernel", nargs="?", help="kernel name (see `kernbench run --list`)")
    for flag, kwargs in SWEEP_OPTIONS:
        p.add_argument(flag, **kwargs)
    p.add_argument("options", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return p


def sweep_parser(spec: registry.KernelSpec, named: str | None = None) -> argparse.ArgumentParser:
    """The sweep's options and the kernel's (named as the user did); a kernel option left out is absent from the namespace."""
    p = OptionParser(
        prog=f"kernbench sweep {named or spec.ref}",
        description=kernel_description(spec),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    for flag, kwargs in SWEEP_OPTIONS:
        p.add_argument(flag, **kwargs)
    ours = {flag for flag, _ in SWEEP_OPTIONS}
    for prm in spec.params:
        if prm.flag in ours:  # allreduce's --grid: set it with a one-value --grid grid=3x2
            continue
        p.add_argument(prm.flag, dest=prm.name, type=prm.type, default=argparse.SUPPRESS, metavar=_metavar(prm), help=option_help(prm))
    return p


def run(args: argparse.Namespace) -> int:
    with supervised(wall_limit_in(options_argv(args, SWEEP_OPTIONS) + list(args.options)), args.kernel or "kernbench sweep"):
        spec, ns, fixed = _parse(args)  # (the kernel file's import, within the wall-time limit)
    taken = [*fixed, *(o.split("=", 1)[0].strip() for o in ns.overrides), *([TOPOLOGY_KEY] if ns.topology else [])]
    axes = parse_axes(spec, ns.grid, taken)
    if not axes:
        first = spec.params[0]
        raise KernbenchError(f"kernbench sweep {spec.name}: give one or more --grid KEY=V1,V2,… (e.g. --grid {first.name}={first.default})")
    swept = [a.key for a in axes]
    plot = _check_outputs(
        ns, swept, inputs=[source_file(ns.topology or spec.default_topology), *input_files(axes), *map(Path, spec.inputs)]
    )
    cache = result_cache.ResultCache(None if ns.no_cache else Path(ns.cache_dir) if ns.cache_dir else result_cache.default_dir())
    points = grid_points(axes, _run_argv(ns, fixed))
    outcomes = run_points(spec, points, cache, jobs=ns.jobs or usable_cpus(), scheduler=ns.scheduler)
    table = sweep_table.rows(points, outcomes)
    records = sweep_table.records(spec.name, points, outcomes)
    verdict = _check_fidelity(spec, ns, points, outcomes, cache, table, records) if ns.check_fidelity else None
    if ns.out:
        write_text_atomic(ns.out, sweep_table.render(table, records, ns.out))
    if ns.json:
        print(to_json(records, indent=2))
    else:
        print_table(spec.name, table, swept, plot[0] if plot else None)
    if plot:
        print()
        print(sweep_plot.render(table, *plot, swept, color=sys.stdout.isatty() and "NO_COLOR" not in os.environ))
    if verdict is not None and not ns.json:
        print()
        print(verdict)
    return _report_failures(points, outcomes, cache)


def _check_fidelity(
    spec: registry.KernelSpec,
    ns: argparse.Namespace,
    points: Sequence[Point],
    outcomes: Sequence[Outcome],
    cache: result_cache.ResultCache,
    table: list[dict[str, Any]],
    records: list[dict[str, Any]],
) -> str:
    """Every point again at the other levels: each table row gets ``latency_ns_<level>`` for every level
    and ``best_at`` (the levels at which it is the best point), each record the same as its
    ``fidelity_check``; returns the per-level table and verdict."""
    latencies: dict[str, list[float | None]] = {}
    for level in FIDELITIES:
        if level == ns.fidelity:
            got: Sequence[Outcome] = outcomes
        else:
            again = [dataclasses.replace(p, argv=(*p.argv, "--fidelity", level)) for p in points]
            got = run_points(spec, again, cache, jobs=ns.jobs or usable_cpus(), scheduler=ns.scheduler)
        latencies[level] = [o.metrics["latency_ns"] if o.metrics is not None else None for o in got]
    best = fidelity_check.best_points(latencies)
    for i, row in enumerate(table):
        for level in FIDELITIES:
            row[f"latency_ns_{level}"] = latencies[level][i]
        row["best_at"] = [level for level in FIDELITIES if best[level] == i]
        records[i]["fidelity_check"] = {"latency_ns": {level: latencies[level][i] for level in FIDELITIES}, "best_at": row["best_at"]}
    names = [p.label() for p in points]
    lines = ["fidelity check (--check-fidelity): every point at every level of the model", ""]
    width = max(len(n) for n in names)
    lines.append(f"{'point':<{width}}" + "".join(f"{level + ' ns':>16}" for level in FIDELITIES))
    for i, n in enumerate(names):
        cells = "".join(f"{_ns(latencies[level][i]) + (' *' if best[level] == i else '  '):>16}" for level in FIDELITIES)
        lines.append(f"{n:<{width}}{cells}")
    lines.append(f"{'':<{width}}  (* the best point at that level)")
    lines.append("")
    lines.append(fidelity_check.sweep_verdict(best, names)[1])
    return "\n".join(lines)


def _ns(v: float | None) -> str:
    return "—" if v is None else f"{v:,.1f}"


def _parse(args: argparse.Namespace) -> tuple[registry.KernelSpec, argparse.Namespace, dict[str, Any]]:
    """The kernel, every flag (given before or after its name), and the kernel options given (checked)."""
    if not args.kernel:
        raise KernbenchError("kernbench sweep: name a kernel and one or more --grid KEY=V1,V2,… (see `kernbench sweep --help`)")
    spec = registry.get(args.kernel)
    ns = sweep_parser(spec, args.kernel).parse_args(options_argv(args, SWEEP_OPTIONS) + list(args.options))
    ours = {flag for flag, _ in SWEEP_OPTIONS}
    fixed = {prm.name: getattr(ns, prm.name) for prm in spec.params if prm.flag not in ours and hasattr(ns, prm.name)}
    for prm in spec.params:
        if prm.name in fixed and (problem := prm.problem(fixed[prm.name])):
            raise KernbenchError(f"{spec.name}: {problem}")
    return spec, ns, fixed


def _check_outputs(ns: argparse.Namespace, swept: Sequence[str], inputs: Sequence[Path | None]) -> tuple[str, str] | None:
    """Before anything runs: --out's name and folder (not one of the run's ``inputs``), --plot's keys, flags that exclude each other."""
    if ns.plot and ns.json:
        raise KernbenchError("--plot draws on stdout, where --json prints; use one, or --out FILE.json with --plot")
    if ns.scheduler and ns.jobs:
        raise KernbenchError("--jobs and --scheduler: give one (the cluster decides how many points run at once)")
    if ns.out:
        sweep_table.check_format(ns.out)
        check_outputs([("--out", ns.out)], inputs=inputs)
    return sweep_plot.parse_spec(ns.plot, swept) if ns.plot else None


def _run_argv(ns: argparse.Namespace, fixed: dict[str, Any]) -> list[str]:
    """The ``kernbench run`` arguments every point shares: the common options, then the kernel options given."""
    common = [(flag, kwargs) for flag, kwargs in COMMON_OPTIONS if flag in _KEEP]
    return options_argv(ns, common) + [arg for name, value in fixed.items() for arg in ("--" + name.replace("_", "-"), str(value))]


def run_points(
    spec: registry.KernelSpec, points: Sequence[Point], cache: result_cache.ResultCache, *, jobs: int, scheduler: str | None
) -> list[Outcome]:
    """Every point's outcome in grid order: rejected ones and cache hits at once, the others simulated."""
    outcomes: list[Outcome | None] = [None] * len(points)
    keys: dict[int, str] = {}
    tasks: list[Task] = []
    topologies: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}
    for point in points:
        try:
            with supervised(wall_limit_in(point.argv), f"{spec.name}'s option rules"):
                key = resolve_key(spec, point, topologies)
        except KernbenchError as exc:
            outcomes[point.index] = Outcome(point.index, None, one_line(str(exc)))
            continue
        hit = cache.get(key)
        if hit is not None:
            outcomes[point.index] = Outcome(point.index, hit)
        else:
            keys[point.index] = key
            tasks.append(Task(point.index, spec.ref, point.argv))
    label = f"sweep {spec.name}" + (f" ({len(points) - len(tasks)} cached)" if len(tasks) < len(points) else "")
    with sweep_progress(label, len(tasks), stderr_is_terminal()) as advance:
        for outcome in execute(simulate_point, tasks, jobs, scheduler):
            outcomes[outcome.index] = outcome
            usercode.note_user_modules(outcome.dependencies or {})  # (protected from --out, as this process's own are)
            if outcome.metrics is not None:
                cache.put(keys[outcome.index], outcome.metrics, outcome.dependencies)
            advance()
    assert all(o is not None for o in outcomes)
    return outcomes  # type: ignore[return-value]


def simulate_point(task: Task) -> Outcome:
    """Run one point as ``kernbench run`` would (its checks, its run, its report) to its metrics;
    a failure is returned as the error's one line. Runs in a worker process or on a Dask worker."""
    try:
        with supervised(wall_limit_in(task.argv), task.kernel):  # its set-up, rules, run and check
            spec, ns, rt, prepared, params = prepare(task.kernel, list(task.argv))
            result = rt.run(record=ns.explain, limits=limits_of(ns))
            metrics = point_record(report(spec, rt, prepared, result, params, result.explain() if ns.explain else None, ns.overrides))
    except KernbenchError as exc:
        return Outcome(task.index, None, one_line(str(exc)), code_id(), usercode.dependencies(_kernel_tree(task.kernel)))
    except Exception as exc:  # a bug; report it with the point rather than lose the sweep
        return Outcome(task.index, None, one_line(f"internal error (please report it): {type(exc).__name__}: {exc}"), code_id())
    return Outcome(task.index, metrics, None, code_id(), usercode.dependencies(_kernel_tree(task.kernel)))


def _kernel_tree(kernel: str) -> Path | None:
    """The folder of a kernel file (``path/file.py[:NAME]``), resolved; None for a shipped kernel."""
    if not kernel_files.is_file_ref(kernel):
        return None
    try:
        return Path(kernel_files.split_ref(kernel)[0]).resolve().parent
    except (OSError, RuntimeError, ValueError):
        return None


def resolve_key(spec: registry.KernelSpec, point: Point, topologies: dict[tuple[str, tuple[str, ...]], dict[str, Any]]) -> str:
    """The point's cache key, after the checks ``kernbench run`` makes before it simulates
    (:func:`kernbench.commands.run.check_run`: options, the topology, the kernel's rules between them)."""
    from kernbench.topology.compile import check_size, pe_count
    from kernbench.topology.spec import load_spec

    ns = parse_kernel_args(spec, list(point.argv))
    params, given = kernel_params(spec, ns)
    where = (ns.topology or spec.default_topology, tuple(ns.overrides))
    if where not in topologies:
        topologies[where] = load_spec(where[0], list(where[1]))
        check_size(topologies[where])
    topology = topologies[where]
    spec.validate(params, pe_count(topology), given)
    return result_cache.point_key(
        spec.name, params, topology, ns.timing, explain=ns.explain, source=spec.digest, fidelity=ns.fidelity, data=not ns.no_data
    )


_SHOWN = (("latency_ns", "latency ns"), ("commands", "commands"), ("dispatch_cycles", "dispatch cycles"), ("max_abs_err", "max |err|"))


def print_table(kernel: str, table: Sequence[dict[str, Any]], swept: Sequence[str], plotted: str | None) -> None:
    console = _Console(width=120, highlight=False, color_system=None if not sys.stdout.isatty() else "auto")
    shown = list(_SHOWN) + ([(plotted, plotted)] if plotted and plotted not in dict(_SHOWN) else [])
    t = Table(box=box.SIMPLE_HEAD, title=f"{kernel} · {len(table)} point(s)", title_justify="left")
    for key in swept:
        t.add_column(key)
    for _, heading in shown:
        t.add_column(heading, justify="right")
    for row in table:
        failed = "error" in row
        t.add_row(*(show(row[k]) for k in swept), *("failed" if failed else _cell(row.get(k), k) for k, _ in shown))
    console.print(t)


def _cell(value: Any, key: str = "") -> str:
    if key == "max_abs_err" and isinstance(value, float):
        # two digits: the last bits of a float32 product depend on the CPU's BLAS kernel (docs/getting-started.md, "Numerics")
        return f"{value:.2g}"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 1 else f"{value:.3g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return "—" if value is None and key == "max_abs_err" else "" if value is None else str(value)


def _report_failures(points: Sequence[Point], outcomes: Sequence[Outcome], cache: result_cache.ResultCache) -> int:
    failed = [(p, o.error) for p, o in zip(points, outcomes, strict=True) if o.error is not None]
    for point, error in failed:
        print(f"error: point {point.index} ({point.label()}): {printable(error, keep=chr(10))}", file=sys.stderr)
    for line in result_cache.rejected_lines(cache):  # (read before anything was written)
        print(line, file=sys.stderr)
    if cache.write_error:
        print(f"warning: results not cached: {cache.write_error}", file=sys.stderr)
    return 2 if failed else 0
