"""How a kernbench command ends: one exit status per outcome, never a traceback for a user's mistake.

====  ==========================================================
 0    ok (also when the reader of stdout went away: ``| head``)
 1    an invariant or check failed (probe verdict, ``bench --check``)
 2    bad input: a topology, option, kernel, trace or output path;
      or standard output refused bytes (a full disk, ``ulimit -f``)
130   interrupted by Ctrl-C (SIGINT); 143 for SIGTERM
====  ==========================================================

:func:`guarded` wraps a command's ``main``: a
:class:`~kernbench.errors.KernbenchError` is printed as one ``error:`` line,
an interrupt as ``interrupted at t=… ns`` (the simulated time reached), a
closed stdout ends the command quietly, and a stdout that takes fewer bytes
than it is given (a full disk, ``ulimit -f``) is an error, exit 2
(:mod:`kernbench.stdout`). Ctrl-C and SIGTERM raise
:class:`~kernbench.errors.Interrupted` while the command runs, so ``finally``
blocks (temporary output files) run for both, and one whose exception Python
dropped still ends it (:mod:`kernbench.interrupts`).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

from kernbench.errors import KernbenchError, StdoutError
from kernbench.interrupts import WRITTEN, interrupts_raise, raise_pending
from kernbench.printable import printable
from kernbench.raised import described, theirs
from kernbench.stdout import checked_stdout
from kernbench.usercode import users_line_of

OK = 0
CHECK_FAILED = 1
BAD_INPUT = 2
INTERRUPTED = 128 + signal.SIGINT


def guarded(body: Callable[[], int | None], error_prefix: str) -> int:
    """Run ``body()`` and map how it ended to an exit status (see the module table)."""
    with checked_stdout():
        return _guarded(body, error_prefix)


def _guarded(body: Callable[[], int | None], error_prefix: str) -> int:
    try:
        with interrupts_raise():
            status = int(body() or 0)
            raise_pending()  # (one whose first raise was dropped: see kernbench.interrupts)
            sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
            return status
    except KernbenchError as exc:
        _quiet_flush()
        print(f"{error_prefix}{printable(str(exc), keep=chr(10) + chr(9))}", file=sys.stderr)  # (keep newlines, tabs)
        return BAD_INPUT
    except BrokenPipeError:
        _silence_stdout()
        return OK
    except BaseException as exc:  # a signal; or what a user's code raised that reached here (sys.exit() in it, say)
        where = users_line_of(exc.__traceback__) if theirs(exc) else ""
        if not where and isinstance(exc, KeyboardInterrupt):
            _quiet_flush()
            print(interrupted_message(exc), file=sys.stderr)
            return 128 + getattr(exc, "signum", signal.SIGINT)
        if not where:
            raise  # (kernbench's own bug, or argparse's exit: as they were)
        _quiet_flush()
        text = f"the kernel file's code raised {described(exc)}{where}"
        print(f"{error_prefix}{printable(text, keep=chr(10) + chr(9))}", file=sys.stderr)
        return BAD_INPUT


def interrupted_message(exc: BaseException) -> str:
    t_ns = getattr(exc, "t_ns", None)
    name = signal.Signals(getattr(exc, "signum", signal.SIGINT)).name
    when = f" at t={t_ns:,.3f} ns" if t_ns is not None else ""
    if WRITTEN:  # (the outputs were in place before the signal came: say so, they are complete)
        return f"interrupted ({name}){when}; {' and '.join(WRITTEN)} {'was' if len(WRITTEN) == 1 else 'were'} written before it"
    return f"interrupted ({name}){when}; no output was written"


def _quiet_flush() -> None:
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        _silence_stdout()
    except StdoutError:
        pass  # (the error being reported is the one to read; what stdout missed is lost either way)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's exit flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
