"""The ``g`` prompt: type a time, land the cursor on it."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from kernbench_tui.timefmt import TimeParseError, format_ns, parse_time


class GotoTimeScreen(ModalScreen[float | None]):
    """Returns the time in ns, or None if cancelled."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = """
    GotoTimeScreen { align: center middle; }
    GotoTimeScreen > Vertical {
        width: 48; height: auto; border: round $accent; background: $panel; padding: 0 1;
    }
    GotoTimeScreen #goto-error { color: $error; }
    """

    def __init__(self, end_ns: float) -> None:
        super().__init__()
        self.end_ns = end_ns

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"go to time (0 … {format_ns(self.end_ns)}); e.g. 250, 1.5us")
            yield Input(placeholder="time", id="goto-input")
            yield Static("", id="goto-error")

    @on(Input.Submitted, "#goto-input")
    def submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            t = parse_time(event.value)
        except TimeParseError as exc:
            self.query_one("#goto-error", Static).update(str(exc))
            return
        self.dismiss(t)

    def action_cancel(self) -> None:
        self.dismiss(None)
