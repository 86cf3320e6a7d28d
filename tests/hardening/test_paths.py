"""Round 2, §1 and §2: no output may be an input of the run; an odd path on any flag, and a
standard output that refuses bytes, are one ``error:`` line and exit 2, never a traceback."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from hardening_harness import (
    HANG_BOUND_S,
    ROOT,
    assert_failed_cleanly,
    child_env,
    invoke,
    snapshot_files,
    spawn,
    without_permission_override,
)

from kernbench import cli
from kernbench.runtime.api import Runtime
from kernbench_tui import cli as tui_cli

TOPOLOGY = (ROOT / "topologies" / "cube1.yaml").read_text()


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "topo.yaml").write_text(TOPOLOGY)
    (tmp_path / "topo.csv").write_text(TOPOLOGY)  # a topology whose name also suits --out
    (tmp_path / "topo.json").write_text(TOPOLOGY)
    (tmp_path / "afile").write_text("a file, not a folder")
    for suffix in ("", ".kbtrace", ".json", ".yaml", ".csv", ".py"):
        os.symlink(f"loop{suffix}", tmp_path / f"loop{suffix}")  # each a symlink to itself
    return tmp_path


@pytest.fixture
def no_simulation(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the simulation ran before the paths were checked")

    monkeypatch.setattr(Runtime, "run", refuse)


# --- §1: an output that is an input of the run ----------------------------------------------------

SWEEP = ["sweep", "gemm-composite", "--jobs", "1", "--no-cache"]
#: (the command, as a function of the folder); every one names an input of the run as an output
OUTPUT_IS_INPUT = {
    "sweep --out is a grid topology (csv)": lambda d: [*SWEEP, "--grid", f"topology=cube1,{d}/topo.csv", "--out", f"{d}/topo.csv"],
    "sweep --out is a grid topology (json)": lambda d: [*SWEEP, "--grid", f"topology={d}/topo.json", "--out", f"{d}/topo.json"],
    "sweep --out is a grid topology, spelt with ./": lambda d: [*SWEEP, "--grid", f"topology={d}/topo.csv", "--out", f"{d}/./topo.csv"],
    "sweep --out is a symlink to a grid topology": lambda d: [*SWEEP, "--grid", f"topology={d}/topo.yaml", "--out", f"{d}/link.csv"],
    "sweep --out is a hard link to a grid topology": lambda d: [*SWEEP, "--grid", f"topology={d}/topo.yaml", "--out", f"{d}/hard.csv"],
    "sweep --out is a grid topology, one relative and one absolute": lambda d: [
        *SWEEP,
        "--grid",
        "topology=topo.csv",
        "--out",
        f"{d}/topo.csv",
    ],
    "sweep --out is a grid topology, with the cache on": lambda d: [
        *SWEEP[:-1],
        "--cache-dir",
        f"{d}/cache",
        "--grid",
        f"topology={d}/topo.csv",
        "--out",
        f"{d}/topo.csv",
    ],
    "sweep --out is --topology": lambda d: [*SWEEP, "--topology", f"{d}/topo.csv", "--grid", "m=64,128", "--out", f"{d}/topo.csv"],
    "run --trace is the topology": lambda d: ["run", "gemm-composite", "--topology", f"{d}/topo.yaml", "--trace", f"{d}/topo.yaml"],
    "run --perfetto is the topology by a symlink": lambda d: [
        "run",
        "gemm-composite",
        "--topology",
        f"{d}/topo.yaml",
        "--perfetto",
        f"{d}/link.csv",
    ],
    "run --trace is the shipped topology a name stands for": lambda d: [
        "run",
        "gemm-composite",
        "--topology",
        "cube1",
        "--trace",
        f"{d}/shipped.yaml",
    ],
}


@pytest.mark.parametrize("case", sorted(OUTPUT_IS_INPUT))
def test_an_output_that_is_an_input_of_the_run_is_refused_and_the_input_kept(folder, no_simulation, capsys, monkeypatch, case):
    os.symlink(folder / "topo.yaml", folder / "link.csv")
    os.link(folder / "topo.yaml", folder / "hard.csv")
    shipped = folder / "shipped.yaml"  # stands in for the shipped cube1.yaml (not written in a test)
    shipped.write_text(TOPOLOGY)
    from kernbench.topology import spec as topology_spec

    monkeypatch.setattr(topology_spec, "resolve", _resolve_cube1_to(shipped, topology_spec.resolve))
    monkeypatch.chdir(folder)  # (for the relative spelling)
    before = (folder, snapshot_files(folder))
    got = invoke(cli.main, OUTPUT_IS_INPUT[case](folder), capsys)
    assert_failed_cleanly(got, 2, r"an input of this run; writing it would destroy it", before=before, max_seconds=10, max_mib=100)
    assert got.err.count("\n") == 1


def _resolve_cube1_to(shipped: Path, resolve):
    def patched(name):
        return shipped if name == "cube1" else resolve(name)

    return patched


# --- §2: odd paths, on every flag that takes one ---------------------------------------------------

LONG = "n" * 300
#: a bad path of each kind, as a function of the folder and the file's suffix; the cause the error names
BAD_PATHS = {
    "a name over 255 bytes": (lambda d, sfx: f"{d}/{LONG}{sfx}", r"too long"),
    "a folder name over 255 bytes": (lambda d, sfx: f"{d}/{LONG}/x{sfx}", r"too long"),
    "a file where a folder should be": (
        lambda d, sfx: f"{d}/afile/x{sfx}",
        r"should be a folder is a file|afile does not exist|afile is not a folder|file not found",
    ),
    "a symlink loop": (lambda d, sfx: f"{d}/loop{sfx}", r"symbolic links"),
    "a symlink loop on the way": (lambda d, sfx: f"{d}/loop/x{sfx}", r"symbolic links"),
}
#: every flag that takes a path: (the command given the path, the file suffix it expects, where the command runs)
FLAGS = {
    "run --trace": (lambda p: ["run", "gemm-composite", "--trace", p], ".kbtrace"),
    "run --perfetto": (lambda p: ["run", "gemm-composite", "--perfetto", p], ".json"),
    "run --topology": (lambda p: ["run", "gemm-composite", "--topology", p], ".yaml"),
    "sweep --out": (lambda p: [*SWEEP, "--grid", "m=64", "--out", p], ".csv"),
    "sweep --grid topology=": (lambda p: [*SWEEP, "--grid", f"topology={p}"], ".yaml"),
    "bench --goldens": (lambda p: ["bench", "--goldens", p], ".json"),
    "bench --regen --goldens": (lambda p: ["bench", "--regen", "--goldens", p], ".json"),
    "topo show": (lambda p: ["topo", "show", p], ".yaml"),
    "compare (a trace side)": (lambda p: ["compare", p, "gemm-composite"], ".kbtrace"),
    "sweep --cache-dir": (lambda p: [*SWEEP[:-1], "--grid", "m=64", "--cache-dir", p], ""),
    "new kernel --out": (lambda p: ["new", "kernel", "mine", "--out", p], ".py"),
}


@pytest.mark.parametrize("kind", sorted(BAD_PATHS))
@pytest.mark.parametrize("flag", sorted(FLAGS))
def test_an_odd_path_on_any_flag_is_one_line_naming_it(folder, no_simulation, monkeypatch, capsys, flag, kind):
    from kernbench.commands import bench

    monkeypatch.setattr(bench, "run_benches", lambda mode="fast": pytest.fail("the benches ran before --goldens was checked"))
    make, cause = BAD_PATHS[kind]
    command, suffix = FLAGS[flag]
    path = make(folder, suffix)
    before = (folder, snapshot_files(folder))
    got = invoke(cli.main, command(path), capsys)
    assert_failed_cleanly(got, 2, cause, before=before, max_seconds=10, max_mib=100)
    assert got.out == ""
    assert path[-40:] in got.err or "loop" in got.err, got.err  # it names the path


@pytest.mark.parametrize("kind", sorted(BAD_PATHS))
def test_the_debugger_refuses_an_odd_trace_path_in_one_line(folder, capsys, kind):
    make, cause = BAD_PATHS[kind]
    launched: list[object] = []
    got = invoke(lambda argv: tui_cli.main(argv, launch=launched.append), ["open", make(folder, ".kbtrace")], capsys)
    assert_failed_cleanly(got, 2, cause, max_seconds=5)
    assert launched == []


@pytest.mark.parametrize("what", ["topology", "trace"])
def test_a_fifo_named_as_an_input_does_not_block(folder, what):
    fifo = folder / f"pipe.{'yaml' if what == 'topology' else 'kbtrace'}"
    os.mkfifo(fifo)
    argv = ["run", "gemm-composite", "--topology", fifo.name] if what == "topology" else ["compare", fifo.name, fifo.name]
    got = spawn(
        "kernbench.cli", argv, cwd=folder, env=child_env(), timeout_s=HANG_BOUND_S
    )  # (in a child: a hang is killed; its cost is the CPU bound)
    assert_failed_cleanly(got, 2, r"not a regular file", max_seconds=15, max_mib=400)


@pytest.fixture
def locked(tmp_path):
    """A folder this test's commands may not search (as root: without the capabilities that override it)."""
    inner = tmp_path / "locked"
    inner.mkdir()
    (inner / "topo.yaml").write_text(TOPOLOGY)
    (inner / "old.kbtrace").write_bytes(b"an old trace")
    os.chmod(inner, 0)
    preexec = without_permission_override if os.geteuid() == 0 else None
    if subprocess.run(["true"], preexec_fn=preexec, check=False).returncode != 0:  # pragma: no cover
        pytest.skip("cannot drop the permission-override capabilities here")
    yield tmp_path, preexec
    os.chmod(inner, stat.S_IRWXU)


LOCKED = {
    "run --trace": ["run", "gemm-composite", "--trace", "locked/old.kbtrace"],
    "run --perfetto": ["run", "gemm-composite", "--perfetto", "locked/new.json"],
    "run --topology": ["run", "gemm-composite", "--topology", "locked/topo.yaml"],
    "sweep --out": [*SWEEP, "--grid", "m=64", "--out", "locked/x.csv"],
    "bench --goldens": ["bench", "--goldens", "locked/g.json"],
    "compare": ["compare", "locked/old.kbtrace", "gemm-composite"],
    "sweep --grid topology=": [*SWEEP, "--grid", "topology=locked/topo.yaml"],
    "sweep --cache-dir": [*SWEEP[:-1], "--grid", "m=64", "--cache-dir", "locked/cache"],
    "topo show": ["topo", "show", "locked/topo.yaml"],
    "bench --regen --goldens": ["bench", "--regen", "--goldens", "locked/g.json"],
    "new kernel --out": ["new", "kernel", "mine", "--out", "locked/mine.py"],
}


@pytest.mark.parametrize("flag", sorted(LOCKED))
def test_a_folder_without_search_permission_is_one_line(locked, flag):
    top, preexec = locked
    before = snapshot_files(top)
    got = spawn("kernbench.cli", LOCKED[flag], cwd=top, env=child_env(), preexec_fn=preexec, timeout_s=HANG_BOUND_S)
    assert_failed_cleanly(got, 2, r"locked/\S+: .*permission denied", max_seconds=30, max_mib=400)
    assert got.err.count("\n") <= 2  # (a topology's error is its file's line and its problem's)
    assert snapshot_files(top) == before


# --- §2: a standard output that takes fewer bytes than it is given ---------------------------------

PRINTING = {
    "topo show": ["topo", "show", "cube1"],
    "topo show --json": ["topo", "show", "cube1", "--json"],
    "topo list": ["topo", "list"],
    "run --list": ["run", "--list"],
    "run": ["run", "gemm-composite"],
    "run --json": ["run", "gemm-composite", "--json"],
    "run --explain": ["run", "gemm-composite", "--explain"],
    "sweep": [*SWEEP, "--grid", "m=64,128"],
    "compare": ["compare", "gemm-composite", "gemm-primitive"],
}


@pytest.mark.parametrize("case", sorted(PRINTING))
def test_a_full_disk_on_stdout_is_one_line_and_exit_2(tmp_path, case):
    with open("/dev/full", "wb") as full:
        got = spawn("kernbench.cli", PRINTING[case], cwd=tmp_path, env=child_env(), stdout=full)
    assert_failed_cleanly(got, 2, r"error: cannot write to standard output: No space left on device", max_mib=400)
    assert got.err.count("\n") == 1


@pytest.mark.parametrize("case", sorted(PRINTING))
def test_a_short_write_to_stdout_is_an_error_not_a_silent_cut(tmp_path, case):
    """Under ``ulimit -f`` the file takes part of the output: the command says so and exits 2."""
    out = tmp_path / "out.txt"
    with open(out, "wb") as f:
        got = spawn("kernbench.cli", PRINTING[case], cwd=tmp_path, env=child_env(), stdout=f, file_size_bytes=300)
    assert_failed_cleanly(got, 2, r"error: cannot write to standard output: File too large; what was printed is incomplete", max_mib=400)
    assert out.stat().st_size == 300


def test_the_probe_table_on_a_full_disk_is_one_line(tmp_path):
    with open("/dev/full", "wb") as full:
        got = spawn("kernbench_tui.cli", ["probe", "--topology", "cube1"], cwd=tmp_path, env=child_env(), stdout=full)
    assert_failed_cleanly(got, 2, r"cannot write to standard output", max_mib=400)


def test_stdout_that_takes_everything_is_complete(tmp_path):
    """The same commands, unhindered: what they print is whole and ends as before (status 0)."""
    out = tmp_path / "out.txt"
    with open(out, "wb") as f:
        got = spawn("kernbench.cli", PRINTING["topo show"], cwd=tmp_path, env=child_env(), stdout=f)
    assert got.status == 0 and got.err == ""
    assert out.read_text().startswith("topology cube1") and out.read_text().endswith("\n")
