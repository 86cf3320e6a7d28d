"""The ``?`` screen: every key, and what each glyph in the lanes means."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = [
    (". / ,", "next / previous event on the shown PEs"),
    ("] / [", "step forward / back by Δt"),
    ("+ / -", "make Δt larger / smaller"),
    ("g", "go to a time (250, 1.5us, 2ms)"),
    ("n / N", "next / previous stall (selects it)"),
    ("w / s", "zoom in / out around the cursor"),
    ("a / d", "pan left / right"),
    ("f", "fit the whole run"),
    ("space", "play / pause through time"),
    ("F", "follow the live simulation"),
    ("/", "filter the event log"),
    ("p", "search PEs by id (enter on a PE shows it, on a CUBE/SIP all of its PEs)"),
    ("1-7", "FIFOs, stalls, loads, log, details, why, source panel"),
    ("c", "critical path over the lanes (━), marked in the FIFOs and loads panels"),
    ("> / <", "next / previous step of the critical path (why panel; shows its PE)"),
    ("j / k", "source panel: the line below / above (esc: back to the line at the cursor)"),
    ("enter", "source panel: select the line's next command on the timeline"),
    ("tab", "next panel / widget"),
    ("click", "select the span under the mouse"),
    ("h", "show / hide the HBM pseudo-channel lanes of shown PEs"),
    ("P", "probe screen: DMA hop-distance table"),
    ("r", "what if: re-time the run under changes (--what-if syntax), compare"),
    ("ctrl+p", "command palette"),
    ("?", "this help"),
    ("q", "quit"),
]

COMPARE_KEYS = [
    (". / ,", "next / previous event on the shown PEs of either run"),
    ("] / [", "step forward / back by Δt"),
    ("+ / -", "make Δt larger / smaller"),
    ("g", "go to a time (250, 1.5us, 2ms)"),
    ("n / N", "next / previous stall start on either run"),
    ("w / s", "zoom in / out around the cursor (both runs)"),
    ("a / d", "pan left / right"),
    ("f", "fit the longer run"),
    ("space", "play / pause through time"),
    ("p", "search PEs by id (both runs; a PE one run lacks says so)"),
    ("1-3", "FIFOs, stalls, loads panel (A above, B below)"),
    ("tab", "next panel / widget"),
    ("click", "put the cursor on the span under the mouse"),
    ("h", "show / hide the HBM pseudo-channel lanes of shown PEs"),
    ("ctrl+p", "command palette"),
    ("?", "this help"),
    ("q", "quit"),
]

GLYPHS = [
    ("█", "busy (engine command, CPU dispatch)"),
    ("▓", "explicit CPU work (tl.cycles)"),
    ("▒", "stalled (stall or lazy-load wait)"),
    ("▌ ░", "busy / stalled for part of the cell"),
    ("▏", "one span narrower than a cell"),
    ("▚", "several spans narrower than a cell"),
    ("▼", "the cursor on the time axis"),
    ("▸", "lane of the selected span"),
    ("━", "on the critical path (c); darker on the why panel's step"),
    ("util", "share of the run any engine but PE_CPU is busy (picker and lane title)"),
]


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "close"),
        Binding("question_mark", "close", "close"),
        Binding("q", "close", "close"),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 84; max-width: 100%; height: auto; max-height: 100%; scrollbar-gutter: stable;
        border: round $accent; background: $panel; padding: 0 1;
    }
    """

    def __init__(self, keys: list[tuple[str, str]] = KEYS) -> None:
        super().__init__()
        self.keys = keys

    def compose(self) -> ComposeResult:
        keys = Table.grid(padding=(0, 2))
        keys.add_column(style="bold", no_wrap=True)
        keys.add_column()
        for k, what in self.keys:
            keys.add_row(k, what)
        glyphs = Table.grid(padding=(0, 2))
        glyphs.add_column(style="bold", no_wrap=True)
        glyphs.add_column()
        for g, what in GLYPHS:
            glyphs.add_row(g, what)
        with VerticalScroll():
            yield Static(Text("kernbench-tui — keys", style="bold underline"))
            yield Static(keys)
            yield Static(Text("\nlanes", style="bold underline"))
            yield Static(glyphs)
            yield Static(Text("\nescape, ? or q closes", style="dim"))

    def action_close(self) -> None:
        self.dismiss(None)
