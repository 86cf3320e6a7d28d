"""The timeline screen: header, PE picker, lanes, panels at the cursor."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input, TabbedContent, TabPane

from kernbench_tui.messages import PEsChosen, SpanSelected
from kernbench_tui.navigator import ZOOM_FACTOR
from kernbench_tui.screens.goto import GotoTimeScreen
from kernbench_tui.screens.help import HelpScreen
from kernbench_tui.widgets.event_log import EventLog
from kernbench_tui.widgets.header import TraceHeader
from kernbench_tui.widgets.lanes import LanesView
from kernbench_tui.widgets.panels import DetailsPanel, FifoPanel, LoadsPanel, StallsPanel
from kernbench_tui.widgets.pe_picker import PEPicker

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

    def __init__(self) -> None:
        super().__init__()
        self._play_timer: Timer | None = None

    @property
    def nav(self):
        return self.app.nav

    def compose(self) -> ComposeResult:
        yield TraceHeader(id="header")
        with Horizontal(id="body"):
            yield PEPicker(self.app.model, id="picker")
            with Vertical(id="center"):
                yield LanesView(self.nav, id="lanes")
                with TabbedContent(id="panels", initial="tab-fifo"):
                    for key, title, cls in PANELS:
                        with TabPane(title, id=f"tab-{key}"):
                            yield cls(id=f"panel-{key}")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(LanesView).focus()
        self.refresh_view()
        self.app.start_source()

    # ------------------------------------------------------------ view
    @property
    def playing(self) -> bool:
        return self._play_timer is not None

    def status_text(self) -> str:
        app = self.app
        if app.error is not None:
            state = "✗ failed"
        elif app.running:
            state = "● live"
        else:
            state = "■ done"
        return f"{state} {'▶ playing' if self.playing else '⏸ paused'}"

    def refresh_view(self, *, picker: bool = False) -> None:
        """Push the navigator's state to every visible widget."""
        app = self.app
        self.query_one(TraceHeader).show(self.nav, app.metadata, self.status_text(), len(app.store))
        lanes = self.query_one(LanesView)
        lanes.placeholder = app.placeholder()
        lanes.sync()
        self._show_active_panel()
        if picker:
            self.query_one(PEPicker).rebuild(force=True)

    def _show_active_panel(self) -> None:
        active = self.query_one("#panels", TabbedContent).active
        if active:
            key = active.removeprefix("tab-")
            self.query_one(f"#panel-{key}").show(self.nav)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self._show_active_panel()

    def on_resize(self) -> None:
        self.set_class(self.size.width < 100, "-narrow")
        self.set_class(self.size.width < 70, "-tiny")
        self.call_after_refresh(self._show_active_panel)

    # ------------------------------------------------------------ messages
    def on_span_selected(self, message: SpanSelected) -> None:
        self.nav.selected = message.event
        self.nav.goto(message.at_ns)
        self.query_one("#panels", TabbedContent).active = "tab-details"
        self.refresh_view()

    def on_pes_chosen(self, message: PEsChosen) -> None:
        self.remove_class("-picker")
        self.nav.pes = message.pes
        self.query_one(LanesView).scroll_to(y=0, animate=False)
        self.refresh_view()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "log-filter":
            self.query_one(LanesView).focus()
            self._show_active_panel()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "log-filter":
            self._show_active_panel()

    # ------------------------------------------------------------ actions
    def action_next_event(self) -> None:
        self.nav.next_event()
        self.refresh_view()

    def action_prev_event(self) -> None:
        self.nav.prev_event()
        self.refresh_view()

    def action_step(self, direction: int) -> None:
        self.nav.step(direction)
        self.refresh_view()

    def action_dt(self, direction: int) -> None:
        self.nav.change_dt(direction)
        self.refresh_view()

    def action_stall(self, direction: int) -> None:
        if self.nav.next_stall(direction) is None:
            self.notify("no further stall on the shown PEs", timeout=2)
        else:
            self.query_one("#panels", TabbedContent).active = "tab-stalls"
        self.refresh_view()

    def action_zoom_in(self) -> None:
        self.nav.zoom(ZOOM_FACTOR)
        self.refresh_view()

    def action_zoom_out(self) -> None:
        self.nav.zoom(1 / ZOOM_FACTOR)
        self.refresh_view()

    def action_pan(self, direction: int) -> None:
        self.nav.pan(direction)
        self.refresh_view()

    def action_fit(self) -> None:
        self.nav.fit()
        self.refresh_view()

    def action_follow(self) -> None:
        self.nav.follow_live()
        self.refresh_view()

    def action_play(self) -> None:
        if self._play_timer is not None:
            self._play_timer.stop()
            self._play_timer = None
        else:
            self.nav.follow = False
            self._play_timer = self.set_interval(PLAY_INTERVAL_S, self._play_tick)
        self.refresh_view()

    def _play_tick(self) -> None:
        if not self.nav.play_tick() and not self.app.running:
            self.action_play()
            return
        self.refresh_view()

    def action_goto(self) -> None:
        def done(t: float | None) -> None:
            if t is not None:
                self.nav.goto(t)
                self.refresh_view()

        self.app.push_screen(GotoTimeScreen(self.nav.model.end_ns), done)

    def action_channels(self) -> None:
        self.nav.toggle_channels()
        self.refresh_view()

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
