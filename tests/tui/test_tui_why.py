"""The critical path in the debugger: ``c`` draws it over the lanes and marks it in the
panels; the Why panel (``6``) lists its steps; ``>`` / ``<`` walk them.

Rendered on ``gqa_small_why`` (recorded with causes; its path crosses PEs 7, 6 and 4).
"""

import itertools
import threading

import pytest
from real_traces import load
from tui_harness import SNAPSHOT_DIR, press, screen_text, settle, sync

from kernbench.events.store import EventStore
from kernbench.events.tracefile import TraceMetadata
from kernbench_tui.app import KernbenchApp
from kernbench_tui.sources import CallableSource, StoreSource
from kernbench_tui.why import NO_CAUSES, PATH_MARK, STILL_RUNNING, step_lane
from kernbench_tui.widgets.panels import WhyPanel

SIZE = (120, 36)
NEXT, PREV = "greater_than_sign", "less_than_sign"


@pytest.fixture
def snap(snapshot):
    snapshot.snapshot_dir = SNAPSHOT_DIR
    return snapshot


def recorded_app(name="gqa_small_why"):
    events, meta = load(name)
    return KernbenchApp(StoreSource(EventStore.from_events(events), meta))


async def run_keys(app, pilot, keys):
    await settle(app, pilot)
    for key in keys:
        await press(app, pilot, key)
        await settle(app, pilot)  # the path is walked in a worker


@sync
async def test_c_draws_the_path_over_the_lanes_of_every_shown_pe(snap):
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_keys(app, pilot, ["c"])
        assert app.nav.overlay and app.nav.why is not None
        app.main.move(app.nav.show_pes, ["sip0.cube0.pe7", "sip0.cube0.pe6"])
        await settle(app, pilot)
        text = screen_text(app)
        assert f"{PATH_MARK} path" in text and PATH_MARK * 5 in text
        snap.assert_match(text, "why_overlay.txt")
        await run_keys(app, pilot, ["c"])
        assert not app.nav.overlay and f"{PATH_MARK} path" not in screen_text(app)


@sync
async def test_why_panel_lists_the_steps_with_the_top_causes(snap):
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_keys(app, pilot, ["6"])  # showing the panel computes the path
        text = screen_text(app)
        assert "critical path 1.968µs in 41 steps (PEs pe7, pe6, pe4)" in text and "dispatch 14%" in text
        snap.assert_match(text, "why_panel.txt")


@sync
async def test_why_panel_after_jumping_to_the_fifth_step(snap):
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_keys(app, pilot, ["c"] + [NEXT] * 5)
        assert app.nav.why_step == 4
        snap.assert_match(screen_text(app), "why_step_5.txt")


@sync
async def test_next_step_moves_the_cursor_to_its_start_and_shows_its_pe():
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_keys(app, pilot, [NEXT])
        steps = app.nav.why.steps
        assert app.nav.cursor_ns == steps[0].start_ns == 0.0 and app.nav.why_step == 0
        for i in range(1, 19):
            await press(app, pilot, NEXT)
            assert app.nav.cursor_ns == steps[i].start_ns and app.nav.why_step == i
            assert step_lane(steps[i]).startswith(tuple(app.nav.pes))  # the step's PE is shown
            assert app.nav.t0 <= steps[i].start_ns <= app.nav.t1
        assert "sip0.cube0.pe7" in app.nav.pes  # step 16 (index 15) is on PE 7 (its IPCQ)
        await press(app, pilot, PREV)
        assert app.nav.cursor_ns == steps[17].start_ns
        assert app.main.query_one("#panels").active == "tab-why"


@sync
async def test_next_step_from_the_cursor_goes_to_the_first_step_after_it():
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_keys(app, pilot, [("goto", 500), NEXT])
        steps = app.nav.why.steps
        want = min(i for i, s in enumerate(steps) if s.start_ns >= 500)
        assert app.nav.why_step == want and app.nav.cursor_ns == steps[want].start_ns
        await run_keys(app, pilot, [("goto", 500), PREV])
        assert app.nav.cursor_ns == max(s.start_ns for s in steps if s.start_ns < 500)


@sync
async def test_why_panel_rows_add_up_to_the_latency():
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_keys(app, pilot, ["6"])
        why = app.nav.why
        assert sum(step.ns for step in why.steps) == pytest.approx(why.latency_ns, abs=1e-6)
        assert why.latency_ns == pytest.approx(app.metadata.end_ns)
        for before, after in itertools.pairwise(why.steps):
            assert after.start_ns == pytest.approx(before.end_ns, abs=1e-9)
        panel = app.main.query_one(WhyPanel)
        lines = panel.text(app.nav, 200, len(why.steps) + 3).plain.splitlines()
        shares = [float(line.split("%")[0].split()[-1]) for line in lines[2:-1]]
        assert len(shares) == len(why.steps) and sum(shares) == pytest.approx(100.0, abs=0.1 * len(shares))


@sync
async def test_a_recording_without_causes_says_so_instead_of_a_path():
    events, meta = load("gqa_small")
    # as a format-v1 file reads: every event's pred -1 (recorded before causes were)
    app = KernbenchApp(StoreSource(EventStore.from_events([e._replace(pred=-1) for e in events]), meta))
    async with app.run_test(size=SIZE) as pilot:
        await run_keys(app, pilot, ["c", "6"])
        assert app.nav.why is None and not app.nav.overlay
        assert "this recording has no causes (recorded before format v2)" in screen_text(app)
        assert app.main.why_status == NO_CAUSES
        await run_keys(app, pilot, [NEXT])
        assert app.nav.cursor_ns == 0.0


@sync
async def test_a_live_run_offers_the_path_once_it_has_ended():
    from kernbench.events.types import EventKind

    release = threading.Event()

    def simulate(bus):
        first = bus.emit(0.0, EventKind.DISPATCH, "sip0.cube0.pe0.cpu", 5.0, 1, "MathCmd")
        release.wait(10)
        bus.emit(5.0, EventKind.DISPATCH, "sip0.cube0.pe0.cpu", 8.0, 2, "MathCmd", pred=first)

    app = KernbenchApp(CallableSource(simulate, TraceMetadata(kernel="live"), batch_events=1))
    async with app.run_test(size=SIZE) as pilot:
        while not len(app.store):
            await pilot.pause(0.05)
        await pilot.press("c")
        assert app.running and app.main.why_status == STILL_RUNNING and app.nav.why is None
        release.set()
        await settle(app, pilot)
        for _ in range(200):  # the worker is done; the app hears that the run ended a moment later
            if not app.running:
                break
            await pilot.pause(0.05)
        assert not app.running
        await run_keys(app, pilot, ["c"])
        assert app.nav.why is not None and app.nav.overlay


@sync
async def test_the_loads_and_fifo_panels_mark_what_is_on_the_path():
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_keys(app, pilot, ["c", NEXT, ("goto", 20), "3"])  # the first step shows PE 7
        text = screen_text(app)
        marked = [line for line in text.splitlines() if f"{PATH_MARK} h0:load" in line]
        assert len(marked) == 1 and "Q1.3" in marked[0]  # PE 7's load of Q, which the path waits for
        assert "  h0:load Q0.0" in text  # PE 0's is listed, not marked
        await run_keys(app, pilot, ["1"])
        marked = [line for line in screen_text(app).splitlines() if f"{PATH_MARK} sip0.cube0" in line]
        assert any("hbm.slice7->r3" in line for line in marked)
        assert not any("hbm.slice0->r0" in line for line in marked)
