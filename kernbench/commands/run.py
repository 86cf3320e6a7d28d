"""``kernbench run KERNEL``: simulate a kernel — shipped, or a file of yours — and say where the time went.

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
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rich import box
from rich.console import Console
from rich.table import Table

from kernbench.cliargs import OptionParser, description
from kernbench.errors import KernbenchError, OutputPathError
from kernbench.events.bus import Bus
from kernbench.events.store import EventStore
from kernbench.events.types import ENGINE_TABLE, ENGINES
from kernbench.kernels import registry
from kernbench.limits import DEFAULT_MAX_COMMANDS_PER_PE, DEFAULT_MAX_SIM_NS, DEFAULT_MAX_WALL_S, RunLimits, supervised
from kernbench.outputs import check_outputs, to_json, write_all_atomic
from kernbench.progress import run_progress, stderr_is_terminal, working
from kernbench.runtime.api import RunResult, Runtime

if TYPE_CHECKING:
    from kernbench.analysis.critical import Attribution
    from kernbench.events.tracefile import Trace, TraceMetadata

ENGINE_NAMES = {e.lane: e.title for e in ENGINE_TABLE}


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "run",
        allow_abbrev=False,  # --m is a kernel option, not short for --max-sim-ns
        help="simulate a kernel: a shipped one, or a kernel file (path/to/file.py[:NAME])",
        description=description(__doc__),
        epilog="Kernel options (e.g. --variant, --context) are listed by `kernbench run KERNEL --help`.",
    )
    p.add_argument("kernel", nargs="?", help="a shipped kernel (see --list) or a kernel file: path/to/file.py[:NAME]")
    p.add_argument("--list", action="store_true", help="list the shipped kernels, or a kernel file's, and exit (with --json: as JSON)")
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


def wall_limit_in(argv: Sequence[str]) -> float | None:
    """The ``--max-wall-s`` an argument list gives (the last one; the default when none or a bad one, which
    the kernel's parser reports): read before the kernel file is imported, so the limit holds over that too."""
    value: float | None = DEFAULT_MAX_WALL_S
    parse = _limit(float, "seconds")
    for i, word in enumerate(argv):
        if word == "--max-wall-s" and i + 1 < len(argv):
            text = argv[i + 1]
        elif word.startswith("--max-wall-s="):
            text = word.split("=", 1)[1]
        else:
            continue
        try:
            value = parse(text)
        except argparse.ArgumentTypeError:
            value = DEFAULT_MAX_WALL_S
    return value


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
        "--by",
        dict(
            choices=("cause", "line", "function"),
            default="cause",
            help="with --explain: lead with the path's time per cause (default), or per source line / function of the kernel",
        ),
    ),
    (
        "--speedups",
        dict(
            action="store_true",
            help="with --explain: for the top lines of the path, the run's gain if their work took no time and half the time (re-timed)",
        ),
    ),
    (
        "--what-if",
        dict(
            dest="what_if",
            action="append",
            default=[],
            metavar="CHANGE",
            help="re-time the recorded commands without running the kernel again: KEY.PATH=VALUE, line:N*F, engine:KIND*F (repeatable)",
        ),
    ),
    (
        "--timing",
        dict(
            choices=("fast", "oracle"),
            default="fast",
            help="fast: trains in closed form (default); oracle: every flit as its own step (same result, slower)",
        ),
    ),
    (
        "--fidelity",
        dict(
            choices=("paper", "credit", "full"),
            default="paper",
            help="paper: the paper's model (default); credit: + credit flow control, backpressure, round-robin links; "
            "full: + HBM banks, row buffers, refresh (both flit by flit; docs/fidelity.md)",
        ),
    ),
    (
        "--no-data",
        dict(
            action="store_true",
            help="timing only: tensors hold no values (no size limit of data; loads give zeros, stores are dropped), "
            "the same commands and latency; the reference check is skipped (max_abs_err null, data none)",
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


def kernel_parser(spec: registry.KernelSpec, command: str = "kernbench run", named: str | None = None) -> OptionParser:
    """``command``'s parser of ``spec``'s options, its help and errors naming the kernel as the user did (``named``)."""
    kp = KernelOptionParser(
        spec,
        prog=f"{command} {named or spec.ref}",
        description=kernel_description(spec),
        allow_abbrev=False,
    )
    add_common_options(kp)
    for prm in spec.params:  # left out of the namespace when not given (kernel_params fills the default in)
        kp.add_argument(prm.flag, dest=prm.name, type=prm.type, default=argparse.SUPPRESS, metavar=_metavar(prm), help=option_help(prm))
    return kp


def kernel_params(spec: registry.KernelSpec, ns: argparse.Namespace) -> tuple[registry.Params, frozenset[str]]:
    """Every option's value (the default where it was not given), and the names of those given."""
    given = frozenset(prm.name for prm in spec.params if hasattr(ns, prm.name))
    return {prm.name: getattr(ns, prm.name, prm.default) for prm in spec.params}, given


def kernel_description(spec: registry.KernelSpec) -> str:
    """What ``--help`` says of a kernel: its description, where it is declared, its default topology."""
    where = f"declared in {spec.source}; " if spec.source else ""
    return f"{spec.description or spec.name} ({where}default topology: {spec.default_topology})"


def option_help(prm: registry.Option) -> str:
    """An option's ``--help`` line, its ``%`` doubled (argparse formats help with ``%``: "50% of" would crash it)."""
    default = prm.value_text(prm.default) if prm.type is int else repr(prm.default)  # a float's default as a float: 2.0
    used = " or ".join(f"--{name.replace('_', '-')} {value}" for name, value in prm.only_with)
    return f"{prm.help} (default: {default}; {prm.range_text()}{'; only with ' + used if used else ''})".replace("%", "%%")


def _metavar(prm: registry.Option) -> str:
    if prm.choices is not None:
        return "{" + ",".join(map(str, prm.choices)) + "}"
    return {int: "N", float: "X"}.get(prm.type, "TEXT")


class KernelOptionParser(OptionParser):
    """A kernel's options: an unknown one is named with the kernel's options (and a close match), never a usage block."""

    def __init__(self, spec: registry.KernelSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            raise KernbenchError(self.unknown(extra))
        return ns

    def unknown(self, extra: list[str]) -> str:
        flags = [a for a in self._actions if a.option_strings and a.dest != "help"]
        known = [f for a in flags for f in a.option_strings]
        first = next((a for a in extra if a.startswith("-")), extra[0])
        word = first.split("=", 1)[0]
        if not word.startswith("-"):
            return f"{self.prog}: unexpected argument {first!r} (options are given as --name VALUE; see `{self.prog} --help`)"
        ours = ", ".join(p.flag for p in self.spec.params) or "none"
        guess = registry.suggest(word, known)
        hint = f" (did you mean {' or '.join(guess)}?)" if guess else ""
        return f"{self.prog}: {word} is not an option of {self.spec.name}{hint}; its options: {ours} (and kernbench run's own: see --help)"


def parse_kernel_args(
    spec: registry.KernelSpec, argv: list[str], command: str = "kernbench run", named: str | None = None
) -> argparse.Namespace:
    ns: argparse.Namespace = kernel_parser(spec, command, named).parse_args(argv)
    return ns


def limits_of(ns: argparse.Namespace) -> RunLimits:
    return RunLimits(ns.max_commands_per_pe, ns.max_sim_ns, ns.max_wall_s)


def check_run(
    kernel: str, argv: list[str], command: str = "kernbench run"
) -> tuple[registry.KernelSpec, argparse.Namespace, registry.Params]:
    """Everything that can be checked before the topology is compiled: the kernel name, its options
    (also against the topology's PE count, read from the YAML), the output paths. ``command`` is the one
    the user typed (``kernbench-tui run``): its name is in the option errors and ``--help``."""
    spec, ns, params, _topology = _checked(kernel, argv, command)
    return spec, ns, params


def _checked(
    kernel: str, argv: list[str], command: str = "kernbench run"
) -> tuple[registry.KernelSpec, argparse.Namespace, registry.Params, dict[str, Any]]:
    """:func:`check_run`, and the topology document it read and checked (for :func:`prepare` to compile)."""
    from kernbench.topology.compile import check_size, pe_count
    from kernbench.topology.spec import load_spec, source_file

    spec = registry.get(kernel)
    ns = parse_kernel_args(spec, argv, command, kernel)
    params, given = kernel_params(spec, ns)
    check_analyses(ns, command)
    if ns.what_if:  # a parameter change is checked before the run, as --set is (then on its own, the run's topology without it)
        from kernbench.analysis.whatif import parse_what_ifs

        changed = parse_what_ifs(ns.what_if, None).overrides
        if changed:
            load_spec(ns.topology or spec.default_topology, [*ns.overrides, *changed])
    topology = load_spec(ns.topology or spec.default_topology, ns.overrides)
    check_size(topology)
    spec.validate(params, pe_count(topology), given)
    outputs = [("--trace", ns.trace), ("--perfetto", ns.perfetto)]
    partials = [(f"{flag} (its .partial file)", _partial(p)) for flag, p in outputs if p]
    check_outputs(outputs + partials, inputs=[source_file(ns.topology or spec.default_topology), *map(Path, spec.inputs)])
    return spec, ns, params, topology


def check_analyses(ns: argparse.Namespace, command: str) -> None:
    """``--by`` and ``--speedups`` say how to explain: without ``--explain`` they would do nothing."""
    if ns.by != "cause" and not ns.explain:
        raise KernbenchError(f"{command}: --by {ns.by} says how --explain reads the critical path: add --explain")
    if ns.speedups and not ns.explain:
        raise KernbenchError(f"{command}: --speedups ranks the lines of the critical path --explain finds: add --explain")


def prepare(kernel: str, argv: list[str]) -> tuple[registry.KernelSpec, argparse.Namespace, Runtime, registry.Prepared, registry.Params]:
    """Check a kernel's options and outputs, build its runtime and launch it (not run yet)."""
    from kernbench.topology.compile import compile_spec

    spec, ns, params, topology = _checked(kernel, argv)
    rt = Runtime(compile_spec(topology), mode=ns.timing, fidelity=ns.fidelity, data=not ns.no_data)  # the document checked above: read once
    return spec, ns, rt, set_up(spec, rt, params), params


def set_up(spec: registry.KernelSpec, rt: Runtime, params: registry.Params) -> registry.Prepared:
    """Run a kernel's set-up on ``rt``. A shipped kernel's ValueError is a rule of its options; anything a
    kernel file's set-up raises is reported at its own line in that file; a set-up must launch something."""
    prepared = users_code(spec, "set-up", lambda: spec.prepare(rt, params))
    if not rt.launched:
        raise KernbenchError(
            f"{spec.name}: its set-up{_defined_at(spec)} launched no kernel: call rt.launch(KERNEL, pes=[...], args=(...)) in it"
        )
    return prepared


def _defined_at(spec: registry.KernelSpec) -> str:
    """`` (FILE:LINE)`` of a kernel file's set-up function, "" for a shipped one."""
    code = getattr(spec.setup, "__code__", None)
    return f" ({spec.source}:{code.co_firstlineno})" if spec.source and code is not None else ""


T = TypeVar("T")


def users_code(spec: registry.KernelSpec, what: str, call: Callable[[], T]) -> T:
    """``call()`` — a kernel's set-up, reference check or summary — with its failures said where they are:
    a shipped kernel's ValueError as its message, anything from a kernel file at its line in the file."""
    from kernbench.kernels.files import user_line
    from kernbench.raised import described, theirs

    try:
        return call()
    except KernbenchError:
        raise
    except BaseException as exc:  # (sys.exit(), GreenletExit, a BaseException of its own: the user's too)
        if not theirs(exc):
            raise
        if not spec.source:
            if isinstance(exc, ValueError):
                raise KernbenchError(f"{spec.name}: {exc}") from None
            raise
        raise KernbenchError(f"{spec.name}: its {what} raised {described(exc)}{user_line(exc, Path(spec.source))}") from None


def max_error(spec: registry.KernelSpec, prepared: registry.Prepared) -> float | None:
    """The kernel's reference check, called after its run: the max |error| of its output, a finite number
    (None when it has no check); a NaN, an infinity or not a number is an error saying so."""
    import math

    value = users_code(spec, "reference check", prepared.check)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(value)  # a numpy scalar or 0-d array
        except (TypeError, ValueError):
            raise KernbenchError(
                f"{spec.name}: its reference check returned {type(value).__name__}: return the max |error| (a number) or None"
            ) from None
    if not math.isfinite(value):
        raise KernbenchError(
            f"{spec.name}: its reference check gave max |error| = {value}: the output (or the reference) holds a NaN or an "
            "infinity; the run's timing is unaffected, but its numerics are wrong"
        )
    return float(value)


def report(
    spec: registry.KernelSpec,
    rt: Runtime,
    prepared: registry.Prepared,
    result: RunResult,
    params: registry.Params,
    attribution: Attribution | None = None,
    overrides: Sequence[str] = (),
    what_if: dict[str, Any] | None = None,
    speedups: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The run record (:mod:`kernbench.record`) of a finished run: ``kernbench run --json``'s object
    (``overrides``: the ``--set`` texts the topology was resolved with)."""
    return result.run_record(
        kernel=spec.name,
        kernel_file=spec.source or None,
        variant=prepared.variant,
        params=params,
        overrides=overrides_of(overrides),
        max_abs_err=max_error(spec, prepared) if rt.holds_data else None,  # (no data: nothing to check)
        data="held" if rt.holds_data else "none",
        attribution=attribution,
        figures=_figures(spec, users_code(spec, "summary", lambda: prepared.summary(result))),
        what_if=what_if,
        speedups=speedups,
    )


def figures_of(data: Mapping[str, Any]) -> dict[str, Any]:
    """The kernel's own figures in a run record: its keys that are not a record field."""
    from kernbench.record import NAMES

    return {k: v for k, v in data.items() if k not in NAMES}


def overrides_of(texts: Sequence[str]) -> dict[str, Any]:
    """``--set`` texts as the run record keeps them: key path as given → the value as read (the last one wins)."""
    from kernbench.topology.spec import parse_override

    out: dict[str, Any] = {}
    for text in texts:
        _parts, value = parse_override(text)
        out[text.split("=", 1)[0].strip()] = value
    return out


def _figures(spec: registry.KernelSpec, figures: Any) -> dict[str, Any]:
    """A kernel's own figures, checked to fit its run record (docs/output.md: numbers or short text)."""
    from kernbench.record import figure_problems

    if problems := figure_problems(figures):
        raise KernbenchError(f"{spec.name}: its summary's figures do not fit the run record: " + "; ".join(problems))
    return dict(figures)


def run(args: argparse.Namespace) -> int:
    argv = _common_argv(args) + list(args.options)
    with supervised(wall_limit_in(argv), args.kernel or "kernbench run"):  # its import, set-up, rules, run, check
        return _run(args, argv)


def _run(args: argparse.Namespace, argv: list[str]) -> int:
    if args.kernel == "":
        raise KernbenchError(
            "kernbench run: the kernel named is empty: name a shipped kernel (see --list) or a kernel file, path/to/file.py"
        )
    if args.list or not args.kernel:
        table = _listed(args.kernel)
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
    spec, ns, rt, prepared, params = prepare(args.kernel, argv)
    need_events = bool(ns.trace or ns.perfetto or ns.explain or ns.what_if)
    try:
        with run_progress(spec.name, stderr_is_terminal() and not ns.json) as progress:  # a TTY only, after ~1 s
            result = rt.run(record=need_events, limits=limits_of(ns), progress=progress)
    except KernbenchError as exc:
        recorded = getattr(exc, "recorded", None)
        if need_events and recorded:
            try:
                saved = _save(ns, EventStore.from_events(recorded), _meta(spec, rt, prepared, params, ns), partial=True)
                kept = f"are in {', '.join(saved)}"
            except OutputPathError as not_saved:  # (a full disk: the run's own error still comes first)
                kept = f"were not saved: {not_saved}"
            exc.args = (f"{exc}\n  the {len(recorded):,} events recorded up to the failure {kept}",)
        raise
    show = stderr_is_terminal() and not ns.json
    attribution = None
    if ns.explain or ns.what_if:
        with working("attributing the latency along the critical path", show):
            attribution = result.explain()
    what_if, speedups = _retimed(ns, rt, result, attribution, show)
    data = report(spec, rt, prepared, result, params, attribution if ns.explain else None, ns.overrides, what_if, speedups)
    if ns.trace or ns.perfetto:
        meta = _meta(spec, rt, prepared, params, ns, result.latency_ns, data["max_abs_err"], figures=figures_of(data))
        with working(f"writing {' and '.join(p for p in (ns.trace, ns.perfetto) if p)} ({len(result.events or []):,} events)", show):
            _save(ns, result.store(), meta)
    if ns.json:
        print(to_json(data, indent=2, sort_keys=False))
    else:
        print_report(data)
        if (attribution is not None and ns.explain) or speedups is not None or what_if is not None:
            from kernbench.analysis.explain import explain_text, speedups_text, what_if_text

            if attribution is not None and ns.explain:
                print()
                print(explain_text(attribution, by=ns.by), end="")
            if speedups is not None:
                print()
                print(speedups_text(speedups), end="")
            if what_if is not None:
                print()
                print(what_if_text(what_if), end="")
    return 0


def _retimed(
    ns: argparse.Namespace, rt: Runtime, result: RunResult, attribution: Attribution | None, show: bool
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """``--what-if``'s and ``--speedups``' records: the run's commands re-timed, its kernel not run again."""
    what_if = spd = None
    if not (ns.speedups or ns.what_if) or attribution is None:
        return what_if, spd
    from kernbench.analysis.whatif import deltas_json, parse_what_ifs, retime, speedups

    if ns.speedups and attribution is not None:
        with working("re-timing the top lines of the critical path at zero and half their time", show):
            rows = speedups(rt, result, attribution)
        spd = {"latency_ns": round(result.latency_ns, 6), "lines": [r.as_json(result.latency_ns) for r in rows]}
    if ns.what_if and attribution is not None:
        what = parse_what_ifs(ns.what_if, result)
        with working(f"re-timing the recorded commands ({', '.join(ns.what_if)})", show):
            what_if = deltas_json(attribution, retime(rt, result, what))
    return what_if, spd


def _listed(kernel: str | None) -> dict[str, registry.KernelSpec]:
    """What ``--list`` lists: the shipped kernels, or those a kernel file declares (``kernbench run --list FILE.py``)."""
    from kernbench.kernels import files

    if kernel and files.is_file_ref(kernel):  # each as it is named from here: FILE.py:NAME, the path as given
        path = files.split_ref(kernel)[0]
        return {f"{path}:{spec.name}": spec for spec in files.load(path).kernels.values()}
    return registry.kernels()


def _meta(
    spec: registry.KernelSpec,
    rt: Runtime,
    prepared: registry.Prepared,
    params: registry.Params,
    ns: argparse.Namespace,
    end_ns: float | None = None,
    max_abs_err: float | None = None,
    partial: bool = True,
    *,
    figures: Mapping[str, Any] | None = None,
) -> TraceMetadata:
    """A trace's metadata: what ran (``ns``: its options, of which ``--set`` and ``--topology``), with the run
    record's context and the kernel's figures (so a trace reads back as the same record, and says how to run it
    again: :mod:`kernbench.commands.rerun`). Without ``end_ns`` the run has not ended: a failed run's
    (``partial``), or one about to start."""
    from kernbench.events.tracefile import TraceMetadata
    from kernbench.topology.digest import topology_digest

    extra: dict[str, Any] = {
        "params": params,
        "timing": rt.mode,
        "fidelity": rt.fidelity,
        "kernel_file": spec.source or None,
        "overrides": overrides_of(ns.overrides),
        "topology_digest": topology_digest(rt.graph.spec),
    }
    if (path := topology_file(ns.topology)) is not None:
        extra["topology_file"] = path
    # the limits it ran under (null: none), so that a rerun runs under them too
    extra["limits"] = {"max_commands_per_pe": ns.max_commands_per_pe, "max_sim_ns": ns.max_sim_ns, "max_wall_s": ns.max_wall_s}
    if not rt.holds_data:
        extra["data"] = "none"
    if end_ns is None:
        if partial:
            extra["partial"] = True
    else:
        extra["max_abs_err"] = max_abs_err
        if figures:
            extra["figures"] = dict(figures)
    return TraceMetadata(kernel=spec.name, topology=rt.graph.name, variant=prepared.variant, end_ns=end_ns or 0.0, extra=extra)


def topology_file(given: str | None) -> str | None:
    """A topology given as a YAML file's path, made absolute (a trace may be opened from another folder);
    None for a named one (``paper``: found where kernbench is installed, wherever that is)."""
    from kernbench.topology.spec import resolve, topology_dir

    if given is None:
        return None
    path = resolve(given)
    return None if path == topology_dir() / f"{given}.yaml" else str(path.resolve())


def _partial(path: str) -> str:
    """``run.kbtrace`` → ``run.partial.kbtrace``: where a failed run's events go."""
    p = Path(path)
    return str(p.with_name(f"{p.stem}.partial{p.suffix}"))


def _save(ns: argparse.Namespace, store: EventStore, meta: TraceMetadata, partial: bool = False) -> list[str]:
    return save_outputs(ns.trace, ns.perfetto, store, meta, partial)


def save_outputs(trace: str | None, perfetto: str | None, store: EventStore, meta: TraceMetadata, partial: bool = False) -> list[str]:
    """Write the requested outputs (``--trace``, ``--perfetto``), all or none (an interrupt between two leaves
    neither); a failed run's (``partial``) go beside them as ``NAME.partial.EXT``. Returns the paths written."""
    from kernbench.events.perfetto import perfetto_bytes
    from kernbench.events.tracefile import trace_bytes

    if not meta.end_ns:
        meta = type(meta)(meta.kernel, meta.topology, meta.variant, store.end_ns, meta.extra)
    outputs = []
    for path, encode in ((trace, trace_bytes), (perfetto, perfetto_bytes)):
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


def _shown_path(path: str) -> str:
    """A path as a person gave it: relative to the current folder when it lies below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if rel.startswith("..") else rel


def print_report(data: dict[str, Any]) -> None:
    """A run record (:func:`report`) as text."""
    from kernbench.record import NAMES

    console = _Console(width=100, highlight=False, color_system=None if not sys.stdout.isatty() else "auto")  # honours NO_COLOR
    head = f"{data['kernel']}" + (f" ({data['variant']})" if data["variant"] else "")
    console.print(f"{head} on {data['topology']} · {data['pes']} PE(s)", markup=False)
    if data["kernel_file"]:
        console.print(f"kernel file        {_shown_path(data['kernel_file'])}", markup=False)
    console.print(f"latency            {data['latency_ns']:,.1f} ns")
    console.print(f"commands           {data['commands']:,}   dispatch {data['dispatch_cycles']:,.1f} cycles")
    err = data["max_abs_err"]
    if data.get("data") == "none":
        console.print("max |err| vs numpy — (--no-data: no values held, the reference check is skipped)")
    else:
        console.print(f"max |err| vs numpy {'— (the kernel has no reference check)' if err is None else format(err, '.3g')}")
    for k, v in data.items():
        if k not in NAMES:
            console.print(f"{k:<18} {v}", markup=False)
    t = Table(box=box.SIMPLE_HEAD, title="engines (all PEs)", title_justify="left")
    t.add_column("engine")
    t.add_column("busy ns", justify="right")
    t.add_column("busy %", justify="right")
    t.add_column("idle %", justify="right")
    for e in ENGINES:
        pct = data["engine_util_pct"][e]
        t.add_row(ENGINE_NAMES[e], f"{data['engine_busy_ns'][e]:,.1f}", f"{pct:.1f}", f"{max(0.0, 100 - pct):.1f}")
    console.print(t)
    reasons = data["stall_ns_by_reason"]
    why = ", ".join(f"{reason} {ns:,.1f}" for reason, ns in reasons.items() if ns > 0) or "lazy-load waits, full queue, receives"
    console.print(f"PE_CPU stalled {data['stall_ns']:,.1f} ns in all ({why})", markup=False)


def tui_simulation(argv: list[str]) -> tuple[Callable[[Bus], RecordedRun], TraceMetadata]:
    """For ``kernbench-tui run``: ``(fn(bus), metadata)`` running a kernel on ``bus``; ``fn`` returns the
    finished run, which keeps what re-timing it needs (the debugger's what-if prompt)."""
    if not argv:
        raise KernbenchError("kernbench-tui run: name a kernel (see `kernbench run --list`)")
    wall_s = wall_limit_in(argv[1:])
    with supervised(wall_s, argv[0]):
        spec, ns, rt, prepared, params = prepare(argv[0], list(argv[1:]))
    limits = limits_of(ns)

    def fn(bus: Bus) -> RecordedRun:
        with supervised(wall_s, argv[0]):
            result = rt.run(bus=bus, limits=limits)
            meta = _meta(spec, rt, prepared, params, ns, result.latency_ns, max_error(spec, prepared) if rt.holds_data else None)
        return RecordedRun(rt, result, meta)

    return fn, _meta(spec, rt, prepared, params, ns, partial=False)


class RecordedRun:
    """A finished run that can be re-timed: its Runtime, its result (the command logs) and its metadata.

    ``kernbench-tui run``'s live run ends as one of these, so the debugger's what-if prompt re-times it
    (:meth:`retime`) without running the kernel's Python again."""

    def __init__(self, rt: Runtime, result: RunResult, metadata: TraceMetadata) -> None:
        self.rt = rt
        self.result = result
        self.metadata = metadata

    def warm_up(self) -> None:
        """Import what a re-timing reads first (the change parser, ~10 ms once): the process that keeps the
        run calls this while it waits for the first what-if, so that one does not pay for it."""
        import kernbench.analysis.whatif  # noqa: F401

    def retime(self, changes: Sequence[str]) -> Trace:
        """The run's commands re-timed under ``changes`` (``--what-if`` syntax; a bad one or a kernel that read
        simulated time is a :class:`~kernbench.errors.RetimeError`), events recorded; its metadata says which
        changes and the latency before (``extra``: ``what_if``, ``before_ns``)."""
        from kernbench.events.bus import Recorder
        from kernbench.events.tracefile import Trace

        bus = Bus()
        recorder = Recorder(bus)
        meta = self.retime_published(changes, bus)
        return Trace(EventStore.from_events(recorder.events()), meta)

    def retime_published(self, changes: Sequence[str], bus: Bus) -> TraceMetadata:
        """:meth:`retime`'s re-timing with its events published on ``bus`` as they happen (a subscriber may
        turn them into columns or send them on while the re-timing goes on); its metadata."""
        from kernbench.analysis.whatif import parse_what_ifs

        what = parse_what_ifs(list(changes), self.result)
        new = self.rt.replay(self.result, overrides=list(what.overrides), bus=bus, scale=what.scale())
        meta = self.metadata
        extra = {**meta.extra, "what_if": list(changes), "before_ns": self.result.latency_ns}
        return type(meta)(meta.kernel, meta.topology, meta.variant, new.latency_ns, extra)


class WhatIfPair:
    """For ``kernbench-tui run KERNEL … --what-if CHANGE``: the run (events recorded, in this process) and
    its re-timing under the changes, each as a trace; the run happens once, whichever side asks first
    (the debugger's two sides load on two threads)."""

    def __init__(self, argv: list[str], command: str = "kernbench-tui run") -> None:
        """Everything is checked here (options, topology, the changes); the kernel is set up and run later,
        on the first side's thread."""
        import threading

        self.argv = list(argv)
        _spec, self.ns, _params = check_run(argv[0], self.argv[1:], command)
        self._lock = threading.Lock()
        self._base: tuple[Runtime, RunResult, TraceMetadata] | None = None
        self.retime_s: float | None = None  # wall seconds the re-timing took (shown, never recorded)

    def base(self) -> Trace:
        """The run itself."""
        from kernbench.events.tracefile import Trace

        _rt, result, meta = self._run()
        return Trace(result.store(), meta)

    def retimed(self) -> Trace:
        """The run's commands re-timed under the changes (the kernel does not run again)."""
        import time

        rt, result, meta = self._run()
        t = time.perf_counter()
        trace = RecordedRun(rt, result, meta).retime(self.ns.what_if)
        self.retime_s = time.perf_counter() - t
        return trace

    def retime(self, changes: Sequence[str]) -> Trace:
        """The run re-timed under other ``changes`` (the debugger's what-if prompt on this comparison)."""
        return RecordedRun(*self._run()).retime(changes)

    def _run(self) -> tuple[Runtime, RunResult, TraceMetadata]:
        with self._lock:
            if self._base is None:
                spec, ns, rt, prepared, params = prepare(self.argv[0], self.argv[1:])
                result = rt.run(record=True, limits=limits_of(ns))
                self._base = (
                    rt,
                    result,
                    _meta(spec, rt, prepared, params, ns, result.latency_ns, max_error(spec, prepared)),
                )
            return self._base
