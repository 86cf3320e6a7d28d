"""The debugger on real kernels, run live through `kernbench-tui run`'s path.

These snapshots change when the simulator's timing does; regenerate them
with ``pytest tests/tui --snapshot-update`` after an intended model change.
"""

import pytest

from tui import cli
from tui.app import KernbenchApp

from tui_harness import SNAPSHOT_DIR, screen_text, settle, sync

SIZE = (120, 36)
GEMM = ["gemm-primitive"]
GQA = ["gqa-decode", "--topology", "cube1", "--context", "512", "--heads", "16", "--kv-heads", "2"]


@pytest.fixture
def snap(snapshot):
    snapshot.snapshot_dir = SNAPSHOT_DIR
    return snapshot


async def live(argv, keys, size=SIZE):
    app = KernbenchApp(cli._simulation_source(argv))
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        assert app.error is None and not app.running
        await pilot.press("f")
        for key in keys:
            await pilot.press(key)
        await settle(app, pilot)
        return app, screen_text(app)


@sync
async def test_gemm_primitive_first_stall(snap):
    app, text = await live(GEMM, ["g", *"0", "enter", "n", "2"])
    assert app.nav.selected is not None and app.nav.selected.kind.name == "STALL"
    snap.assert_match(text, "gemm_primitive_first_stall.txt")


@sync
async def test_gemm_primitive_loads_mid_run(snap):
    app, text = await live(GEMM, ["g", *"600", "enter", "3"])
    assert app.nav.cursor_ns == 600.0
    snap.assert_match(text, "gemm_primitive_loads_600ns.txt")


@sync
async def test_gemm_primitive_fifo_panel(snap):
    app, text = await live(GEMM, ["g", *"100", "enter", "1"])
    snap.assert_match(text, "gemm_primitive_fifo_100ns.txt")


@sync
async def test_gqa_small_at_two_cursor_times(snap):
    _, early = await live(GQA, ["g", *"200", "enter", "2"])
    snap.assert_match(early, "gqa_small_200ns.txt")
    _, late = await live(GQA, ["g", *"1000", "enter", "w", "4"])
    snap.assert_match(late, "gqa_small_1000ns_zoom.txt")
