"""`kernbench-tui` argument handling (the app itself is not launched here)."""

import sys
import types

import pytest

from kernbench.events.store import EventStore
from kernbench.events.tracefile import save_trace
from kernbench_tui import cli
from kernbench_tui.app import RunOutputs
from kernbench_tui.child_run import ProcessSource
from kernbench_tui.sources import TraceFileSource


def capture():
    launched = []

    def launch(source):
        launched.append(source)
        return 0

    return launched, launch


def test_open_launches_on_the_trace_file(tmp_path):
    path = tmp_path / "r.kbtrace"
    save_trace(path, EventStore())
    launched, launch = capture()
    assert cli.main(["open", str(path)], launch=launch) == 0
    assert isinstance(launched[0], TraceFileSource) and launched[0].path == str(path)


def test_open_of_a_missing_file_is_a_clear_error(tmp_path, capsys):
    launched, launch = capture()
    assert cli.main(["open", str(tmp_path / "nope.kbtrace")], launch=launch) == 2
    assert "no such trace file" in capsys.readouterr().err
    assert launched == []


def test_run_simulates_through_the_tui_simulation_hook_in_a_child_process():
    launched, launch = capture()
    assert cli.main(["run", "gemm-primitive", "--m", "64"], launch=launch) == 0
    source = launched[0].source
    assert isinstance(source, ProcessSource) and launched[0].outputs == RunOutputs()
    assert (source.target, source.args) == ("kernbench.cli:tui_simulation", (["gemm-primitive", "--m", "64"],))


def test_run_without_the_simulator_hook_says_what_is_missing(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "kernbench.cli", types.ModuleType("kernbench.cli"))
    _launched, launch = capture()
    assert cli.main(["run", "gemm"], launch=launch) == 2
    assert "tui_simulation is not available" in capsys.readouterr().err


def test_no_arguments_runs_default_gqa_decode_or_falls_back_to_the_demo(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "kernbench.cli", types.ModuleType("kernbench.cli"))
    launched, launch = capture()
    assert cli.main([], launch=launch) == 0
    assert launched[0].description == "demo"
    assert "synthetic demo instead" in capsys.readouterr().err


def test_probe_delegates_to_probes_dma(monkeypatch):
    seen = []
    fake = types.ModuleType("kernbench_probes.dma")
    fake.main = lambda argv: seen.append(argv) or 0
    monkeypatch.setitem(sys.modules, "kernbench_probes.dma", fake)
    import kernbench_probes

    monkeypatch.setattr(kernbench_probes, "dma", fake, raising=False)
    assert cli.main(["probe", "--topology", "small"]) == 0
    assert seen == [["--topology", "small"]]


BAD_RUNS = [
    (["run", "gemm-nope"], "error: unknown kernel 'gemm-nope'"),
    (["run", "gemm-primitive", "--m", "x"], "error: kernbench-tui run gemm-primitive: argument --m: invalid int value: 'x'"),
    (["run", "gemm-primitive", "--mm", "64"], "error: kernbench-tui run gemm-primitive: --mm is not an option of gemm-primitive"),
    (["run", "gemm-composite", "--layout", "naive", "--tile-k", "64"], "error: gemm-composite: --tile-k does nothing with --layout naive"),
    (["run", "gemm-primitive", "--json"], "error: kernbench-tui run: --json prints a run record for scripts, not a view"),
    (["demo", "--pes", "0"], "error: kernbench-tui demo: argument --pes: must be in 1..256, got 0"),
    (["compare", "gemm-primitive"], "error: kernbench-tui compare: the following arguments are required: b"),
]


@pytest.mark.parametrize("argv, says", BAD_RUNS, ids=[" ".join(a) for a, _s in BAD_RUNS])
def test_a_mistake_is_one_error_line_naming_it_also_where_the_app_could_not_draw(capsys, argv, says):
    assert cli.main(argv) == 2  # the real launcher: stdout is captured here, not a terminal
    err = capsys.readouterr().err
    assert err.startswith(says) and err.count("\n") == 1 and "usage:" not in err


def test_run_kernel_help_lists_the_kernels_options_under_this_command_anywhere(capsys):
    with pytest.raises(SystemExit) as end:
        cli.main(["run", "gemm-composite", "--help"])
    out = capsys.readouterr().out
    assert end.value.code == 0 and out.startswith("usage: kernbench-tui run gemm-composite ")
    assert "default topology: cube1" in out and "--tile-k N" in out
