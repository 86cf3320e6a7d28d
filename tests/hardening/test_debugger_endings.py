"""§6: the debugger ends when told to from outside — SIGTERM, SIGHUP, its terminal closing (with or without
a SIGHUP reaching it) — idle or busy with a live run: status 128 + the signal, one line where a terminal is
left to read it, the terminal restored, no traceback, within seconds, nothing of it left running.

An idle app used to sleep through SIGTERM (its handler ran only when the event loop next woke up), and with
its terminal gone it idled on, or hung in its shutdown handing lines to a dead output thread."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest
from hardening_harness import child_env, wait_until_none_left

STATES = {  # what the app is doing when the ending comes
    "idle": ["demo", "--tiles", "3"],  # a short run, finished: nothing on screen moves
    "busy": ["demo", "--tiles", "100000", "--pace", "0.05"],  # a live run streaming events
}
# how it is ended: (what the test does, whether SIGHUP is ignored, the expected status)
ENDINGS = {
    "SIGTERM": (signal.SIGTERM, False, 128 + signal.SIGTERM),
    "SIGHUP, terminal open": (signal.SIGHUP, False, 128 + signal.SIGHUP),
    "terminal closed": ("close", False, 128 + signal.SIGHUP),  # the kernel sends SIGHUP (a controlling terminal)
    "terminal closed, SIGHUP ignored": ("close", True, 128 + signal.SIGHUP),  # as under nohup: only the terminal tells
}
ENDED_WITHIN_S = (
    60  # a hang bound: the app ends in well under a second idle (a hang-up gives its shutdown 3 s), many times that on a busy machine
)
SIZE = (30, 100)  # rows, columns


def corpus():
    for ending, (how, ignore_hup, status) in ENDINGS.items():
        for state, argv in STATES.items():
            if state == "busy" and how == signal.SIGHUP:
                continue  # (busy differs from idle in whether the loop is awake; SIGTERM and a closed terminal cover it)
            yield pytest.param(argv, how, ignore_hup, status, id=f"{ending}-{state}")


@pytest.mark.parametrize("argv, how, ignore_hup, status", list(corpus()))
def test_the_debugger_ends_when_told_from_outside(tmp_path, argv, how, ignore_hup, status):
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *SIZE, 0, 0))

    def own_terminal():  # a session of its own, this pty its controlling terminal: as a shell starts it
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        # SIGHUP's action as the case says, not as inherited (under nohup this test's own is SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN if ignore_hup else signal.SIG_DFL)

    proc = subprocess.Popen(
        [sys.executable, "-m", "kernbench_tui.cli", *argv],
        cwd=tmp_path,
        env=child_env(TERM="xterm-256color", TEXTUAL_ANIMATIONS="none"),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        preexec_fn=own_terminal,
    )
    os.close(slave)
    try:
        shown = _read_until_drawn(master, proc, busy="--pace" in argv)
        assert proc.poll() is None, shown[-2000:]
        t0 = time.monotonic()
        if how == "close":
            os.close(master)
            master = None
        else:
            os.kill(proc.pid, how)
        after = b""
        while proc.poll() is None and time.monotonic() - t0 < ENDED_WITHIN_S:
            after += _read(master, 0.1) if master is not None else time.sleep(0.1) or b""
        seconds = time.monotonic() - t0
        if master is not None:
            after += _read(master, 0.3)
            restored = termios.tcgetattr(master)[3] & (termios.ECHO | termios.ICANON)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        left, _ = wait_until_none_left(proc.pid, 5)
        if master is not None:
            os.close(master)
    assert seconds < ENDED_WITHIN_S, f"still running {ENDED_WITHIN_S} s after the ending"
    assert proc.returncode == status, proc.returncode
    assert not left, f"left running: {left}"
    if how != "close":  # a terminal is left: the app restored it and said why it ended, in one line
        text = after.decode("utf-8", "replace")
        assert "\x1b[?1049l" in text and restored == termios.ECHO | termios.ICANON, "the terminal was not restored"
        assert text.endswith(f"kernbench-tui: interrupted ({signal.Signals(how).name})\r\n"), text[-300:]
        assert "Traceback" not in text, text


def _read(master: int, timeout_s: float) -> bytes:
    out = b""
    while select.select([master], [], [], timeout_s)[0]:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
        timeout_s = 0.05
    return out


def _read_until_drawn(master: int, proc: subprocess.Popen, busy: bool, timeout_s: float = 60) -> bytes:
    """What the app drew, once it has drawn its screen: quiet for a second (idle), or drawing live for one."""
    out = b""
    t0 = time.monotonic()
    last = t0
    while time.monotonic() - t0 < timeout_s and proc.poll() is None:
        data = _read(master, 0.1)
        now = time.monotonic()
        if data:
            out += data
            last = now
        drawn = b"quit" in out  # (the footer: the screen is up)
        if drawn and (now - last > 1.0 if not busy else now - t0 > 1.0 and now - last < 0.5):
            return out
    raise AssertionError(f"the app did not settle within {timeout_s} s: {out[-500:]!r}")
