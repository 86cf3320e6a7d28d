"""Replay of issue 20's failing cases: every symptom the issue names, with the variants a fuzzer tries.

    python tools/hardening_replay.py                      # this tree, with this interpreter
    python tools/hardening_replay.py --python /work/wt20-before/.venv/bin/python
    python tools/hardening_replay.py --slow --only 5.    # also the minutes-long cases; class 5 only

The original 3,073-case campaign is not kept; this corpus is rebuilt from the issue's text (its
classes 1-8) and holds one case per symptom and variant. Each case runs the installed commands
(``python -m kernbench.cli``, ``kernbench_tui.cli`` or a Python API script) of the tree the
interpreter imports, as a child in a session of its own, in a fresh folder (its own cache), under a
time bound and an address-space limit, and is classified as one of:

    clean error     exit 2, one ``error:`` line naming the cause, no traceback
    correct         the right result (and whatever warning the case asks for)
    traceback       a Python traceback reached the user
    hang/leftover   still running at its time bound, or something of it left running afterwards
    memory blow-up  a MemoryError, or a peak RSS past the case's bound
    silent-wrong    exit 0 (or an unclear error) where the result is wrong or an error was due
    data loss       a file the run was given changed
    n/a             the tree has no such command (a case for what came after it)

Prints one line per case and the per-class counts; asserts nothing (``--json FILE`` keeps the
verdicts). Runs with the standard library only, so it can replay any tree.
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import json
import os
import pty
import re
import resource
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

MIB = 2**20
CLEAN, CORRECT = "clean error", "correct"
TRACEBACK, HANG, MEMORY, WRONG, LOSS = "traceback", "hang/leftover", "memory blow-up", "silent-wrong", "data loss"
NA = "n/a"  # the tree has no such command or option (a case for what came later)
VERDICTS = (CLEAN, CORRECT, TRACEBACK, HANG, MEMORY, WRONG, LOSS, NA)
FAILURES = (TRACEBACK, HANG, MEMORY, WRONG, LOSS)
CLASSES = {
    1: "data loss: an output that is an input",
    2: "paths and stdout",
    3: "the sweep cache trusts what it reads",
    4: "processes left behind",
    5: "memory inside the documented limits",
    6: "traces",
    7: "limits",
    8: "smaller ones",
    9: "beyond the issue: probes",
}
SWEEP = ["sweep", "gemm-composite", "--jobs", "1"]
LONG = "n" * 300


@dataclass
class Ctx:
    """One case's world: the interpreter of the tree under test and a fresh folder."""

    python: str
    tree: Path
    folder: Path
    env: dict[str, str] = field(default_factory=dict)

    def path(self, name: str) -> Path:
        return self.folder / name


@dataclass
class Ran:
    status: int | None
    out: str
    err: str
    seconds: float
    peak_mib: float
    timed_out: bool
    left: list[str]

    @property
    def text(self) -> str:
        return self.out + self.err


# --- running a child -------------------------------------------------------------------------------


def _drop_permission_override() -> None:  # in the child, before exec: root meets a locked folder as anyone
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, from the bounding set
        libc.prctl(24, cap, 0, 0, 0)


def run(
    ctx: Ctx,
    argv: list[str],
    *,
    module: str = "kernbench.cli",
    code: str | None = None,
    timeout_s: float = 60,
    memory_mib: int = 3072,
    stdout: int | object = subprocess.PIPE,
    fsize: int | None = None,
    locked: bool = False,
    env: dict[str, str] | None = None,
    during: Callable[[subprocess.Popen], None] | None = None,
) -> Ran:
    """``python -m module argv`` (or ``python -c code argv``) in ctx.folder, bounded; what it did."""

    def limits() -> None:
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (memory_mib * MIB, memory_mib * MIB))
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        if locked:
            _drop_permission_override()

    cmd = [ctx.python, "-c", code, *argv] if code is not None else [ctx.python, "-m", module, *argv]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=ctx.folder,
        env={**ctx.env, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=stdout,  # type: ignore[arg-type]
        stderr=subprocess.PIPE,
        preexec_fn=limits,
    )
    chunks: dict[str, bytes] = {}
    peak = [0]
    threads = [
        threading.Thread(target=lambda n=n, f=f: chunks.__setitem__(n, f.read()), daemon=True)
        for n, f in (("out", proc.stdout), ("err", proc.stderr))
        if f is not None
    ]
    threads.append(threading.Thread(target=_sample_peak, args=(proc, peak), daemon=True))
    for t in threads:
        t.start()
    timed_out = False
    try:
        if during is not None:
            during(proc)
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    seconds = time.monotonic() - t0
    left = [] if timed_out else _wait_gone(proc.pid, 3.0)
    _kill_session(proc.pid)
    proc.wait()
    for t in threads[:-1]:
        t.join(5)
    out, err = (chunks.get(n, b"").decode("utf-8", "replace") for n in ("out", "err"))
    return Ran(None if timed_out else proc.returncode, out, err, seconds, peak[0] / 1024, timed_out, left)


def _sample_peak(proc: subprocess.Popen, peak_kib: list[int]) -> None:
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak_kib[0] = max(peak_kib[0], int(line.split()[1]))
        except (OSError, ValueError):
            return
        time.sleep(0.02)


def in_session(sid: int) -> list[str]:
    """``pid cmdline`` of every live process of session ``sid``."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[-1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            alive.append(f"{entry} {cmdline[:100]}")
    return alive


def _wait_gone(sid: int, timeout_s: float) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while (left := in_session(sid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _kill_session(sid: int) -> None:
    for line in in_session(sid):
        try:
            os.kill(int(line.split()[0]), signal.SIGKILL)
        except ProcessLookupError:
            pass


# --- verdicts ---------------------------------------------------------------------------------------


def hidden(text: str) -> list[str]:
    """Characters a terminal acts on instead of showing (beyond newline and tab)."""
    return [ch for ch in text if ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cf")]


def judge(
    r: Ran,
    *,
    error: str | None = None,
    ok: Callable[[Ran], str | None] | None = None,
    memory_mib: float = 1024,
    kept: Callable[[], str | None] | None = None,
    plain: bool = False,
) -> tuple[str, str]:
    """The verdict on a run. ``error``: the regex a clean error names; ``ok``: None if a status-0 run is
    right, else why not; ``kept``: None if the run's inputs are intact; ``plain``: nothing from the
    input may reach the terminal as a control character."""
    if r.timed_out:
        return HANG, f"still running after {r.seconds:.0f} s"
    if r.left:
        return HANG, f"{len(r.left)} process(es) left running: {r.left[0][:60]}"
    lost = kept() if kept is not None else None
    if lost:
        return LOSS, lost
    if "MemoryError" in r.text or r.peak_mib > memory_mib:
        return MEMORY, f"peak RSS {r.peak_mib:,.0f} MiB" + (" (MemoryError)" if "MemoryError" in r.text else "")
    if "Traceback (most recent call last)" in r.text:
        last = [line for line in r.text.splitlines() if line and not line.startswith(" ")]
        return TRACEBACK, (last[-1] if last else "")[:90]
    if r.status == 2 and "invalid choice" in r.err:
        return NA, _first(r.err.splitlines()[-1])[:100]
    if plain and hidden(r.text):
        return WRONG, f"control characters reached the terminal: {''.join(sorted(set(hidden(r.text))))!r}"
    if r.status == 0 and ok is not None:
        why = ok(r)
        return (CORRECT, _first(r.out) or "exit 0") if why is None else (WRONG, why)
    lines = [line for line in r.err.splitlines() if line.strip() and not line.startswith(("warning:", " "))]  # (indented: where)
    if r.status == 2 and error is not None:
        if lines and lines[0].startswith("error:") and len(lines) <= 2 and re.search(error, r.err, re.S | re.I):
            return CLEAN, lines[0][:110]
        return WRONG, f"exit 2 without naming the cause: {' | '.join(lines[:2])[:100]}"
    return WRONG, f"exit {r.status}: {(_first(r.err) or _first(r.out))[:100]}"


def _first(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def unchanged(*paths: Path) -> Callable[[], str | None]:
    """A ``kept`` check: these files hold what they held when this was called."""
    before = {p: p.read_bytes() for p in paths}

    def check() -> str | None:
        for p, data in before.items():
            now = p.read_bytes() if p.exists() else None
            if now != data:
                return f"{p.name} was overwritten ({len(data):,} B -> {len(now or b''):,} B)"
        return None

    return check


# --- the corpus -----------------------------------------------------------------------------------

CASES: list[tuple[int, str, bool, Callable[[Ctx], tuple[str, str]]]] = []


def case(cls: int, name: str, slow: bool = False) -> Callable[[Callable[[Ctx], tuple[str, str]]], Callable[[Ctx], tuple[str, str]]]:
    def register(fn: Callable[[Ctx], tuple[str, str]]) -> Callable[[Ctx], tuple[str, str]]:
        CASES.append((cls, name, slow, fn))
        return fn

    return register


def cube1(ctx: Ctx) -> str:
    return (ctx.tree / "topologies" / "cube1.yaml").read_text()


def topology_file(ctx: Ctx, name: str, text: str | None = None) -> Path:
    p = ctx.path(name)
    p.write_text(cube1(ctx) if text is None else text)
    return p


# 1. An output that is an input of the run ------------------------------------------------------------

INPUT_AS_OUTPUT = {
    "sweep --out is a --grid topology (.csv)": (
        "topo.csv",
        lambda: [*SWEEP, "--no-cache", "--grid", "topology=cube1,./topo.csv", "--out", "topo.csv"],
    ),
    "sweep --out is a --grid topology (.json)": (
        "topo.json",
        lambda: [*SWEEP, "--no-cache", "--grid", "topology=topo.json", "--out", "topo.json"],
    ),
    "sweep --out is a --grid topology, absolute vs relative": (
        "topo.csv",
        lambda: [*SWEEP, "--no-cache", "--grid", "topology=topo.csv", "--out", "{d}/./topo.csv"],
    ),
    "sweep --out is a symlink to a --grid topology": (
        "topo.yaml",
        lambda: [*SWEEP, "--no-cache", "--grid", "topology=topo.yaml", "--out", "link.csv"],
    ),
    "sweep --out is a hard link to a --grid topology": (
        "topo.yaml",
        lambda: [*SWEEP, "--no-cache", "--grid", "topology=topo.yaml", "--out", "hard.csv"],
    ),
    "sweep --out is a --grid topology, cached run": ("topo.csv", lambda: [*SWEEP, "--grid", "topology=topo.csv", "--out", "topo.csv"]),
    "sweep --out is --topology": (
        "topo.csv",
        lambda: [*SWEEP, "--no-cache", "--topology", "topo.csv", "--grid", "m=64,128", "--out", "topo.csv"],
    ),
    "run --trace is --topology": ("topo.yaml", lambda: ["run", "gemm-composite", "--topology", "topo.yaml", "--trace", "topo.yaml"]),
    "run --perfetto is --topology by a symlink": (
        "topo.yaml",
        lambda: ["run", "gemm-composite", "--topology", "topo.yaml", "--perfetto", "link.csv"],
    ),
}


def _input_as_output(topo: str, argv: Callable[[], list[str]]) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        for name in ("topo.csv", "topo.json", "topo.yaml"):
            topology_file(ctx, name)
        os.symlink("topo.yaml", ctx.path("link.csv"))
        os.link(ctx.path("topo.yaml"), ctx.path("hard.csv"))
        kept = unchanged(ctx.path(topo))
        r = run(ctx, [a.replace("{d}", str(ctx.folder)) for a in argv()])
        return judge(r, error=r"input", kept=kept, ok=lambda r: "an input was taken as an output and not refused")

    return replay


for _name, (_topo, _argv) in INPUT_AS_OUTPUT.items():
    case(1, _name)(_input_as_output(_topo, _argv))


# 2. Paths and stdout --------------------------------------------------------------------------------

PATH_FLAGS: dict[str, tuple[Callable[[str], list[str]], str]] = {
    "--trace": (lambda p: ["run", "gemm-composite", "--trace", p], ".kbtrace"),
    "--perfetto": (lambda p: ["run", "gemm-composite", "--perfetto", p], ".json"),
    "--out": (lambda p: [*SWEEP, "--no-cache", "--grid", "m=64", "--out", p], ".csv"),
    "--topology": (lambda p: ["run", "gemm-composite", "--topology", p], ".yaml"),
    "--goldens": (lambda p: ["bench", "--goldens", p], ".json"),
    # the variants a fuzzer reaches from these: the other commands and flags that take a path
    "bench --regen --goldens": (lambda p: ["bench", "--regen", "--goldens", p], ".json"),
    "sweep --grid topology=": (lambda p: [*SWEEP, "--no-cache", "--grid", f"topology={p}"], ".yaml"),
    "sweep --cache-dir": (lambda p: [*SWEEP, "--grid", "m=64", "--cache-dir", p], ""),
    "topo show PATH": (lambda p: ["topo", "show", p], ".yaml"),
    "compare TRACE": (lambda p: ["compare", p, "gemm-composite"], ".kbtrace"),
}
PATH_KINDS = {
    "a name over 255 bytes": lambda ctx, sfx: f"{LONG}{sfx}",
    "a folder name over 255 bytes": lambda ctx, sfx: f"{LONG}/x{sfx}",
    "a folder without search permission": lambda ctx, sfx: f"locked/x{sfx}",
}


def _odd_path(make: Callable[[str], list[str]], suffix: str, kind: str) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        locked = ctx.path("locked")
        locked.mkdir()
        topology_file(ctx, f"locked/x{suffix}")  # (something to find, had it permission)
        locked.chmod(0)
        try:
            r = run(ctx, make(PATH_KINDS[kind](ctx, suffix)), locked=kind.endswith("permission"))
        finally:
            locked.chmod(0o700)
        cause = r"permission denied" if kind.endswith("permission") else r"too long"
        return judge(r, error=cause, ok=lambda r: "exit 0 on a path it cannot use")

    return replay


for _flag, (_make, _sfx) in PATH_FLAGS.items():
    for _kind in PATH_KINDS:
        case(2, f"{_flag}: {_kind}")(_odd_path(_make, _sfx, _kind))

PRINTING = {
    "topo show": ["topo", "show"],
    "topo show --json": ["topo", "show", "--json"],
    "topo list": ["topo", "list"],
    "run --list": ["run", "--list"],
    "run": ["run", "gemm-composite"],
    "run --json": ["run", "gemm-composite", "--json"],
    "run --explain": ["run", "gemm-composite", "--explain"],
    "sweep": [*SWEEP, "--no-cache", "--grid", "m=64,128"],
    "compare": ["compare", "gemm-composite", "gemm-primitive"],
    "bench --json": ["bench", "--json"],
}
STDOUT_CAUSE = r"cannot write to standard output"


def _full_disk(argv: list[str]) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        with open("/dev/full", "wb") as full:
            r = run(ctx, argv, stdout=full)
        return judge(r, error=STDOUT_CAUSE, ok=lambda r: "exit 0 though nothing could be written")

    return replay


def _short_write(argv: list[str], limit: int) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        whole = run(ctx, argv).out.encode()
        out = ctx.path("out.txt")
        with open(out, "wb") as f:
            r = run(ctx, argv, stdout=f, fsize=limit)
        size = out.stat().st_size
        return judge(
            r,
            error=STDOUT_CAUSE + r".*incomplete",
            ok=lambda r: f"exit 0 with {size:,} of {len(whole):,} B written" if size < len(whole) else None,
        )

    return replay


for _name, _argv in PRINTING.items():
    case(2, f"stdout on a full disk: {_name}")(_full_disk(_argv))
case(2, "stdout under ulimit -f 1024: topo show (paper)")(_short_write(PRINTING["topo show"], 1024))
for _name in ("topo show --json", "run", "run --json", "sweep", "compare", "run --list"):
    case(2, f"stdout under ulimit -f 300: {_name}")(_short_write(PRINTING[_name], 300))


# 3. The sweep cache --------------------------------------------------------------------------------

CACHED = [*SWEEP, "--grid", "m=64,128", "--cache-dir", "cache"]


def _rows(text: str) -> list[dict]:
    rows = json.loads(text)
    return [{k: v for k, v in row.items() if k != "cached"} for row in rows]


def _entries(ctx: Ctx) -> list[Path]:
    return sorted(p for p in ctx.path("cache").rglob("*.json") if p.is_file() and not p.is_symlink())


def _edit_latency(value: object) -> Callable[[Path], None]:
    def edit(entry: Path) -> None:
        doc = json.loads(entry.read_text())
        doc["metrics"]["latency_ns"] = value
        entry.write_text(json.dumps(doc))

    return edit


def _replace_with(make: Callable[[Path], None]) -> Callable[[Path], None]:
    def edit(entry: Path) -> None:
        entry.unlink()
        make(entry)

    return edit


CACHE_DAMAGE: dict[str, tuple[Callable[[Path], None], list[str]]] = {
    "a hand-edited latency (table)": (_edit_latency(1.0), []),
    "a hand-edited latency (--json)": (_edit_latency(1.0), ["--json"]),
    "a hand-edited latency (--out csv)": (_edit_latency(1.0), ["--out", "rows.csv"]),
    "a NaN latency (--json)": (_edit_latency(float("nan")), ["--json"]),
    "a NaN latency (table)": (_edit_latency(float("nan")), []),
    "an Infinity latency (--json)": (_edit_latency(float("inf")), ["--json"]),
    "a latency of text (--json)": (_edit_latency("fast"), ["--json"]),
    "a symlink to /dev/zero": (_replace_with(lambda e: os.symlink("/dev/zero", e)), ["--json"]),
    "a symlink to /dev/urandom": (_replace_with(lambda e: os.symlink("/dev/urandom", e)), ["--json"]),
    "a FIFO": (_replace_with(lambda e: os.mkfifo(e)), ["--json"]),
    "a 2 GiB sparse file": (_replace_with(lambda e: os.truncate(_touch(e), 2 * 2**30)), ["--json"]),
    "truncated JSON": (lambda e: e.write_bytes(e.read_bytes()[:40]), ["--json"]),
    "a folder": (_replace_with(lambda e: e.mkdir()), ["--json"]),
    "a symlink loop": (_replace_with(lambda e: os.symlink(e.name, e)), ["--json"]),
}


def _touch(p: Path) -> Path:
    p.write_bytes(b"")
    return p


def _cache_damage(edit: Callable[[Path], None], extra: list[str]) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        clean = run(ctx, [*CACHED, "--no-cache", "--json"])
        first = run(ctx, [*CACHED, "--json"])
        entries = _entries(ctx)
        if clean.status != 0 or first.status != 0 or not entries:
            return WRONG, f"set-up failed: {_first(clean.err) or _first(first.err)}"
        edit(entries[0])
        r = run(ctx, [*CACHED, *extra], timeout_s=40, memory_mib=3072)
        want = _rows(clean.out)

        def ok(r: Ran) -> str | None:
            if "--json" in extra:
                got = _rows(r.out)
            elif "--out" in extra:
                got = _csv_latencies(ctx.path("rows.csv"))
                want_l = [row["latency_ns"] for row in want]
                return None if got == want_l and "warning" in r.err else f"rows {got} (clean run: {want_l})"
            else:
                got_text = r.out
                latencies = [f"{row['latency_ns']:,.1f}" for row in want]
                if not all(lat in got_text for lat in latencies) or "1.0 " in got_text.replace("1,0", ""):
                    return "the table shows what the entry says, not the clean run's latencies"
                return None if "warning" in r.err else "right rows, but the bad entry was not mentioned"
            if got != want:
                bad = [(g.get("latency_ns"), w.get("latency_ns")) for g, w in zip(got, want, strict=False) if g != w]
                return f"rows differ from a clean run: {bad[:2]}"
            return None if "warning" in r.err else "right rows, but the bad entry was not mentioned"

        return judge(r, ok=ok, memory_mib=1024)

    return replay


def _csv_latencies(path: Path) -> list[float]:
    import csv

    with open(path, newline="") as f:
        return [float(row["latency_ns"]) for row in csv.DictReader(f)]


for _name, (_edit, _extra) in CACHE_DAMAGE.items():
    case(3, f"cache entry: {_name}")(_cache_damage(_edit, _extra))


# 4. Processes left behind ----------------------------------------------------------------------------

GQA = "gqa-decode --topology cube1 --heads 16 --kv-heads 2 --context 65536"
WORKER_COMMANDS = {
    "sweep --jobs 2": ["sweep", *GQA.split(), "--grid", "variant=primitive,opt2,opt3", "--jobs", "2", "--no-cache"],
    "compare": ["compare", f"{GQA} --variant primitive", f"{GQA} --variant opt2"],
}


def _killed(argv: list[str], signum: int) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        seen: list[int] = []

        def kill_it(proc: subprocess.Popen) -> None:
            deadline = time.monotonic() + 4  # the workers are up well within this (a tree without any: the command alone)
            while time.monotonic() < deadline and proc.poll() is None:
                seen[:] = [len(in_session(proc.pid))]
                if seen[0] >= 3:  # the command and two workers
                    break
                time.sleep(0.05)
            time.sleep(1.5)  # simulating
            if proc.poll() is None:
                os.kill(proc.pid, signum)

        r = run(ctx, argv, during=kill_it, timeout_s=60)
        if r.left:
            return HANG, f"{len(r.left)} process(es) alive 3 s after the {signal.Signals(signum).name}: {r.left[0][:50]}"
        if r.timed_out:
            return HANG, "the command itself lived on"
        if "Traceback" in r.text:
            return TRACEBACK, _first(r.err)
        return CORRECT, f"nothing left 3 s after {signal.Signals(signum).name} (status {r.status}; {seen[0] if seen else 0} processes ran)"

    return replay


for _name, _argv in WORKER_COMMANDS.items():
    for _sig in (signal.SIGKILL, signal.SIGHUP, signal.SIGTERM):
        case(4, f"{_name} ended by {signal.Signals(_sig).name}")(_killed(_argv, _sig))

TUI_IDLE = ["demo", "--tiles", "3"]
TUI_BUSY = ["demo", "--tiles", "100000", "--pace", "0.05"]


def tui_in_pty(
    ctx: Ctx, argv: list[str], *, busy: bool, ending: object, ignore_hup: bool = False, settle_s: float = 60
) -> tuple[str, str, bytes]:
    """kernbench-tui ARGV with a pty as its controlling terminal; once drawn (and idle), ``ending``:
    a signal, "close" (the terminal goes away) or None (only watch). The verdict and what it drew."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))

    def own_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        resource.setrlimit(resource.RLIMIT_AS, (3072 * MIB, 3072 * MIB))
        if ignore_hup:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)

    env = {**ctx.env, "TERM": "xterm-256color", "TEXTUAL_ANIMATIONS": "none"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [ctx.python, "-m", "kernbench_tui.cli", *argv],
        cwd=ctx.folder,
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        preexec_fn=own_terminal,
    )
    os.close(slave)
    shown = b""
    fd: int | None = master
    try:
        t0 = last = time.monotonic()
        while time.monotonic() - t0 < settle_s and proc.poll() is None:
            data = _read(master, 0.1)
            now = time.monotonic()
            if data:
                shown += data
                last = now
            if b"quit" in shown and (now - last > 1.0 if not busy else now - t0 > 2.0):
                break
        if proc.poll() is not None:
            shown += _read(master, 0.3)
            return "ended", f"ended by itself with {proc.returncode}", shown
        if ending is None:
            return "running", "drawn and running", shown
        t1 = time.monotonic()
        if ending == "close":
            os.close(master)
            fd = None
        else:
            os.kill(proc.pid, ending)  # type: ignore[arg-type]
        while proc.poll() is None and time.monotonic() - t1 < 10:
            shown += _read(fd, 0.1) if fd is not None else (time.sleep(0.1) or b"")
        if proc.poll() is None:
            return HANG, "still running 10 s after the ending", shown
        left = _wait_gone(proc.pid, 3.0)
        if left:
            return HANG, f"left running: {left[0][:60]}", shown
        text = shown.decode("utf-8", "replace")
        if "Traceback" in text:
            return TRACEBACK, "a traceback on the terminal", shown
        return CORRECT, f"ended with {proc.returncode} in {time.monotonic() - t1:.1f} s", shown
    finally:
        _kill_session(proc.pid)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if fd is not None:
            os.close(fd)


def _read(fd: int, timeout_s: float) -> bytes:
    out = b""
    while select.select([fd], [], [], timeout_s)[0]:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
        timeout_s = 0.05
    return out


TUI_RUN = ["run", "gemm-composite"]
TUI_ENDINGS = {
    "SIGTERM, idle": (TUI_IDLE, False, signal.SIGTERM, False),
    "SIGHUP, idle": (TUI_IDLE, False, signal.SIGHUP, False),
    "run, SIGTERM, idle": (TUI_RUN, False, signal.SIGTERM, False),
    "run, SIGHUP, idle": (TUI_RUN, False, signal.SIGHUP, False),
    "run, terminal closed under nohup, idle": (TUI_RUN, False, "close", True),
    "terminal closed, idle": (TUI_IDLE, False, "close", False),
    "terminal closed under nohup, idle": (TUI_IDLE, False, "close", True),
    "SIGTERM, busy": (TUI_BUSY, True, signal.SIGTERM, False),
    "terminal closed, busy": (TUI_BUSY, True, "close", False),
}


def _tui_ending(argv: list[str], busy: bool, ending: object, ignore_hup: bool) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        verdict, note, _ = tui_in_pty(ctx, argv, busy=busy, ending=ending, ignore_hup=ignore_hup)
        return (WRONG, note) if verdict == "ended" else (verdict, note)

    return replay


for _name, (_argv, _busy, _ending, _nohup) in TUI_ENDINGS.items():
    case(4, f"kernbench-tui {_name}")(_tui_ending(_argv, _busy, _ending, _nohup))


# 5. Memory inside the documented limits ------------------------------------------------------------------


def chain_yaml(ctx: Ctx, routers: int) -> str:
    """cube1 with its routers replaced by a chain r0 … r(N−1): PE 0 at the far end, everything else at r0."""
    head, _, rest = cube1(ctx).partition("  routers:\n")
    _, _, tail = rest.partition("  pes:\n")
    chain = "".join(f"    r{i}: {{}}\n" for i in range(routers))
    links = "".join(f"    - {{a: r{i}, b: r{i + 1}, bw_gbps: 256, prop_ns: 1}}\n" for i in range(routers - 1))
    tail = tail.replace("attach: [r0, r0, r1, r1, r2, r2, r3, r3]", "attach: [r0, r0, r0, r0, r0, r0, r0, r0]", 2)
    tail = tail.replace("attach: [r0, r0, r0, r0", f"attach: [r{routers - 1}, r0, r0, r0", 1)
    tail = tail.replace("attach: hub", "attach: r0").replace("ucie_attach: hub", "ucie_attach: r0")
    head = head.replace("attach: hub", "attach: r0")
    return f"{head}  routers:\n{chain}  links:\n{links}  pes:\n{tail}"


def _chain(routers: int, argv: list[str], timeout_s: float = 120) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        topology_file(ctx, "chain.yaml", chain_yaml(ctx, routers))
        r = run(ctx, [a.replace("{chain}", "chain.yaml") for a in argv], timeout_s=timeout_s, memory_mib=4096)
        return judge(r, error=r"hops; the limit is|too large|limit", ok=lambda r: None, memory_mib=1024)

    return replay


case(5, "topo show, a 1,000-router chain")(_chain(1000, ["topo", "show", "{chain}"]))
case(5, "topo show, a 3,000-router chain (3,145 nodes)")(_chain(3000, ["topo", "show", "{chain}"]))
case(5, "topo show --json, a 3,000-router chain")(_chain(3000, ["topo", "show", "{chain}", "--json"]))
case(5, "topo show --route r0 r1, a 3,000-router chain")(
    _chain(3000, ["topo", "show", "{chain}", "--route", "sip0.cube0.r0", "sip0.cube0.r1"])
)
case(5, "run gemm-composite, a 3,000-router chain")(_chain(3000, ["run", "gemm-composite", "--topology", "{chain}"]))


def _payload(extra: list[str], memory_mib: int = 3072) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        r = run(ctx, ["run", "allreduce", *extra], timeout_s=120, memory_mib=memory_mib)
        return judge(r, error=r"payload", ok=lambda r: None, memory_mib=1536)

    return replay


case(5, "allreduce --payload 1GiB")(_payload(["--payload", "1GiB"]))
case(5, "allreduce --payload 1GiB under 8 GiB of address space")(_payload(["--payload", "1GiB"], memory_mib=8192))
case(5, "allreduce --payload 4GiB --algo tree")(_payload(["--payload", "4GiB", "--algo", "tree"]))
case(5, "allreduce --payload 1TiB")(_payload(["--payload", "1TiB"]))
case(5, "allreduce --payload 512MiB --pes 0-1")(_payload(["--payload", "512MiB", "--pes", "0-1"]))


@case(5, "bench --study allreduce (minutes)", slow=True)
def _study(ctx: Ctx) -> tuple[str, str]:
    r = run(ctx, ["bench", "--study", "allreduce"], timeout_s=1200, memory_mib=4096)
    verdict, note = judge(r, ok=lambda r: None, memory_mib=1024)
    return verdict, f"peak RSS {r.peak_mib:,.0f} MiB; {note}"


# 6. Traces -----------------------------------------------------------------------------------------

CRAFT = r"""
import dataclasses, sys
import numpy as np
from kernbench.events.store import EventStore
from kernbench.events.tracefile import open_trace, trace_bytes
src, dst, how = sys.argv[1:4]
t = open_trace(src)
cols = {k: np.array(v) for k, v in t.store.columns().items()}
meta = t.metadata
if how == "pred out of range":
    cols["pred"][cols["pred"] >= 0] = 10**6
elif how == "all seq equal":
    cols["seq"][:] = 7
elif how == "negative end_ns":
    meta = dataclasses.replace(meta, end_ns=-5.0)
elif how == "a span ending before it starts":
    cols["end_ns"][-1] = -5.0
elif how == "a cause published later":
    cols["pred"][0] = cols["seq"].max()
elif how == "an end before the last event":
    meta = dataclasses.replace(meta, end_ns=1.0)
store = EventStore.from_columns(cols, t.store.components, t.store.strings)
open(dst, "wb").write(trace_bytes(store, meta))
"""
TRACE_DAMAGE = (
    "pred out of range",
    "all seq equal",
    "negative end_ns",
    "a span ending before it starts",
    "a cause published later",
    "an end before the last event",
)


def _bad_trace(how: str, argv: Callable[[str], list[str]]) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        rec = run(ctx, ["run", "gemm-composite", "--trace", "good.kbtrace"])
        craft = run(ctx, ["good.kbtrace", "bad.kbtrace", how], code=CRAFT)
        if rec.status != 0 or craft.status != 0:
            return WRONG, f"set-up failed: {(craft.err or rec.err).strip().splitlines()[-1:]}"
        r = run(ctx, argv("bad.kbtrace"))

        def ok(r: Ran) -> str | None:
            if "--json" in argv("x"):
                doc = json.loads(r.out)
                lat = doc["a"]["latency_ns"]
                return f"a latency of {lat} ns from an inconsistent trace" if lat < 0 or how != "pred out of range" else None
            return f"compared without a word: {_first(r.out)[:60]}"

        return judge(r, error=r"bad\.kbtrace", ok=ok)

    return replay


for _how in TRACE_DAMAGE:
    case(6, f"compare A A, {_how}")(_bad_trace(_how, lambda p: ["compare", p, p]))
    if _how in ("pred out of range", "all seq equal", "negative end_ns"):
        case(6, f"compare --json A KERNEL, {_how}")(_bad_trace(_how, lambda p: ["compare", "--json", p, "gemm-composite"]))


# 7. Limits -----------------------------------------------------------------------------------------


def _sim_limit(argv: list[str], limit: float) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        r = run(ctx, [*argv, "--max-sim-ns", repr(limit), "--json"])

        def ok(r: Ran) -> str | None:
            doc = json.loads(r.out)
            rows = doc if isinstance(doc, list) else [doc]
            over = [row.get("latency_ns") for row in rows if (row.get("latency_ns") or 0) > limit]
            return f"exit 0 at {over[0]:,} ns past --max-sim-ns {limit:g}" if over else None

        return judge(r, error=r"simulated-time limit", ok=ok)

    return replay


for _k in ("gemm-composite", "gemm-primitive", "gemm-tiled", "allreduce"):
    case(7, f"run {_k} --max-sim-ns 1")(_sim_limit(["run", _k], 1.0))
case(7, "run gemm-composite --max-sim-ns 1000")(_sim_limit(["run", "gemm-composite"], 1000.0))
case(7, "run gqa-decode --max-sim-ns 10")(
    _sim_limit(["run", "gqa-decode", "--topology", "cube1", "--heads", "8", "--kv-heads", "1", "--context", "512"], 10.0)
)


@case(7, "sweep gemm-composite --max-sim-ns 1")
def _sweep_sim_limit(ctx: Ctx) -> tuple[str, str]:
    r = run(ctx, [*SWEEP, "--no-cache", "--grid", "m=64,128", "--max-sim-ns", "1", "--json"])
    return judge(r, error=r"simulated-time limit", ok=lambda r: "exit 0: every point ran past --max-sim-ns 1")


API_HEAD = """
import sys
import numpy as np
from kernbench import Runtime, tl
from kernbench.limits import RunLimits
"""
WALL = (
    API_HEAD
    + """
{kernel}
rt = Runtime("cube1")
rt.launch(k, pes={pes})
try:
    rt.run(limits=RunLimits(max_wall_s=1.0))
except Exception as exc:
    print("error:", str(exc).splitlines()[0], file=sys.stderr)
    sys.exit(2)
print("the run finished")
"""
)
ESCAPERS = {
    "catches BaseException in a loop": "def k():\n    while True:\n        try:\n            while True:\n                pass\n        except BaseException:\n            pass",
    "catches BaseException around tl.cycles": "def k():\n    while True:\n        try:\n            tl.cycles(1)\n        except BaseException:\n            pass",
    "catches BaseException, then returns": "def k():\n    try:\n        while True:\n            pass\n    except BaseException:\n        return",
    "catches BaseException and sleeps": "import time\ndef k():\n    while True:\n        try:\n            time.sleep(0.01)\n        except BaseException:\n            pass",
}


def _escaper(kernel: str, pes: str) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        r = run(ctx, [], code=WALL.format(kernel=kernel, pes=pes), timeout_s=30)
        return judge(r, error=r"wall-time limit|commands, the limit", ok=lambda r: "the run finished as if nothing happened")

    return replay


for _name, _kernel in ESCAPERS.items():
    case(7, f"--max-wall-s 1, a kernel that {_name}")(_escaper(_kernel, "[0]"))
case(7, "--max-wall-s 1, two PEs, catches BaseException in a loop")(_escaper(ESCAPERS["catches BaseException in a loop"], "[0, 5]"))

WALL_IN_A_THREAD = (
    API_HEAD
    + """
import threading
{kernel}
rt = Runtime("cube1")
rt.launch(k, pes=[0])
said = []
def go():
    try:
        rt.run(limits=RunLimits(max_wall_s=1.0))
        said.append("the run finished")
    except Exception as exc:
        said.append("error: " + str(exc).splitlines()[0])
t = threading.Thread(target=go, daemon=True)
t.start()
t.join(20)
if not said:
    print("still running 20 s into a 1 s limit")
    sys.exit(0)
print(said[0], file=sys.stderr if said[0].startswith("error") else sys.stdout)
sys.exit(2 if said[0].startswith("error") else 0)
"""
)


def _escaper_in_a_thread(kernel: str) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        r = run(ctx, [], code=WALL_IN_A_THREAD.format(kernel=kernel), timeout_s=40)
        if "still running" in r.out:
            return HANG, "still running 20 s into a 1 s wall limit (off the main thread)"
        return judge(r, error=r"wall-time limit|commands, the limit", ok=lambda r: "the run finished as if nothing happened")

    return replay


case(7, "--max-wall-s 1 off the main thread (a Dask worker, a script), while True: pass")(
    _escaper_in_a_thread("def k():\n    while True:\n        pass")
)
case(7, "--max-wall-s 1 off the main thread, catches BaseException in a loop")(
    _escaper_in_a_thread(ESCAPERS["catches BaseException in a loop"])
)


# 8. Smaller ones --------------------------------------------------------------------------------------

ESCAPE = "a\x1b]0;pwned\x07\x1b[31mred"


def _named(ctx: Ctx, key: str, value: str, file: str = "named.yaml") -> Path:
    text = "\n".join(f"{key}: {json.dumps(value)}" if line.startswith(f"{key}:") else line for line in cube1(ctx).splitlines())
    return topology_file(ctx, file, text + "\n")


ESCAPE_COMMANDS = {
    "topo show": lambda p: ["topo", "show", p],
    "topo show --json": lambda p: ["topo", "show", p, "--json"],
    "run": lambda p: ["run", "gemm-composite", "--topology", p],
    "run --explain": lambda p: ["run", "gemm-composite", "--topology", p, "--explain"],
    "sweep --grid topology=": lambda p: [*SWEEP, "--no-cache", "--grid", f"topology={p},cube1"],
    "compare": lambda p: ["compare", f"gemm-composite --topology {p}", "gemm-primitive"],
}


def _escape(key: str, command: Callable[[str], list[str]], value: str = ESCAPE) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        path = _named(ctx, key, value)
        r = run(ctx, command(path.name))
        if "--json" in command("x") and r.status == 0:  # JSON escapes it: printed as text, fine
            return judge(r, ok=lambda r: None, plain=True)
        return judge(r, error=r"control character", ok=lambda r: None, plain=True)

    return replay


for _name, _cmd in ESCAPE_COMMANDS.items():
    case(8, f"an escape sequence in the topology name: {_name}")(_escape("name", _cmd))
case(8, "an escape sequence in the description: topo show")(_escape("description", ESCAPE_COMMANDS["topo show"]))


ESCAPED_FILE = "x\x1b]0;pwned\x07\x1b[31m"


@case(8, "an escape sequence in a topology file's name: compare")
def _escape_in_file_name(ctx: Ctx) -> tuple[str, str]:
    topology_file(ctx, f"{ESCAPED_FILE}.yaml")
    r = run(ctx, ["compare", f"gemm-composite --topology '{ESCAPED_FILE}.yaml'", "gemm-primitive"])
    return judge(r, ok=lambda r: None, error=r"control character", plain=True)


@case(8, "an escape sequence in a trace file's name: compare")
def _escape_in_trace_name(ctx: Ctx) -> tuple[str, str]:
    rec = run(ctx, ["run", "gemm-composite", "--trace", f"{ESCAPED_FILE}.kbtrace"])
    if rec.status != 0:
        return WRONG, f"set-up failed: {_first(rec.err)}"
    r = run(ctx, ["compare", f"{ESCAPED_FILE}.kbtrace", f"{ESCAPED_FILE}.kbtrace"])
    return judge(r, ok=lambda r: None, error=r"control character", plain=True)


@case(8, "an escape sequence in a topology file's name: kernbench-tui compare")
def _escape_in_file_name_tui(ctx: Ctx) -> tuple[str, str]:
    topology_file(ctx, f"{ESCAPED_FILE}.yaml")
    verdict, note, shown = tui_in_pty(
        ctx, ["compare", f"gemm-composite --topology '{ESCAPED_FILE}.yaml'", "gemm-primitive"], busy=False, ending=None
    )
    if b"\x1b]0;pwned" in shown:
        return WRONG, "the escape sequence reached the terminal"
    return (CORRECT, "drawn, the name as text") if verdict == "running" else (WRONG, note)


@case(8, "an escape sequence from --set name=")
def _escape_set(ctx: Ctx) -> tuple[str, str]:
    r = run(ctx, ["topo", "show", "cube1", "--set", f"name={ESCAPE}"])
    return judge(r, error=r"control character|special characters", ok=lambda r: None, plain=True)


@case(8, "rich markup in the topology name: topo show")
def _markup(ctx: Ctx) -> tuple[str, str]:
    _named(ctx, "name", "x[/bold] [red]:smile:[/]")
    r = run(ctx, ["topo", "show", "named.yaml"])
    return judge(r, ok=lambda r: None if "x[/bold] [red]:smile:[/]" in r.out else "the name was not printed as written")


FORMULAS = {
    "=HYPERLINK": '=HYPERLINK("http://x")',
    "+1": "+1",
    "+1, quoted as a string": '"+1"',
    "@SUM": "@SUM(A1)",
    "@SUM, quoted": '"@SUM(A1)"',
    "a tab": '"\\tx"',
    "-1+2": "-1+2",
}


def _formula(value: str) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        r = run(ctx, [*SWEEP, "--no-cache", "--grid", f"name={value},plain", "--out", "rows.csv"])

        def ok(r: Ran) -> str | None:
            import csv

            with open(ctx.path("rows.csv"), newline="") as f:
                cells = [cell for row in csv.reader(f) for cell in row]
            bad = [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r") or (c[:1] == "-" and not _number(c))]
            return f"a CSV cell starts a formula: {bad[0]!r}" if bad else None

        return judge(r, ok=ok, error=r"--grid name=")

    return replay


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


for _name, _value in FORMULAS.items():
    case(8, f"a sweep CSV cell starting {_name}")(_formula(_value))

ROUTES = {
    "topo show --route r0 r0 --json": ["topo", "show", "cube1", "--route", "sip0.cube0.r0", "sip0.cube0.r0", "--json"],
    "topo show --route r0 r0": ["topo", "show", "cube1", "--route", "sip0.cube0.r0", "sip0.cube0.r0"],
    "topo show --route hub hub --json": ["topo", "show", "cube1", "--route", "sip0.cube0.hub", "sip0.cube0.hub", "--json"],
    "topo show paper --route dma dma --json": ["topo", "show", "paper", "--route", "sip0.cube0.pe0.dma", "sip0.cube0.pe0.dma", "--json"],
}


def _route(argv: list[str]) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        r = run(ctx, argv)

        def ok(r: Ran) -> str | None:
            if "--json" in argv:
                json.loads(r.out)
            return "prints an infinite bottleneck" if re.search(r"\binf\b|Infinity", r.out) else None

        return judge(r, error=r"no route|not a NoC endpoint", ok=ok)

    return replay


for _name, _argv in ROUTES.items():
    case(8, _name)(_route(_argv))


def _side_output(flag: str, name: str) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        r = run(ctx, ["compare", f"gemm-composite {flag} {name}", "gemm-primitive"])
        written = ctx.path(name).exists() and ctx.path(name).stat().st_size > 0
        return judge(r, error=re.escape(flag), ok=lambda r: None if written else f"{flag} inside a side was ignored: no {name}")

    return replay


case(8, "kernbench compare with --trace inside a side")(_side_output("--trace", "side.kbtrace"))
case(8, "kernbench compare with --perfetto inside a side")(_side_output("--perfetto", "side.json"))


def _tui_side_output(flag: str, name: str) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        verdict, note, shown = tui_in_pty(ctx, ["compare", f"gemm-composite {flag} {name}", "gemm-primitive"], busy=False, ending=None)
        text = shown.decode("utf-8", "replace")
        if verdict == "running":
            written = ctx.path(name).exists()
            return (CORRECT, f"{name} written") if written else (WRONG, f"the app ran and {flag} inside a side was ignored")
        if "Traceback" in text:
            return TRACEBACK, "a traceback on the terminal"
        if re.search(re.escape(flag), text) and re.search(r"^(error|kernbench-tui): ", text.replace("\r", ""), re.M):
            return CLEAN, _first(text.replace("\r", ""))[:100]
        return WRONG, note

    return replay


case(8, "kernbench-tui compare with --trace inside a side")(_tui_side_output("--trace", "side.kbtrace"))
case(8, "kernbench-tui compare with --perfetto inside a side")(_tui_side_output("--perfetto", "side.json"))

LAUNCH = (
    API_HEAD
    + """
rt = Runtime("cube1")
other = Runtime("cube1")
ran_on = []
def k(*args, **kwargs):
    ran_on.append(tl.program_id())
def copy(a, out):
    tl.store(out.whole(), tl.load(a.whole()))
try:
{launch}
except (TypeError, ValueError) as exc:
    print("error:", exc, file=sys.stderr)
    sys.exit(2)
rt.run()
print("ran", ran_on)
"""
)
LAUNCHES = {
    "pes=[True]": "    rt.launch(k, pes=[True])",
    "pes=[False]": "    rt.launch(k, pes=[False])",
    "pes=[np.bool_(True)]": "    rt.launch(k, pes=[np.bool_(True)])",
    "pes=[1.0]": "    rt.launch(k, pes=[1.0])",
    "a tensor of another Runtime": "    rt.launch(copy, pes=[0], args=(other.deploy(np.ones((4, 4))), rt.empty((4, 4))))",
    "a tensor of another Runtime, by keyword": "    rt.launch(copy, pes=[0], a=other.deploy(np.ones((4, 4))), out=rt.empty((4, 4)))",
    "a tensor of another Runtime, in a list": "    rt.launch(k, pes=[0], args=([other.deploy(np.ones((4, 4)))],))",
}


def _launch(body: str) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        r = run(ctx, [], code=LAUNCH.format(launch=body))
        return judge(r, error=r"PE|Runtime|pes", ok=lambda r: f"accepted: {_first(r.out)}")

    return replay


for _name, _body in LAUNCHES.items():
    case(8, f"Python API: {_name}")(_launch(_body))


# 9. Beyond the issue: what a fuzzer tries next -------------------------------------------------------------


def _expect_error(argv: list[str], cause: str, **kw: object) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        topology_file(ctx, "topo.yaml")
        r = run(ctx, argv, **kw)  # type: ignore[arg-type]
        return judge(r, error=cause, ok=lambda r: "exit 0 on bad input")

    return replay


PROBES = {
    "--set a key that is no parameter": (["topo", "show", "cube1", "--set", "nope.x=1"], r"nope"),
    "--set a value of NaN": (["topo", "show", "cube1", "--set", "sip.ucie.bw_gbps=nan"], r"bw_gbps"),
    "--set a value of -inf": (["topo", "show", "cube1", "--set", "sip.ucie.prop_ns=-inf"], r"prop_ns"),
    "--set a huge count": (["topo", "show", "cube1", "--set", "system.sips=1e30"], r"sips"),
    "--set without =": (["topo", "show", "cube1", "--set", "sip.ucie.bw_gbps"], r"--set"),
    "--set a list index past the end": (["topo", "show", "cube1", "--set", "cube.links[99].prop_ns=1"], r"links"),
    "--set a YAML document": (["topo", "show", "cube1", "--set", "sip.ucie={bw_gbps: [1, 2]}"], r"ucie|bw_gbps"),
    "--set a mapping over a number": (["topo", "show", "cube1", "--set", "flit_bytes.x=1"], r"flit_bytes"),
    "--set an anchor bomb": (["topo", "show", "cube1", "--set", "description=" + "&a [" * 40], r"description|YAML|--set"),
    "--m -1": (["run", "gemm-composite", "--m", "-1"], r"--m"),
    "--m 1e400": (["run", "gemm-composite", "--m", "1e400"], r"--m"),
    "--pes 0": (["run", "gemm-composite", "--pes", "0"], r"--pes"),
    "--seed nan": (["run", "gemm-composite", "--seed", "nan"], r"--seed"),
    "--max-wall-s inf": (["run", "gemm-composite", "--max-wall-s", "inf"], r"--max-wall-s"),
    "--max-sim-ns -5": (["run", "gemm-composite", "--max-sim-ns", "-5"], r"--max-sim-ns"),
    "allreduce --payload -1MiB": (["run", "allreduce", "--payload", "-1MiB"], r"--payload"),
    "allreduce --payload nanKiB": (["run", "allreduce", "--payload", "nanKiB"], r"payload"),
    "allreduce --chunk 0": (["run", "allreduce", "--chunk", "0"], r"chunk"),
    "allreduce --chunk 1e999B": (["run", "allreduce", "--chunk", "1e999B"], r"chunk"),
    "allreduce --grid 0x0": (["run", "allreduce", "--grid", "0x0"], r"--grid"),
    "allreduce --grid 99999999999x1": (["run", "allreduce", "--grid", "99999999999x1"], r"--grid"),
    "allreduce --pes 0-99999999999": (["run", "allreduce", "--pes", "0-99999999999"], r"--pes|PE index"),
    "sweep --grid with no values": ([*SWEEP, "--no-cache", "--grid", "m="], r"--grid|m"),
    "sweep --grid of a billion points": (
        [*SWEEP, "--no-cache", "--grid", "m=" + ",".join(map(str, range(1, 1001))), "--grid", "n=" + ",".join(map(str, range(1, 1001)))],
        r"points|--grid",
    ),
    "sweep --jobs -1": ([*SWEEP[:-2], "--jobs", "-1", "--no-cache", "--grid", "m=64"], r"--jobs"),
    "sweep --plot of a metric that is not there": ([*SWEEP, "--no-cache", "--grid", "m=64,128", "--plot", "nope:m"], r"nope|--plot"),
    "bench --goldens a folder": (["bench", "--goldens", "."], r"goldens|folder|regular|directory"),
    "topo show a folder": (["topo", "show", "."], r"regular|folder|\."),
}
for _name, (_argv, _cause) in PROBES.items():
    case(9, _name)(_expect_error(_argv, _cause))


def _either(argv: list[str], cause: str) -> Callable[[Ctx], tuple[str, str]]:
    """A value that may be refused (naming it) or taken (a result): never a traceback or an unclear error."""

    def replay(ctx: Ctx) -> tuple[str, str]:
        return judge(run(ctx, argv), error=cause, ok=lambda r: None)

    return replay


EITHER = {
    "--max-commands-per-pe 1e99 (a whole number: no limit in effect)": (
        ["run", "gemm-composite", "--max-commands-per-pe", "1e99"],
        r"--max",
    ),
    "sweep --jobs 100000 (as many as there are points)": ([*SWEEP[:-2], "--jobs", "100000", "--no-cache", "--grid", "m=64,128"], r"--jobs"),
    "run gemm-composite --m 8192 --n 8192 --k 8192": (["run", "gemm-composite", "--m", "8192", "--n", "8192", "--k", "8192"], r"MiB|--m"),
    "compare a side that is an empty string": (["compare", "", "gemm-composite"], r"compare A"),
    "compare a side with an unclosed quote": (["compare", "gemm-composite --topology 'cube1", "gemm-composite"], r"compare A"),
    "topo show --route to a node that is not there": (["topo", "show", "cube1", "--route", "sip0.cube0.pe0.dma", "nope"], r"nope"),
}
for _name, (_argv, _cause) in EITHER.items():
    case(9, _name)(_either(_argv, _cause))


@case(9, "compare a trace file whose name holds a space")
def _trace_with_a_space(ctx: Ctx) -> tuple[str, str]:
    rec = run(ctx, ["run", "gemm-composite", "--trace", "my run.kbtrace"])
    if rec.status != 0:
        return WRONG, f"set-up failed: {_first(rec.err)}"
    r = run(ctx, ["compare", "my run.kbtrace", "my run.kbtrace"])
    return judge(r, ok=lambda r: None if "A  my run.kbtrace" in r.out else "not compared as the file")


def _new_kernel(name: str) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        r = run(ctx, ["new", "kernel", name])
        if r.status != 0:
            return judge(r, error=r"new kernel|--out|too long")
        ran = run(ctx, ["run", f"{name}.py", "--n", "256", "--tile", "128", "--pes", "2"])
        return judge(ran, error=r"^$", ok=lambda r: None)  # (written: it must run)

    return replay


for _name in ("class", "np", "float", "n" * 300):
    case(9, f"kernbench new kernel {_name[:20]}{'…' if len(_name) > 20 else ''}")(_new_kernel(_name))


@case(9, "an unreadable topology file (mode 000)")
def _unreadable(ctx: Ctx) -> tuple[str, str]:
    p = topology_file(ctx, "topo.yaml")
    p.chmod(0)
    r = run(ctx, ["run", "gemm-composite", "--topology", "topo.yaml"], locked=True)
    return judge(r, error=r"permission denied", ok=lambda r: "exit 0 on an unreadable file")


@case(9, "a topology file of invalid UTF-8")
def _bad_utf8(ctx: Ctx) -> tuple[str, str]:
    ctx.path("topo.yaml").write_bytes(cube1(ctx).encode().replace(b"cube1", b"cube\xff\xfe1"))
    r = run(ctx, ["topo", "show", "topo.yaml"])
    return judge(r, error=r"UTF-8|utf-8", ok=lambda r: "exit 0 on invalid UTF-8")


def _trace_file(how: str) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        rec = run(ctx, ["run", "gemm-composite", "--trace", "good.kbtrace"])
        if rec.status != 0:
            return WRONG, f"set-up failed: {_first(rec.err)}"
        data = ctx.path("good.kbtrace").read_bytes()
        if how == "truncated":
            data = data[: len(data) // 2]
        elif how == "cut inside its fixed header":
            data = data[:20]
        elif how == "of a newer version":
            data = data[:8] + struct.pack("<H", 99) + data[10:]
        elif how == "empty":
            data = b""
        elif how == "a header promising 2**60 events":
            h_len = struct.unpack_from("<I", data, 12)[0]
            header = json.loads(data[28 : 28 + h_len])
            header["n_events"] = 2**60
            new = json.dumps(header, sort_keys=True).encode()
            payload = data[28 + h_len :]
            import zlib

            crc = zlib.crc32(payload, zlib.crc32(new))
            data = data[:12] + struct.pack("<IQI", len(new), len(payload), crc) + new + payload
        ctx.path("bad.kbtrace").write_bytes(data)
        r = run(ctx, ["compare", "bad.kbtrace", "good.kbtrace"])
        return judge(r, error=r"bad\.kbtrace", ok=lambda r: "a damaged trace was compared", memory_mib=600)

    return replay


for _how in ("truncated", "cut inside its fixed header", "of a newer version", "empty", "a header promising 2**60 events"):
    case(9, f"a trace file {_how}")(_trace_file(_how))


def _output_on(argv: list[str], *, to: str, fsize: int | None = None) -> Callable[[Ctx], tuple[str, str]]:
    def replay(ctx: Ctx) -> tuple[str, str]:
        old = ctx.path(to)
        old.write_bytes(b"the previous output")
        kept = unchanged(old)
        r = run(ctx, [a.replace("{to}", to) for a in argv], fsize=fsize)
        return judge(r, error=r"File too large|No space|cannot write", kept=kept, ok=lambda r: "exit 0 but the output cannot be whole")

    return replay


case(9, "run --trace under ulimit -f 4096")(_output_on(["run", "gemm-composite", "--trace", "{to}"], to="old.kbtrace", fsize=4096))
case(9, "run --perfetto under ulimit -f 4096")(_output_on(["run", "gemm-composite", "--perfetto", "{to}"], to="old.json", fsize=4096))
case(9, "sweep --out under ulimit -f 100")(
    _output_on([*SWEEP, "--no-cache", "--grid", "m=64,128", "--out", "{to}"], to="old.csv", fsize=100)
)


@case(9, "sweep under ulimit -f 100: the cache")
def _cache_fsize(ctx: Ctx) -> tuple[str, str]:
    r = run(ctx, [*SWEEP, "--grid", "m=64,128", "--cache-dir", "cache", "--json"], fsize=100)

    def ok(r: Ran) -> str | None:
        return None if len(json.loads(r.out)) == 2 else "rows missing"

    return judge(r, ok=ok, error=r"File too large|cache")


@case(9, "run --trace /dev/full")
def _dev_full(ctx: Ctx) -> tuple[str, str]:
    r = run(ctx, ["run", "gemm-composite", "--trace", "/dev/full"])
    return judge(r, error=r"/dev/full", ok=lambda r: "exit 0 writing a trace to /dev/full")


@case(9, "sweep --out /dev/full")
def _sweep_dev_full(ctx: Ctx) -> tuple[str, str]:
    r = run(ctx, [*SWEEP, "--no-cache", "--grid", "m=64", "--out", "/dev/full"])
    return judge(r, error=r"/dev/full", ok=lambda r: "exit 0 writing rows to /dev/full")


# --- the replay -------------------------------------------------------------------------------------


def selected(only: list[str], slow: bool) -> Iterator[tuple[int, str, Callable[[Ctx], tuple[str, str]]]]:
    for cls, name, is_slow, fn in CASES:
        label = f"{cls}. {name}"
        if is_slow and not slow:
            continue
        if only and not any(o in label for o in only):
            continue
        yield cls, name, fn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="the interpreter of the tree under test")
    parser.add_argument("--slow", action="store_true", help="also the cases that take minutes")
    parser.add_argument("--only", action="append", default=[], help="cases whose 'CLASS. name' holds this text")
    parser.add_argument("--json", help="write the verdicts here")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    args = parser.parse_args(argv)
    cases = list(selected(args.only, args.slow))
    if args.list:
        for cls, name, _ in cases:
            print(f"{cls}. {name}")
        return 0
    python = shutil.which(args.python)  # (absolute: the cases run in folders of their own)
    if python is None:
        print(f"error: --python {args.python}: no such interpreter", file=sys.stderr)
        return 2
    args.python = str(Path(python).absolute())
    probe = subprocess.run(
        [args.python, "-c", "import kernbench, pathlib; print(pathlib.Path(kernbench.__file__).parents[1])"],
        capture_output=True,
        text=True,
        cwd="/",
    )
    if probe.returncode != 0:
        print(f"error: {args.python} cannot import kernbench (give --python the interpreter of the tree's venv)", file=sys.stderr)
        return 2
    tree = Path(probe.stdout.strip())
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "VIRTUAL_ENV"))}
    base_env.update(PYTHONPATH=str(tree), NO_COLOR="1", TERM="dumb", COLUMNS="120", PYTHONHASHSEED="0")
    print(f"tree {tree} ({_commit(tree)}), python {args.python}, {len(cases)} cases")
    verdicts = []
    for cls, name, fn in cases:
        folder = Path(tempfile.mkdtemp(prefix="kb-replay-"))
        ctx = Ctx(args.python, tree, folder, dict(base_env, HOME=str(folder), XDG_CACHE_HOME=str(folder / "xdg")))
        t0 = time.monotonic()
        try:
            verdict, note = fn(ctx)
        except Exception as exc:  # the replay's own failure, said as such
            verdict, note = WRONG, f"replay failed: {type(exc).__name__}: {exc}"[:110]
        finally:
            for p in folder.rglob("*"):
                if p.is_dir() and not p.is_symlink():
                    p.chmod(0o700)
            shutil.rmtree(folder, ignore_errors=True)
        seconds = time.monotonic() - t0
        verdicts.append({"class": cls, "case": name, "verdict": verdict, "note": note, "seconds": round(seconds, 1)})
        print(f"{cls}  {verdict:<14} {seconds:6.1f}s  {name[:70]:<70}  {_plain(note)[:90]}", flush=True)
    print()
    print(_summary(verdicts))
    if args.json:
        Path(args.json).write_text(json.dumps({"tree": str(tree), "commit": _commit(tree), "verdicts": verdicts}, indent=1) + "\n")
    return 0


def _plain(text: str) -> str:
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def _commit(tree: Path) -> str:
    done = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "?"


def _summary(verdicts: list[dict]) -> str:
    lines = [f"{'class':<48}" + "".join(f"{v:>16}" for v in VERDICTS) + f"{'failures':>10}"]
    for cls in sorted({v["class"] for v in verdicts}):
        counts = Counter(v["verdict"] for v in verdicts if v["class"] == cls)
        failures = sum(counts[v] for v in FAILURES)
        lines.append(f"{cls}. {CLASSES[cls]:<45}" + "".join(f"{counts[v]:>16}" for v in VERDICTS) + f"{failures:>10}")
    counts = Counter(v["verdict"] for v in verdicts)
    lines.append(f"{'all':<48}" + "".join(f"{counts[v]:>16}" for v in VERDICTS) + f"{sum(counts[v] for v in FAILURES):>10}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
