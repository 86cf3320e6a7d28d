"""``kernbench run KERNEL``: simulate a shipped kernel and say where the time went.

Prints the latency, commands and dispatch cycles, the numerics error
against the kernel's numpy reference, and each engine's busy share; with
``--json`` the same as one JSON object. ``--explain`` adds where every
nanosecond went: the critical path, attributed by cause, by component kind
and by component (in JSON: ``"attribution"``). ``--trace`` saves the event
stream for ``kernbench-tui open``; ``--perfetto`` exports Chrome/Perfetto JSON.

Everything is checked before the simulation starts: the kernel's options
(their ranges and the rules between them), the output paths, the topology.
When a run fails (a kernel error, a deadlock, a run limit) requested outputs
are left as they were, and the events recorded up to the failure go to
``NAME.partial.EXT`` beside them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from rich import box
from rich.console import Console
from rich.table import Table

from kernbench.errors import KernbenchError
from kernbench.events.bus import Bus
from kernbench.events.types import ENGINES, Event
from kernbench.kernels import registry
from kernbench.limits import DEFAULT_MAX_COMMANDS_PER_PE, DEFAULT_MAX_SIM_NS, DEFAULT_MAX_WALL_S, RunLimits
from kernbench.outputs import check_outputs, to_json, write_all_atomic
from kernbench.progress import run_progress, stderr_is_terminal
from kernbench.runtime.api import RunResult, Runtime

if TYPE_CHECKING:
    from kernbench.events.tracefile import TraceMetadata

ENGINE_NAMES = {
    "cpu": "PE_CPU",
    "sched": "PE_SCHED",
    "dma.rd": "DMA read",
    "dma.wr": "DMA write",
    "fs": "FETCH/STORE",
    "gemm": "GEMM",
    "math": "MATH",
    "ipcq": "IPCQ",
}


class OptionParser(argparse.ArgumentParser):
    """An option error is a :class:`KernbenchError` (one line, exit 2), not usage text and ``SystemExit``."""

    def error(self, message: str) -> NoReturn:
        raise KernbenchError(f"{self.prog}: {message} (see `{self.prog} --help`)")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "run",
        allow_abbrev=False,  # --m is a kernel option, not short for --max-sim-ns
        help="simulate a shipped kernel",
        description=__doc__.split("\n")[0],
        epilog="Kernel options (e.g. --variant, --context) are listed by `kernbench run KERNEL --help`.",
    )
    p.add_argument("kernel", nargs="?", help="kernel name (see --list)")
    p.add_argument("--list", action="store_true", help="list the shipped kernels and exit (with --json: as JSON)")
    add_common_options(p)
    p.add_argument("options", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return p


def _limit(kind: type, unit: str) -> Callable[[str], float | int | None]:
    """A run-limit flag's value: a positive number, or 0 for no limit."""

    def parse(text: str) -> float | int | None:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number of {unit}, got {text!r}") from None
        if not (0 <= value < float("inf")) or (kind is int and value != int(value)):
            raise argparse.ArgumentTypeError(
                f"expected a {'whole ' if kind is int else ''}number of {unit} >= 0 (0: no limit), got {text!r}"
            )
        return kind(value) or None

    return parse


#: Options every kernel takes, as (flag, argparse keywords); ``run`` re-reads them after the kernel name too.
COMMON_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--topology", dict(default=None, metavar="NAME|PATH", help="topology (default: the kernel's)")),
    ("--set", dict(dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help="override a topology value (repeatable)")),
    ("--json", dict(action="store_true", help="print one JSON object")),
    (
        "--explain",
        dict(action="store_true", help="attribute every ns of the latency along the critical path (by cause, component kind, component)"),
    ),
    (
        "--timing",
        dict(
            choices=("fast", "oracle"),
            default="fast",
            help="fast: trains in closed form (default); oracle: every flit as its own step (same result, slower)",
        ),
    ),
    ("--trace", dict(metavar="FILE", help="save the event stream as a .kbtrace file")),
    ("--perfetto", dict(metavar="FILE", help="export Chrome/Perfetto trace JSON")),
    (
        "--max-commands-per-pe",
        dict(
            type=_limit(int, "commands"),
            default=DEFAULT_MAX_COMMANDS_PER_PE,
            metavar="N",
            help=f"stop a PE's kernel after N commands (default {DEFAULT_MAX_COMMANDS_PER_PE:,}; 0: no limit)",
        ),
    ),
    (
        "--max-sim-ns",
        dict(
            type=_limit(float, "ns"),
            default=DEFAULT_MAX_SIM_NS,
            metavar="NS",
            help=f"stop the run past this simulated time (default {DEFAULT_MAX_SIM_NS:g} ns; 0: no limit)",
        ),
    ),
    (
        "--max-wall-s",
        dict(
            type=_limit(float, "seconds"),
            default=DEFAULT_MAX_WALL_S,
            metavar="S",
            help=f"stop the run after this wall time (default {DEFAULT_MAX_WALL_S:g} s; 0: no limit)",
        ),
    ),
)


def add_common_options(p: argparse.ArgumentParser) -> None:
    for flag, kwargs in COMMON_OPTIONS:
        p.add_argument(flag, **kwargs)


def _common_argv(args: argparse.Namespace) -> list[str]:
    """The common options given before the kernel name, as arguments for the kernel's parser."""
    return options_argv(args, COMMON_OPTIONS)


def options_argv(ns: argparse.Namespace, options: Sequence[tuple[str, dict[str, Any]]]) -> list[str]:
    """The flags of ``options`` set in ``ns`` (other than to their defaults), as arguments again."""
    out: list[str] = []
    for flag, kwargs in options:
        value = getattr(ns, kwargs.get("dest", flag[2:].replace("-", "_")))
        if kwargs.get("action") == "store_true":
            out += [flag] if value else []
        elif kwargs.get("action") == "append":
            out += [x for v in value for x in (flag, v)]
        elif value != kwargs.get("default"):
            out += [flag, "0" if value is None else str(value)]
    return out


def kernel_parser(spec: registry.KernelSpec) -> argparse.ArgumentParser:
    kp = OptionParser(prog=f"kernbench run {spec.name}", description=spec.description, allow_abbrev=False)
    add_common_options(kp)
    for prm in spec.params:
        kp.add_argument(
            prm.flag,
            dest=prm.name,
            type=prm.type,
            default=prm.default,
            choices=prm.choices,
            help=f"{prm.help} (default: {prm.default})",
        )
    return kp


def parse_kernel_args(spec: registry.KernelSpec, argv: list[str]) -> argparse.Namespace:
    return kernel_parser(spec).parse_args(argv)


def limits_of(ns: argparse.Namespace) -> RunLimits:
    return RunLimits(ns.max_commands_per_pe, ns.max_sim_ns, ns.max_wall_s)


def check_run(kernel: str, argv: list[str]) -> tuple[registry.KernelSpec, argparse.Namespace, registry.Params]:
    """Everything that can be checked before the topology is compiled: the kernel name, its options
    (also against the topology's PE count, read from the YAML), the output paths."""
    spec, ns, params, _topology = _checked(kernel, argv)
    return spec, ns, params


def _checked(kernel: str, argv: list[str]) -> tuple[registry.KernelSpec, argparse.Namespace, registry.Params, dict[str, Any]]:
    """:func:`check_run`, and the topology document it read and checked (for :func:`prepare` to compile)."""
    from kernbench.topology.compile import check_size, pe_count
    from kernbench.topology.spec import load_spec, source_file

    spec = registry.get(kernel)
    ns = parse_kernel_args(spec, argv)
    params = {prm.name: getattr(ns, prm.name) for prm in spec.params}
    topology = load_spec(ns.topology or spec.default_topology, ns.overrides)
    check_size(topology)
    spec.validate(params, pe_count(topology))
    outputs = [("--trace", ns.trace), ("--perfetto", ns.perfetto)]
    partials = [(f"{flag} (its .partial file)", _partial(p)) for flag, p in outputs if p]
    check_outputs(outputs + partials, inputs=[source_file(ns.topology or spec.default_topology)])
    return spec, ns, params, topology


def prepare(kernel: str, argv: list[str]) -> tuple[registry.KernelSpec, argparse.Namespace, Runtime, registry.Prepared, registry.Params]:
    """Check a kernel's options and outputs, build its runtime and launch it (not run yet)."""
    from kernbench.topology.compile import compile_spec

    spec, ns, params, topology = _checked(kernel, argv)
    rt = Runtime(compile_spec(topology), mode=ns.timing)  # the document checked above: read once
    try:
        prepared = spec.prepare(rt, params)
    except ValueError as exc:
        raise KernbenchError(f"{spec.name}: {exc}") from None
    return spec, ns, rt, prepared, params


def report(
    spec: registry.KernelSpec, rt: Runtime, prepared: registry.Prepared, result: RunResult, params: registry.Params
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kernel": spec.name,
        "topology": rt.graph.name,
        "timing": rt.mode,
        "variant": prepared.variant,
        "params": params,
        "latency_ns": round(result.latency_ns, 6),
        "engine_util_pct": {e: round(v, 3) for e, v in result.engine_util_pct().items()},
        "dispatch_cycles": round(result.total_dispatch_cycles, 6),
        "commands": result.total_commands,
        "pes": len(result.pes),
        "max_abs_err": prepared.check(),
    }
    out.update(prepared.summary(result))
    return out


def run(args: argparse.Namespace) -> int:
    if args.list or not args.kernel:
        table = registry.kernels()
        if args.json:
            print(
                to_json(
                    [
                        {
                            "name": n,
                            "description": k.description,
                            "default_topology": k.default_topology,
                            "options": {p.name: p.default for p in k.params},
                        }
                        for n, k in table.items()
                    ],
                    indent=2,
                )
            )
        else:
            for name, spec in table.items():
                print(f"{name}\t{spec.description}")
        return 0
    spec, ns, rt, prepared, params = prepare(args.kernel, _common_argv(args) + list(args.options))
    need_events = bool(ns.trace or ns.perfetto or ns.explain)
    try:
        with run_progress(spec.name, stderr_is_terminal() and not ns.json) as progress:  # a TTY only, after ~1 s
            result = rt.run(record=need_events, limits=limits_of(ns), progress=progress)
    except KernbenchError as exc:
        recorded = getattr(exc, "recorded", None)
        if need_events and recorded:
            saved = _save(ns, recorded, _meta(spec, rt, prepared, params, None), partial=True)
            exc.args = (f"{exc}\n  the {len(recorded):,} events recorded up to the failure are in {', '.join(saved)}",)
        raise
    data = report(spec, rt, prepared, result, params)
    attribution = None
    if ns.explain:
        from kernbench.analysis.critical import attribute

        attribution = attribute(result.events or [], result.latency_ns)
        data["attribution"] = attribution.as_json()
    if ns.trace or ns.perfetto:
        _save(ns, result.events or [], _meta(spec, rt, prepared, params, result.latency_ns))
    if ns.json:
        print(to_json(data, indent=2, sort_keys=False))
    else:
        print_report(data, result)
        if attribution is not None:
            from kernbench.commands.explain import explain_text

            print()
            print(explain_text(attribution), end="")
    return 0


def _meta(
    spec: registry.KernelSpec, rt: Runtime, prepared: registry.Prepared, params: registry.Params, end_ns: float | None
) -> TraceMetadata:
    from kernbench.events.tracefile import TraceMetadata

    extra: dict[str, Any] = {"params": params}
    if end_ns is None:
        extra["partial"] = True
    return TraceMetadata(kernel=spec.name, topology=rt.graph.name, variant=prepared.variant, end_ns=end_ns or 0.0, extra=extra)


def _partial(path: str) -> str:
    """``run.kbtrace`` → ``run.partial.kbtrace``: where a failed run's events go."""
    p = Path(path)
    return str(p.with_name(f"{p.stem}.partial{p.suffix}"))


def _save(ns: argparse.Namespace, events: list[Event], meta: TraceMetadata, partial: bool = False) -> list[str]:
    """Write the requested outputs, all or none (an interrupt between two leaves neither)."""
    from kernbench.events.perfetto import perfetto_bytes
    from kernbench.events.store import EventStore
    from kernbench.events.tracefile import trace_bytes

    store = EventStore.from_events(events)
    if not meta.end_ns:
        meta = type(meta)(meta.kernel, meta.topology, meta.variant, store.end_ns, meta.extra)
    outputs = []
    for path, encode in ((ns.trace, trace_bytes), (ns.perfetto, perfetto_bytes)):
        if path:
            data = encode(store, meta)
            outputs.append((_partial(path) if partial else path, lambda f, data=data: f.write(data)))
    write_all_atomic(outputs)
    return [str(path) for path, _ in outputs]


class _Console(Console):
    """Rich exits with status 1 on a closed pipe; let the broken pipe reach exit_codes.guarded (status 0).
    Text is printed as given: ``[bold]`` or ``:smile:`` in a name is not markup (``[/x]`` would raise)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(markup=False, emoji=False, **kwargs)

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def print_report(data: dict[str, Any], result: RunResult) -> None:
    console = _Console(width=100, highlight=False, color_system=None if not sys.stdout.isatty() else "auto")  # honours NO_COLOR
    head = f"{data['kernel']}" + (f" ({data['variant']})" if data["variant"] else "")
    console.print(f"{head} on {data['topology']} · {data['pes']} PE(s)")
    console.print(f"latency            {data['latency_ns']:,.1f} ns")
    console.print(f"commands           {data['commands']:,}   dispatch {data['dispatch_cycles']:,.1f} cycles")
    console.print(f"max |err| vs numpy {data['max_abs_err']:.3g}")
    extra = {
        k: v
        for k, v in data.items()
        if k
        not in {
            "kernel",
            "topology",
            "variant",
            "params",
            "latency_ns",
            "engine_util_pct",
            "dispatch_cycles",
            "commands",
            "pes",
            "max_abs_err",
            "attribution",
        }
    }
    for k, v in extra.items():
        console.print(f"{k:<18} {v}")
    t = Table(box=box.SIMPLE_HEAD, title="engines (all PEs)", title_justify="left")
    t.add_column("engine")
    t.add_column("busy ns", justify="right")
    t.add_column("busy %", justify="right")
    t.add_column("idle %", justify="right")
    for e in ENGINES:
        busy = sum(b[e] for b in result.engine_busy_ns.values())
        pct = data["engine_util_pct"][e]
        t.add_row(ENGINE_NAMES[e], f"{busy:,.1f}", f"{pct:.1f}", f"{max(0.0, 100 - pct):.1f}")
    console.print(t)
    stall = sum(result.stall_ns.values())
    console.print(f"PE_CPU stalled {stall:,.1f} ns in all (lazy-load waits, full queue, receives)")


def tui_simulation(argv: list[str]) -> tuple[Callable[[Bus], TraceMetadata], TraceMetadata]:
    """For ``kernbench-tui run``: ``(fn(bus), metadata)`` running a kernel on ``bus``."""
    from kernbench.events.tracefile import TraceMetadata

    if not argv:
        raise KernbenchError("kernbench-tui run: name a kernel (see `kernbench run --list`)")
    spec, ns, rt, prepared, params = prepare(argv[0], list(argv[1:]))
    meta = TraceMetadata(kernel=spec.name, topology=rt.graph.name, variant=prepared.variant, extra={"params": params})
    limits = limits_of(ns)

    def fn(bus: Bus) -> TraceMetadata:
        result = rt.run(bus=bus, limits=limits)
        return TraceMetadata(
            kernel=spec.name,
            topology=rt.graph.name,
            variant=prepared.variant,
            end_ns=result.latency_ns,
            extra={"params": params, "latency_ns": result.latency_ns},
        )

    return fn, meta
