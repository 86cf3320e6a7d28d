"""The compare screen's header: each run with its latency, the difference, the cursor.

::

     A  gemm-primitive                  2.462µs │ t=0ns / 2.781µs │ ■ done ⏸ paused │ Δt=20ns
     B  gemm-primitive --layout naive   2.781µs │ B−A +319.856ns (+13.0%)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from kernbench_tui.navigator import AnyNavigator, ViewState
from kernbench_tui.run_state import RunState
from kernbench_tui.timefmt import format_ns

if TYPE_CHECKING:  # the app module imports this widget
    from kernbench_tui.compared import SideRun


def difference_text(a_ns: float | None, b_ns: float | None) -> str:
    """``B−A +319.856ns (+13.0%)``; what is missing while a side has no latency yet."""
    if a_ns is None or b_ns is None:
        return "B−A: waiting for both runs"
    diff = b_ns - a_ns
    sign = "+" if diff >= 0 else "−"
    share = f" ({sign}{abs(diff) / a_ns:.1%})" if a_ns > 0 else ""
    return f"B−A {sign}{format_ns(abs(diff))}{share}"


class CompareHeader(Widget):
    DEFAULT_CSS = """
    CompareHeader {
        height: 2;
        background: $primary-background;
        color: $text;
        padding: 0 1;
    }
    """

    view: reactive[ViewState | None] = reactive(None)
    run: reactive[tuple[RunState, ...] | None] = reactive(None)
    playing = reactive(False)

    def __init__(self, nav: AnyNavigator, sides: Sequence[SideRun], *, id: str | None = None) -> None:
        """``sides``: the app's SideRun of A and B (label, text as written, latency)."""
        super().__init__(id=id)
        self.nav = nav
        self.sides = sides

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        view, runs = self.view, self.run
        if view is None or runs is None:
            return text
        name_w = min(40, max(len(side.text) for side in self.sides))
        for side, run in zip(self.sides, runs, strict=True):
            latency = side.latency_ns
            shown = run.status if latency is None or run.error else format_ns(latency)
            text.append(f"{side.label}  ", style="bold")
            text.append(f"{side.text[:name_w]:<{name_w}} ")
            text.append(f"{shown:>11}", style="bold")
            if side is self.sides[0]:
                text.append(f" │ t={format_ns(view.cursor_ns)}", style="bold")
                text.append(f" / {format_ns(self.nav.model.end_ns)} │ ")
                text.append("▶ playing" if self.playing else "⏸ paused", style="bold")
                text.append(f" │ Δt={format_ns(view.dt_ns)}\n")
            else:
                text.append(" │ ")
                text.append(difference_text(self.sides[0].latency_ns, latency), style="bold")
        return text
