"""What ends the debugger from outside: SIGTERM, SIGHUP, or its terminal gone without a signal.

Each ends the app as its own ``q`` does (the terminal restored, the live
simulation's child stopped) and the process with 128 + the signal, as
kernbench commands do. Textual runs the app on an asyncio loop in the main
thread, and a handler installed with ``signal.signal`` runs only when that
loop next wakes up: an idle app (a trace open, nobody typing) slept through
SIGTERM. ``loop.add_signal_handler`` wakes the loop (asyncio's self-pipe),
so a signal is handled at once, busy or idle.

A terminal that hung up (closed: its window, the ssh connection) takes EIO
for every write, and Textual's output thread dies of the first one; the
app's shutdown then waits forever to hand that thread the lines that restore
the terminal. So once the terminal has hung up, standard input, output and
error are pointed at /dev/null before the app ends, and should the output
thread be dead already, the process ends :data:`HUNG_UP_GRACE_S` later
regardless (the simulation child ends with it: :mod:`kernbench.lifeline`).
A terminal can also go without a SIGHUP reaching the app (ignored, as under
``nohup``; or a terminal that is not the process's controlling one), so the
app also looks at it every :data:`TERMINAL_POLL_S` (on Linux).
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from textual.app import App

#: signals that end the app (a SIGHUP its process was started ignoring stays ignored: the terminal check remains)
ENDING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
TERMINAL_POLL_S = 0.5
HUNG_UP_GRACE_S = 3.0  # for the app to end after its terminal hung up, before the process ends without it
#: what poll(2) reports for a terminal that hung up (Linux; macOS's poll answers POLLNVAL for any terminal)
HUNG_UP = getattr(select, "POLLHUP", 0) | getattr(select, "POLLERR", 0)


def run_until_ended(app: App[Any]) -> int | None:
    """``app.run()``, ended early by :data:`ENDING_SIGNALS` or a terminal that hung up: the signal that ended it
    (SIGHUP for a terminal that hung up without one), or None."""
    loop = asyncio.new_event_loop()
    ended_by: list[int] = []

    def end(signum: int) -> None:
        if not ended_by:  # (the first reason counts)
            ended_by.append(signum)
            if signum == signal.SIGHUP and terminal_hung_up():
                _leave_terminal()
            app.exit(return_code=128 + signum)

    previous = {signum: signal.getsignal(signum) for signum in ENDING_SIGNALS}
    handled = [signum for signum, was in previous.items() if was is not signal.SIG_IGN]
    try:
        for signum in handled:
            loop.add_signal_handler(signum, end, signum)
    except NotImplementedError:  # (Windows: no signal handlers on its event loops; the defaults stay)
        handled = []
    stop_watching = _watch_terminal(loop, lambda: end(signal.SIGHUP))
    try:
        app.run(loop=loop)
    finally:
        stop_watching()
        for signum in handled:
            loop.remove_signal_handler(signum)
            signal.signal(signum, previous[signum])
        loop.close()
    return ended_by[0] if ended_by else None


def terminal_hung_up() -> bool:
    """Whether standard input is a terminal that hung up (or is otherwise unusable)."""
    if sys.__stdin__ is None or not sys.platform.startswith("linux"):
        return False  # (elsewhere a closed terminal is known by its SIGHUP only)
    try:
        poll = select.poll()
        poll.register(sys.__stdin__.fileno(), 0)  # (no events asked: a hang-up or error is reported regardless)
        return any(revents & HUNG_UP for _fd, revents in poll.poll(0))
    except (AttributeError, OSError, ValueError):  # (no poll on this platform; a closed or replaced stdin)
        return False


def _watch_terminal(loop: asyncio.AbstractEventLoop, hung_up: Callable[[], None]) -> Callable[[], None]:
    """Check every TERMINAL_POLL_S whether the terminal hung up; returns the function that stops the checks."""
    pending: list[asyncio.TimerHandle] = []

    def check() -> None:
        if terminal_hung_up():
            hung_up()
        else:
            pending[:] = [loop.call_later(TERMINAL_POLL_S, check)]

    def stop() -> None:
        for handle in pending:
            handle.cancel()

    pending.append(loop.call_later(TERMINAL_POLL_S, check))
    return stop


def _leave_terminal() -> None:
    """Point stdin, stdout and stderr at /dev/null (writes to a hung-up terminal fail), and end the process
    HUNG_UP_GRACE_S from now if the app has not ended by then."""
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        pass
    deadline = threading.Timer(HUNG_UP_GRACE_S, os._exit, (128 + signal.SIGHUP,))
    deadline.daemon = True
    deadline.start()
