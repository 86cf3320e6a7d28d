"""§11: what a new user meets in the first minutes — versions, pipes, JSON everywhere, goldens from any
folder, a debugger that says what it is preparing, one definition of utilization, help and quit in view."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hardening_harness import child_env, invoke

from kernbench import __version__, cli
from kernbench.commands import bench
from kernbench.events.tracefile import TraceMetadata
from kernbench_tui import cli as tui_cli
from kernbench_tui.app import KernbenchApp
from kernbench_tui.demo import DemoParams, demo_events

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))
from tui_harness import screen_text, settle


@pytest.mark.parametrize("main, name", [(cli.main, "kernbench"), (tui_cli.main, "kernbench-tui")])
def test_both_commands_print_their_version(capsys, main, name):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"{name} {__version__}"


PIPED = [
    ["kernbench.cli", "run", "gemm-composite"],
    ["kernbench.cli", "run", "gemm-composite", "--json"],
    ["kernbench.cli", "topo", "show", "paper"],
    ["kernbench.cli", "run", "--list"],
    ["kernbench_tui.cli", "probe", "--topology", "cube1"],
]


@pytest.mark.parametrize("argv", PIPED, ids=lambda a: " ".join(a[1:]))
@pytest.mark.parametrize("attempt", range(3))
def test_a_reader_that_stops_after_one_line_ends_the_command_quietly(tmp_path, argv, attempt):
    proc = subprocess.Popen([sys.executable, "-m", *argv], cwd=tmp_path, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 0, err
    assert first and err == ""


def test_bench_check_works_from_any_folder(tmp_path):
    assert bench.GOLDENS.is_file() and bench.GOLDENS.parent == Path(bench.__file__).parent
    proc = subprocess.run(
        [sys.executable, "-m", "kernbench.cli", "bench", "--check", "--json"],
        cwd=tmp_path,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr  # 2 would be "no goldens to check against"
    doc = json.loads(proc.stdout)
    assert Path(doc["goldens"]) == bench.GOLDENS and "gemm-composite" in doc["latency_ns"]
    # whether every latency still matches exactly is test_bench.py's question


@pytest.mark.parametrize(
    "argv, check",
    [
        (["topo", "show", "cube1", "--json"], lambda d: d["pes"] == 8 and d["nodes"]["total"] == 145 and d["example_route"]["hops"]),
        (["topo", "list", "--json"], lambda d: {"paper", "cube1", "sip2x2"} <= {t["name"] for t in d}),
        (
            ["run", "--list", "--json"],
            lambda d: {"gemm-composite", "gqa-decode"} <= {k["name"] for k in d} and all("options" in k for k in d),
        ),
    ],
)
def test_every_listing_speaks_json(capsys, argv, check):
    got = invoke(cli.main, argv, capsys, trace_memory=False)
    assert got.status == 0 and check(json.loads(got.out))


def test_bench_speaks_json(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(bench, "BENCHES", (lambda mode="fast": {"a": 1.5},))
    monkeypatch.setattr(bench, "plugin_benches", lambda: [])
    goldens = tmp_path / "g.json"
    got = invoke(cli.main, ["bench", "--regen", "--json", "--goldens", str(goldens)], capsys, trace_memory=False)
    assert got.status == 0 and json.loads(got.out)["latency_ns"] == {"a": 1.5}
    monkeypatch.setattr(bench, "BENCHES", (lambda mode="fast": {"a": 2.0},))
    got = invoke(cli.main, ["bench", "--check", "--json", "--goldens", str(goldens)], capsys, trace_memory=False)
    assert got.status == 1 and json.loads(got.out)["differences"] == ["  ~ a: golden 1.5 ns -> now 2.0 ns (+33.3333%)"]


class SlowStart:
    """A source that spends a while preparing (as a live run compiling the paper topology does)."""

    description = "slow start"

    def __init__(self, release: threading.Event) -> None:
        self.release = release
        self.on_status = None

    def run(self, emit_batch):
        self.on_status("preparing: topology, tensors, launch", None)
        self.release.wait(10)
        self.on_status("simulating: waiting for the first events", TraceMetadata(kernel="gemm", topology="cube1"))
        events, meta = demo_events(DemoParams(n_pes=2, tiles=3))
        emit_batch(list(events))
        return meta


def test_the_debugger_says_what_it_prepares_and_counts_the_seconds():
    release = threading.Event()

    async def watch():
        app = KernbenchApp(SlowStart(release))
        async with app.run_test(size=(100, 24)) as pilot:
            seen = []
            for _ in range(12):
                await pilot.pause(0.1)
                seen.append(screen_text(app))
            release.set()
            await settle(app, pilot)
            return seen, screen_text(app)

    seen, done = asyncio.run(watch())
    preparing = [t for t in seen if "preparing: topology, tensors, launch …" in t]
    assert preparing, seen[-1]
    counts = {t.split("launch … ")[1].split(" s")[0] for t in preparing}
    assert len(counts) >= 2, counts  # the seconds count up while it waits
    assert "preparing" not in done and "■ done" in done


def test_the_picker_and_the_lane_title_show_one_utilization_and_the_picker_waits_for_the_end():
    events, meta = demo_events(DemoParams(n_pes=4, tiles=6))
    half = len(events) // 2
    release = threading.Event()

    from kernbench_tui.sources import CallableSource

    def simulate(bus):
        for i, e in enumerate(events):
            if i == half:
                release.wait(10)
            bus.emit(e.t_ns, e.kind, e.component, e.end_ns, e.corr_id, e.label, e.value, e.detail)
        return meta

    async def watch():
        app = KernbenchApp(CallableSource(simulate, batch_events=32))
        async with app.run_test(size=(120, 36)) as pilot:
            for _ in range(200):
                await pilot.pause(0.01)
                if len(app.store):
                    break
            await pilot.pause(0.3)
            live = screen_text(app)
            release.set()
            await settle(app, pilot)
            return app, live, screen_text(app)

    app, live, done = asyncio.run(watch())
    assert "pe0      …" in live
    for pe in app.model.pes():
        util = f"{app.model.pe_utilization(pe):4.0%}"
        assert f"{pe.split('.')[-1]:<5} {util}" in done
    shown = app.nav.pes[0]
    assert f"▾ {shown}  util {app.model.pe_utilization(shown):4.0%}" in done


@pytest.mark.parametrize("size", [(80, 24), (60, 20), (40, 12)])
def test_help_and_quit_stay_in_the_footer_at_any_size(size):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))
    from tui_harness import demo_app

    async def look():
        app = demo_app()
        async with app.run_test(size=size) as pilot:
            await settle(app, pilot)
            return screen_text(app).splitlines()[-1]

    footer = asyncio.run(look())
    assert footer.lstrip().startswith("? help  q quit"), footer
