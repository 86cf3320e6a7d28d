"""§1: an output is written whole or not at all, and a bad output path fails before any simulation."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from hardening_harness import assert_failed_cleanly, child_env, duration_of, invoke, snapshot_files, spawn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernbench import cli
from kernbench.errors import OutputPathError
from kernbench.outputs import check_outputs, write_atomic
from kernbench.runtime.api import Runtime

OLD = {"old.kbtrace": b"KBTRACE\x00 an older trace that must survive", "old.json": b'{"traceEvents": []}'}

# (how the paths are made, the flag blamed, the cause named)
BAD_PATHS = {
    "trace is a directory": (lambda d: ["--trace", str(d / "adir")], r"--trace .*adir: is a directory"),
    "perfetto is a directory": (lambda d: ["--perfetto", str(d)], r"--perfetto .*: is a directory"),
    "missing folder": (lambda d: ["--trace", str(d / "nope" / "x.kbtrace")], r"folder .*nope does not exist"),
    "two outputs, one file": (
        lambda d: ["--trace", str(d / "old.kbtrace"), "--perfetto", str(d / "old.kbtrace")],
        r"the same file as --trace",
    ),
    "same file by another spelling": (
        lambda d: ["--trace", str(d / "old.json"), "--perfetto", str(d / "." / "old.json")],
        r"the same file as",
    ),
    "not a regular file": (lambda d: ["--perfetto", "/dev/null"], r"not a regular file"),
    "output is the topology": (lambda d: ["--topology", str(d / "topo.yaml"), "--trace", str(d / "topo.yaml")], r"an input of this run"),
    "empty name": (lambda d: ["--trace", ""], r"not a file name"),
}


@pytest.fixture
def folder(tmp_path):
    for name, data in OLD.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "adir").mkdir()
    (tmp_path / "topo.yaml").write_text((Path(__file__).resolve().parents[2] / "topologies" / "cube1.yaml").read_text())
    return tmp_path


@pytest.fixture
def no_simulation(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the simulation ran before the output paths were checked")

    monkeypatch.setattr(Runtime, "run", refuse)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(sorted(BAD_PATHS)), kernel=st.sampled_from(["gemm-composite", "gemm-primitive"]), json_flag=st.booleans())
def test_a_bad_output_path_fails_before_simulating_and_touches_nothing(folder, no_simulation, capsys, case, kernel, json_flag):
    make, cause = BAD_PATHS[case]
    before = (folder, snapshot_files(folder))
    got = invoke(cli.main, ["run", kernel, *make(folder), *(["--json"] if json_flag else [])], capsys)
    assert_failed_cleanly(got, 2, cause, before=before, max_seconds=5, max_mib=50)
    assert got.out == ""


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 5000), interrupt=st.sampled_from([KeyboardInterrupt, OSError]))
def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary(tmp_path, cut, interrupt):
    target = tmp_path / "out.json"
    target.write_bytes(b"the old, complete file")

    def writer(f):
        f.write(b"x" * cut)
        raise interrupt(28, "No space left on device") if interrupt is OSError else interrupt()

    with pytest.raises((KeyboardInterrupt, OutputPathError)) as info:
        write_atomic(target, writer)
    if interrupt is OSError:
        assert "No space left" in str(info.value) and "left as it was" in str(info.value)
    assert snapshot_files(tmp_path) == {"out.json": b"the old, complete file"}


def test_check_outputs_accepts_new_and_existing_files(tmp_path):
    (tmp_path / "a.json").write_text("{}")
    check_outputs([("--trace", tmp_path / "new.kbtrace"), ("--perfetto", tmp_path / "a.json"), ("--x", None)])


@pytest.mark.parametrize("flag, name", [("--perfetto", "old.json"), ("--trace", "old.kbtrace")])
@pytest.mark.parametrize("limit", [0, 4096])
def test_a_write_past_ulimit_f_fails_cleanly_and_keeps_the_old_file(folder, flag, name, limit):
    before = (folder, snapshot_files(folder))
    got = spawn("kernbench.cli", ["run", "gemm-composite", flag, name], cwd=folder, env=child_env(), file_size_bytes=limit)
    assert_failed_cleanly(got, 2, rf"cannot write {name}: File too large; {name} was left as it was", before=before, max_mib=600)


@pytest.mark.parametrize("flag, name", [("--perfetto", "old.json"), ("--trace", "old.kbtrace")])
def test_a_failed_run_whose_partial_cannot_be_written_still_says_why_it_failed(folder, flag, name):
    """The run's own error first, then that its recorded events were not saved (under ulimit -f the
    .partial write's error was all it printed)."""
    before = (folder, snapshot_files(folder))
    argv = ["run", "gemm-primitive", "--max-commands-per-pe", "2", flag, name]
    got = spawn("kernbench.cli", argv, cwd=folder, env=child_env(), file_size_bytes=0)
    partial = name.replace(".", ".partial.")
    cause = rf"^error: .*issued 2 commands, the limit per PE.*events recorded up to the failure were not saved: cannot write {partial}: File too large"
    assert_failed_cleanly(got, 2, cause, before=before, max_mib=600)
    assert not (folder / partial).exists()


RUN_WITH_EXPORT = ["run", "gqa-decode", "--topology", "cube1", "--context", "16384", "--perfetto", "old.json"]


@pytest.mark.parametrize("signum, status, fraction", [(signal.SIGINT, 130, 0.3), (signal.SIGINT, 130, 0.85), (signal.SIGTERM, 143, 0.6)])
def test_a_signal_at_any_moment_leaves_either_the_old_file_or_a_complete_new_one(folder, signum, status, fraction):
    """Early, mid-simulation, or while the ~10 MB export is written (moments as fractions of a measured run)."""
    delay_s = fraction * duration_of("kernbench.cli", RUN_WITH_EXPORT, folder)
    (folder / "old.json").write_bytes(OLD["old.json"])

    def interrupt(proc):
        time.sleep(delay_s)
        try:
            os.kill(proc.pid, signum)
        except ProcessLookupError:  # it finished sooner than measured (a shared machine): the new file must be complete
            pass

    got = spawn("kernbench.cli", RUN_WITH_EXPORT, cwd=folder, env=child_env(), on_start=interrupt)
    assert "Traceback" not in got.err
    data = (folder / "old.json").read_bytes()
    if data != OLD["old.json"]:  # the command had finished (the signal came as it exited): complete
        assert json.loads(data)["traceEvents"] and got.status in (0, status, -signum)
    else:
        assert got.status == status, (got.status, got.err)
        assert got.err.count("\n") == 1 and "interrupted" in got.err
    assert not [p for p in folder.iterdir() if p.name.endswith(".part")]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fail_at=st.integers(0, 2), interrupt=st.sampled_from([KeyboardInterrupt, OSError]))
def test_several_outputs_of_one_command_are_written_all_or_none(tmp_path, fail_at, interrupt):
    from kernbench.outputs import write_all_atomic

    names = ["a.kbtrace", "b.json", "c.json"]
    for name in names:
        (tmp_path / name).write_bytes(b"old " + name.encode())

    def writer(i):
        def write(f):
            f.write(b"new")
            if i == fail_at:
                raise interrupt(5, "Input/output error") if interrupt is OSError else interrupt()

        return write

    with pytest.raises((KeyboardInterrupt, OutputPathError)):
        write_all_atomic([(tmp_path / n, writer(i)) for i, n in enumerate(names)])
    assert snapshot_files(tmp_path) == {n: b"old " + n.encode() for n in names}
    write_all_atomic([(tmp_path / n, lambda f: f.write(b"new")) for n in names])
    assert snapshot_files(tmp_path) == {n: b"new" for n in names}


# One bad input of each class, given together with outputs that already exist: they must survive.
BAD_INPUT_OF_EACH_CLASS = {
    "§2 non-finite value": (["gemm-composite", "--set", "pe.attrs.cpu_overhead_ns=.inf"], r"must be a finite number"),
    "§2 emptied section": (["gemm-composite", "--set", "system=null"], r"system: expected a mapping, got null"),
    "§3 hostile topology": (["gemm-composite", "--topology", "/dev/zero"], r"not a regular file"),
    "§3 huge machine": (["gemm-composite", "--set", "sip.mesh.width=64", "--set", "sip.mesh.height=64"], r"the limit is 25,000 nodes"),
    "§4 option out of range": (["gqa-decode", "--heads", "0"], r"--heads 0: must be in 1\.\.4096"),
    "§4 unknown kernel": (["GEMM"], r"did you mean 'gemm-composite' or 'gemm-primitive'"),
    "§5 run limit": (["gemm-primitive", "--max-commands-per-pe", "2"], r"issued 2 commands, the limit per PE"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUT_OF_EACH_CLASS))
def test_outputs_that_exist_survive_every_kind_of_bad_input(folder, capsys, case):
    argv, cause = BAD_INPUT_OF_EACH_CLASS[case]
    before = (folder, snapshot_files(folder))
    got = invoke(cli.main, ["run", *argv, "--trace", str(folder / "old.kbtrace"), "--perfetto", str(folder / "old.json")], capsys)
    assert_failed_cleanly(got, 2, cause, before=before, max_seconds=10, max_mib=200)
