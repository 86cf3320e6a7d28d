"""The ``kernbench`` command: a thin dispatcher over subcommand modules.

Each module named in :data:`COMMANDS` provides ``add_parser(subparsers)``,
which adds its subcommand and returns the parser, and ``run(args) -> int``.
Adding a command is one line here. How a command ends — exit status 0, 1
(a check failed), 2 (bad input, printed as one ``error: …`` line), 130
(Ctrl-C) — is :func:`kernbench.exit_codes.guarded`'s job.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from kernbench import __version__
from kernbench.exit_codes import guarded

if TYPE_CHECKING:
    from kernbench.events.bus import Bus
    from kernbench.events.tracefile import TraceMetadata

COMMANDS: tuple[str, ...] = (
    "kernbench.commands.topo",
    "kernbench.commands.run",
    "kernbench.commands.bench",
    "kernbench.commands.compare",
)


def tui_simulation(argv: list[str]) -> tuple[Callable[[Bus], TraceMetadata], TraceMetadata]:
    """``kernbench-tui run``'s hook: ``(fn(bus), metadata)`` for a kernel's live run."""
    from kernbench.commands.run import tui_simulation as build

    return build(argv)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kernbench",
        description="Simulate LLM kernels on a modeled memory-centric accelerator.",
    )
    parser.add_argument("--version", action="version", version=f"kernbench {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        module = importlib.import_module(name)
        module.add_parser(subparsers).set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    return guarded(lambda: _dispatch(argv), "error: ")


def _dispatch(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    return int(args._run(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
