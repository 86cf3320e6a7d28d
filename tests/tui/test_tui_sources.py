"""Live and file sources: what the app shows while a run is going and after."""

import threading

import pytest
from tui_harness import screen_text, settle, sync

from kernbench.errors import KernbenchError
from kernbench.events.store import EventStore
from kernbench.events.tracefile import TraceMetadata, save_trace
from kernbench.events.types import EventKind
from kernbench_tui.app import KernbenchApp
from kernbench_tui.demo import DemoParams, demo_events, run_demo
from kernbench_tui.sources import CallableSource, StoreSource, TraceFileSource

SIZE = (120, 36)


def test_callable_source_batches_everything_the_run_publishes():
    batches = []
    source = CallableSource(lambda bus: run_demo(bus, DemoParams(n_pes=2, tiles=3)), batch_events=50)
    meta = source.run(batches.append)
    events, want_meta = demo_events(DemoParams(n_pes=2, tiles=3))
    assert meta == want_meta
    assert all(len(b) <= 50 for b in batches)
    store = EventStore()
    for b in batches:
        store.append(b)
    assert store.events() == EventStore.from_events(events).events()


def test_callable_source_uses_given_metadata_when_fn_returns_none():
    meta = TraceMetadata(kernel="k")
    assert CallableSource(lambda bus: None, meta).run(lambda b: None) == meta


@sync
async def test_live_run_is_browsable_while_it_runs_then_finishes():
    events, _ = demo_events(DemoParams(n_pes=2, tiles=6))
    half = len(events) // 2
    release = threading.Event()

    def simulate(bus):
        for i, e in enumerate(events):
            if i == half:
                release.wait(10)
            bus.emit(e.t_ns, e.kind, e.component, e.end_ns, e.corr_id, e.label, e.value, e.detail)
        return TraceMetadata(kernel="live_demo", topology="t", variant="v", end_ns=events[-1].t_ns)

    app = KernbenchApp(CallableSource(simulate, batch_events=32))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(200):
            await pilot.pause(0.01)
            if len(app.store) >= (half // 32) * 32:
                break
        assert app.running
        assert 0 < len(app.store) <= half
        assert app.nav.follow and app.nav.cursor_ns == app.model.end_ns
        assert "● live" in screen_text(app)
        await pilot.press("comma")  # browsing works mid-run and stops following
        assert not app.nav.follow
        release.set()
        await settle(app, pilot)
        assert not app.running
        assert len(app.store) == len(events)
        assert app.metadata.kernel == "live_demo"
        assert "■ done" in screen_text(app)


@sync
async def test_failing_simulation_is_reported_not_crashed():
    def broken(bus):
        bus.emit(0.0, EventKind.DISPATCH, "sip0.cube0.pe0.cpu", 5.0, -1, "tl.load")
        raise KernbenchError("kernel.py:12: index out of range")

    app = KernbenchApp(CallableSource(broken))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.error == "kernel.py:12: index out of range"
        assert "✗ failed" in screen_text(app)
        assert len(app.store) == 1
        await pilot.press("full_stop", "n", "w")
        assert app.is_running


@sync
async def test_trace_file_opens_in_the_app(tmp_path):
    events, meta = demo_events(DemoParams(n_pes=2, tiles=3))
    path = tmp_path / "run.kbtrace"
    save_trace(path, EventStore.from_events(events), meta)
    app = KernbenchApp(TraceFileSource(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert len(app.store) == len(events) and app.metadata == meta
        assert app.nav.pes == ["sip0.cube0.pe0"]


@sync
async def test_corrupt_trace_file_shows_the_format_error(tmp_path):
    path = tmp_path / "bad.kbtrace"
    path.write_bytes(b"KBTRACE\x00" + b"\x01\x00" * 3)
    app = KernbenchApp(TraceFileSource(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.error is not None and "truncated" in app.error
        assert app.is_running


@sync
async def test_empty_trace_renders_and_keys_are_harmless():
    app = KernbenchApp(StoreSource(EventStore(), TraceMetadata(kernel="empty")))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        for key in ["full_stop", "comma", "n", "N", "w", "s", "a", "d", "f", "right_square_bracket", "1", "2", "3", "4", "5"]:
            await pilot.press(key)
        assert app.is_running
        assert "empty" in screen_text(app)


@sync
async def test_quitting_mid_run_stops_the_simulation_and_keys_stay_responsive():
    ended = threading.Event()
    max_events = 2_000_000  # a bound, so a regression fails instead of running forever

    def endless(bus):
        try:
            for i in range(max_events):
                bus.emit(float(i), EventKind.DISPATCH, "sip0.cube0.pe0.cpu", i + 1.0, -1, "tl.load")
        finally:
            ended.set()

    app = KernbenchApp(CallableSource(endless, batch_events=64))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(100):
            await pilot.pause(0.01)
            if len(app.store) > 0:
                break
        assert app.running and 0 < len(app.store) < max_events
        await pilot.press("comma")  # keys are served while the simulation floods batches
        assert not app.nav.follow
        await pilot.press("q")
    assert ended.wait(10)
    assert len(app.store) < max_events


def test_process_source_streams_the_same_events_as_in_process():
    from kernbench_tui.child_run import ProcessSource

    params = DemoParams(n_pes=2, tiles=3)
    batches = []
    meta = ProcessSource("kernbench_tui.demo:demo_simulation", (params,), batch_events=100).run(batches.append)
    events, want_meta = demo_events(params)
    assert meta == want_meta
    store = EventStore()
    for b in batches:
        if len(b):
            store.append_columns(b)
    assert store.events() == EventStore.from_events(events).events()


def test_process_source_reports_the_childs_error():
    from kernbench_tui.child_run import ProcessSource

    with pytest.raises(KernbenchError, match="name a kernel"):
        ProcessSource("kernbench.cli:tui_simulation", ([],)).run(lambda b: None)


@sync
async def test_app_follows_a_simulation_in_a_child_process():
    from kernbench_tui.cli import _demo_source

    app = KernbenchApp(_demo_source(2, 4, 0.0))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(500):
            await pilot.pause(0.02)
            if not app.running:
                break
        await settle(app, pilot)
        events, meta = demo_events(DemoParams(n_pes=2, tiles=4))
        assert app.error is None and len(app.store) == len(events)
        assert app.metadata == meta
