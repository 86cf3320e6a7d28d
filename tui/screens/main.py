"""The timeline screen: header, PE picker, lanes, panels at the cursor."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.reactive import var
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input, TabbedContent, TabPane

from kernbench.events.types import Event
from kernbench_tui.messages import PEsChosen, SpanSelected
from kernbench_tui.navigator import ZOOM_FACTOR, Navigator, ViewState
from kernbench_tui.run_state import RunState
from kernbench_tui.screens.goto import GotoTimeScreen
from kernbench_tui.screens.help import HelpScreen
from kernbench_tui.widgets.event_log import EventLog
from kernbench_tui.widgets.header import TraceHeader
from kernbench_tui.widgets.lanes import LanesView
from kernbench_tui.widgets.panels import DetailsPanel, FifoPanel, LoadsPanel, StallsPanel
from kernbench_tui.widgets.pe_picker import PEPicker

T = TypeVar("T")
PLAY_INTERVAL_S = 0.1
PANELS = (("fifo", "FIFOs", FifoPanel), ("stalls", "Stalls", StallsPanel), ("loads", "Loads", LoadsPanel),
          ("log", "Log", EventLog), ("details", "Details", DetailsPanel))


class MainScreen(Screen):
    BINDINGS = [
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
        Binding("P", "probe", "probe", show=False),
        Binding("h", "channels", "HBM", show=False),
    ]

    view: var[ViewState | None] = var(None, init=False)
    """The navigator's state as last published; header, lanes and panels are bound to it."""
    run: var[RunState | None] = var(None, init=False)
    """The run behind the view (set by the app whenever its source reports)."""
    playing = var(False, init=False)
    """Space: the cursor advances by Δt every PLAY_INTERVAL_S while True."""

    def __init__(self) -> None:
        super().__init__()
        self._play_timer: Timer | None = None

    @property
    def nav(self) -> Navigator:
        return self.app.nav

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
                            yield cls(nav, id=f"panel-{key}").data_bind(MainScreen.view)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(LanesView).focus()
        self.run = self.app.run_state()
        self.app.start_source()

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
        self.query_one(LanesView).placeholder = run.placeholder
        self.view = self.nav.state()  # the app moves the navigator as data arrives (follow, fit)

    def watch_playing(self, playing: bool) -> None:
        if playing:
            self.move(self.nav.stop_following)
            self._play_timer = self.set_interval(PLAY_INTERVAL_S, self._play_tick)
        elif self._play_timer is not None:
            self._play_timer.stop()
            self._play_timer = None

    def _play_tick(self) -> None:
        if not self.move(self.nav.play_tick) and not self.app.running:
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

        self.app.push_screen(ProbeScreen(self.app.metadata.topology or None))

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen())

    def action_panel(self, key: str) -> None:
        self.query_one("#panels", TabbedContent).active = f"tab-{key}"

    def action_filter_log(self) -> None:
        self.action_panel("log")
        self.query_one("#log-filter", Input).focus()

    def action_search_pe(self) -> None:
        self.add_class("-picker")
        self.call_after_refresh(self.query_one("#pe-search", Input).focus)

    def action_quit(self) -> None:
        self.app.exit()
