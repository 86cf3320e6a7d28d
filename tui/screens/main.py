"""The timeline screen: header, PE picker, lanes, panels at the cursor."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, ClassVar, Protocol, TypeVar, cast

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.reactive import var
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, TabbedContent, TabPane

from kernbench.events.store import EventStore
from kernbench.events.tracefile import Trace, TraceMetadata
from kernbench.events.types import Event
from kernbench_tui import why
from kernbench_tui.messages import PathComputed, PEsChosen, SpanSelected
from kernbench_tui.navigator import ZOOM_FACTOR, AnyNavigator, ViewState
from kernbench_tui.run_state import RunState
from kernbench_tui.screens.goto import GotoTimeScreen
from kernbench_tui.screens.help import HelpScreen
from kernbench_tui.widgets.event_log import EventLog
from kernbench_tui.widgets.footer import Footer
from kernbench_tui.widgets.header import TraceHeader
from kernbench_tui.widgets.lanes import LanesView
from kernbench_tui.widgets.panels import DetailsPanel, FifoPanel, LoadsPanel, SourcePanel, StallsPanel, WhyPanel
from kernbench_tui.widgets.pe_picker import PEPicker

if TYPE_CHECKING:
    from kernbench_tui.screens.whatif import WhatIfAnswer
    from kernbench_tui.sources import Retimer

T = TypeVar("T")
PLAY_INTERVAL_S = 0.1
PANELS = (
    ("fifo", "FIFOs", FifoPanel),
    ("stalls", "Stalls", StallsPanel),
    ("loads", "Loads", LoadsPanel),
    ("log", "Log", EventLog),
    ("details", "Details", DetailsPanel),
    ("why", "Why", WhyPanel),
    ("source", "Source", SourcePanel),
)
COMPUTING = "computing the critical path…"


class TimelineApp(Protocol):
    """What the timeline screens read of their app (KernbenchApp; CompareApp for the compare screen)."""

    @property
    def nav(self) -> AnyNavigator: ...

    @property
    def running(self) -> bool: ...

    @property
    def metadata(self) -> TraceMetadata: ...

    @property
    def store(self) -> EventStore: ...

    def start_source(self) -> None: ...

    def run_state(self) -> RunState: ...

    def retimer(self) -> Retimer | str:
        """What re-times the run (the ``r`` prompt), or one line saying why it cannot be re-timed."""
        ...

    @property
    def description(self) -> str:
        """The run as its user named it (``gqa-decode --variant opt3``, a trace file's name)."""
        ...


class MainScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        # First, so the footer shows them at any width.
        Binding("question_mark", "help", "help"),
        Binding("q", "quit", "quit"),
        Binding("full_stop", "next_event", "next ev"),
        Binding("comma", "prev_event", "prev ev"),
        Binding("right_square_bracket", "step(1)", "+Δt"),
        Binding("left_square_bracket", "step(-1)", "-Δt", show=False),
        Binding("plus,equals_sign", "dt(1)", "Δt up", show=False),
        Binding("minus", "dt(-1)", "Δt down", show=False),
        Binding("g", "goto", "go to"),
        Binding("n", "stall(1)", "next stall"),
        Binding("N", "stall(-1)", "prev stall", show=False),
        Binding("w", "zoom_in", "zoom", show=False),
        Binding("s", "zoom_out", "zoom out", show=False),
        Binding("a", "pan(-1)", "pan left", show=False),
        Binding("d", "pan(1)", "pan right", show=False),
        Binding("f", "fit", "fit"),
        Binding("space", "play", "play"),
        Binding("F", "follow", "follow", show=False),
        Binding("slash", "filter_log", "filter", show=False),
        Binding("p", "search_pe", "PE", show=False),
        Binding("1", "panel('fifo')", show=False),
        Binding("2", "panel('stalls')", show=False),
        Binding("3", "panel('loads')", show=False),
        Binding("4", "panel('log')", show=False),
        Binding("5", "panel('details')", show=False),
        Binding("6", "panel('why')", show=False),
        Binding("7", "panel('source')", show=False),
        Binding("j", "source_line(1)", "line down", show=False),
        Binding("k", "source_line(-1)", "line up", show=False),
        Binding("enter", "source_select", "line's next command", show=False),
        Binding("escape", "source_follow", "follow the cursor", show=False),
        Binding("c", "critical_path", "path"),
        Binding("greater_than_sign", "path_step(1)", "next step", show=False),
        Binding("less_than_sign", "path_step(-1)", "prev step", show=False),
        Binding("P", "probe", "probe", show=False),
        Binding("h", "channels", "HBM", show=False),
        Binding("r", "what_if", "what if"),
    ]

    view: var[ViewState | None] = var(None, init=False)
    """The navigator's state as last published; header, lanes and panels are bound to it."""
    run: var[RunState | None] = var(None, init=False)
    """The run behind the view (set by the app whenever its source reports)."""
    playing = var(False, init=False)
    """Space: the cursor advances by Δt every PLAY_INTERVAL_S while True."""
    why_status = var("", init=False)
    """Why the critical path is not shown yet: computing it, the run still going, none recorded."""

    def __init__(self, debugger: TimelineApp | None = None) -> None:
        """``debugger``: the runs this screen shows, when they are not its app's (a what-if comparison)."""
        super().__init__()
        self._debugger = debugger
        self._play_timer: Timer | None = None
        self._after_path: list[Callable[[], None]] = []  # what to do once the path is computed

    @property
    def debugger(self) -> TimelineApp:
        """The runs shown: the app, as the debugger it is (``self.app`` is typed as any Textual app), or those
        the screen was given."""
        return self._debugger if self._debugger is not None else cast(TimelineApp, self.app)

    @property
    def nav(self) -> AnyNavigator:
        return self.debugger.nav

    def compose(self) -> ComposeResult:
        nav = self.nav
        yield TraceHeader(nav, id="header").data_bind(MainScreen.view, MainScreen.run, MainScreen.playing)
        with Horizontal(id="body"):
            yield PEPicker(nav.model, id="picker").data_bind(MainScreen.run)
            with Vertical(id="center"):
                yield LanesView(nav, id="lanes").data_bind(MainScreen.view)
                with TabbedContent(id="panels", initial="tab-fifo"):
                    for key, title, cls in PANELS:
                        with TabPane(title, id=f"tab-{key}"):
                            panel = cls(nav, id=f"panel-{key}").data_bind(MainScreen.view)
                            yield panel.data_bind(status=MainScreen.why_status) if cls in (WhyPanel, SourcePanel) else panel
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(LanesView).focus()
        self.run = self.debugger.run_state()
        self.debugger.start_source()

    # ------------------------------------------------------------ state
    def move(self, step: Callable[..., T], *args: object) -> T:
        """Make one navigator move and publish the state it leads to.

        Every key goes through here once, so a key press sets ``view`` once:
        the bound widgets redraw once, and not at all if nothing moved.
        """
        result = step(*args)
        self.view = self.nav.state()
        return result

    def watch_run(self, run: RunState) -> None:
        for lanes in self.query(LanesView):  # (none once the screen is taken down: a run can end as the app quits)
            lanes.placeholder = run.placeholder
        if not run.running and self.why_status == why.STILL_RUNNING:
            self.why_status = ""  # the run has ended: its path can be walked now
        self.view = self.nav.state()  # the app moves the navigator as data arrives (follow, fit)

    def watch_playing(self, playing: bool) -> None:
        if playing:
            self.move(self.nav.stop_following)
            self._play_timer = self.set_interval(PLAY_INTERVAL_S, self._play_tick)
        elif self._play_timer is not None:
            self._play_timer.stop()
            self._play_timer = None

    def _play_tick(self) -> None:
        if not self.move(self.nav.play_tick) and not self.debugger.running:
            self.playing = False

    def on_resize(self) -> None:
        self.set_class(self.size.width < 100, "-narrow")
        self.set_class(self.size.width < 70, "-tiny")

    # ------------------------------------------------------------ messages
    @on(SpanSelected)
    def span_selected(self, message: SpanSelected) -> None:
        self.show_span(message.event, message.at_ns)

    def show_span(self, event: Event, at_ns: float) -> None:
        """A clicked span: select it, cursor where it was clicked, its details."""
        self.move(self.nav.select, event, at_ns)
        self.query_one("#panels", TabbedContent).active = "tab-details"

    @on(PEsChosen)
    def show_pes(self, message: PEsChosen) -> None:
        self.remove_class("-picker")
        self.query_one(LanesView).scroll_to(y=0, animate=False)
        self.move(self.nav.show_pes, message.pes)

    @on(TabbedContent.TabActivated, "#panels", pane="#tab-why")
    def why_shown(self) -> None:
        self.with_path(lambda: None)

    @on(TabbedContent.TabActivated, "#panels", pane="#tab-source")
    def source_shown(self) -> None:
        """The Source view's heat column is the critical path's time per line: walk the path if not yet."""
        if self.nav.sources().lines:
            self.with_path(lambda: None)

    @on(PathComputed)
    def path_computed(self, message: PathComputed) -> None:
        if isinstance(message.result, str):
            self.why_status = message.result
            self._after_path.clear()
            self.notify(message.result, title="no critical path", severity="warning", timeout=6)
            return
        self.why_status = ""
        self.move(self.nav.set_path, message.result, False)
        pending, self._after_path = self._after_path, []
        for then in pending:
            then()

    @on(Input.Submitted, "#log-filter")
    def log_filter_submitted(self) -> None:
        self.query_one(LanesView).focus()

    # ------------------------------------------------------------ actions
    def action_next_event(self) -> None:
        self.move(self.nav.next_event)

    def action_prev_event(self) -> None:
        self.move(self.nav.prev_event)

    def action_step(self, direction: int) -> None:
        self.move(self.nav.step, direction)

    def action_dt(self, direction: int) -> None:
        self.move(self.nav.change_dt, direction)

    def action_stall(self, direction: int) -> None:
        if self.move(self.nav.next_stall, direction) is None:
            self.notify("no further stall on the shown PEs", timeout=2)
        else:
            self.query_one("#panels", TabbedContent).active = "tab-stalls"

    def action_zoom_in(self) -> None:
        self.move(self.nav.zoom, ZOOM_FACTOR)

    def action_zoom_out(self) -> None:
        self.move(self.nav.zoom, 1 / ZOOM_FACTOR)

    def action_pan(self, direction: int) -> None:
        self.move(self.nav.pan, direction)

    def action_fit(self) -> None:
        self.move(self.nav.fit)

    def action_follow(self) -> None:
        self.move(self.nav.follow_live)

    def action_play(self) -> None:
        self.playing = not self.playing

    def go_to(self, t_ns: float) -> None:
        """Put the cursor at ``t_ns`` (the ``g`` prompt's answer)."""
        self.move(self.nav.goto, t_ns)

    def action_goto(self) -> None:
        def done(t: float | None) -> None:
            if t is not None:
                self.go_to(t)

        self.app.push_screen(GotoTimeScreen(self.nav.model.end_ns), done)

    def action_channels(self) -> None:
        self.move(self.nav.toggle_channels)

    def action_probe(self) -> None:
        from kernbench_tui.screens.probe import ProbeScreen

        self.app.push_screen(ProbeScreen(self.debugger.metadata.topology or None))

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen())

    def action_what_if(self) -> None:
        """``r``: the what-if prompt; its answer opens the run and its re-timing side by side."""
        from kernbench_tui.screens.whatif import WhatIfHost, WhatIfPrompt

        retimer = self.debugger.retimer()
        if not isinstance(retimer, str):
            cast("WhatIfHost", self.app).prepare_what_if()
        self.app.push_screen(WhatIfPrompt(retimer), self._what_if_answered)

    def _what_if_answered(self, answer: WhatIfAnswer | None) -> None:
        from kernbench_tui.screens.whatif import WhatIfHost, what_if_runs

        retimer = self.debugger.retimer()
        if answer is None or isinstance(retimer, str):
            return
        run = Trace(self.debugger.store, self.debugger.metadata)
        runs = what_if_runs(self.debugger.description, run, answer, self.nav.pes, self.nav.model)
        cast("WhatIfHost", self.app).push_what_if(runs, retimer, answer.changes)

    def action_panel(self, key: str) -> None:
        self.query_one("#panels", TabbedContent).active = f"tab-{key}"

    def action_source_line(self, direction: int) -> None:
        """``j`` / ``k``: the Source view's line down / up (the view is shown)."""
        self.action_panel("source")
        if not self.move(self.nav.source_move, direction):
            self.notify("this recording names no source lines", timeout=3)

    def action_source_select(self) -> None:
        """``enter``: select the next command the Source view's line issued, on the timeline."""
        self.action_panel("source")
        got = self.move(self.nav.select_line_command)
        if got is None:
            self.notify("no command came from this line", timeout=3)
            return
        assert self.nav.selected is not None
        self.query_one(LanesView).show_lane(self.nav.selected.component)
        self.notify(f"command {got[0]} of {got[1]} from this line", timeout=2)

    def action_source_follow(self) -> None:
        self.move(self.nav.source_follow)

    def action_filter_log(self) -> None:
        self.action_panel("log")
        self.query_one("#log-filter", Input).focus()

    def action_search_pe(self) -> None:
        self.add_class("-picker")
        self.call_after_refresh(self.query_one("#pe-search", Input).focus)

    # ------------------------------------------------------------ critical path
    def with_path(self, then: Callable[[], None]) -> None:
        """Run ``then`` once the recording's critical path is known: at once, or after a worker walked it.

        The path of a run still going would end where the simulation has got to,
        not where the run ends, so it is computed only once the run has ended.
        """
        if self.nav.why is not None:
            then()
            return
        if self.debugger.running:
            self.why_status = why.STILL_RUNNING
            self.notify(why.STILL_RUNNING, timeout=4)
            return
        if self.why_status not in ("", COMPUTING, why.STILL_RUNNING):  # no path in this recording: say so again
            self.notify(self.why_status, title="no critical path", severity="warning", timeout=6)
            return
        self._after_path.append(then)
        if self.why_status != COMPUTING:
            self.why_status = COMPUTING
            self.run_worker(partial(self._walk_path, self.debugger.store), thread=True, group="why", name="critical path")

    def _walk_path(self, store: EventStore) -> None:
        """Worker body (a thread: a big recording's walk takes seconds)."""
        self.post_message(PathComputed(why.compute(store)))

    def action_critical_path(self) -> None:
        if self.nav.why is None:
            self.with_path(partial(self.move, self.nav.toggle_overlay))
        else:
            self.move(self.nav.toggle_overlay)

    def action_path_step(self, direction: int) -> None:
        self.with_path(partial(self._path_step, direction))

    def _path_step(self, direction: int) -> None:
        if not self.move(self.nav.path_step, direction):
            self.notify("no further step on the critical path", timeout=2)
            return
        path = self.nav.why
        assert path is not None  # path_step moved, so the path is known
        self.action_panel("why")
        self.query_one(LanesView).show_lane(why.step_lane(path.steps[self.nav.why_step]))

    def action_quit(self) -> None:
        self.app.exit()
