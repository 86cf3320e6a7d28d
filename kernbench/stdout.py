"""Standard output that says when it could not take everything.

Python's own ``sys.stdout`` can lose bytes without a word: under ``ulimit -f``
a file takes part of a write, and what did not fit is dropped with exit
status 0. A full disk (``> /dev/full``) is an ``OSError`` traceback.
:func:`checked_stdout` puts, for the length of a command, a standard output
in front of the same file descriptor whose every write either lands whole
or raises :class:`~kernbench.errors.StdoutError` ("cannot write to standard
output: File too large; what was printed is incomplete"), which
:func:`kernbench.exit_codes.guarded` prints as one ``error:`` line, exit 2.
A reader that went away (``| head``) stays a ``BrokenPipeError`` (exit 0).

Once a write failed, later ones are dropped quietly (nothing more can be
said on a broken stdout, and the interpreter's exit flush must not print a
second error). A terminal is left as it is (it takes what it is given), and
so is a ``sys.stdout`` somebody else replaced (a test's capture, a debugger).
"""

from __future__ import annotations

import io
import os
import select
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from kernbench.errors import StdoutError


class _WholeWrites(io.RawIOBase):
    """A raw, write-only file over ``fd`` that writes every byte or raises."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self.failed = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        if self.failed:
            return len(view)
        done = 0
        while done < len(view):
            try:
                done += os.write(self._fd, view[done:])
            except BlockingIOError:  # a non-blocking stdout that is full for now: wait until it takes more
                select.select([], [self._fd], [])
            except BrokenPipeError:
                self.failed = True
                raise
            except OSError as exc:
                self.failed = True
                cut = "; what was printed is incomplete"
                raise StdoutError(f"cannot write to standard output: {exc.strerror or exc}{cut}") from None
        return done


@contextmanager
def checked_stdout() -> Iterator[None]:
    """While inside, ``sys.stdout`` writes whole or raises (see the module); outside, as before."""
    original: TextIO | None = sys.stdout
    if sys.stdout is not sys.__stdout__ or original is None or _is_terminal(original):
        yield
        return
    try:
        original.flush()
        raw = _WholeWrites(original.fileno())
    except (OSError, ValueError):  # no file descriptor under it: leave it
        yield
        return
    checked = io.TextIOWrapper(
        io.BufferedWriter(raw), encoding=original.encoding, errors=original.errors, line_buffering=bool(original.line_buffering)
    )
    sys.stdout = checked
    try:
        yield
    finally:
        try:
            checked.flush()
        except (StdoutError, BrokenPipeError):
            pass  # (said already, or a reader that left: nothing more to say)
        finally:
            raw.failed = True  # the wrapper is dropped with whatever it held; it must not write later
            sys.stdout = original


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (OSError, ValueError):
        return False
