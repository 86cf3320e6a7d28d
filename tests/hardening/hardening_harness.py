"""Run a command as a user would and check how it failed.

Two ways in, one verdict:

* :func:`invoke` calls a ``main(argv)`` in this process (fast enough for
  hypothesis), timing it and tracing its allocations;
* :func:`spawn` runs ``python -m MODULE ARGS`` in a child with an
  address-space limit, measuring its CPU time and peak RSS (VmHWM).

:func:`assert_failed_cleanly` then checks the exit status, that the message
names the cause, that no traceback was printed, the time and memory bounds,
and that files which existed before are byte-for-byte as they were, with no
temporary file left beside them.

Time bounds hold on a busy machine: a command's cost is its CPU time (the
child's user + system time, or this process's for :func:`invoke`), not its
wall time, and each bound is scaled by a calibration measured in the same
session (:func:`cpu_scale`: the CPU time of starting the command line here,
against what it takes on the machine the bounds were written on). Wall time
only bounds a hang (:data:`HANG_BOUND_S`), generously: a loaded machine may
take many times longer, a hang never ends.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MIB = 2**20
#: wall seconds after which a spawned command is taken to hang (and killed): not a speed bound
HANG_BOUND_S = 180
#: CPU seconds `python -m kernbench.cli --version` takes on the machine the bounds were written on
REFERENCE_START_CPU_S = 0.35


@dataclass
class Outcome:
    status: int
    out: str
    err: str
    seconds: float  # wall time: for a hang bound only
    peak_mib: float
    cpu_seconds: float = 0.0  # CPU time (the child's user + system; this process's for invoke)


def invoke(main: Callable[[list[str]], int], argv: Sequence[str], capsys, *, trace_memory: bool = True) -> Outcome:
    """``main(argv)`` here; an exception escaping it fails the test with its traceback."""
    capsys.readouterr()
    if trace_memory:
        tracemalloc.start()
    t0, c0 = time.monotonic(), time.process_time()
    try:
        status = main(list(argv))
    finally:
        seconds, cpu = time.monotonic() - t0, time.process_time() - c0
        peak = tracemalloc.get_traced_memory()[1] / MIB if trace_memory else 0.0
        if trace_memory:
            tracemalloc.stop()
    captured = capsys.readouterr()
    return Outcome(status, captured.out, captured.err, seconds, peak, cpu)


def spawn(
    module: str,
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float = HANG_BOUND_S,
    memory_mib: int = 4096,
    env: dict[str, str] | None = None,
    file_size_bytes: int | None = None,
    stdin=subprocess.DEVNULL,
    stdout=subprocess.PIPE,
    on_start: Callable[[subprocess.Popen], None] | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> Outcome:
    """``python -m module argv`` in a child limited to ``memory_mib`` of address space (and optionally a file size).

    Peak memory is the child's own high-water RSS (``VmHWM``, sampled until it exits); the rusage of a
    child forked from this (large) test process would count this process's pages too. ``stdout``: where
    the child's standard output goes (``Outcome.out`` is empty unless it is a pipe); ``preexec_fn``: run
    in the child before it starts (e.g. to drop a capability).
    """
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *argv],
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        preexec_fn=preexec_fn,
    )
    resource.prlimit(proc.pid, resource.RLIMIT_AS, (memory_mib * MIB, memory_mib * MIB))
    if file_size_bytes is not None:
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (file_size_bytes, file_size_bytes))
    chunks: dict[str, bytes] = {}
    peak_kib = [0]
    readers = [
        threading.Thread(target=lambda name=name, f=f: chunks.__setitem__(name, f.read()), daemon=True)
        for name, f in (("out", proc.stdout), ("err", proc.stderr))
        if f is not None
    ]
    reaped = threading.Event()
    readers.append(threading.Thread(target=_sample_peak, args=(proc, peak_kib, reaped), daemon=True))
    for r in readers:
        r.start()
    killer = threading.Timer(timeout_s, _kill, (proc.pid,))
    killer.start()
    try:
        if on_start is not None:
            on_start(proc)
        _pid, wait_status, usage = os.wait4(proc.pid, 0)  # (with the child's CPU time)
        proc.returncode = os.waitstatus_to_exitcode(wait_status)
    finally:
        killer.cancel()
        reaped.set()
    for r in readers:
        r.join(10)
    seconds = time.monotonic() - t0
    return Outcome(
        proc.returncode,
        chunks.get("out", b"").decode("utf-8", "replace"),
        chunks.get("err", b"").decode("utf-8", "replace"),
        seconds,
        peak_kib[0] / 1024,
        usage.ru_utime + usage.ru_stime,
    )


def _kill(pid: int) -> None:
    """SIGKILL to a child not reaped yet (not ``proc.kill()``: it polls, and may reap the child before wait4)."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:  # (reaped just now: spawn is done with it)
        pass


_SCALE: list[float] = []


def cpu_scale() -> float:
    """How much slower this machine starts the command line than the one the bounds were written on (at
    least 1): the CPU time of ``python -m kernbench.cli --version``, the best of three, measured once."""
    if not _SCALE:
        best = min(_start_cpu_seconds() for _ in range(3))
        _SCALE.append(max(1.0, best / REFERENCE_START_CPU_S))
    return _SCALE[0]


def _start_cpu_seconds() -> float:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernbench.cli", "--version"], env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _pid, _status, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return usage.ru_utime + usage.ru_stime


def _sample_peak(proc: subprocess.Popen, peak_kib: list[int], reaped: threading.Event) -> None:
    """The child's VmHWM (peak RSS, monotonic), read every 20 ms while it runs (not proc.poll(): that would
    reap the child before spawn's wait4 gets its CPU time)."""
    path = f"/proc/{proc.pid}/status"
    while not reaped.is_set():
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak_kib[0] = max(peak_kib[0], int(line.split()[1]))
        except (OSError, ValueError):
            return
        time.sleep(0.02)


_DURATIONS: dict[tuple, float] = {}


def duration_of(module: str, argv: Sequence[str], cwd: Path) -> float:
    """How long the command takes undisturbed here (measured once), so a test can interrupt it at a
    chosen fraction of its run whatever the machine's or the engine's speed."""
    key = (module, tuple(argv))
    if key not in _DURATIONS:
        got = spawn(module, argv, cwd=cwd, env=child_env())
        assert got.status in (0, 1), got.err[-2000:]
        _DURATIONS[key] = got.seconds
    return _DURATIONS[key]


def snapshot_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def assert_failed_cleanly(
    got: Outcome,
    status: int,
    cause: str,
    *,
    before: tuple[Path, dict[str, bytes]] | None = None,
    max_seconds: float = 20,
    max_mib: float = 400,
) -> None:
    """The exit status, a message naming the cause (a regex), no traceback, bounded cost, files untouched."""
    text = got.err + got.out
    assert got.status == status, (got.status, text[-3000:])
    assert re.search(cause, text, re.S), (cause, text[-3000:])
    assert "Traceback" not in text, text[-3000:]
    assert got.cpu_seconds < max_seconds * cpu_scale(), (got.cpu_seconds, cpu_scale())  # CPU time: see the module docstring
    assert got.peak_mib < max_mib, got.peak_mib
    if before is not None:
        folder, files = before
        now = snapshot_files(folder)
        for name, data in files.items():
            assert now.get(name) == data, f"{name} changed"
        leftovers = [n for n in now if n not in files and (n.endswith(".part") or n.endswith(".tmp"))]
        assert not leftovers, leftovers


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a spawned command: this interpreter's, with the repository importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


def without_permission_override() -> None:  # pragma: no cover - runs in the child before exec
    """Drop the two capabilities that let root ignore file permissions (CAP_DAC_OVERRIDE,
    CAP_DAC_READ_SEARCH) from the bounding set: the command then meets a locked folder as anyone would."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            os._exit(99)


def left_in_session(sid: int) -> list[str]:
    """What still runs in session ``sid`` (a command started with ``start_new_session``, and everything it
    started): one ``pid command line`` each. A zombie waiting to be reaped has ended."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[-1].split()  # state, ppid, pgrp, session, …
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            alive.append(f"{entry} {cmdline[:160]}")
    return alive


def wait_until_none_left(sid: int, timeout_s: float) -> tuple[list[str], float]:
    """Wait until nothing of session ``sid`` runs (at most ``timeout_s``); what is left and the time it took.
    Whatever is left is then killed, so a failing test leaves nothing running either."""
    t0 = time.monotonic()
    while (left := left_in_session(sid)) and time.monotonic() - t0 < timeout_s:
        time.sleep(0.05)
    seconds = time.monotonic() - t0
    for line in left:
        try:
            os.kill(int(line.split()[0]), 9)
        except ProcessLookupError:
            pass
    return left, seconds
