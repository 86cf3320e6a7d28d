"""Ctrl-C and SIGTERM that end a command even when Python drops their exception.

Python runs a signal handler between two bytecodes of whatever code is
running, and an exception raised inside a weakref callback, a ``__del__``
method or a garbage-collector callback is printed as "Exception ignored"
and dropped. importlib releases its module locks in a weakref callback, so
a Ctrl-C that lands while a command is still importing can be lost, and the
command would run to its end as if nobody had asked it to stop. So the
handler also remembers the signal (:data:`PENDING`), and the places where a
command moves on or commits call :func:`raise_pending`: each PE_CPU step of
a run, the end of a run, writing outputs, and the command's end. An
interrupt that was dropped ends the command there, as one that was not
would have.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from kernbench.errors import Interrupted

#: Signals received inside :func:`interrupts_raise` (the first one counts); empty otherwise.
PENDING: list[int] = []

#: The outputs the last command (inside :func:`interrupts_raise`) put in place.
WRITTEN: list[str] = []

_held = False  # inside committing(): a signal is remembered, not raised
_active = False  # inside interrupts_raise()


@contextmanager
def interrupts_raise() -> Iterator[None]:
    """While inside, SIGINT and SIGTERM raise :class:`Interrupted` and stay in
    :data:`PENDING` (main thread only; elsewhere a no-op). A SIGINT the process
    was started ignoring (``nohup``, a background job of a script) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        PENDING.append(signum)
        if not _held:
            raise Interrupted(signum=signum)

    previous: dict[signal.Signals, Callable[[int, FrameType | None], Any] | int | None] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        if sig == signal.SIGINT and signal.getsignal(sig) is signal.SIG_IGN:
            continue
        previous[sig] = signal.signal(sig, handler)
    global _active
    PENDING.clear()
    WRITTEN.clear()
    _active = True
    try:
        yield
    finally:
        for sig, was in previous.items():
            signal.signal(sig, was)
        PENDING.clear()
        _active = False  # (WRITTEN stays, for the line the command ends with; the next command clears it)


@contextmanager
def committing(paths: list[str]) -> Iterator[None]:
    """Around the renames that put a command's outputs in place: an interrupt arriving inside waits until
    they are all done (then :func:`raise_pending` raises it), and ``paths`` join :data:`WRITTEN`."""
    global _held
    _held = True
    try:
        yield
    finally:
        _held = False
    if _active:
        WRITTEN.extend(paths)
    raise_pending()


def raise_pending(t_ns: float | None = None) -> None:
    """Raise :class:`Interrupted` (at simulated time ``t_ns``, if a run was going)
    if a signal arrived inside :func:`interrupts_raise` — its first raise may
    have been dropped."""
    if PENDING:
        raise Interrupted(t_ns, PENDING[0])
