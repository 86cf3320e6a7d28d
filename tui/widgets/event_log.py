"""Events around the cursor, with a filter (``/`` focuses it).

The filter is words: ``kind:stall`` (or any kind name, comma-separated)
keeps those kinds; any other word must appear in the component, label or
detail. The row marked ``▶`` is the first event at or after the cursor.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Input

from kernbench.events.types import EventKind
from kernbench_tui.navigator import AnyNavigator, ViewState
from kernbench_tui.timefmt import format_in, format_ns, unit_for
from kernbench_tui.widgets.panels import Panel

KIND_NAMES = {k.name.lower(): k for k in EventKind}


def parse_filter(text: str) -> tuple[set[EventKind] | None, str | None]:
    """``"kind:stall,load_wait pe3"`` → ({STALL, LOAD_WAIT}, "pe3")."""
    kinds: set[EventKind] | None = None
    words = []
    for word in text.split():
        if word.lower().startswith("kind:"):
            kinds = kinds or set()
            for name in word[5:].split(","):
                name = name.strip().lower()
                matches = [k for n, k in KIND_NAMES.items() if n == name] or [k for n, k in KIND_NAMES.items() if n.startswith(name)]
                kinds.update(matches)
        else:
            words.append(word)
    return kinds, (" ".join(words) or None)


class EventLines(Panel):
    """The events around the cursor that pass the filter, one per line."""

    filter_text = reactive("")

    def text(self, nav: AnyNavigator, width: int, height: int) -> Text:
        text = Text(no_wrap=True)
        kinds, needle = parse_filter(self.filter_text)
        height = max(2, height - 1)  # under the filter
        before_n = max(1, (height - 1) // 3)
        model = nav.model
        before, after = model.events_around(nav.cursor_ns, before_n, height - before_n, kinds=kinds, text=needle)
        unit, scale = unit_for(model.end_ns)
        resolution = scale / 1000 if scale > 1 else 0.001  # one unit, three decimals: a steady column
        for i, row in enumerate(before + after):
            e = model.store.event(row)
            mark = "▶" if i == len(before) else " "
            span = f"+{format_ns(e.duration_ns)}" if e.is_span else ""
            line = f"{mark}{format_in(e.t_ns, unit, scale, resolution):>11} {e.kind.name.lower():<14} {e.component:<28} {e.label} {span}"
            if e.detail and e.kind == EventKind.STALL:
                line += f" on {e.detail}"
            style = "bold" if mark == "▶" else ("red" if e.kind == EventKind.STALL else "")
            text.append(line[:width] + "\n", style=style)
        if not before and not after:
            text.append("no event matches the filter")
        return text


class EventLog(Vertical):
    DEFAULT_CSS = """
    EventLog { height: 1fr; }
    EventLog Input { height: 1; border: none; padding: 0 1; margin: 0; }
    """

    view: reactive[ViewState | None] = reactive(None, repaint=False)  # handed on to the lines

    def __init__(self, nav: AnyNavigator, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.nav = nav

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter: words, kind:stall,dispatch … (enter)", id="log-filter")
        yield EventLines(self.nav, id="log-lines").data_bind(EventLog.view)

    @on(Input.Changed, "#log-filter")
    def filter_changed(self, event: Input.Changed) -> None:
        self.query_one(EventLines).filter_text = event.value
