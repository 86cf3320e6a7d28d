"""``kernbench-tui``: open the debugger on a live run, a trace file or a probe.

::

    kernbench-tui                       # default GQA decode (opt2), live
    kernbench-tui run KERNEL [OPTS…]    # same options as `kernbench run`
    kernbench-tui open run.kbtrace      # a saved trace
    kernbench-tui demo [--pes N]        # the synthetic run (no simulator needed)
    kernbench-tui probe [OPTS…]         # print the probe table (for scripts)
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from kernbench.errors import KernbenchError
from kernbench_tui.demo import DemoParams
from kernbench_tui.sources import ProcessSource, TraceFileSource

DEFAULT_RUN = ["gqa_decode", "--variant", "opt2"]


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
    return ProcessSource("kernbench.cli:tui_simulation", (list(run_argv),), description=" ".join(run_argv))


def _demo_source(pes: int, tiles: int, pace_s_per_us: float) -> ProcessSource:
    params = DemoParams(n_pes=pes, tiles=tiles, pace_s_per_us=pace_s_per_us)
    return ProcessSource("kernbench_tui.demo:demo_simulation", (params,), description="demo")


def _probe_command(argv: Sequence[str]) -> int:
    """``kernbench-tui probe``: delegate to ``kernbench_probes.dma`` (prints the table)."""
    from kernbench_probes import dma

    result = dma.main(list(argv))
    return int(result or 0)


def _launch(source) -> int:
    from kernbench_tui.app import KernbenchApp

    KernbenchApp(source).run()
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernbench-tui", description="Step through a kernel's simulated time.")
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="simulate a kernel live (same options as `kernbench run`)")
    run.add_argument("kernel")
    run.add_argument("options", nargs=argparse.REMAINDER)
    op = sub.add_parser("open", help="open a saved .kbtrace file")
    op.add_argument("file")
    demo = sub.add_parser("demo", help="a synthetic GEMM-like run (no simulator needed)")
    demo.add_argument("--pes", type=int, default=8)
    demo.add_argument("--tiles", type=int, default=40)
    demo.add_argument("--pace", type=float, default=0.02, help="wall seconds per simulated µs (0: as fast as possible)")
    sub.add_parser("probe", help="print the probe table", add_help=False)
    return parser


def main(argv: Sequence[str] | None = None, launch: Callable[[object], int] = _launch) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["probe"]:
        return _probe_command(argv[1:])
    args = _parser().parse_args(argv)
    try:
        if args.command == "open":
            if not os.path.exists(args.file):
                raise KernbenchError(f"{args.file}: no such trace file")
            return launch(TraceFileSource(args.file))
        if args.command == "demo":
            return launch(_demo_source(args.pes, args.tiles, args.pace))
        if args.command == "run":
            return launch(_simulation_source([args.kernel, *args.options]))
        try:
            source = _simulation_source(DEFAULT_RUN)
        except SimulatorNotWired as exc:
            print(f"kernbench-tui: {exc}\nkernbench-tui: showing the synthetic demo instead", file=sys.stderr)
            source = _demo_source(8, 40, 0.02)
        return launch(source)
    except KernbenchError as exc:
        print(f"kernbench-tui: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
