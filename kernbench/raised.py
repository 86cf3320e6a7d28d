"""What a user's code raised: which exceptions are the user's to be told about, and how to say one.

A kernel file's code may raise anything: ``sys.exit()`` (``SystemExit``),
``greenlet.GreenletExit``, its own ``BaseException`` subclass, a
``KeyboardInterrupt`` of its own making, an exception whose ``__str__``
raises. Each is the user's mistake, reported as one ``error:`` line at
their line (:func:`theirs` says which), never a silent exit with status 0
or a traceback. Kernbench's own stops are not the user's: its errors, the
wall-time stop, and a real Ctrl-C or SIGTERM (:mod:`kernbench.interrupts`).
"""

from __future__ import annotations

import signal

from kernbench.errors import Interrupted, KernbenchError

#: a message longer than this is cut (a kernel file may raise with a megabyte of text)
MAX_MESSAGE_CHARS = 2000


def theirs(exc: BaseException) -> bool:
    """Whether ``exc`` is the user's code's own (to report) rather than one of kernbench's stops (to pass on)."""
    from kernbench.interrupts import PENDING
    from kernbench.limits import WallTimeExceeded

    if isinstance(exc, (KernbenchError, WallTimeExceeded, Interrupted)):
        return False
    if isinstance(exc, KeyboardInterrupt):  # a real Ctrl-C raises Interrupted where kernbench handles it
        return not PENDING and signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    return True


def described(exc: BaseException) -> str:
    """``TYPE: message`` of an exception, whatever its ``__str__`` does (raises, returns a novel)."""
    name = getattr(type(exc), "__name__", "exception")
    try:
        text = str(exc)
    except BaseException as inner:
        if not theirs(inner):
            raise
        return f"{name} (its message could not be read: str() raised {getattr(type(inner), '__name__', 'an exception')})"
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[:MAX_MESSAGE_CHARS] + f"… ({len(text):,} characters)"
    return f"{name}: {text}" if text else name


class Raised(Exception):
    """A user's ``BaseException`` (``GreenletExit``, ``SystemExit``, …) carried out of a kernel's greenlet as
    an ``Exception`` — a ``GreenletExit`` leaving it would end the greenlet as if the kernel had returned.
    ``original`` is what the kernel raised; the traceback is its own."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(original)
        self.original = original
