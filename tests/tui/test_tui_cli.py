"""`kernbench-tui` argument handling (the app itself is not launched here)."""

import sys
import types

from kernbench.events.store import EventStore
from kernbench.events.tracefile import save_trace
from kernbench_tui import cli
from kernbench_tui.app import RunOutputs
from kernbench_tui.sources import ProcessSource, TraceFileSource


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
