"""The one-line header: what runs, where the cursor is, live or paused."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from kernbench_tui.navigator import Navigator, ViewState
from kernbench_tui.run_state import RunState
from kernbench_tui.timefmt import format_ns


class TraceHeader(Widget):
    DEFAULT_CSS = """
    TraceHeader {
        height: 1;
        background: $primary-background;
        color: $text;
        padding: 0 1;
    }
    """

    view: reactive[ViewState | None] = reactive(None)
    run: reactive[RunState | None] = reactive(None)
    playing = reactive(False)

    def __init__(self, nav: Navigator, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.nav = nav

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        run, view = self.run, self.view
        if run is None or view is None:
            return text
        meta = run.metadata
        for part in (meta.kernel or "?", meta.topology or "?", meta.variant or "-"):
            text.append(f"{part} │ ")
        text.append(f"t={format_ns(view.cursor_ns)}", style="bold")
        text.append(f" / {format_ns(self.nav.model.end_ns)} │ ")
        text.append(f"{run.status} {'▶ playing' if self.playing else '⏸ paused'}", style="bold")
        text.append(f" │ Δt={format_ns(view.dt_ns)} │ {run.n_events:,} ev")
        if view.follow:
            text.append(" │ following", style="italic")
        text.append(" │ kernbench", style="dim")
        return text
