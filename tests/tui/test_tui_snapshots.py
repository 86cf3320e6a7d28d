"""Text snapshots of rendered screens (update with ``pytest --snapshot-update``).

Rendered headless at fixed sizes with animations off, cursor blink off, after
the source worker finished; nothing depends on the wall clock.
"""

import pytest

from kernbench_tui.messages import PEsChosen

from tui_harness import SNAPSHOT_DIR, press, demo_app, screen_text, settle, sync

SIZE = (120, 36)


@pytest.fixture
def snap(snapshot):
    snapshot.snapshot_dir = SNAPSHOT_DIR
    return snapshot


async def render(keys=(), size=SIZE, pes=None, app=None):
    app = app or demo_app()
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        if pes is not None:
            app.screen.post_message(PEsChosen(pes))
            await pilot.pause()
        for key in keys:
            await press(app, pilot, key)
        await settle(app, pilot)
        return app, screen_text(app)


@sync
async def test_main_screen_at_start(snap):
    _, text = await render()
    snap.assert_match(text, "main_start.txt")


@sync
async def test_main_screen_zoomed_in_at_400ns(snap):
    _, text = await render([("goto", 400), "w", "w"])
    snap.assert_match(text, "main_400ns_zoom4.txt")


@sync
async def test_main_screen_after_stepping_events(snap):
    _, text = await render(["w", "w", "w"] + ["full_stop"] * 7)
    snap.assert_match(text, "main_after_7_events.txt")


@sync
async def test_selected_stall_in_stalls_panel(snap):
    _, text = await render(["n", "n", "n"])
    snap.assert_match(text, "stall_selected.txt")


@sync
async def test_selected_stall_details(snap):
    _, text = await render(["n", "n", "n", "5"])
    snap.assert_match(text, "stall_details.txt")


@sync
async def test_fifo_panel_under_contention(snap):
    app = demo_app()
    # The deepest moment of the shared HBM link: four PEs queue behind each other.
    _, text = await render([("goto", 12), "1"], app=app)
    assert "128" in text
    snap.assert_match(text, "fifo_contention.txt")


@sync
async def test_two_loads_in_flight(snap):
    app, text = await render([("goto", 20), "3"], pes=["sip0.cube0.pe0", "sip0.cube0.pe1"])
    assert len(app.model.loads_in_flight(20.0, "sip0.cube0.pe0")) + len(app.model.loads_in_flight(20.0, "sip0.cube0.pe1")) == 2
    assert "2 in flight" in text
    snap.assert_match(text, "loads_two_in_flight.txt")


@sync
async def test_event_log_filtered_to_stalls(snap):
    _, text = await render([("goto", 300), "slash", ("type", "kind:stall"), "enter"])
    snap.assert_match(text, "event_log_stalls.txt")


@sync
async def test_help_screen(snap):
    _, text = await render(["question_mark"])
    snap.assert_match(text, "help.txt")


@sync
async def test_main_screen_at_80x24(snap):
    _, text = await render([("goto", 130), "w"], size=(80, 24))
    snap.assert_match(text, "main_80x24.txt")


@sync
async def test_whole_cube_at_large_size(snap):
    _, text = await render([("goto", 200)], size=(160, 50), pes=[f"sip0.cube0.pe{i}" for i in range(4)])
    snap.assert_match(text, "cube_160x50.txt")


@sync
async def test_probe_screen(snap):
    from kernbench_tui.screens.probe import ProbeScreen

    app = demo_app()
    async with app.run_test(size=(124, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("P")
        assert isinstance(app.screen, ProbeScreen)
        await app.screen.workers.wait_for_complete()
        await settle(app, pilot)
        text = screen_text(app)
        assert "PE → local HBM" in text and "where the time went" in text
        snap.assert_match(text, "probe.txt")
        await pilot.press("escape")
        assert not isinstance(app.screen, ProbeScreen)
