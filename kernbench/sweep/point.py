"""Run one sweep point wherever it is sent: this process, a worker process, a Dask worker.

A :class:`Task` is the ``kernbench run`` arguments of one point, so a point
is resolved, checked and run exactly as ``kernbench run KERNEL ARGV`` would
be (:func:`kernbench.commands.run.prepare`). Its :class:`Outcome` carries
either the metrics or the one-line error (a kernel that rejects the
combination, a deadlock, a run limit), never an exception, so one bad point
does not lose the others; and it names the code that produced it, so a
worker running another kernbench is noticed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernbench import __version__
from kernbench.errors import KernbenchError
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


def simulate(task: Task) -> Outcome:
    """Run ``task`` to its metrics; a failure is returned as the error's one line."""
    from kernbench.commands.run import limits_of, prepare, report
    from kernbench.sweep.metrics import point_metrics

    code = f"{__version__}+{code_digest()}"
    try:
        spec, ns, rt, prepared, params = prepare(task.kernel, list(task.argv))
        result = rt.run(limits=limits_of(ns))
        metrics = point_metrics(report(spec, rt, prepared, result, params), result)
    except KernbenchError as exc:
        return Outcome(task.index, None, one_line(str(exc)), code)
    except Exception as exc:  # a bug; report it with the point rather than lose the sweep
        return Outcome(task.index, None, one_line(f"internal error (please report it): {type(exc).__name__}: {exc}"), code)
    return Outcome(task.index, metrics, None, code)


def one_line(message: str) -> str:
    """A multi-line error (a topology's problems, a deadlock's waiters) as one line, its lines joined by "; "."""
    return "; ".join(part.strip().removeprefix("- ") for part in message.splitlines() if part.strip()).replace(":;", ":")
