"""§6: Ctrl-C and SIGTERM end a command with one line and status 130/143, leaving no partial output;
the debugger's simulation child leaves quietly when its parent goes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from hardening_harness import child_env, duration_of, snapshot_files, spawn

from kernbench.events.tracefile import open_trace

LONG_RUN = ["run", "gqa-decode", "--topology", "cube1", "--context", "16384"]


def after(delay_s: float, signum: int):
    def send(proc):
        time.sleep(delay_s)
        # os.kill, not proc.send_signal: that polls first, and reaps a child that has just ended, so spawn's
        # wait4 found no child (ChildProcessError, seen on a loaded machine). Unreaped, its pid stays its own.
        os.kill(proc.pid, signum)

    return send


LARGEST = ["--topology", "paper", "--set", "sip.mesh.width=9", "--set", "sip.mesh.height=9"]


@pytest.mark.parametrize(
    "module, argv, signum, fraction",
    [
        ("kernbench.cli", [*LONG_RUN, "--trace", "out.kbtrace"], signal.SIGINT, 0.2),
        ("kernbench.cli", [*LONG_RUN, "--trace", "out.kbtrace"], signal.SIGINT, 0.6),
        ("kernbench.cli", [*LONG_RUN, "--json"], signal.SIGTERM, 0.6),
        ("kernbench_tui.cli", ["probe", *LARGEST], signal.SIGINT, 0.6),
        ("kernbench.cli", ["bench"], signal.SIGINT, 0.5),
    ],
)
def test_an_interrupt_is_one_line_and_128_plus_the_signal(tmp_path, module, argv, signum, fraction):
    """Interrupted at a fraction of the command's measured run time, so a faster engine moves the moment too."""
    work = tmp_path / "measure"
    work.mkdir()
    delay_s = fraction * duration_of(module, argv, work)
    for _ in range(4):  # on a busy machine a run may be quicker than measured: then interrupt earlier
        got = spawn(module, argv, cwd=tmp_path, env=child_env(), on_start=after(delay_s, signum))
        if got.status not in (0, -signum):  # 0 or killed while exiting: the command had finished first
            break
        for p in tmp_path.iterdir():
            if p.is_file():
                p.unlink()
        delay_s /= 2
    name = signal.Signals(signum).name
    assert got.status == 128 + signum, (got.status, got.err)
    said = re.fullmatch(rf"interrupted \({name}\)( at t=[\d,.]+ ns)?; (no output was written|(\S+) was written before it)\n", got.err)
    assert said, got.err
    if said[3] is None:
        assert snapshot_files(tmp_path) == {}, "nothing written, not even a temporary file"
    else:  # (the signal came after the output was renamed into place: the line says so, and the file is whole)
        assert list(snapshot_files(tmp_path)) == [said[3]] == [argv[-1]]
        assert len(open_trace(tmp_path / said[3]).store) > 0


PARENT = """
import sys
from kernbench_tui.demo import DemoParams
from kernbench_tui.child_run import ProcessSource
source = ProcessSource("kernbench_tui.demo:demo_simulation", (DemoParams(n_pes=2, tiles=100000, pace_s_per_us=0.05),))
print("started", flush=True)
try:  # this stand-in for the app goes quietly itself; the test is about the child
    source.run(lambda batch: None)
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_the_simulation_child_leaves_quietly_when_its_parent_goes(tmp_path, signum):
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT],
        cwd=tmp_path,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert parent.stdout.readline() == b"started\n"
    time.sleep(2.0)  # the child is up and streaming
    children = [int(p) for p in subprocess.run(["pgrep", "-P", str(parent.pid)], capture_output=True, text=True).stdout.split()]
    assert children, "the simulation runs in a child process"
    os.kill(parent.pid, signum)
    parent.wait(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(c) for c in children):
        time.sleep(0.1)
    assert not any(_alive(c) for c in children), "the child outlived its parent"
    err = parent.stderr.read().decode()  # the child shares this pipe: EOF once both are gone
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its (gone) parent counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
