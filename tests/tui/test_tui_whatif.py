"""The debugger's what-if prompt (``r``): re-time the open run, see it beside the run.

Live tests run a small GQA decode (cube1) through ``kernbench.cli.tui_simulation`` — in this process
(a CallableSource) or, once, in a child process as ``kernbench-tui run`` does — and check the re-timed
latency against a full run with ``--set``. Snapshots render pinned recordings (``real_traces.py``): the
run and its re-timing (``gqa_small_whatif``), handed out by a stand-in retimer.
"""

import contextlib
import io
import json
import threading
import time

import pytest
from real_traces import RETIMED, RUNS, load
from textual.widgets import Input, Static
from tui_harness import SNAPSHOT_DIR, screen_text, settle, sync

from kernbench.cli import main as kernbench_main
from kernbench.cli import tui_simulation
from kernbench.errors import KernbenchError, RetimeError
from kernbench.events.bus import Bus
from kernbench.events.store import COLUMNS, EventStore
from kernbench.events.tracefile import Trace, save_trace
from kernbench_tui.app import KernbenchApp
from kernbench_tui.child_run import ProcessSource
from kernbench_tui.screens.compare import WhatIfScreen
from kernbench_tui.screens.help import HelpScreen
from kernbench_tui.screens.main import MainScreen
from kernbench_tui.screens.whatif import RETIMING, WhatIfPrompt, changes_of
from kernbench_tui.sources import CallableSource, StoreSource, TraceFileSource

SIZE = (120, 36)
SMALL = RUNS["gqa_small"]
CHANGE = "pe.attrs.math_elems_per_cycle=16"


@pytest.fixture
def snap(snapshot):
    snapshot.snapshot_dir = SNAPSHOT_DIR
    return snapshot


def set_latency(*sets):
    """The latency of a full run of SMALL with ``--set`` of each change (``kernbench run --json``)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert kernbench_main(["run", *SMALL, *(a for s in sets for a in ("--set", s)), "--json"]) == 0
    return json.loads(out.getvalue())["latency_ns"]


def live_app():
    fn, meta = tui_simulation(SMALL)
    return KernbenchApp(CallableSource(fn, meta, description=" ".join(SMALL)))


async def until(pilot, done, seconds=60.0):
    """Pause until ``done()`` (re-timing runs in a worker thread; a bound, so a regression fails)."""
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.02)


async def ask(app, pilot, text):
    """``r``, the changes typed, enter; returns once the prompt has answered (a comparison or a message)."""
    if not isinstance(app.screen, WhatIfPrompt):
        await pilot.press("r")
        await pilot.pause()
    prompt = app.screen
    assert isinstance(prompt, WhatIfPrompt)
    prompt.query_one(Input).value = text
    await pilot.press("enter")
    await until(pilot, lambda: app.screen is not prompt or not prompt.busy)
    await settle(app, pilot)


def message(app):
    return str(app.screen.query_one("#what-if-message", Static).render())


# ------------------------------------------------------------ what the prompt takes
def test_the_prompt_takes_changes_as_what_if_does_separated_by_spaces():
    assert changes_of(f"{CHANGE}  line:42*0.5 'line:my kernel.py:7*0' engine:PE_GEMM*0.5") == [
        CHANGE,
        "line:42*0.5",
        "line:my kernel.py:7*0",
        "engine:PE_GEMM*0.5",
    ]
    for bad, says in [
        ("", "give one or more changes"),
        ("foo", "give KEY.PATH=VALUE"),
        ("engine:PE_NOPE*2", "no engine"),
        ("'a", "quotation"),
    ]:
        with pytest.raises(RetimeError, match=says):
            changes_of(bad)


# ------------------------------------------------------------ a live run, re-timed
@sync
async def test_a_parameter_change_gives_exactly_the_latency_of_a_run_with_set_and_shows_both_runs():
    app = live_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        before = app.metadata.end_ns
        await ask(app, pilot, CHANGE)
        screen = app.screen
        assert isinstance(screen, WhatIfScreen)
        a, b = screen.runs.sides
        assert a.latency_ns == before == set_latency()
        assert b.latency_ns == set_latency(CHANGE)  # exact: no tolerance
        assert b.latency_ns != a.latency_ns
        text = screen_text(app)
        assert f"what if {CHANGE} (re-timed)" in text and "B−A +" in text
        assert "esc back" in text.splitlines()[-1]


@sync
async def test_a_second_what_if_retimes_the_original_run_and_escape_goes_back():
    app = live_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await ask(app, pilot, CHANGE)
        await pilot.press("r")
        await pilot.pause()
        assert app.screen.query_one(Input).value == CHANGE  # the last changes, to edit
        await ask(app, pilot, "pe.attrs.math_elems_per_cycle=64")
        screen = app.screen
        assert isinstance(screen, WhatIfScreen)
        a, b = screen.runs.sides
        assert a.latency_ns == set_latency()  # A is still the run itself
        assert b.latency_ns == set_latency("pe.attrs.math_elems_per_cycle=64")  # the new change alone, on the original
        assert sum(isinstance(s, WhatIfScreen) for s in app.screen_stack) == 1  # it replaced the first comparison
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen) is MainScreen


@pytest.mark.parametrize(
    "change, says",
    [
        ("foo", "--what-if 'foo': give KEY.PATH=VALUE (a topology parameter), line:N*F"),
        ("line:9999*0.5", "--what-if 'line:9999*0.5': no command came from 9999; lines that issued commands include"),
        ("engine:PE_NOPE*0.5", "no engine 'PE_NOPE'"),
        ("pe.attrs.no_such_knob=3", "no_such_knob"),
    ],
)
@sync
async def test_a_bad_change_is_one_line_in_the_prompt(change, says):
    app = live_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await ask(app, pilot, change)
        assert isinstance(app.screen, WhatIfPrompt)  # still open, to correct the change
        shown = message(app)
        assert says in shown and "\n" not in shown and "Traceback" not in screen_text(app)
        assert not app.screen.query_one(Input).disabled
        await ask(app, pilot, CHANGE)  # the corrected change re-times
        assert isinstance(app.screen, WhatIfScreen)


@sync
async def test_escape_cancels_the_prompt_and_a_re_timing_under_way():
    app = live_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen) is MainScreen
        await pilot.press("r")
        await pilot.pause()
        app.screen.query_one(Input).value = CHANGE
        await pilot.press("enter", "escape")  # escape while it re-times
        await settle(app, pilot)
        assert type(app.screen) is MainScreen and len(app.screen_stack) == 1


class SlowRetimer:
    """Re-times only once released: the prompt's state while a re-timing is under way."""

    def __init__(self, trace):
        self.trace = trace
        self.release = threading.Event()

    def retime(self, changes):
        assert self.release.wait(30)
        return self.trace


def slow_app() -> KernbenchApp:
    """The small GQA recording, with a retimer that waits for its ``release``."""
    events, meta = load("gqa_small")
    slow = SlowRetimer(Trace(EventStore.from_events(events), meta))
    return KernbenchApp(StoreSource(slow.trace.store, meta, description="gqa_small", retimer=slow))


async def start_slow_retiming(app: KernbenchApp, pilot) -> None:
    """``r``, the change, enter: the re-timing is under way."""
    await settle(app, pilot)
    await pilot.press("r")
    await pilot.pause()
    app.screen.query_one(Input).value = CHANGE
    await pilot.press("enter")
    await pilot.pause()


@sync
async def test_while_re_timing_the_prompt_says_so_and_q_still_quits():
    app = slow_app()
    async with app.run_test(size=SIZE) as pilot:
        await start_slow_retiming(app, pilot)
        assert app.screen.busy and message(app) == RETIMING and app.screen.query_one(Input).disabled
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running
        app.source.retimer.release.set()


@sync
async def test_a_kernel_that_read_simulated_time_is_refused_naming_the_line(tmp_path):
    path = tmp_path / "poll.py"
    path.write_text(
        "import numpy as np\nimport kernbench.tl as tl\nfrom kernbench import kernel\nfrom kernbench.tl.context import current\n\n\n"
        "def k(a):\n    x = tl.load(a)\n    if current().scratch_used > 0:\n        tl.cycles(10)\n\n\n"
        "@kernel()\ndef poll(rt):\n    rt.launch(k, pes=[0], args=(rt.deploy(np.ones((8, 8), np.float32)),))\n"
    )
    fn, meta = tui_simulation([str(path), "--topology", "cube1"])
    app = KernbenchApp(CallableSource(fn, meta))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.error is None
        await ask(app, pilot, CHANGE)
        assert isinstance(app.screen, WhatIfPrompt)
        shown = message(app)
        assert f"read simulated time at {path}:9 in k" in shown and "cannot be re-timed honestly" in shown and "\n" not in shown


def script_run(path, overrides=()):
    """A kernel file's set-up and run from a script, on a Runtime of cube1 with ``overrides``."""
    import importlib.util

    from kernbench.runtime.api import Runtime

    spec = importlib.util.spec_from_file_location("lines_kernel_for_show", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rt = Runtime("cube1", overrides=list(overrides))
    mod.lines_demo(rt)
    return rt, rt.run(record=True)


@sync
async def test_a_run_shown_from_a_script_with_its_runtime_is_re_timed():
    from real_traces import DATA

    from kernbench_tui import source_of

    rt, result = script_run(DATA / "lines_kernel.py")
    app = KernbenchApp(source_of(result, rt))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await ask(app, pilot, CHANGE)
        assert isinstance(app.screen, WhatIfScreen)
        _rt, with_set = script_run(DATA / "lines_kernel.py", [CHANGE])
        assert app.screen.runs.sides[1].latency_ns == with_set.latency_ns != result.latency_ns
    with pytest.raises(KernbenchError, match="re-times a RunResult, not a trace"):
        source_of(Trace(result.store(), result.trace_metadata()), rt)


@sync
async def test_on_kernbench_tui_run_what_if_r_re_times_the_run_under_other_changes():
    from kernbench_tui import cli
    from kernbench_tui.compare_app import CompareApp

    launched = []
    assert cli.main(["run", *SMALL, "--what-if", CHANGE], launch=lambda what: launched.append(what) or 0) == 0
    (comparison,) = launched
    app = CompareApp(list(comparison.sides), retimer=comparison.retimer)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await until(pilot, lambda: not app.running)
        assert "r what if" in screen_text(app).splitlines()[-1]
        await ask(app, pilot, "pe.attrs.math_elems_per_cycle=64")
        screen = app.screen
        assert isinstance(screen, WhatIfScreen)
        a, b = screen.runs.sides
        assert (a.latency_ns, b.latency_ns) == (set_latency(), set_latency("pe.attrs.math_elems_per_cycle=64"))
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main  # back on the start-up comparison


@sync
async def test_a_comparison_of_two_runs_has_no_what_if():
    from kernbench_tui.compare_app import CompareApp

    app = CompareApp([("gqa_small", StoreSource(EventStore.from_events(load("gqa_small")[0]))), ("again", StoreSource(EventStore()))])
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("r")
        await pilot.pause()
        assert app.screen is app.main and "what if" not in screen_text(app)


# ------------------------------------------------------------ what cannot be re-timed says why
@sync
async def test_a_trace_from_python_says_in_one_line_why_it_cannot_be_re_timed(tmp_path):
    events, _meta = load("gqa_small")
    path = tmp_path / "run.kbtrace"
    save_trace(path, EventStore.from_events(events))  # (no metadata: nothing says how it was run)
    app = KernbenchApp(TraceFileSource(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, WhatIfPrompt) and app.screen.query_one(Input).disabled
        shown = message(app)
        assert shown.startswith("this saved trace cannot be re-timed: its metadata does not say which kernel ran") and "\n" not in shown
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen) is MainScreen


# ------------------------------------------------------------ a saved trace: its kernel runs again, once
@sync
async def test_a_saved_trace_is_re_timed_after_its_kernel_runs_again_once_exactly_as_set_would(tmp_path):
    events, meta = load("gqa_small")
    path = tmp_path / "run.kbtrace"
    save_trace(path, EventStore.from_events(events), meta)
    source = TraceFileSource(path)
    app = KernbenchApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("r")
        await pilot.pause()
        prompt = app.screen
        assert message(app) == (
            "a saved trace holds no command log: the first what-if runs its kernel again, once (kernbench run gqa-decode "
            "--topology cube1 --timing fast with the kernel's options as saved)"
        )
        prompt.query_one(Input).value = CHANGE
        await pilot.press("enter")
        await pilot.pause()
        assert message(app).startswith(
            "re-running the kernel once for its command log (a saved trace holds none): kernbench run gqa-decode"
        )
        await until(pilot, lambda: app.screen is not prompt or not prompt.busy)
        await settle(app, pilot)
        assert isinstance(app.screen, WhatIfScreen)
        assert app.screen.runs.sides[1].latency_ns == set_latency(CHANGE)
        child = source.retimer._child._proc
        # another what-if re-times the same rerun (the kernel does not run a third time)
        await pilot.press("r")
        await pilot.pause()
        assert source.retimer.busy_text == "" and source.retimer.note == ""  # (the prompt's own: the kernel has run)
        await ask(app, pilot, "pe.attrs.math_elems_per_cycle=32")
        assert app.screen.runs.sides[1].latency_ns == set_latency("pe.attrs.math_elems_per_cycle=32")
        assert source.retimer._child._proc is child and child.is_alive()
    child.join(10)
    assert not child.is_alive()


@sync
async def test_a_saved_trace_whose_run_comes_out_otherwise_now_is_refused_saying_what_differs(tmp_path):
    events, meta = load("gqa_small")
    path = tmp_path / "run.kbtrace"
    moved = [e._replace(t_ns=e.t_ns + 1.0, end_ns=e.end_ns + 1.0) if e.kind.name == "DISPATCH" and e.t_ns == 0 else e for e in events]
    save_trace(path, EventStore.from_events(moved), meta)  # (as if kernbench had changed since it was saved)
    app = KernbenchApp(TraceFileSource(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await ask(app, pilot, CHANGE)
        assert isinstance(app.screen, WhatIfPrompt) and not app.screen.query_one(Input).disabled
        shown = message(app)
        assert shown.startswith("this saved trace cannot be re-timed: its rerun (kernbench run gqa-decode") and "is another run" in shown
        assert "\n" not in shown


@sync
async def test_a_run_still_going_is_re_timed_once_it_has_ended():
    started, finish = threading.Event(), threading.Event()

    def slow(bus):
        started.set()
        assert finish.wait(30)

    app = KernbenchApp(CallableSource(slow))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, started.is_set)
        await pilot.press("r")
        await pilot.pause()
        assert message(app) == "the run is still going: re-time it once it has ended"
        finish.set()


# ------------------------------------------------------------ kernbench-tui run: the child re-times
@sync
async def test_a_live_run_in_a_child_process_is_re_timed_by_that_child_which_ends_with_the_app():
    source = ProcessSource("kernbench.cli:tui_simulation", (SMALL,), description=" ".join(SMALL))
    app = KernbenchApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: not app.running)
        await settle(app, pilot)
        assert app.error is None and source.retimer is not None
        await ask(app, pilot, "line:9999*0.5")
        assert "no command came from 9999" in message(app)  # a refusal comes back as its line; the child stays
        await ask(app, pilot, CHANGE)
        assert isinstance(app.screen, WhatIfScreen)
        assert app.screen.runs.sides[1].latency_ns == set_latency(CHANGE)
        # the events the child sent as it re-timed make the very store an in-process re-timing makes
        streamed = app.screen.runs.sides[1].model.store
        fn, _meta = tui_simulation(SMALL)
        whole = fn(Bus()).retime([CHANGE]).store
        assert (streamed.components, streamed.strings) == (whole.components, whole.strings)
        assert all(streamed.col(name).tolist() == whole.col(name).tolist() for name in COLUMNS)
        assert source.retimer.timings.nbytes > 0
        child = source.retimer._proc
        assert child.is_alive()
    child.join(10)
    assert not child.is_alive()


# ------------------------------------------------------------ snapshots (pinned recordings)
class PinnedRetimer:
    """The re-timing of gqa_small as recorded (``gqa_small_whatif``); any other change is not recorded."""

    def retime(self, changes):
        _run, recorded = RETIMED["gqa_small_whatif"]
        if tuple(changes) != recorded:
            raise RetimeError(f"only {recorded} is recorded for the snapshots")
        events, meta = load("gqa_small_whatif")
        return Trace(EventStore.from_events(events), meta)


def pinned_app():
    events, meta = load("gqa_small")
    return KernbenchApp(StoreSource(EventStore.from_events(events), meta, description=" ".join(SMALL), retimer=PinnedRetimer()))


@sync
async def test_snapshot_the_comparison_a_what_if_opens(snap):
    app = pinned_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await ask(app, pilot, CHANGE)
        app.screen.go_to(1000.0)
        await settle(app, pilot)
        snap.assert_match(screen_text(app), "what_if_comparison_1000ns.txt")


@sync
async def test_snapshot_the_prompt_with_a_bad_change(snap):
    app = pinned_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await ask(app, pilot, "line:42*fast")
        snap.assert_match(screen_text(app), "what_if_prompt_error.txt")


@sync
async def test_snapshot_the_prompt_of_a_run_that_cannot_be_re_timed(snap):
    events, meta = load("gqa_small")
    app = KernbenchApp(StoreSource(EventStore.from_events(events), meta, description="gqa_small"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("r")
        await settle(app, pilot)
        snap.assert_match(screen_text(app), "what_if_prompt_cannot.txt")


@sync
async def test_the_help_lists_the_what_if_key_on_the_run_and_on_the_comparison():
    app = pinned_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen) and "what if: re-time the run under changes (--what-if syntax)" in screen_text(app)
        await pilot.press("escape")
        await ask(app, pilot, CHANGE)
        await pilot.press("question_mark")
        await pilot.pause()
        text = screen_text(app)
        assert "re-time the original run (A) under other changes" in text and "back to the run" in text


@sync
async def test_full_collections_held_from_enter_are_given_back_however_the_what_if_ends():
    """Drawn, refused or cancelled: nothing is left frozen (``gc.freeze`` while the comparison is built)."""
    import gc

    from kernbench_tui.screens.whatif import CollectionsHeld

    def held():
        return CollectionsHeld.held or gc.get_freeze_count() > 0

    app = pinned_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await ask(app, pilot, CHANGE)
        assert isinstance(app.screen, WhatIfScreen) and not held()
        await ask(app, pilot, "pe.attrs.tcm_bw_gbps=1024")  # parses, but the pinned retimer refuses it
        assert isinstance(app.screen, WhatIfPrompt) and "only" in message(app) and not held()
    app = slow_app()
    async with app.run_test(size=SIZE) as pilot:
        await start_slow_retiming(app, pilot)
        assert app.screen.busy and held()  # held while it re-times
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen) is MainScreen and not held()
        app.source.retimer.release.set()


def test_a_saved_traces_rerun_abandoned_part_way_ends_its_child_and_the_next_what_if_starts_again(tmp_path):
    import multiprocessing

    from kernbench_tui.rerun import SavedTraceRetimer, Stopped

    events, meta = load("gqa_small")
    asked = []
    retimer = SavedTraceRetimer.of(Trace(EventStore.from_events(events), meta), stopping=lambda: asked.append(1) or len(asked) > 1)
    with pytest.raises(Stopped):
        retimer.retime([CHANGE])
    assert not multiprocessing.active_children() and retimer._child is None
    retimer.stopping = lambda: False
    assert retimer.retime([CHANGE]).metadata.end_ns == set_latency(CHANGE)
    retimer.close()


@sync
async def test_snapshot_the_prompt_on_a_saved_trace_names_what_its_first_what_if_runs(snap, tmp_path):
    events, meta = load("gqa_small")
    path = tmp_path / "run.kbtrace"
    save_trace(path, EventStore.from_events(events), meta)
    app = KernbenchApp(TraceFileSource(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("r")
        await settle(app, pilot)
        snap.assert_match(screen_text(app), "what_if_prompt_saved_trace.txt")
    assert app.source.retimer._child is None  # (nothing ran: only Enter starts the rerun)


def test_a_saved_traces_rerun_that_fails_says_so_with_the_cause(tmp_path):
    from kernbench_tui.rerun import SavedTraceRetimer

    events, meta = load("gqa_small")
    gone = meta.__class__(**{**meta.__dict__, "extra": {**meta.extra, "kernel_file": str(tmp_path / "gone.py")}})
    retimer = SavedTraceRetimer.of(Trace(EventStore.from_events(events), gone))
    with pytest.raises(KernbenchError) as failed:
        retimer.retime([CHANGE])
    said = str(failed.value)
    assert said.startswith(f"this saved trace cannot be re-timed: its rerun (kernbench run {tmp_path / 'gone.py'}:gqa-decode ")
    assert said.endswith(f"failed: its kernel cannot be loaded again: {tmp_path / 'gone.py'}: no such kernel file")
