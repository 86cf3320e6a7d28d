"""The ``kernbench`` command: a thin dispatcher over subcommand modules.

Each module named in :data:`COMMANDS` provides ``add_parser(subparsers)``,
which adds its subcommand and returns the parser, and ``run(args) -> int``.
Adding a command is one line here; its module (and what it imports) is
loaded only when it runs, or for the full ``kernbench --help``. How a
command ends — exit status 0, 1 (a check failed), 2 (bad input, printed as
one ``error: …`` line), 130 (Ctrl-C) — is
:func:`kernbench.exit_codes.guarded`'s job.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from kernbench import __version__, limits
from kernbench.cliargs import OptionParser
from kernbench.errors import KernbenchError
from kernbench.exit_codes import guarded
from kernbench.printable import printable

if TYPE_CHECKING:
    from kernbench.commands.run import RecordedRun
    from kernbench.events.bus import Bus
    from kernbench.events.tracefile import TraceMetadata

COMMANDS: tuple[str, ...] = (
    "kernbench.commands.topo",
    "kernbench.commands.run",
    "kernbench.commands.bench",
    "kernbench.commands.compare",
    "kernbench.commands.sweep",
    "kernbench.commands.new",
)


def tui_simulation(argv: list[str]) -> tuple[Callable[[Bus], RecordedRun], TraceMetadata]:
    """``kernbench-tui run``'s hook: ``(fn(bus), metadata)`` for a kernel's live run; ``fn`` returns the finished
    run (its ``metadata``, and ``retime(changes)`` for the debugger's what-if prompt)."""
    from kernbench.commands.run import tui_simulation as build

    return build(argv)


def command_name(module: str) -> str:
    """The subcommand a module of :data:`COMMANDS` adds: its own name (``kernbench.commands.run`` → ``run``)."""
    return module.rsplit(".", 1)[1]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every subcommand, or ``only`` the one named (the others' modules stay unloaded)."""
    parser = OptionParser(
        prog="kernbench",
        description="Simulate LLM kernels on a modeled memory-centric accelerator.",
    )
    parser.add_argument("--version", action="version", version=f"kernbench {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        if only is not None and command_name(name) != only:
            continue
        module = importlib.import_module(name)
        module.add_parser(subparsers).set_defaults(_run=module.run)
    return parser


#: Commands that simulate once and end. Run as the program they collect garbage cycles only
#: once per PROGRAM_COLLECTS_EVERY new objects: nearly all they make lives until the end, and
#: Python's default (every 700, for long-running processes) would trace the live run again
#: and again. Commands of many runs (bench, sweep, compare) keep the default: each run's
#: simulated machine is garbage once the run ends, and is collected then.
SINGLE_RUN_COMMANDS = frozenset({"run"})
PROGRAM_COLLECTS_EVERY = 1_000_000


def main(argv: list[str] | None = None) -> int:
    """Run one command. Without ``argv`` this is the program itself (the console script,
    ``python -m kernbench.cli``): it reads ``sys.argv`` and the process ends once it returns."""
    args = sys.argv[1:] if argv is None else argv
    if argv is None and args[:1] and args[0] in SINGLE_RUN_COMMANDS:
        gc.set_threshold(PROGRAM_COLLECTS_EVERY)  # (the youngest generation's; the older ones keep theirs)
    if argv is None:  # the process is ours: a user's code that will not stop at the wall-time limit ends it
        limits.hard_stop = end_now
    status = guarded(lambda: _dispatch(args), "error: ")
    if argv is None:
        _leave_to_exit()
    return status


def end_now(message: str) -> None:
    """End this process at once with ``message`` as its one ``error:`` line (status 2): the user's code did
    not let the wall-time stop through (:func:`kernbench.limits.supervised`)."""
    try:
        sys.stdout.flush()
    except BaseException:  # (whatever state stdout is in, the process ends now)
        pass
    os.write(2, f"error: {printable(message, keep=chr(10))}\n".encode("utf-8", "replace"))
    os._exit(2)


def _dispatch(argv: list[str]) -> int:
    commands = [command_name(m) for m in COMMANDS]
    if argv and argv[0].startswith("-") and argv[0].split("=", 1)[0] not in ("-h", "--help", "--version"):
        # (argparse would say only that a command is required)
        raise KernbenchError(f"kernbench: {argv[0]} is not an option of kernbench; name a command first: {', '.join(commands)}")
    named = argv[0] if argv and argv[0] in commands else None
    args, extra = build_parser(only=named).parse_known_args(argv)
    if extra:
        prog = " ".join(["kernbench", *(w for w in (args.command, getattr(args, "topo_command", None)) if w)])
        raise KernbenchError(f"{prog}: unrecognized arguments: {' '.join(extra)} (see `{prog} --help`)")
    return int(args._run(args) or 0)


def _leave_to_exit() -> None:
    """What a command built (a whole simulated machine, cyclic, all garbage now) is left
    for the OS to reclaim: frozen, the cycle collector's pass at interpreter exit skips
    it — 0.13 s after a large run. atexit handlers and the flush of the streams still run."""
    gc.freeze()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
