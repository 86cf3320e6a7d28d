"""`kernbench-tui compare A B`: two runs on one time axis with one cursor.

Snapshots render recorded runs (``data/``, see ``real_traces.py``); the live
test runs both sides through the simulator and checks structure, not text.
"""

import pytest
from real_traces import load
from tui_harness import SNAPSHOT_DIR, press, screen_text, settle, sync

from kernbench.commands.sides import RunSide, SideError, TraceSide, check_side, parse_side
from kernbench.errors import KernbenchError
from kernbench.events.store import EventStore
from kernbench.events.tracefile import save_trace
from kernbench.events.types import EventKind
from kernbench_tui import cli
from kernbench_tui.child_run import ProcessSource
from kernbench_tui.compare_app import CompareApp
from kernbench_tui.messages import PEsChosen
from kernbench_tui.screens.help import HelpScreen
from kernbench_tui.sources import StoreSource, TraceFileSource
from kernbench_tui.widgets.compare_header import difference_text

SIZE = (120, 36)
OPT3 = "gqa-decode --variant opt3"
OPT2 = "gqa-decode --variant opt2"


@pytest.fixture
def snap(snapshot):
    snapshot.snapshot_dir = SNAPSHOT_DIR
    return snapshot


def side(name, text):
    events, meta = load(name)
    return text, StoreSource(EventStore.from_events(events), meta, description=text)


def recorded_pair(a=("gqa_small_opt3", OPT3), b=("gqa_small", OPT2)):
    return CompareApp([side(*a), side(*b)])


async def shown(app, pilot, keys=(), pes=None):
    await settle(app, pilot)
    if pes is not None:
        app.screen.post_message(PEsChosen(pes))
        await pilot.pause()
    for key in keys:
        await press(app, pilot, key)
    await settle(app, pilot)
    return screen_text(app)


# ------------------------------------------------------------ the side parser (kernbench.commands.sides)
def test_a_side_is_a_trace_file_or_a_kernel_with_its_options():
    assert parse_side("runs/opt3.kbtrace") == TraceSide("runs/opt3.kbtrace")
    assert parse_side("opt3.kbtrace") == TraceSide("opt3.kbtrace")
    assert parse_side("gqa-decode --variant opt3") == RunSide(("gqa-decode", "--variant", "opt3"))
    assert parse_side("gemm-primitive") == RunSide(("gemm-primitive",))
    assert parse_side("gemm-tiled --note 'two words'").argv[-1] == "two words"


@pytest.mark.parametrize("text, says", [("", "empty side"), ("gemm '--m", "closing quotation")])
def test_an_unreadable_side_is_a_side_error(text, says):
    with pytest.raises(SideError, match=says):
        parse_side(text)


def test_checking_a_side_opens_its_trace_or_checks_its_kernel(tmp_path):
    path = tmp_path / "r.kbtrace"
    save_trace(path, EventStore())
    assert len(check_side(parse_side(str(path))).store) == 0
    assert check_side(parse_side("gemm-primitive --m 64")).m == 64  # a run side's options
    with pytest.raises(SideError, match="no such trace file"):
        check_side(parse_side(str(tmp_path / "nope.kbtrace")))
    with pytest.raises(SideError, match="unknown kernel 'gemx'"):
        check_side(parse_side("gemx"))


# ------------------------------------------------------------ the command line
def launched_with():
    seen = []
    return seen, lambda comparison: seen.append(comparison) or 0


def test_compare_opens_a_trace_and_a_live_run(tmp_path):
    path = tmp_path / "a.kbtrace"
    save_trace(path, EventStore())
    seen, launch = launched_with()
    assert cli.main(["compare", str(path), "gemm-primitive --layout naive"], launch=launch) == 0
    (a_text, a), (_b_text, b) = seen[0].sides
    assert isinstance(a, TraceFileSource) and a_text == str(path)
    assert isinstance(b, ProcessSource) and b.args == (["gemm-primitive", "--layout", "naive"],)


@pytest.mark.parametrize(
    "a, b, says",
    [
        ("nope.kbtrace", "gemm-primitive", "compare A: nope.kbtrace: no such trace file"),
        ("gemm-primitive", "gemx --m 64", "compare B: unknown kernel 'gemx'"),
        ("gemm-primitive", "gemm-primitive --m", "compare B: kernbench run gemm-primitive: argument --m"),
        ("gemm-primitive", "", "compare B: an empty side"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(a, b, says, capsys):
    seen, launch = launched_with()
    assert cli.main(["compare", a, b], launch=launch) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {says}") and err.count("\n") == 1
    assert seen == []


# ------------------------------------------------------------ the screen, on recordings
@sync
async def test_opt3_against_opt2_at_200ns(snap):
    app = recorded_pair()
    async with app.run_test(size=SIZE) as pilot:
        text = await shown(app, pilot, [("goto", 200), "2"])
    a, b = (s.latency_ns for s in app.sides)
    assert (a, b) == (1897.5945, 1968.0945)
    assert difference_text(a, b) in text.splitlines()[1]
    assert "A sip0.cube0.pe0" in text and "B sip0.cube0.pe0" in text
    snap.assert_match(text, "compare_gqa_opt3_opt2_200ns.txt")


@sync
async def test_runs_of_different_pes_and_lengths_share_the_longer_axis(snap):
    app = recorded_pair(("gemm_primitive", "gemm-primitive"), ("gqa_small", OPT2))
    async with app.run_test(size=SIZE) as pilot:
        text = await shown(app, pilot, [("goto", 1800), "3"], pes=["sip0.cube0.pe3", "sip0.cube0.pe5"])
        nav, (a, b) = app.nav, app.sides
        assert a.model.end_ns > b.model.end_ns and (nav.t0, nav.t1) == (0.0, a.model.end_ns)
        assert app.pair.pes() == [f"sip0.cube0.pe{i}" for i in range(8)]  # the union
    assert "A sip0.cube0.pe5  — not in run A" in text
    assert "pe5   -/72%" in text  # the picker: A has no pe5
    snap.assert_match(text, "compare_different_pes_1800ns.txt")


@sync
async def test_keys_move_the_one_cursor_over_both_runs():
    app = recorded_pair()
    async with app.run_test(size=SIZE) as pilot:
        await shown(app, pilot)
        (a, b), nav, pe = app.sides, app.nav, app.nav.pes[0]
        t = 0.0
        for _ in range(4):  # `.`: the nearer of the two runs' next changes
            want = min(x for x in (a.model.next_change(t, pe=pe), b.model.next_change(t, pe=pe)) if x is not None)
            await pilot.press("full_stop")
            assert nav.cursor_ns == want
            t = want
        stall = min(m.next_change(t, pe=pe, kind=EventKind.STALL, starts_only=True) for m in (a.model, b.model))
        await pilot.press("n")
        assert nav.cursor_ns == stall and nav.selected is None
        width = nav.width_ns
        await pilot.press("w")
        assert nav.width_ns == pytest.approx(width / 2)
        await pilot.press("f")
        assert (nav.t0, nav.t1) == (0.0, max(a.model.end_ns, b.model.end_ns))
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen) and "either run" in screen_text(app)


@sync
async def test_one_run_keys_are_off_in_compare():
    app = recorded_pair()
    async with app.run_test(size=SIZE) as pilot:
        await shown(app, pilot)
        for key in ("F", "P", "slash", "4", "5"):
            await pilot.press(key)
        assert app.screen is app.main and not app.nav.follow
        assert app.screen.query_one("#panels").active == "tab-stalls"


# ------------------------------------------------------------ live runs
@sync
async def test_compare_of_two_live_runs_of_the_current_simulator():
    sides = [(text, cli._side_source(label, text)) for label, text in (("A", "gemm-primitive"), ("B", "gemm-primitive --layout naive"))]
    app = CompareApp(sides)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.error is None and not app.running
        a, b = app.sides
        assert len(a.model.store) and len(b.model.store) and a.model.pes() == b.model.pes()
        assert app.nav.t1 == max(a.model.end_ns, b.model.end_ns)
        text = screen_text(app)
    assert difference_text(a.latency_ns, b.latency_ns) in text
    assert "A sip0.cube0.pe0" in text and "B sip0.cube0.pe0" in text and "▒" in text


@sync
async def test_a_side_that_fails_while_running_is_reported_and_exits_2():
    sides = [(text, cli._side_source(label, text)) for label, text in (("A", "gemm-primitive"), ("B", "gemm-primitive --max-sim-ns 50"))]
    app = CompareApp(sides)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.sides[0].error is None and app.sides[1].error is not None
        text = screen_text(app)
    assert "B failed" in text or "failed" in text
    with pytest.raises(KernbenchError, match=r"B \(gemm-primitive --max-sim-ns 50\)"):
        cli.exit_status(app)


def test_the_debuggers_compare_refuses_a_side_that_would_save(capsys, tmp_path):
    from kernbench_tui import cli as tui_cli

    side = f"gemm-primitive --m 64 --trace {tmp_path / 'a.kbtrace'}"
    assert tui_cli.main(["compare", side, "gemm-primitive"], launch=lambda what: 0) == 2
    err = capsys.readouterr().err
    assert "compare A:" in err and "--trace is not taken inside a side" in err and not (tmp_path / "a.kbtrace").exists()
