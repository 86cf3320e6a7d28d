"""Progress on stderr: Runtime.run's hook reports simulated time and commands without changing the result;
`kernbench run` and `kernbench sweep` draw it only on a terminal, and clear it when done."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time

import pytest
from sweep_harness import GEMM

from kernbench import cli, progress
from kernbench.kernels import registry
from kernbench.runtime import loop
from kernbench.runtime.api import Runtime


def gqa_runtime():
    spec = registry.get("gqa-decode")
    rt = Runtime("cube1")
    spec.prepare(rt, dict(spec.defaults(), heads=16, kv_heads=2, context=2048))
    return rt


def test_the_hook_reports_growing_time_and_commands_and_changes_nothing(monkeypatch):
    plain = gqa_runtime().run()
    monkeypatch.setattr(loop, "PROGRESS_EVERY_S", 0.0)
    calls = []
    ticked = gqa_runtime().run(progress=lambda t_ns, commands: calls.append((t_ns, commands)))
    assert ticked.latency_ns == plain.latency_ns and ticked.commands == plain.commands
    assert ticked.engine_busy_ns == plain.engine_busy_ns
    assert len(calls) >= 2
    assert calls == sorted(calls) and calls[-1][0] <= plain.latency_ns and calls[-1][1] <= plain.total_commands


def test_the_hook_is_called_at_most_every_fifth_of_a_second():
    calls = []
    rt = gqa_runtime()
    t0 = time.monotonic()
    rt.run(progress=lambda t_ns, commands: calls.append(t_ns))
    assert len(calls) <= (time.monotonic() - t0) / loop.PROGRESS_EVERY_S


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_long_run_on_a_terminal_shows_time_and_commands_then_clears(monkeypatch, capsys):
    monkeypatch.setattr(loop, "PROGRESS_EVERY_S", 0.0)
    monkeypatch.setattr(progress, "SHOW_RUN_AFTER_S", 0.0)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    status = cli.main(["run", "gqa-decode", "--topology", "cube1", "--heads", "16", "--kv-heads", "2", "--context", "2048"])
    assert status == 0
    drawn = terminal.getvalue()
    assert "gqa-decode · simulated t=" in drawn and " commands · " in drawn
    assert drawn.endswith("\x1b[1A\x1b[2K")  # the line is erased at the end
    assert "latency" in capsys.readouterr().out


def test_json_output_and_short_runs_show_nothing(monkeypatch, capsys):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    cli.main(["run", "gemm-primitive", "--m", "64", "--n", "64"])  # far under a second
    monkeypatch.setattr(loop, "PROGRESS_EVERY_S", 0.0)
    monkeypatch.setattr(progress, "SHOW_RUN_AFTER_S", 0.0)
    cli.main(["run", "gemm-primitive", "--m", "64", "--n", "64", "--json"])
    assert terminal.getvalue() == ""


def test_a_sweep_on_a_terminal_shows_a_bar_with_eta(monkeypatch, capsys):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    status = cli.main([*GEMM, "--grid", "k=128,256", "--jobs", "1", "--no-cache"])
    assert status == 0
    drawn = terminal.getvalue()
    assert "sweep gemm-primitive" in drawn and "2/2" in drawn and "eta" in drawn


def test_a_piped_long_run_prints_nothing_on_stderr(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from kernbench import cli, progress; progress.SHOW_RUN_AFTER_S = 0;"
            "sys.exit(cli.main(['run', 'gqa-decode', '--topology', 'cube1', '--heads', '16', '--kv-heads', '2', '--context', '4096']))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0 and done.stderr == "" and "latency" in done.stdout


def test_compare_on_a_terminal_says_how_far_each_side_has_got_then_clears(monkeypatch, capsys):
    from kernbench.commands import compare
    from kernbench.sweep import executors

    monkeypatch.setattr(executors, "usable_cpus", lambda: 1)  # both sides here, one after the other
    monkeypatch.setattr(loop, "PROGRESS_EVERY_S", 0.0)
    monkeypatch.setattr(progress, "SHOW_RUN_AFTER_S", 0.0)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    a, b = "gemm-primitive --m 64 --n 64", "gemm-primitive --m 64 --n 64 --k 1024"
    assert cli.main(["compare", a, b]) == 0
    assert "latency ns" in capsys.readouterr().out
    reached = list(compare._reached)
    runs = [cli_run(capsys, side) for side in (a, b)]
    for i, run in enumerate(runs):  # each side's last report: where its run ended
        assert reached[2 * i] == pytest.approx(run["latency_ns"], abs=1e-6) and reached[2 * i + 1] == run["commands"]
    assert reached[3] > reached[1]  # B, twice the K, issued more
    drawn = terminal.getvalue()
    assert "compare · A " in drawn and drawn.endswith("\x1b[1A\x1b[2K")


def cli_run(capsys, side):
    assert cli.main(["run", *side.split(), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_compare_line_shows_each_running_sides_time_and_commands(monkeypatch):
    monkeypatch.setattr(progress, "SHOW_RUN_AFTER_S", 0.0)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    so_far = {"A": (1234.5, 4321), "B": (0.0, 0)}
    with progress.compare_progress(["A", "B"], True, so_far.__getitem__) as done:
        time.sleep(0.7)  # (rich redraws twice a second)
        done("B")
        time.sleep(0.7)
    drawn = terminal.getvalue()
    assert "compare · A t=1,234.5 ns, 4,321 commands, " in drawn and "B starting, " in drawn and " · B done " in drawn


def test_compare_sides_in_two_processes_report_into_the_parents_progress(monkeypatch, capsys):
    from kernbench.commands import compare
    from kernbench.sweep import executors

    if executors.usable_cpus() < 2:
        pytest.skip("the two sides run in two processes only when two CPUs are free")
    monkeypatch.setattr(sys, "stderr", Terminal())  # (the progress is kept only for a terminal to show)
    side = "gqa-decode --topology cube1 --heads 16 --kv-heads 2 --context 512"
    assert cli.main(["compare", side, side + " --variant opt3", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    reached = list(compare._reached)  # written by the two side processes into memory shared with this one
    for i, rec in enumerate((doc["a"], doc["b"])):  # each side's last report: where its run ended
        assert reached[2 * i] == pytest.approx(rec["latency_ns"], abs=1e-6) and reached[2 * i + 1] == rec["commands"]


def test_compare_runs_and_reports_when_the_os_gives_no_shared_memory(monkeypatch, capsys):
    import multiprocessing.context

    from kernbench.sweep import executors

    def refuse(*args, **kwargs):
        raise OSError(27, "File too large")  # what ulimit -f does to the shared memory's file

    monkeypatch.setattr(multiprocessing.context.SpawnContext, "Array", refuse)
    monkeypatch.setattr(executors, "usable_cpus", lambda: 1)
    monkeypatch.setattr(progress, "SHOW_RUN_AFTER_S", 0.0)
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert cli.main(["compare", "gemm-primitive --m 64 --n 64", "gemm-primitive --m 64 --n 64 --k 1024"]) == 0
    assert "latency ns" in capsys.readouterr().out and "compare · A " in sys.stderr.getvalue()
