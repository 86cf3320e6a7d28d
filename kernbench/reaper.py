"""The last resort of the wall-time limit: a small process that ends this one if nothing else could.

:func:`kernbench.limits.supervised` stops a user's code from a thread of
this process; that thread needs the interpreter lock. Code that holds the
lock in C for good (``sum(range(10**13))``, a regular expression that
backtracks for ever, ``sys.setswitchinterval(1e6)`` and a loop) never lets
it run. So, in a process kernbench owns, a reaper process is armed too: it
is told the deadline through a pipe, and if the deadline passes before it is
told to stand down, it writes the one ``error:`` line and kills this
process (SIGKILL: nothing in it can refuse). One reaper serves the whole
process (started once, ~10 ms, ``python -I -S``: it imports nothing from
the current folder); it ends when this process does (the pipe closes; on
Linux the kernel also kills it with its parent), so it never outlives it
and can never kill another process that took its parent's pid.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

#: the reaper's program: standard library only, no site, isolated from the environment and the current folder
CODE = r"""
import ctypes, os, select, signal, sys, time
parent = int(sys.argv[1])
signal.signal(signal.SIGINT, signal.SIG_IGN)
try:
    ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG: die with the parent
except Exception:
    pass
if os.getppid() != parent:
    sys.exit(0)
deadline, message, buf = None, b"", b""
while True:
    timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
    if select.select([0], [], [], timeout)[0]:
        chunk = os.read(0, 65536)
        if not chunk:
            sys.exit(0)
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if line == b"off":
                deadline = None
            else:
                seconds, _, message = line.partition(b" ")
                deadline = time.monotonic() + float(seconds)
    elif deadline is not None:
        os.write(2, message.replace(b"\\n", b"\n") + b"\n")
        os.kill(parent, signal.SIGKILL)
        sys.exit(0)
"""

_lock = threading.Lock()
_proc: subprocess.Popen[bytes] | None = None


def arm(seconds: float, message: str) -> None:
    """Kill this process ``seconds`` from now, after printing ``message``, unless :func:`disarm` comes first."""
    line = f"{seconds:.3f} {message.replace(chr(92), chr(92) * 2).replace(chr(10), chr(92) + 'n')}\n".encode("utf-8", "replace")
    with _lock:
        for _ in range(2):  # (a reaper that died — its starting thread ended — is started again)
            proc = _reaper()
            if proc is None:
                return
            try:
                assert proc.stdin is not None
                proc.stdin.write(line)
                proc.stdin.flush()
                return
            except (BrokenPipeError, OSError, ValueError):
                _forget()


def disarm() -> None:
    with _lock:
        if _proc is None or _proc.poll() is not None:
            return
        try:
            assert _proc.stdin is not None
            _proc.stdin.write(b"off\n")
            _proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            _forget()


def _reaper() -> subprocess.Popen[bytes] | None:
    global _proc
    if _proc is not None and _proc.poll() is None:
        return _proc
    _forget()
    try:
        _proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", CODE, str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            close_fds=True,
            start_new_session=True,  # (the terminal's Ctrl-C is this process's to handle, not the reaper's)
        )
    except OSError:  # (no process can be started: the watchdog thread is all there is)
        _proc = None
    return _proc


def _forget() -> None:
    global _proc
    if _proc is not None:
        try:
            _proc.kill()
            _proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
    _proc = None
