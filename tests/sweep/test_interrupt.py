"""Ctrl-C (to the whole process group, as a terminal sends it) or SIGTERM (to kernbench alone) stops a
parallel sweep at once: one line, status 128+signal, no --out written, no worker left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

HANG_BOUND_S = 180  # a bound on a hang (the sweep ends in well under a second idle), not a speed figure

# six points on two workers: still simulating when the signal comes, 3 s in (the whole sweep
# takes ~5.5 s on a 2-core machine; four points took ~3 s, so the signal could come at the exit)
LONG = [
    "sweep",
    "gqa-decode",
    "--topology",
    "cube1",
    "--heads",
    "16",
    "--kv-heads",
    "2",
    "--grid",
    "context=65536,131072",
    "--grid",
    "variant=primitive,opt2,opt3",
    "--jobs",
    "2",
    "--no-cache",
]


@pytest.mark.parametrize("signum, whole_group", [(signal.SIGINT, True), (signal.SIGTERM, False)])
def test_an_interrupted_parallel_sweep_stops_its_workers_and_writes_nothing(tmp_path, signum, whole_group):
    out = tmp_path / "rows.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernbench.cli", *LONG, "--out", str(out)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    time.sleep(3)  # the workers have started and are simulating
    assert proc.poll() is None, proc.communicate()
    (os.killpg if whole_group else os.kill)(proc.pid, signum)
    _, err = proc.communicate(timeout=HANG_BOUND_S)  # (a bound on a hang, not on how soon it stops)
    assert proc.returncode == 128 + signum
    assert err == f"interrupted ({signal.Signals(signum).name}); no output was written\n"
    assert not out.exists() and list(tmp_path.iterdir()) == []
    deadline = time.monotonic() + HANG_BOUND_S
    while living_in_group(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert living_in_group(proc.pid) == [], "nothing of the sweep is left running in its process group"


def living_in_group(pgid: int) -> list[str]:
    """Processes of a process group that have not exited (zombies waiting for init to reap them are done)."""
    alive = []
    for entry in os.listdir("/proc"):
        try:
            stat = open(f"/proc/{entry}/stat").read()
        except (OSError, ValueError):
            continue
        fields = stat.rsplit(")", 1)[-1].split()  # state, ppid, pgrp, …
        if entry.isdigit() and int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(stat)
    return alive
