"""The debugger on real kernels.

Snapshots render recorded runs (``tests/tui/data``, see ``real_traces.py``)
so they change only when the rendering does; the live tests run the current
simulator through `kernbench-tui run`'s path and check structure, not text.
"""

import pytest
from real_traces import RUNS, load
from tui_harness import SNAPSHOT_DIR, press, screen_text, settle, sync

from kernbench.events.store import EventStore
from kernbench.events.types import EventKind
from kernbench_tui import cli
from kernbench_tui.app import KernbenchApp
from kernbench_tui.sources import StoreSource

SIZE = (120, 36)


@pytest.fixture
def snap(snapshot):
    snapshot.snapshot_dir = SNAPSHOT_DIR
    return snapshot


async def recorded(name, keys, size=SIZE):
    events, meta = load(name)
    app = KernbenchApp(StoreSource(EventStore.from_events(events), meta))
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        for key in keys:
            await press(app, pilot, key)
        await settle(app, pilot)
        return app, screen_text(app)


@sync
async def test_gemm_primitive_first_stall(snap):
    app, text = await recorded("gemm_primitive", ["n", "2"])
    assert app.nav.selected is not None and app.nav.selected.kind == EventKind.STALL
    snap.assert_match(text, "gemm_primitive_first_stall.txt")


@sync
async def test_gemm_primitive_loads_mid_run(snap):
    app, text = await recorded("gemm_primitive", [("goto", 600), "3"])
    assert app.nav.cursor_ns == 600.0
    snap.assert_match(text, "gemm_primitive_loads_600ns.txt")


@sync
async def test_gemm_primitive_fifo_panel(snap):
    _, text = await recorded("gemm_primitive", [("goto", 100), "1"])
    snap.assert_match(text, "gemm_primitive_fifo_100ns.txt")


@sync
async def test_gqa_small_at_two_cursor_times(snap):
    _, early = await recorded("gqa_small", [("goto", 200), "2"])
    snap.assert_match(early, "gqa_small_200ns.txt")
    _, late = await recorded("gqa_small", [("goto", 1000), "w", "4"])
    snap.assert_match(late, "gqa_small_1000ns_zoom.txt")


@sync
async def test_gemm_naive_channel_lanes_show_the_two_hot_channels(snap):
    # A's naive K-chunk i sits on channels i and i+4 of the PE's slice: while
    # the first chunk streams in (t=100 ns) only pc0 and pc4 are busy.
    app, text = await recorded("gemm_naive", [("goto", 100), "h"])
    assert app.nav.channels
    lanes = app.nav.lanes("sip0.cube0.pe0")
    assert [lane.rsplit(".", 1)[1] for lane in lanes if ".hbm." in lane] == [f"pc{c}" for c in range(8)]
    busy = {c for c in range(8) if app.model.spans_in(f"sip0.cube0.hbm.pc{c}", 100, 100.5).size}
    assert busy == {0, 4}
    snap.assert_match(text, "gemm_naive_channels_100ns.txt")
    _, hidden = await recorded("gemm_naive", [("goto", 100), "h", "h"])
    assert "pc4" not in hidden and "pc4" in text


@pytest.mark.parametrize("name", sorted(RUNS))
@sync
async def test_live_run_of_the_current_simulator_is_browsable(name):
    app = KernbenchApp(cli._simulation_source(RUNS[name]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.error is None and not app.running and len(app.store) > 0
        assert app.metadata.end_ns > 0 and app.nav.pes
        await pilot.press("f", "g", "0", "enter", "n")
        stall = app.nav.selected
        assert stall is not None and stall.kind == EventKind.STALL and app.nav.cursor_ns == stall.t_ns
        text = screen_text(app)
        assert app.metadata.kernel in text and "cpu" in text and "▒" in text


@sync
async def test_gemm_primitive_dma_span_details_show_the_request(snap):
    from kernbench_tui.messages import SpanSelected

    events, meta = load("gemm_primitive")
    app = KernbenchApp(StoreSource(EventStore.from_events(events), meta))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        rows = app.model.spans_in("sip0.cube0.pe0.dma.rd", 0, app.model.end_ns)
        span = app.model.store.event(int(rows[2]))
        app.screen.post_message(SpanSelected(span, (span.t_ns + span.end_ns) / 2))
        await settle(app, pilot)
        text = screen_text(app)
        assert "path:" in text and f"corr_id {span.corr_id}" in text
        snap.assert_match(text, "gemm_primitive_dma_details.txt")
