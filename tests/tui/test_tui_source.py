"""The Source view (``7``): the kernel file with the critical path's time per line, following the cursor;
``j`` / ``k`` choose a line, ``enter`` selects its commands on the timeline one after another.

Rendered on ``lines_small`` (tests/tui/data/lines_kernel.py, a kernel of helper functions on 2 PEs).
"""

import pytest
from real_traces import DATA, load
from tui_harness import SNAPSHOT_DIR, demo_app, press, screen_text, settle, sync

from kernbench.analysis.lines import by_source
from kernbench.events.store import EventStore
from kernbench_tui.app import KernbenchApp
from kernbench_tui.source_view import NO_SOURCE, SourceIndex
from kernbench_tui.sources import StoreSource

SIZE = (120, 40)
KFILE = str(DATA / "lines_kernel.py")


@pytest.fixture
def snap(snapshot):
    snapshot.snapshot_dir = SNAPSHOT_DIR
    return snapshot


def source_app():
    events, meta = load("lines_small")
    return KernbenchApp(StoreSource(EventStore.from_events(events), meta))


def line_no(text: str) -> int:
    return next(i for i, line in enumerate(open(KFILE).read().splitlines(), 1) if text in line)


async def run_keys(app, pilot, keys):
    await settle(app, pilot)
    for key in keys:
        await press(app, pilot, key)
        await settle(app, pilot)  # the path is walked in a worker


def test_the_index_groups_each_pes_commands_by_line():
    events, _ = load("lines_small")
    index = SourceIndex.of(EventStore.from_events(events))
    dot = f"{KFILE}:{line_no('s = tl.dot(tl.load(q), tl.load(k))')}"
    # the line issues two loads and a dot, twice (the loop), on each of 2 PEs
    assert len(index.lines[dot].rows) == 3 * 2 * 2
    assert index.files() == [KFILE]
    first = min(index.issued["sip0.cube0.pe0"][0])
    assert index.line_at(first, ["sip0.cube0.pe0"]) == dot and index.line_at(-1.0) is None


@sync
async def test_source_view_shows_the_heat_per_line_and_the_line_at_the_cursor(snap):
    app = source_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_keys(app, pilot, ["7", ("goto", 400)])
        nav = app.nav
        assert nav.why is not None  # showing the view walked the path: the heat column
        text = screen_text(app)
        at = nav.sources().line_at(400.0, nav.pes)
        n = int(at.rpartition(":")[2])
        assert f"lines_kernel.py · line {n} at the cursor · critical path" in text
        assert any(row.lstrip("▕ ").startswith(f"▸ {n:>5}") for row in text.splitlines())
        for lc in by_source(nav.why.attribution)[:3]:  # the hottest lines show their ns and share
            assert f"{lc.line:>5} {lc.ns:>9,.1f} {lc.ns / nav.why.latency_ns:>6.1%}" in text
        snap.assert_match(text, "source_view.txt")


@sync
async def test_the_view_follows_the_cursor_in_time():
    app = source_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_keys(app, pilot, ["7"])
        index = app.nav.sources()
        seen = set()
        for t in (50, 300, 600, 900):
            await run_keys(app, pilot, [("goto", t)])
            at = index.line_at(float(t), app.nav.pes)
            seen.add(at)
            assert f"line {at.rpartition(':')[2]} at the cursor" in screen_text(app)
        assert len(seen) > 1


@sync
async def test_enter_selects_the_lines_commands_on_the_timeline_one_after_another(snap):
    app = source_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_keys(app, pilot, ["7"])
        nav = app.nav
        store = app.store
        key = f"{KFILE}:{line_no('tl.store(out, o)')}"
        nav.source_line = key
        starts = []
        for _ in range(5):  # 2 stores on each of 2 PEs; the fifth wraps to the first
            await run_keys(app, pilot, ["enter"])
            sel = nav.selected
            assert sel is not None and nav.sources().line_of(sel) == key and sel.label == "DmaWriteCmd"
            assert nav.cursor_ns == sel.t_ns and sel.component.rsplit(".", 1)[0] in nav.pes
            starts.append(sel.t_ns)
        assert starts[:4] == sorted(starts[:4]) and starts[4] == starts[0]
        assert len({(e.t_ns, e.component) for e in (store.event(r) for r in nav.sources().lines[key].rows)}) == 4
        text = screen_text(app)
        assert "enter: select its next command (4 from line" in text and "esc: follow the cursor" in text
        snap.assert_match(text, "source_enter_store.txt")


@sync
async def test_j_and_k_move_the_chosen_line_and_esc_follows_the_cursor_again():
    app = source_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_keys(app, pilot, ["7", ("goto", 400)])
        nav = app.nav
        at = nav.source_current()
        n = int(at.rpartition(":")[2])
        await run_keys(app, pilot, ["j", "j", "k"])
        assert nav.source_line == f"{KFILE}:{n + 1}"
        await run_keys(app, pilot, ["escape"])
        assert nav.source_line is None and nav.source_current() == at


@sync
async def test_a_selected_spans_line_is_the_one_shown():
    app = source_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_keys(app, pilot, ["7"])
        nav = app.nav
        index = nav.sources()
        key = f"{KFILE}:{line_no('m = tl.rowmax(s)')}"
        row = index.lines[key].rows[1]
        event = app.store.event(row)
        app.main.move(nav.select, event, event.t_ns)
        await settle(app, pilot)
        assert nav.source_current() == key  # the selection's line, highlighted
        assert f"{line_no('m = tl.rowmax(s)'):>5}" in screen_text(app)


@sync
async def test_a_recording_without_source_lines_says_so():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_keys(app, pilot, ["7"])
        assert NO_SOURCE in screen_text(app)
        await run_keys(app, pilot, ["enter"])
        assert app.nav.selected is None


def test_tui_run_explain_by_line_opens_the_source_view_and_refuses_speedups():
    from kernbench.errors import KernbenchError
    from kernbench_tui.cli import run_outputs

    assert run_outputs([*SMALL_GQA, "--explain", "--by", "line"]).by == "line"
    with pytest.raises(KernbenchError, match="--speedups prints re-timed figures, not a view: use `kernbench run"):
        run_outputs([*SMALL_GQA, "--explain", "--speedups"])
    with pytest.raises(KernbenchError, match="add --explain"):
        run_outputs([*SMALL_GQA, "--by", "line"])
    with pytest.raises(KernbenchError, match="with --what-if the debugger compares the run and its re-timing; --trace is for one run"):
        run_outputs([*SMALL_GQA, "--what-if", "pe.attrs.tcm_bw_gbps=1024", "--trace", "x.kbtrace"])


SMALL_GQA = ["gqa-decode", "--topology", "cube1", "--context", "512", "--heads", "16", "--kv-heads", "2"]
CHANGE = "pe.attrs.math_elems_per_cycle=16"


@sync
async def test_tui_run_what_if_compares_the_run_and_its_re_timing_on_one_axis():
    from kernbench.cli import main as kernbench_main
    from kernbench_tui import cli
    from kernbench_tui.compare_app import CompareApp

    launched = []
    assert cli.main(["run", *SMALL_GQA, "--what-if", CHANGE], launch=lambda what: launched.append(what) or 0) == 0
    (comparison,) = launched
    (a_text, _a), (b_text, _b) = comparison.sides
    assert a_text == " ".join(SMALL_GQA) and b_text == f"what if {CHANGE} (re-timed)"
    app = CompareApp(list(comparison.sides))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        a_side, b_side = app.sides
        assert not a_side.running and not b_side.running and a_side.error is None and b_side.error is None
        # B is exactly the run with --set: the re-timing is exact
        import contextlib
        import io
        import json

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert kernbench_main(["run", *SMALL_GQA, "--set", CHANGE, "--json"]) == 0
        assert b_side.latency_ns == json.loads(out.getvalue())["latency_ns"]
        assert a_side.latency_ns != b_side.latency_ns
        text = screen_text(app)
        assert "what if pe.attrs.math_elems_per_cycle=16 (re-timed)" in text and "B−A" in text


@sync
async def test_a_run_explained_by_line_ends_on_the_source_view():
    from textual.widgets import TabbedContent

    from kernbench.cli import tui_simulation
    from kernbench_tui.app import RunOutputs
    from kernbench_tui.sources import CallableSource

    fn, meta = tui_simulation([KFILE, "--topology", "cube1"])  # a live run, as kernbench-tui run … --explain --by line
    app = KernbenchApp(CallableSource(fn, meta), outputs=RunOutputs(explain=True, by="line"))
    async with app.run_test(size=SIZE) as pilot:
        await run_keys(app, pilot, [])
        await settle(app, pilot)
        assert app.screen.query_one("#panels", TabbedContent).active == "tab-source"
        assert app.nav.why is not None and "lines_kernel.py · line" in screen_text(app)


def test_the_by_cursor_column_is_each_lines_path_time_up_to_the_cursor():
    from kernbench.analysis.critical import attribute
    from kernbench_tui.source_view import PathLines

    events, _ = load("lines_small")
    a = attribute(EventStore.from_events(events))
    until = PathLines.of(a)
    lines = by_source(a)
    for lc in lines:
        assert until.ns_until(lc.key, 0.0) == 0.0
        assert until.ns_until(lc.key, a.latency_ns) == pytest.approx(lc.ns, abs=1e-9)
        samples = [until.ns_until(lc.key, a.latency_ns * k / 50) for k in range(51)]
        assert samples == sorted(samples)
    for t in (100.0, 500.0, 900.0):  # at any instant the lines share out the path so far
        assert sum(until.ns_until(lc.key, t) for lc in lines) == pytest.approx(t, abs=1e-6)
