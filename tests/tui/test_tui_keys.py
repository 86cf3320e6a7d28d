"""Pilot tests: each key moves the cursor (or the window) to the right time."""

import pytest
from tui_harness import demo_app, settle, sync

from kernbench.events.types import EventKind
from kernbench_tui.navigator import DT_STEPS
from kernbench_tui.screens.goto import GotoTimeScreen
from kernbench_tui.screens.help import HelpScreen
from kernbench_tui.widgets.lanes import AXIS_ROWS, GUTTER, LanesView

SIZE = (120, 36)


@sync
async def test_opening_a_trace_fits_the_run_with_cursor_at_start():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        nav = app.nav
        assert nav.cursor_ns == 0.0
        assert (nav.t0, nav.t1) == (0.0, app.model.end_ns)
        assert nav.pes == ["sip0.cube0.pe0"]
        assert app.running is False


@sync
async def test_full_stop_and_comma_step_through_changes_of_the_shown_pe():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        model, pe = app.model, app.nav.pes[0]
        expected = [0.0]
        for _ in range(5):
            expected.append(model.next_change(expected[-1], pe=pe))
        for want in expected[1:]:
            await pilot.press("full_stop")
            assert app.nav.cursor_ns == want
        for want in reversed(expected[:-1]):
            await pilot.press("comma")
            assert app.nav.cursor_ns == want


@sync
async def test_brackets_step_by_delta_t_and_plus_minus_change_it():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        dt = app.nav.dt_ns
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert app.nav.cursor_ns == pytest.approx(2 * dt)
        await pilot.press("plus")
        bigger = app.nav.dt_ns
        assert bigger == DT_STEPS[DT_STEPS.index(dt) + 1]
        await pilot.press("left_square_bracket")
        assert app.nav.cursor_ns == pytest.approx(2 * dt - bigger)
        await pilot.press("minus", "minus")
        assert app.nav.dt_ns == DT_STEPS[DT_STEPS.index(dt) - 1]


@sync
async def test_n_goes_to_the_next_stall_start_and_selects_it():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        pe = app.nav.pes[0]
        first = app.model.next_change(0.0, pe=pe, kind=EventKind.STALL, starts_only=True)
        second = app.model.next_change(first, pe=pe, kind=EventKind.STALL, starts_only=True)
        await pilot.press("n")
        assert app.nav.cursor_ns == first
        assert app.nav.selected.kind == EventKind.STALL and app.nav.selected.t_ns == first
        await pilot.press("n")
        assert app.nav.cursor_ns == second
        await pilot.press("N")
        assert app.nav.cursor_ns == first


@sync
async def test_g_goes_to_a_typed_time_with_units():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("g")
        assert isinstance(app.screen, GotoTimeScreen)
        await pilot.press(*"0.25us", "enter")
        assert app.nav.cursor_ns == 250.0
        await pilot.press("g", *"soon", "enter")
        assert isinstance(app.screen, GotoTimeScreen)  # bad input keeps the prompt open
        await pilot.press("escape")
        assert app.nav.cursor_ns == 250.0


@sync
async def test_w_s_zoom_around_the_cursor_a_d_pan_f_fits():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        nav = app.nav
        await pilot.press("g", *"400", "enter")
        width = nav.width_ns
        frac = (nav.cursor_ns - nav.t0) / width
        await pilot.press("w")
        assert nav.width_ns == pytest.approx(width / 2)
        assert (nav.cursor_ns - nav.t0) / nav.width_ns == pytest.approx(frac)
        await pilot.press("s")
        assert nav.width_ns == pytest.approx(width)
        t0 = nav.t0
        await pilot.press("d")
        assert nav.t0 == pytest.approx(t0 + width / 4)
        await pilot.press("a", "a")
        assert nav.t0 == pytest.approx(t0 - width / 4)
        await pilot.press("w", "w", "f")
        assert (nav.t0, nav.t1) == (0.0, app.model.end_ns)


@sync
async def test_space_plays_forward_and_pauses():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("space")
        await pilot.pause(0.35)
        await pilot.press("space")
        moved = app.nav.cursor_ns
        assert moved > 0
        assert moved / app.nav.dt_ns == pytest.approx(round(moved / app.nav.dt_ns))
        await pilot.pause(0.25)
        assert app.nav.cursor_ns == moved


@sync
async def test_shift_f_follows_to_the_end():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("F")
        assert app.nav.follow and app.nav.cursor_ns == app.model.end_ns
        await pilot.press("comma")
        assert not app.nav.follow


@sync
async def test_question_mark_opens_help_and_escape_closes_it():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


@sync
async def test_clicking_a_span_selects_it_and_shows_details():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        lanes = app.screen.query_one(LanesView)
        gemm_row = AXIS_ROWS + 1 + 6  # title row, then cpu sched dma.rd dma.wr fetch store gemm
        lane = "sip0.cube0.pe0.gemm"
        busy = app.model.spans_in(lane, 0, app.model.end_ns)
        target = app.model.store.event(int(busy[0]))
        mid = (target.t_ns + target.end_ns) / 2
        x = GUTTER + int((mid - app.nav.t0) / app.nav.width_ns * lanes.n_cells)
        await pilot.click(LanesView, offset=(x, gemm_row))
        await pilot.pause()
        assert app.nav.selected == target
        assert app.screen.query_one("#panels").active == "tab-details"


@sync
async def test_q_quits():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.return_code is None
        await pilot.press("q")
        assert app.return_code == 0


@sync
async def test_resizing_from_tiny_to_huge_never_breaks_the_screen():
    app = demo_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        for size in [(20, 6), (40, 10), (80, 24), (250, 70), (81, 25)]:
            await pilot.resize_terminal(*size)
            await pilot.press("w", "full_stop")
            await pilot.pause()
        assert app.is_running


@sync
async def test_tab_moves_focus_between_panels():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        seen = set()
        for _ in range(6):
            await pilot.press("tab")
            seen.add(type(app.focused).__name__)
        assert len(seen) >= 2


@sync
async def test_command_palette_runs_debugger_commands():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        first = app.model.next_change(0.0, pe=app.nav.pes[0], kind=EventKind.STALL, starts_only=True)
        await pilot.press("ctrl+p")
        await pilot.press(*"Next stall")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.nav.cursor_ns == first


@sync
async def test_command_palette_saves_a_trace_that_reopens(tmp_path, monkeypatch):
    from kernbench.events.tracefile import open_trace

    monkeypatch.chdir(tmp_path)
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"Save trace")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(app, pilot)
        await app.workers.wait_for_complete()  # the file is written off the UI thread
        await pilot.pause()
        notes = [n.message for n in app._notifications]
        assert notes[0].startswith("writing ") and notes[-1].startswith("wrote "), notes
    trace = open_trace(tmp_path / "demo_gemm.kbtrace")
    assert len(trace.store) == len(app.store) and trace.metadata.kernel == "demo_gemm"


@sync
async def test_p_searches_pes_and_enter_shows_the_match():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("p")
        await pilot.pause()
        app.focused.value = "pe2"
        await pilot.press("enter")
        await pilot.pause()
        assert app.nav.pes == ["sip0.cube0.pe2"]


@sync
async def test_choosing_a_cube_in_the_picker_shows_all_its_pes():
    from textual.widgets import Tree

    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        tree = app.screen.query_one("#pe-tree", Tree)
        cube = tree.root.children[0].children[0]
        tree.select_node(cube)
        await pilot.pause()
        assert app.nav.pes == [f"sip0.cube0.pe{i}" for i in range(4)]


def _count_calls(counts, name, obj, method):
    inner = getattr(obj, method)

    def counted(*args, **kwargs):
        counts[name] += 1
        return inner(*args, **kwargs)

    setattr(obj, method, counted)


@sync
async def test_a_key_press_redraws_each_shown_widget_once_and_a_move_to_nowhere_not_at_all():
    from collections import Counter

    from kernbench_tui.widgets.header import TraceHeader
    from kernbench_tui.widgets.panels import FifoPanel, StallsPanel

    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen, counts = app.screen, Counter()
        _count_calls(counts, "header", screen.query_one(TraceHeader), "render")
        _count_calls(counts, "lanes", screen.query_one(LanesView), "_layout_rows")
        _count_calls(counts, "fifo", screen.query_one(FifoPanel), "render")  # the tab shown
        _count_calls(counts, "stalls", screen.query_one(StallsPanel), "render")  # a hidden tab
        await pilot.press("full_stop")
        await settle(app, pilot)
        assert counts == {"header": 1, "lanes": 1, "fifo": 1}
        counts.clear()
        await pilot.press("f")  # already fitted: nothing moves, nothing is drawn again
        await settle(app, pilot)
        await pilot.press("w", "s")  # two moves, two redraws
        await settle(app, pilot)
        assert counts == {"header": 2, "lanes": 2, "fifo": 2}
