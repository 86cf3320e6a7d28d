"""The one-line header: what runs, where the cursor is, live or paused."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from kernbench.events.tracefile import TraceMetadata
from kernbench_tui.navigator import Navigator
from kernbench_tui.timefmt import format_ns


class TraceHeader(Static):
    DEFAULT_CSS = """
    TraceHeader {
        height: 1;
        background: $primary-background;
        color: $text;
        padding: 0 1;
    }
    """

    def show(self, nav: Navigator, meta: TraceMetadata, status: str, n_events: int) -> None:
        text = Text(no_wrap=True, overflow="ellipsis")
        for part in (meta.kernel or "?", meta.topology or "?", meta.variant or "-"):
            text.append(f"{part} │ ")
        text.append(f"t={format_ns(nav.cursor_ns)}", style="bold")
        text.append(f" / {format_ns(nav.model.end_ns)} │ ")
        text.append(status, style="bold")
        text.append(f" │ Δt={format_ns(nav.dt_ns)} │ {n_events:,} ev")
        if nav.follow:
            text.append(" │ following", style="italic")
        text.append(" │ kernbench", style="dim")
        self.update(text, layout=False)
