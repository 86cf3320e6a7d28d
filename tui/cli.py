"""``kernbench-tui``: open the debugger on a live run, a trace file or a probe.

::

    kernbench-tui                       # default GQA decode (opt2), live
    kernbench-tui run KERNEL [OPTS…]    # same options as `kernbench run`
    kernbench-tui run KERNEL --what-if CHANGE  # the run and its re-timing under CHANGE, on one axis
    kernbench-tui open run.kbtrace      # a saved trace
    kernbench-tui compare A B           # two runs on one axis; each a .kbtrace or "KERNEL [OPTS…]"
    kernbench-tui demo [--pes N]        # the synthetic run (no simulator needed)
    kernbench-tui probe [OPTS…]         # print the probe table (for scripts)
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernbench import __version__
from kernbench.cliargs import OptionParser
from kernbench.errors import KernbenchError
from kernbench.exit_codes import guarded
from kernbench.printable import printable

if TYPE_CHECKING:
    from kernbench_tui.app import KernbenchApp, RunOutputs
    from kernbench_tui.child_run import ProcessSource
    from kernbench_tui.compare_app import CompareApp
    from kernbench_tui.sources import Retimer, Source, WholeTraceSource

# Only light imports above: Ctrl-C while the interpreter starts is handled once
# main() runs, so the heavy ones (numpy, simpy, textual) happen inside it.

DEFAULT_RUN = ["gqa_decode", "--variant", "opt2"]
DUMB_TERMS = {"dumb", "unknown", "emacs"}


class SimulatorNotWired(KernbenchError):
    """``kernbench.cli`` does not (yet) offer ``tui_simulation``."""


def _simulation_source(run_argv: Sequence[str]) -> ProcessSource:
    """A live source for ``kernbench run <run_argv>``, simulated in a child process.

    Contract with the simulator: ``kernbench.cli.tui_simulation(argv)`` parses
    the same arguments as ``kernbench run`` and returns ``(fn, metadata)``
    where ``fn(bus)`` runs the simulation publishing on ``bus``.
    """
    try:
        from kernbench.cli import tui_simulation  # noqa: F401 - checked here, called in the child
    except ImportError as exc:
        raise SimulatorNotWired(
            f"cannot run {' '.join(run_argv)!r} live: kernbench.cli.tui_simulation is not available ({exc}); "
            "try `kernbench-tui demo` or `kernbench-tui open FILE`"
        ) from None
    from kernbench_tui.child_run import ProcessSource

    return ProcessSource("kernbench.cli:tui_simulation", (list(run_argv),), description=printable(" ".join(run_argv)))


def run_outputs(run_argv: Sequence[str]) -> RunOutputs:
    """Everything about ``kernbench-tui run`` that can fail before the app starts: the kernel name, its
    options (also against the topology), the topology itself, the output paths. ``--trace``, ``--perfetto``
    and ``--explain`` are honoured (files written, the critical path shown once the run ends: with ``--by line``
    or ``function`` in the Source view); with ``--what-if`` the run and its re-timing open side by side
    (:func:`what_if_comparison`); ``--json`` and ``--speedups``, text for scripts, are refused."""
    from kernbench.commands.run import check_run
    from kernbench_tui.app import RunOutputs

    if not run_argv:
        raise KernbenchError("kernbench-tui run: name a kernel (see `kernbench run --list`)")
    _spec, ns, _params = check_run(run_argv[0], list(run_argv[1:]), "kernbench-tui run")
    if ns.json:
        raise KernbenchError(
            f"kernbench-tui run: --json prints a run record for scripts, not a view: use `kernbench run {shlex.join(run_argv)}`"
        )
    if ns.speedups:
        raise KernbenchError(
            f"kernbench-tui run: --speedups prints re-timed figures, not a view: use `kernbench run {shlex.join(run_argv)}`"
        )
    if ns.what_if:
        for flag, given in (("--trace", ns.trace), ("--perfetto", ns.perfetto), ("--explain", ns.explain)):
            if given:
                raise KernbenchError(
                    f"kernbench-tui run: with --what-if the debugger compares the run and its re-timing; {flag} is for one run "
                    f"(use `kernbench run … --what-if … {flag} …`)"
                )
    return RunOutputs(trace=ns.trace, perfetto=ns.perfetto, explain=ns.explain, by=ns.by, what_if=tuple(ns.what_if))


@dataclass(frozen=True)
class RunLaunch:
    """A live run and what was asked of it besides the view."""

    source: ProcessSource
    outputs: RunOutputs


@dataclass(frozen=True)
class Comparison:
    """What ``kernbench-tui compare`` opens: per side, the text as written and its source; ``retimer``: what
    re-times run A under other changes (``run … --what-if``: the ``r`` prompt), if anything does."""

    sides: tuple[tuple[str, Source | WholeTraceSource], ...]
    retimer: Retimer | None = None


if TYPE_CHECKING:
    #: what the app opens: a source, a live run with its outputs, or two for compare
    Launchable = Source | WholeTraceSource | Comparison | RunLaunch


def _side_source(label: str, text: str) -> Source | WholeTraceSource:
    """A source for one side of ``compare`` (see :mod:`kernbench.commands.sides`), checked before the app starts."""
    from kernbench.commands.sides import RunSide, SideError, check_side, parse_side
    from kernbench_tui.sources import TraceFileSource

    try:
        side = parse_side(text)
        if isinstance(side, RunSide):
            from kernbench.commands.run import wall_limit_in
            from kernbench.limits import supervised

            source = _simulation_source(list(side.argv))
            with supervised(wall_limit_in(side.options), f"compare {label}: {side.text}"):  # (a kernel file's import, rules)
                check_side(side, saves=False)
            return source
        trace = check_side(side)
        assert not isinstance(trace, argparse.Namespace)
        return TraceFileSource(side.path, trace)
    except SideError as exc:
        raise KernbenchError(f"compare {label}: {exc}") from None


def what_if_comparison(run_argv: Sequence[str], changes: Sequence[str]) -> Comparison:
    """``kernbench-tui run KERNEL … --what-if CHANGE``: the run (simulated in this process, events recorded) as A
    and its commands re-timed under the changes as B, on one time axis (the compare view)."""
    from kernbench.commands.run import WhatIfPair
    from kernbench_tui.sources import OpenedSource

    pair = WhatIfPair(list(run_argv))
    b_text = f"what if {', '.join(changes)} (re-timed)"
    sides = (
        (shlex.join(_without_what_if(list(run_argv))), OpenedSource(pair.base, "the run")),
        (b_text, OpenedSource(pair.retimed, "re-timed")),
    )
    return Comparison(sides, retimer=pair)


def _without_what_if(argv: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--what-if":
            skip = True
        elif not arg.startswith("--what-if="):
            out.append(arg)
    return out


def _demo_source(pes: int, tiles: int, pace_s_per_us: float) -> ProcessSource:
    from kernbench_tui.child_run import ProcessSource
    from kernbench_tui.demo import DemoParams

    params = DemoParams(n_pes=pes, tiles=tiles, pace_s_per_us=pace_s_per_us)
    return ProcessSource("kernbench_tui.demo:demo_simulation", (params,), description="demo")


def _probe_command(argv: Sequence[str]) -> int:
    """``kernbench-tui probe``: delegate to ``kernbench_probes.dma`` (prints the table)."""
    from kernbench_probes import dma

    result = dma.main(list(argv))
    return int(result or 0)


def terminal_problem() -> str | None:
    """Why the app cannot draw here, or None (it needs a real, capable terminal on stdin and stdout)."""
    if not sys.stdout.isatty():
        return "stdout is not a terminal"
    if not sys.stdin.isatty():
        return "stdin is not a terminal"
    term = os.environ.get("TERM", "")
    if term in DUMB_TERMS or not term:
        return f"TERM={term or '(unset)'} cannot show a full-screen app"
    return None


def _launch(source: Launchable) -> int:
    app: KernbenchApp | CompareApp
    if isinstance(source, Comparison):
        from kernbench_tui.compare_app import CompareApp

        app = CompareApp(list(source.sides), retimer=source.retimer)
    elif isinstance(source, RunLaunch):
        from kernbench_tui.app import KernbenchApp

        app = KernbenchApp(source.source, outputs=source.outputs)
    else:
        from kernbench_tui.app import KernbenchApp

        app = KernbenchApp(source)
    from kernbench_tui.lifetime import run_until_ended

    return exit_status(app, run_until_ended(app))


def exit_status(app: KernbenchApp | CompareApp, ended_by: int | None = None) -> int:
    """After the app closed: 128+signal if a signal closed it (``ended_by``, else the app's return code);
    a failed run's message (exit 2); else 0."""
    if ended_by is None and app.return_code and app.return_code >= 128:
        ended_by = app.return_code - 128
    if ended_by is not None:
        print(f"kernbench-tui: interrupted ({signal.Signals(ended_by).name})", file=sys.stderr)
        return 128 + ended_by
    if app.error is not None:
        raise KernbenchError(f"the run failed: {app.error}")
    return 0


def _count(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be in {low}..{high}, got {value}")
        return value

    return parse


def _pace(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds per simulated µs, got {text!r}") from None
    if not (0 <= value <= 60 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be in 0..60 seconds per µs, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = OptionParser(prog="kernbench-tui", description="Step through a kernel's simulated time.")
    parser.add_argument("--version", action="version", version=f"kernbench-tui {__version__}")
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="simulate a kernel live (same options as `kernbench run`)")
    run.add_argument("kernel", nargs="?", help="a shipped kernel (`kernbench run --list`) or a kernel file: path/to/file.py[:NAME]")
    run.add_argument("options", nargs=argparse.REMAINDER, help="its options, as for `kernbench run`")
    op = sub.add_parser("open", help="open a saved .kbtrace file")
    op.add_argument("file")
    cmp = sub.add_parser("compare", help='two runs on one time axis; each a .kbtrace file or "KERNEL [options]"')
    cmp.add_argument("a", help='run A: FILE.kbtrace or "KERNEL [options of kernbench run]" (quoted: one argument)')
    cmp.add_argument("b", help="run B, the same way")
    demo = sub.add_parser("demo", help="a synthetic GEMM-like run (no simulator needed)")
    demo.add_argument("--pes", type=_count(1, 256), default=8)
    demo.add_argument("--tiles", type=_count(1, 100_000), default=40)
    demo.add_argument("--pace", type=_pace, default=0.02, help="wall seconds per simulated µs (0: as fast as possible)")
    sub.add_parser("probe", help="print the probe table (plain text, for scripts)", add_help=False)
    return parser


def main(argv: Sequence[str] | None = None, launch: Callable[[Launchable], int] = _launch) -> int:
    if argv is None:  # the process is ours: a user's code that will not stop at the wall-time limit ends it
        from kernbench import limits
        from kernbench.cli import end_now

        limits.hard_stop = end_now
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["probe"]:
        return guarded(lambda: _probe_command(argv[1:]), "error: ")
    return guarded(lambda: _start(_parser().parse_args(argv), launch), "error: ")


def _start(args: argparse.Namespace, launch: Callable[[Launchable], int]) -> int:
    """Check everything that can be checked — what was asked for first (a mistake in it is named wherever
    this runs, and ``run KERNEL --help`` prints the kernel's options), then the terminal — and open the app."""
    what = _launchable(args)
    if launch is _launch and (why := terminal_problem()):
        raise KernbenchError(
            f"kernbench-tui needs an interactive terminal ({why}); for text output use `kernbench run …`, "
            "`kernbench run … --trace FILE` or `kernbench-tui probe`"
        )
    return launch(what)


def _launchable(args: argparse.Namespace) -> Launchable:
    """What the app is to open, every input checked."""
    if args.command == "open":
        from kernbench.events.tracefile import open_trace
        from kernbench_tui.sources import TraceFileSource

        trace = open_trace(args.file)  # a bad file fails here, with its reason, before the app starts
        return TraceFileSource(args.file, trace)
    if args.command == "compare":
        return Comparison(((args.a, _side_source("A", args.a)), (args.b, _side_source("B", args.b))))
    if args.command == "demo":
        return _demo_source(args.pes, args.tiles, args.pace)
    if args.command == "run":
        if not args.kernel:
            raise KernbenchError(
                "kernbench-tui run: name a kernel: a shipped one (`kernbench run --list`) or a kernel file, path/to/file.py[:NAME]"
            )
        from kernbench.commands.run import wall_limit_in
        from kernbench.limits import supervised

        run_argv = [args.kernel, *args.options]
        if any(a == "--what-if" or a.startswith("--what-if=") for a in args.options):
            return what_if_comparison(run_argv, run_outputs(run_argv).what_if)
        source = _simulation_source(run_argv)
        with supervised(wall_limit_in(args.options), args.kernel):  # (a kernel file's import and option rules, here)
            outputs = run_outputs(run_argv)
        return RunLaunch(source, outputs)
    try:
        return _simulation_source(DEFAULT_RUN)
    except SimulatorNotWired as exc:
        print(f"kernbench-tui: {exc}\nkernbench-tui: showing the synthetic demo instead", file=sys.stderr)
        return _demo_source(8, 40, 0.02)


if __name__ == "__main__":
    sys.exit(main())
