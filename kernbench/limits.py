"""Run limits: a runaway kernel stops with an error naming the PE and its line.

Three limits, each a user can set (``Runtime.run(limits=RunLimits(...))``,
``kernbench run --max-commands-per-pe/--max-sim-ns/--max-wall-s``):

* **commands per PE** — every command a kernel issues (``tl.cycles`` too);
  bounds the memory a loop that never ends can take (~0.4–5 KB a command);
* **simulated time** — PE_CPU's clock may not pass it;
* **wall time** — checked at every request PE_CPU takes from a kernel and,
  when the run is on the main thread, by a SIGALRM watchdog that also stops a
  kernel that never calls ``tl`` (``while True: pass``), even one that catches
  every exception: the stop is raised in PE_CPU, outside the kernel's frames.

The defaults are far above any shipped kernel (the paper's GQA decode issues
under 100 commands per PE, runs 4.4 µs simulated and ~10 s of wall time).
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kernbench.errors import KernbenchError

DEFAULT_MAX_COMMANDS_PER_PE = 100_000
DEFAULT_MAX_SIM_NS = 1e9  # one simulated second
DEFAULT_MAX_WALL_S = 300.0
WATCHDOG_REPEAT_S = 0.25  # the alarm repeats, so a kernel that swallows it once is stopped anyway


@dataclass(frozen=True, slots=True)
class RunLimits:
    """Where a run is stopped; ``None`` turns a limit off."""

    max_commands_per_pe: int | None = DEFAULT_MAX_COMMANDS_PER_PE
    max_sim_ns: float | None = DEFAULT_MAX_SIM_NS
    max_wall_s: float | None = DEFAULT_MAX_WALL_S

    def __post_init__(self) -> None:
        for name in ("max_commands_per_pe", "max_sim_ns", "max_wall_s"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0):
                raise KernbenchError(f"run limit {name} must be a positive finite number or None, got {v!r}")

    def deadline(self) -> float:
        """The monotonic wall-clock time the run must end by."""
        return math.inf if self.max_wall_s is None else time.monotonic() + self.max_wall_s


#: kernels the watchdog left for good: kept, never resumed nor collected (collecting a greenlet throws
#: GreenletExit into it, and a kernel that catches everything would run on at that moment)
_ABANDONED: list[object] = []


def _leave_a_kernel() -> None:
    """If the alarm came while a kernel's own code runs (its greenlet), leave that greenlet for good and raise
    in the PE_CPU that drives it instead: a kernel catching ``BaseException`` in a loop cannot swallow the
    stop, because the exception is never raised in its frames."""
    import greenlet

    g = greenlet.getcurrent()
    driver = getattr(getattr(g, "ctx", None), "driver", None)
    if isinstance(driver, greenlet.greenlet) and driver is not g and not driver.dead:
        _ABANDONED.append(g)
        driver.throw(WallTimeExceeded())


class WallTimeExceeded(BaseException):
    """Raised by the watchdog wherever Python is running; a BaseException so a
    kernel's ``except Exception`` does not swallow it."""


@contextmanager
def wall_clock_watchdog(limits: RunLimits) -> Iterator[None]:
    """Raise :class:`WallTimeExceeded` in the main thread once ``max_wall_s`` has passed."""
    wall_s = limits.max_wall_s
    if wall_s is None or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def alarm(signum: int, frame: object) -> None:
        _leave_a_kernel()
        raise WallTimeExceeded()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, wall_s, WATCHDOG_REPEAT_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
