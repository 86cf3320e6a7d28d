"""Run limits: a runaway kernel stops with an error naming the PE and its line.

Three limits, each a user can set (``Runtime.run(limits=RunLimits(...))``,
``kernbench run --max-commands-per-pe/--max-sim-ns/--max-wall-s``):

* **commands per PE** — every command a kernel issues (``tl.cycles`` too);
  bounds the memory a loop that never ends can take (~0.4–5 KB a command);
* **simulated time** — PE_CPU's clock may not pass it;
* **wall time** — checked at every request PE_CPU takes from a kernel and by a
  watchdog that also stops a kernel that never calls ``tl`` (``while True:
  pass``), even one that catches every exception: the stop is raised in
  PE_CPU, outside the kernel's frames. On the main thread the watchdog is a
  SIGALRM; on any other (a Dask worker's, a script's or the debugger's worker
  thread) a thread that raises the stop asynchronously in the running one.

The defaults are far above any shipped kernel (the paper's GQA decode issues
under 100 commands per PE, runs 4.4 µs simulated and ~10 s of wall time).
"""

from __future__ import annotations

import ctypes
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


class _WallAlarm(WallTimeExceeded):
    """The stop the watchdog thread raises in the simulating thread. CPython creates the exception in that
    thread, where it surfaces: so, as the SIGALRM handler does, its creation first leaves a kernel's greenlet
    if that is where it surfaced (a kernel catching ``BaseException`` then never sees it)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        _leave_a_kernel()


@contextmanager
def wall_clock_watchdog(limits: RunLimits) -> Iterator[None]:
    """Raise :class:`WallTimeExceeded` in this thread once ``max_wall_s`` has passed (and again every
    :data:`WATCHDOG_REPEAT_S` until the block ends)."""
    wall_s = limits.max_wall_s
    if wall_s is None:
        yield
    elif hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
        with _alarm(wall_s):
            yield
    else:
        with _from_another_thread(wall_s):
            yield


@contextmanager
def _alarm(wall_s: float) -> Iterator[None]:
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


@contextmanager
def _from_another_thread(wall_s: float) -> Iterator[None]:
    """A thread that raises :class:`_WallAlarm` in this one (``PyThreadState_SetAsyncExc``: at its next
    bytecode, wherever it is, as a signal handler would run) — for a run off the main thread, where no
    signal handler can be installed. It sends only while the block runs: ``sending`` is held for each send,
    and the block's end marks it done and takes back a send not yet raised under that lock."""
    target = ctypes.c_ulong(threading.get_ident())
    raise_in = ctypes.pythonapi.PyThreadState_SetAsyncExc
    sending, done, ended = threading.Lock(), [False], threading.Event()

    def watch() -> None:
        timeout = wall_s
        while not ended.wait(timeout):
            with sending:
                if done[0]:
                    return
                raise_in(target, ctypes.py_object(_WallAlarm))
            timeout = WATCHDOG_REPEAT_S

    def finish() -> None:
        with sending:
            done[0] = True
            raise_in(target, None)  # (NULL: a send not raised yet is taken back)

    watcher = threading.Thread(target=watch, name="wall-time watchdog", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        try:
            finish()
        except WallTimeExceeded:  # one sent before finish() held the lock surfaced in it; none can come now
            finish()
        ended.set()
        watcher.join()
