"""The ``kernbench`` command: a thin dispatcher over subcommand modules.

Each module named in :data:`COMMANDS` provides ``add_parser(subparsers)``,
which adds its subcommand and returns the parser, and ``run(args) -> int``.
Adding a command is one line here. Every user-facing error (a
:class:`~kernbench.errors.KernbenchError`) is printed as ``error: …`` on
stderr with exit status 2, never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from kernbench import __version__
from kernbench.errors import KernbenchError

COMMANDS: tuple[str, ...] = (
    "kernbench.commands.topo",
    "kernbench.commands.run",
    "kernbench.commands.bench",
)


def tui_simulation(argv: list[str]):
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
    args = build_parser().parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except KernbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
