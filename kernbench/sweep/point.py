"""What goes to a worker and what comes back: one sweep point's task and its outcome.

A :class:`Task` is the ``kernbench run`` arguments of one point, so a point
is resolved, checked and run exactly as ``kernbench run KERNEL ARGV`` would
be (the worker is :func:`kernbench.commands.sweep.simulate_point`, beside
the ``run`` command whose checks it reuses). Its :class:`Outcome` carries
either the metrics or the one-line error (a kernel that rejects the
combination, a deadlock, a run limit), never an exception, so one bad point
does not lose the others; and it names the code that produced it, so a
worker running another kernbench is noticed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernbench import __version__
from kernbench.sweep.cache import code_digest


@dataclass(frozen=True, slots=True)
class Task:
    index: int
    kernel: str
    argv: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Outcome:
    index: int
    metrics: dict[str, Any] | None
    error: str | None = None
    code: str = ""  # kernbench version and source digest of whoever ran it; "" when nothing ran (cache, rejected)
    #: the user's modules the run loaded (a kernel file's helpers, wherever imported), with their digests then
    dependencies: dict[str, str] | None = None


def code_id() -> str:
    """This process's kernbench: version and source digest."""
    return f"{__version__}+{code_digest()}"


def one_line(message: str) -> str:
    """A multi-line error (a topology's problems, a deadlock's waiters) as one line, its lines joined by "; "."""
    return "; ".join(part.strip().removeprefix("- ") for part in message.splitlines() if part.strip()).replace(":;", ":")
