"""A saved trace says how its run was made: the arguments it gives back make the very same run, event for
event (kernbench.commands.rerun: what the debugger's what-if prompt reruns for a saved trace's command log)."""

from __future__ import annotations

import shutil

import pytest

from kernbench.cli import main as kernbench_main
from kernbench.commands.rerun import NotRerunnable, difference, rerun_argv, rerun_base, topology_changed, tui_rerun
from kernbench.events.store import EventStore
from kernbench.events.tracefile import TraceMetadata, open_trace, save_trace
from kernbench.events.types import Event, EventKind
from kernbench.topology.spec import topology_dir


def saved(tmp_path, argv, name="run.kbtrace"):
    """``kernbench run ARGV --trace`` (quiet), the trace it saved."""
    path = tmp_path / name
    assert kernbench_main(["run", *argv, "--trace", str(path), "--json"]) == 0
    return open_trace(path)


def same_run_again(tmp_path, trace):
    """The trace's run made again from the arguments its metadata gives back."""
    argv = rerun_argv(trace.metadata)
    again = saved(tmp_path, argv, "again.kbtrace")
    return argv, again


@pytest.mark.parametrize(
    "argv",
    [
        ["rmsnorm"],  # a shipped kernel on its default topology, every option its default
        ["gemm-composite", "--layout", "naive", "--set", "pe.attrs.tcm_bw_gbps=256.5", "--no-data"],  # --tile-k is not given back
        ["gqa-decode", "--topology", "cube1", "--context", "512", "--heads", "16", "--kv-heads", "2", "--variant", "opt3"],
    ],
)
def test_the_arguments_a_trace_gives_back_make_the_same_run_event_for_event(tmp_path, capsys, argv):
    trace = saved(tmp_path, argv)
    capsys.readouterr()
    rerun, again = same_run_again(tmp_path, trace)
    assert difference(trace.store, again.store) is None
    assert again.metadata.extra["params"] == trace.metadata.extra["params"]
    assert again.metadata.extra["overrides"] == trace.metadata.extra["overrides"]
    assert ("--no-data" in rerun) == ("--no-data" in argv) and "--tile-k" not in rerun


def test_a_topology_file_is_given_back_by_its_absolute_path_and_a_change_to_it_is_named(tmp_path, monkeypatch):
    mine = tmp_path / "mine.yaml"
    shutil.copy(topology_dir() / "cube1.yaml", mine)
    monkeypatch.chdir(tmp_path)
    trace = saved(tmp_path, ["rmsnorm", "--topology", "mine.yaml", "--set", "pe.attrs.math_elems_per_cycle=16"])
    assert trace.metadata.extra["topology_file"] == str(mine.resolve())
    monkeypatch.chdir(topology_dir())  # (opened from elsewhere)
    argv = rerun_argv(trace.metadata)
    assert argv[argv.index("--topology") + 1] == str(mine.resolve())
    assert topology_changed(trace.metadata, argv) is None
    mine.write_text(mine.read_text().replace("cpu_overhead_ns: 2", "cpu_overhead_ns: 3"))
    assert (
        topology_changed(trace.metadata, argv)
        == f"the topology {mine.resolve()} has changed since the trace was saved (its digest differs)"
    )


def test_a_named_topology_is_given_back_by_its_name(tmp_path):
    trace = saved(tmp_path, ["rmsnorm", "--topology", "cube1"])
    assert "topology_file" not in trace.metadata.extra and trace.metadata.extra["fidelity"] == "paper"
    argv = rerun_argv(trace.metadata)
    assert argv[argv.index("--topology") + 1] == "cube1"


def test_a_kernel_file_is_given_back_by_its_path_and_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert kernbench_main(["new", "kernel", "mine"]) == 0
    trace = saved(tmp_path, [str(tmp_path / "mine.py"), "--tile", "512"])
    argv = rerun_argv(trace.metadata)
    assert argv[0] == f"{tmp_path / 'mine.py'}:mine" and argv[argv.index("--tile") + 1] == "512"
    _, again = same_run_again(tmp_path, trace)
    assert difference(trace.store, again.store) is None


@pytest.mark.parametrize(
    "extra, says",
    [
        ({"partial": True, "params": {}}, "it is a failed run's trace"),
        ({"what_if": ["pe.attrs.tcm_bw_gbps=1"], "params": {}}, "it is a what-if's re-timing, not a run"),
        ({}, "its metadata does not say which kernel ran with which options"),
        ({"params": {"no_such_option": 1}}, "rmsnorm no longer has the option no_such_option"),
        ({"params": {}, "kernel_file": "/nowhere/gone.py"}, "its kernel cannot be loaded again"),
        ({"params": {"rows": 0}}, "its run cannot be made again as it was"),
        ({"params": {}, "overrides": "pe=1"}, "its metadata is malformed: overrides is str, not dict"),
        ({"params": {}, "timing": ["fast"]}, "its metadata is malformed: timing is list, not str"),
        ({"params": {}, "kernel_file": 3}, "its metadata is malformed: kernel_file is int, not str"),
        ({"params": {}, "limits": {"max_sim_ns": -1}}, "its metadata is malformed: limits.max_sim_ns = -1"),
        ({"params": {}, "limits": {"max_threads": 4}}, "its metadata is malformed: limits.max_threads = 4"),
    ],
)
def test_what_cannot_be_run_again_says_why(extra, says):
    meta = TraceMetadata(kernel="rmsnorm", topology="paper", end_ns=1.0, extra=extra)
    with pytest.raises(NotRerunnable, match=says):
        rerun_argv(meta)


def event(t, label="a", kind=EventKind.DISPATCH):
    return Event(t, kind, "sip0.cube0.pe0.cpu", t + 1.0, 1, label, 0.0, "", 0)


def test_difference_names_the_first_event_that_differs_and_compares_names_as_text():
    a = EventStore.from_events([event(0.0), event(1.0, "b")])
    assert difference(a, EventStore.from_events([event(0.0), event(1.0, "b")])) is None
    # the same events with the string table in another order (a store built from batches): still the same
    b = EventStore.from_events([event(1.0, "b"), event(0.0)])
    assert difference(a, b) is None
    assert difference(a, EventStore.from_events([event(0.0), event(1.0, "c")])) == (
        "event 1 differs: the trace's is DISPATCH on sip0.cube0.pe0.cpu at 1.000 ns (b), the rerun's DISPATCH on sip0.cube0.pe0.cpu at 1.000 ns (c)"
    )
    assert difference(a, EventStore.from_events([event(0.0)])) == (
        "the rerun has 1 event ending at 1.000 ns, the trace 2 events ending at 2.000 ns"
    )


def test_a_trace_from_python_has_no_rerun(tmp_path):
    path = tmp_path / "bare.kbtrace"
    save_trace(path, EventStore.from_events([event(0.0)]))
    with pytest.raises(NotRerunnable, match="does not say which kernel ran"):
        rerun_argv(open_trace(path).metadata)


def test_what_a_trace_would_run_is_read_without_loading_its_kernel_and_the_child_loads_it():
    meta = TraceMetadata(kernel="gone", topology="paper", end_ns=1.0, extra={"params": {}, "kernel_file": "/nowhere/gone.py"})
    assert rerun_base(meta) == ["/nowhere/gone.py:gone", "--topology", "paper", "--timing", "fast"]
    with pytest.raises(NotRerunnable, match="its kernel cannot be loaded again"):
        tui_rerun(meta)  # (what the debugger's child calls)


def test_a_topology_that_no_longer_reads_is_named_as_changed(tmp_path):
    meta = TraceMetadata(kernel="rmsnorm", topology="paper", end_ns=1.0, extra={"params": {}, "topology_digest": "0" * 64})
    for path in ("/dev/zero", str(tmp_path / "gone.yaml")):
        meta.extra["topology_file"] = path
        said = topology_changed(meta, rerun_base(meta))
        assert said is not None and said.startswith("its topology cannot be read as it was: ")


def test_a_rerun_runs_under_the_limits_the_run_ran_under(tmp_path):
    trace = saved(tmp_path, ["rmsnorm", "--max-commands-per-pe", "5000", "--max-sim-ns", "0", "--max-wall-s", "60"])
    assert trace.metadata.extra["limits"] == {"max_commands_per_pe": 5000, "max_sim_ns": None, "max_wall_s": 60.0}
    argv = rerun_argv(trace.metadata)
    assert argv[argv.index("--max-commands-per-pe") + 1] == "5000" and argv[argv.index("--max-sim-ns") + 1] == "0"
    assert argv[argv.index("--max-wall-s") + 1] == "60.0"
