"""§6: the worker processes of `sweep --jobs N` and of `compare` (its two run sides) die with their parent,
however it ended — SIGKILL and SIGHUP included, which no handler of the parent sees. Nothing of the command
is left running within seconds, and a reader of its stdout and stderr gets EOF (a worker holds both pipes,
and the resource tracker lives while a worker does).

The corpus: each command that starts worker processes × how it is ended × when (while the workers start,
importing; or while they simulate).

Left alone: a parent killed in the microseconds between starting a worker's interpreter and writing it
its start data leaves that worker an EOFError traceback to print as it exits (CPython's spawn, before any
code of ours runs). "starting" here is just after that window: polling /proc for the workers would
otherwise land in it often, a person's kill almost never."""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
from hardening_harness import child_env, left_in_session, wait_until_none_left

GQA = "gqa-decode --topology cube1 --heads 16 --kv-heads 2 --context 65536"
COMMANDS = {  # each runs for many seconds on two workers
    "sweep --jobs 2": ["sweep", *GQA.split(), "--grid", "variant=primitive,opt2,opt3", "--jobs", "2", "--no-cache"],
    "compare": ["compare", f"{GQA} --variant primitive", f"{GQA} --variant opt2"],
}
# how the parent ends: its exit status and the message it leaves (None: it cannot say anything)
ENDINGS = {
    signal.SIGKILL: (-signal.SIGKILL, None),
    signal.SIGHUP: (-signal.SIGHUP, None),  # the terminal closed: the default action, no handler
    signal.SIGTERM: (128 + signal.SIGTERM, r"interrupted \(SIGTERM\); no output was written\n"),
}
MOMENTS = {"starting": 0.0, "simulating": 1.0}  # seconds after the worker processes began to run
GONE_WITHIN_S = 60  # a hang bound: the parent's death ends its workers in ~0.2 s idle, seconds on a busy machine


def corpus():
    for (name, argv), (signum, (status, message)), (moment, delay_s) in itertools.product(
        COMMANDS.items(), ENDINGS.items(), MOMENTS.items()
    ):
        if signum != signal.SIGKILL and moment == "starting":
            continue  # (one moment for the others: what differs between the moments is the worker's side of the race)
        yield pytest.param(argv, signum, delay_s, status, message, id=f"{name}-{signum.name}-{moment}")


@pytest.mark.parametrize("argv, signum, delay_s, status, message", list(corpus()))
def test_the_workers_die_with_their_parent(tmp_path, argv, signum, delay_s, status, message):
    env = child_env(XDG_CACHE_HOME=str(tmp_path / "cache"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernbench.cli", *argv],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=hang_up_by_default,
    )
    eof_at: dict[str, float] = {}
    texts: dict[str, bytes] = {}

    def read(name, pipe):
        texts[name] = pipe.read()
        eof_at[name] = time.monotonic()

    readers = [threading.Thread(target=read, args=(n, p), daemon=True) for n, p in (("out", proc.stdout), ("err", proc.stderr))]
    for r in readers:
        r.start()
    try:
        workers = _wait_for_workers(proc, count=2, timeout_s=60)
        time.sleep(delay_s)
        assert proc.poll() is None, f"the command ended before the signal: {texts}"
        os.kill(proc.pid, signum)
        t0 = time.monotonic()
        proc.wait(30)
        left, seconds = wait_until_none_left(proc.pid, GONE_WITHIN_S)
        for r in readers:
            r.join(GONE_WITHIN_S)
    finally:
        if proc.poll() is None:
            proc.kill()
        wait_until_none_left(proc.pid, 0)
    assert not left, f"{seconds:.1f} s after the parent ended, still running: {left}"
    assert set(eof_at) == {"out", "err"}, "a reader of the command's output never got EOF"
    assert max(eof_at.values()) - t0 < GONE_WITHIN_S
    err = texts["err"].decode(errors="replace")
    assert proc.returncode == status, (proc.returncode, err)
    assert "Traceback" not in err and "Warning" not in err, err
    if message is None:
        assert err == "", err  # nobody is left to say anything: not the workers, not the resource tracker
    else:
        assert re.fullmatch(message, err), err
    assert len(workers) == 2


def hang_up_by_default() -> None:  # pragma: no cover - runs in the child before exec
    """SIGHUP's default action (the end the case expects), not the one inherited: under nohup, which a
    long test run is often started with, it is SIG_IGN, and the command rightly runs on."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _wait_for_workers(proc: subprocess.Popen, count: int, timeout_s: float) -> list[str]:
    """The command's worker processes, once ``count`` of them run: have read their start data from the
    parent and begun (multiprocessing then opens /dev/null for the child's sys.stdin)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        workers = [line for line in left_in_session(proc.pid) if "spawn_main" in line]
        if len(workers) >= count and all(_opened_devnull(int(w.split()[0])) for w in workers):
            return workers
        time.sleep(0.02)
    raise AssertionError(f"no {count} worker processes within {timeout_s} s (status {proc.poll()})")


def _opened_devnull(pid: int) -> bool:
    """Whether process ``pid`` has /dev/null open, other than as its standard streams."""
    try:
        fds = [fd for fd in os.listdir(f"/proc/{pid}/fd") if int(fd) > 2]
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == os.devnull:
                return True
        except OSError:
            pass
    return False
