"""Run limits: a runaway kernel stops with an error naming the PE and its line.

Three limits, each a user can set (``Runtime.run(limits=RunLimits(...))``,
``kernbench run --max-commands-per-pe/--max-sim-ns/--max-wall-s``):

* **commands per PE** — every command a kernel issues (``tl.cycles`` too);
  bounds the memory a loop that never ends can take (~0.4–5 KB a command);
* **simulated time** — PE_CPU's clock may not pass it;
* **wall time** — checked at every request PE_CPU takes from a kernel and by a
  watchdog that also stops a kernel that never calls ``tl`` (``while True:
  pass``), even one that catches every exception: the stop is raised in
  PE_CPU, outside the kernel's frames. The watchdog is a thread that raises
  the stop asynchronously in the running one — never a signal, which the
  user's code could ignore (``signal.signal(SIGALRM, SIG_IGN)``).

The commands hold the wall-time limit over *everything* a user's code runs,
not only the simulation: importing a kernel file, its set-up, its option
rules, its reference check (:func:`supervised`). Code that does not let the
stop through (it catches ``BaseException`` in a loop, or waits in C code)
is given :data:`GRACE_S`; then, in a process kernbench owns (the command
line, its worker processes: :data:`hard_stop` is set), the process is ended
with one error line naming the user's line it was at. Should even that
thread not get to run (C code holding the interpreter lock), a reaper
process (:mod:`kernbench.reaper`) ends it :data:`LAST_RESORT_S` later.

The defaults are far above any shipped kernel (the paper's GQA decode issues
under 100 commands per PE, runs 4.4 µs simulated and ~10 s of wall time).
"""

from __future__ import annotations

import ctypes
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import greenlet

from kernbench.errors import KernbenchError, RunLimitError
from kernbench.usercode import users_line_of

DEFAULT_MAX_COMMANDS_PER_PE = 100_000
DEFAULT_MAX_SIM_NS = 1e9  # one simulated second
DEFAULT_MAX_WALL_S = 300.0
WATCHDOG_REPEAT_S = 0.25  # the alarm repeats, so a kernel that swallows it once is stopped anyway
GRACE_S = 2.0  # past the limit, how long the user's code has to let the stop through before its process is ended
LAST_RESORT_S = 5.0  # and how much longer before the reaper process ends it (the watchdog thread never ran)
#: exit status of a worker process ended by :data:`hard_stop` (its parent reports it; 124 as timeout(1) uses)
WALL_EXIT_STATUS = 124

#: how this process ends when the user's code does not stop at the wall-time limit, given the one-line
#: message; None (a library caller's process, a test's): the stop is raised again and again, nothing ends
hard_stop: Callable[[str], None] | None = None


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
    stop, because the exception is never raised in its frames. (greenlet is imported with this module: a
    first import here, interrupted by the next stop, left it partly initialised.)"""
    g = greenlet.getcurrent()
    driver = getattr(getattr(g, "ctx", None), "driver", None)
    if isinstance(driver, greenlet.greenlet) and driver is not g and not driver.dead:
        _ABANDONED.append(g)
        _leave_normalizing()
        driver.throw(WallTimeExceeded())


def _leave_normalizing() -> None:
    """Undo, for the thread, what the exception's creation we are leaving for good had set and would have
    undone on its way out. On CPython 3.11 an exception raised from another thread is created while the
    interpreter normalizes it, which raises the thread's recursion headroom by one until it is done; a
    greenlet switched away from there never comes back, so the headroom stayed raised, and the thread's
    next runaway recursion killed the whole process ("Fatal Python error: Cannot recover from stack
    overflow") instead of raising RecursionError. The field is read at its 3.11 place, checked against the
    recursion limit beside it; any other interpreter is left alone."""
    if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11):
        return
    get = ctypes.pythonapi.PyThreadState_Get
    get.restype = ctypes.c_void_p
    state = get()
    if not state:
        return
    # struct _ts (3.11, Include/cpython/pystate.h): prev, next, interp (pointers); int _initialized, _static,
    # recursion_remaining, recursion_limit, recursion_headroom
    base = state + 3 * ctypes.sizeof(ctypes.c_void_p) + 2 * ctypes.sizeof(ctypes.c_int)
    remaining = ctypes.c_int.from_address(base)
    limit = ctypes.c_int.from_address(base + ctypes.sizeof(ctypes.c_int))
    headroom = ctypes.c_int.from_address(base + 2 * ctypes.sizeof(ctypes.c_int))
    if limit.value == sys.getrecursionlimit() and 0 < limit.value - remaining.value <= limit.value + 50 and headroom.value > 0:
        headroom.value -= 1


#: per thread, where it was (a :class:`_Where` chain) when the watchdog last sent it the stop
_ALARMED_AT: dict[int, object] = {}


@dataclass(frozen=True, slots=True)
class _Where:
    """One frame's code and line, and its caller's: what :func:`alarm_frame` answers with, read like a frame
    (``f_code``, ``f_lineno``, ``f_back``). Not the frame itself: a frame holds its locals, and a frame held
    here kept the watched block's context manager alive — its ``finally`` (that stops the watchdog) then did
    not run when the block was left, and the stop kept being sent into the code after it."""

    f_code: object
    f_lineno: int
    f_back: _Where | None


def _where(frame: object) -> _Where | None:
    chain: list[tuple[object, int]] = []
    while frame is not None:
        chain.append((frame.f_code, frame.f_lineno))  # type: ignore[attr-defined]
        frame = frame.f_back  # type: ignore[attr-defined]
    out: _Where | None = None
    for code, line in reversed(chain):
        out = _Where(code, line, out)
    return out


def alarm_frame() -> object:
    """The frame this thread was running when the watchdog sent it the stop (None if it never did): where a
    kernel was when it was stopped, though the stop itself is built (and the kernel's frames gone) later."""
    return _ALARMED_AT.get(threading.get_ident())


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
    if limits.max_wall_s is None:
        yield
    else:
        with _from_another_thread(limits.max_wall_s):
            yield


@contextmanager
def supervised(wall_s: float | None, what: str) -> Iterator[None]:
    """Hold ``wall_s`` over a block that runs a user's code (importing a kernel file, a set-up, a run):
    past it, :class:`WallTimeExceeded` is raised in this thread, and once the block lets it out it becomes
    one :class:`~kernbench.errors.RunLimitError` saying ``what`` ran past the limit, at the user's line.
    Code that keeps it from ending the block for :data:`GRACE_S` more ends the process (:data:`hard_stop`)."""
    if wall_s is None:
        yield
        return
    stop = hard_stop
    last_resort = stop is not None
    if last_resort:
        from kernbench import reaper

        how = "it did not stop when asked (it holds the interpreter in C code), so its process was ended"
        reaper.arm(
            wall_s + GRACE_S + LAST_RESORT_S,
            f"error: {what} ran past the wall-time limit of {wall_s:g} s; {how} (raise it with --max-wall-s)",
        )
    try:
        with _from_another_thread(wall_s, on_stuck=None if stop is None else lambda where: stop(_stopped(what, wall_s, where, ended=True))):
            yield
    except WallTimeExceeded as exc:
        raise RunLimitError(_stopped(what, wall_s, users_line_of(exc.__traceback__))) from None
    finally:
        if last_resort:
            reaper.disarm()


def _stopped(what: str, wall_s: float, where: str, ended: bool = False) -> str:
    how = "it did not stop when asked (it catches the stop, or waits in C code), so its process was ended" if ended else "it was stopped"
    return f"{what} ran past the wall-time limit of {wall_s:g} s; {how} (raise it with --max-wall-s){where}"


#: Threads being started (threading's own record, and the lock it takes to change it). On CPython 3.11 a new
#: thread's state carries the *starting* thread's id until the thread runs, so a stop sent by that id then
#: lands in the new thread: it died before it began, and ``Thread.start()`` in the watched one waited for it
#: forever (seen with a kernel that starts a thread, and with the watchdog's own thread under an outer one).
#: The watchdog does not send while a thread is in this record; Thread.start() adds to it, under this lock,
#: before the new state exists, and the new thread takes itself out once its id is its own.
_STARTING: dict[object, object] = getattr(threading, "_limbo", {})
_STARTING_LOCK: threading.Lock = getattr(threading, "_active_limbo_lock", threading.Lock())
STARTING_RETRY_S = 0.001
#: how long a send waits for that at most (an entry can stay: a stop that landed inside Thread.start() after
#: it recorded the thread and before the thread began leaves it there for good)
STARTING_WAIT_MAX_S = 1.0


@contextmanager
def _from_another_thread(wall_s: float, on_stuck: Callable[[str], None] | None = None) -> Iterator[None]:
    """A thread that raises :class:`_WallAlarm` in this one (``PyThreadState_SetAsyncExc``: at its next
    bytecode, wherever it is, as a signal handler would run; no signal the user's code could ignore). It
    sends only while the block runs: ``sending`` is held for each send, and the block's end marks it done
    and takes back a send not yet raised under that lock. ``on_stuck(where)``, if given, is called once the
    block has not ended :data:`GRACE_S` after the limit (``where``: the user's line this thread is at)."""
    ident = threading.get_ident()
    owner = threading.current_thread()
    target = ctypes.c_ulong(ident)
    raise_in = ctypes.pythonapi.PyThreadState_SetAsyncExc
    sending, done, sent, ended = threading.Lock(), [False], [False], threading.Event()
    stuck_at = time.monotonic() + wall_s + GRACE_S

    def watch() -> None:
        timeout, deferred_at = wall_s, None
        while not ended.wait(timeout):
            with sending, _STARTING_LOCK:
                if done[0] or not owner.is_alive():  # (a thread gone: its id may be another's soon)
                    return
                now = time.monotonic()
                if _STARTING and (deferred_at is None or now - deferred_at < STARTING_WAIT_MAX_S):
                    deferred_at = deferred_at or now  # a thread is being started (see _STARTING): in a moment
                    timeout = STARTING_RETRY_S
                    continue
                deferred_at = None
                _ALARMED_AT[ident] = _where(sys._current_frames().get(ident))  # (where the stop lands: see alarm_frame)
                sent[0] = True
                raise_in(target, ctypes.py_object(_WallAlarm))
            if on_stuck is not None and time.monotonic() >= stuck_at:
                on_stuck(users_line_of(None, sys._current_frames().get(ident)))
            timeout = WATCHDOG_REPEAT_S

    def finish() -> None:
        with sending:
            done[0] = True
            if sent[0]:
                # (NULL: a send not raised yet is taken back. Only after a send: on CPython 3.11 a NULL leaves the
                # thread's eval breaker set, and under cProfile with a kernel's greenlet suspended the thread's
                # next call then spun for ever: `python -m cProfile -m kernbench.cli run` hung after any run)
                raise_in(target, None)

    watcher = threading.Thread(target=watch, name="wall-time watchdog", daemon=True)
    try:
        watcher.start()  # (in the try: a stop from an outer watchdog landing just after it still finishes this one)
        yield
    finally:
        # finish(), again if a stop sent before it held the lock surfaced in it. Nested handlers, inline, not
        # a loop or a call: a loop's step and a callee's entry run outside any try, and a stop landing there
        # (a thread descheduled for a repeat interval there, as on a loaded machine) left the watchdog sending.
        try:
            finish()
        except WallTimeExceeded:
            try:
                finish()
            except WallTimeExceeded:
                try:
                    finish()
                except WallTimeExceeded:
                    finish()
        ended.set()
        if watcher.is_alive():
            watcher.join()
        _ALARMED_AT.pop(ident, None)
