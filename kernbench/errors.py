"""Domain errors. Each carries *where* (key path, source line, PE id) and *what*."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernbench.events.types import Event


class KernbenchError(Exception):
    """Base of every error kernbench reports to a user."""

    # a simulation error's events recorded until it (set by kernbench.runtime when recording;
    # read it with getattr(exc, "recorded", None))
    recorded: list[Event] | None


class TopologyError(KernbenchError):
    """A topology file (or override) is invalid. Holds every problem found: one reads as one line
    (``FILE: problem``), several as a count and a list."""

    def __init__(self, problems: list[str], source: str = ""):
        self.problems = list(problems)
        self.source = source or "<topology>"
        where = f"{source}: " if source else ""
        if len(self.problems) == 1:
            super().__init__(f"{where}{self.problems[0]}")
        else:
            lines = "\n".join(f"  - {p}" for p in self.problems)
            super().__init__(f"{where}{len(self.problems)} problems\n{lines}")


class RouteError(KernbenchError):
    """No path exists between two endpoints of the graph."""


class KernelError(KernbenchError):
    """A kernel raised; names the PE and the kernel's own file:line."""


class DeadlockError(KernbenchError):
    """The simulation ran out of events while kernels were still waiting."""


class LostMessageError(KernbenchError):
    """The run ended with IPCQ messages that no receive took (names sender, receiver, message)."""


class RunLimitError(KernbenchError):
    """A run went past a limit (commands per PE, simulated time, wall time); names the PE and kernel line."""


class TraceFormatError(KernbenchError):
    """A trace file is corrupt, truncated or from a newer version."""


class NotRecordedError(ValueError, KernbenchError):
    """A run's events were asked for (a trace, an explanation) but the run did not record them."""


class RetimeError(KernbenchError):
    """A recorded run cannot be re-timed honestly (its kernel read simulated time), or a what-if is malformed."""


class OutputPathError(KernbenchError):
    """An output file cannot be written where asked (checked before any work)."""


class StdoutError(KernbenchError):
    """Standard output did not take everything it was given (a full disk, ``ulimit -f``)."""


class InputPathError(KernbenchError):
    """An input file cannot be read: missing, not a regular file, too large, or the OS refused it.

    ``problem`` is what is wrong without the path, for a caller that words the error its own way
    (a topology's problem list, a trace's ``TraceFormatError``)."""

    def __init__(self, message: str, problem: str) -> None:
        super().__init__(message)
        self.problem = problem


class CompositeCapError(ValueError, KernbenchError):
    """A CompositeCmd over ``max_composite_logical_bytes`` (ADR-0064 D7)."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) or SIGTERM arrived; ``t_ns`` is the simulated time reached, if a run was going."""

    def __init__(self, t_ns: float | None = None, signum: int = 2) -> None:
        super().__init__(t_ns, signum)
        self.t_ns = t_ns
        self.signum = signum
