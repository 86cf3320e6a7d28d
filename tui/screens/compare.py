"""The compare screen: two runs stacked on one time axis, one cursor, one set of keys.

Per shown PE the lanes of run A, then of run B (a PE one run lacks gets one
line saying so); the header gives both latencies and their difference; the
panels show each run's state at the cursor. Every key of the main screen that
moves the cursor, the window or the PE choice acts on both runs at once.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, cast

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.reactive import var
from textual.widgets import TabbedContent, TabPane

from kernbench.events.tracefile import Trace
from kernbench.events.types import Event
from kernbench_tui.run_state import RunState
from kernbench_tui.screens.help import COMPARE_KEYS, HelpScreen
from kernbench_tui.screens.main import MainScreen
from kernbench_tui.screens.whatif import RETIME_A_KEYS, WHAT_IF_KEYS, CollectionsHeld, WhatIfAnswer, WhatIfPrompt, what_if_runs
from kernbench_tui.sources import Retimer
from kernbench_tui.widgets.compare_header import CompareHeader
from kernbench_tui.widgets.footer import Footer
from kernbench_tui.widgets.lanes import LanesView
from kernbench_tui.widgets.panels import FifoPanel, LoadsPanel, PairPanel, StallsPanel
from kernbench_tui.widgets.pe_picker import PEPicker

if TYPE_CHECKING:
    from kernbench_tui.compared import ComparedRuns
    from kernbench_tui.screens.main import TimelineApp

PAIR_PANELS = (("fifo", "FIFOs", FifoPanel), ("stalls", "Stalls", StallsPanel), ("loads", "Loads", LoadsPanel))
ONLY_FOR_ONE_RUN = {"follow", "probe", "filter_log", "critical_path", "path_step", "source_line", "source_select", "source_follow"}
# live following, the probe, the event log, one run's critical path, its source view


class CompareScreen(MainScreen):
    # The keys are MainScreen's; the run is not one RunState but one per side (CompareApp.run_state),
    # so ``run`` and ``watch_run`` narrow MainScreen's on purpose: only CompareApp sets them.
    run: var[tuple[RunState, ...] | None] = var(None, init=False)  # type: ignore[assignment]
    """Each side's run (set by the app whenever a side reports)."""

    def __init__(self, runs: ComparedRuns | None = None) -> None:
        """``runs``: the two runs shown, when they are not the app's (a what-if inside the debugger)."""
        super().__init__(cast("TimelineApp", runs) if runs is not None else None)

    @property
    def compare_app(self) -> ComparedRuns:
        """The two runs shown (CompareApp, or a what-if's pair inside the debugger)."""
        return cast("ComparedRuns", self.debugger)

    def compose(self) -> ComposeResult:
        nav, app = self.nav, self.compare_app
        lanes_sides = [(side.label, side.model) for side in app.sides]
        panel_sides = [(f"{side.label}  {side.text}", side.model) for side in app.sides]
        yield CompareHeader(nav, app.sides, id="header").data_bind(CompareScreen.view, CompareScreen.run, CompareScreen.playing)
        with Horizontal(id="body"):
            yield PEPicker(app.pair, utilization=app.pair.utilization_text, id="picker").data_bind(run=CompareScreen.run)
            with Vertical(id="center"):
                yield LanesView(nav, sides=lanes_sides, id="lanes").data_bind(CompareScreen.view)
                with TabbedContent(id="panels", initial="tab-stalls"):
                    for key, title, cls in PAIR_PANELS:
                        with TabPane(title, id=f"tab-{key}"):
                            yield PairPanel(nav, cls, panel_sides, id=f"panel-{key}").data_bind(CompareScreen.view)
        yield Footer()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "what_if":  # run A re-timed under other changes, where something re-times it (run … --what-if)
            return self.compare_app.retimes_a is not None
        if action in ONLY_FOR_ONE_RUN or (action == "panel" and parameters and parameters[0] not in {key for key, _, _ in PAIR_PANELS}):
            return False
        return True

    def watch_run(self, runs: tuple[RunState, ...]) -> None:  # type: ignore[override]
        lanes = self.query_one(LanesView)
        lanes.side_notes = tuple(run.placeholder for run in runs)
        lanes.placeholder = "  ".join(run.placeholder for run in runs if run.placeholder)
        self.view = self.nav.state()

    def action_stall(self, direction: int) -> None:
        """n / N: to where the next (previous) stall starts on either run; no selection (it would be one run's)."""
        t = self.nav.stall_start(direction)
        if t is None:
            self.notify("no further stall on the shown PEs of either run", timeout=2)
            return
        self.move(self.nav.goto, t)
        self.query_one("#panels", TabbedContent).active = "tab-stalls"

    def show_span(self, event: Event, at_ns: float) -> None:
        """A click on a span puts the cursor there (the panels show both runs at it)."""
        self.move(self.nav.goto, at_ns)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(RETIME_A_KEYS if self.compare_app.retimes_a is not None else COMPARE_KEYS))

    def action_what_if(self) -> None:
        """``r`` (where run A can be re-timed): the what-if prompt; its answer opens A and its new re-timing."""
        runs = self.compare_app
        retimer = "the run is still going: re-time it once it has ended" if runs.sides[0].running else runs.retimes_a
        if retimer is not None:
            self.app.push_screen(WhatIfPrompt(retimer), self._what_if_answered)

    def _what_if_answered(self, answer: WhatIfAnswer | None) -> None:
        runs = self.compare_app
        if answer is None or runs.retimes_a is None:
            return
        a = runs.sides[0]
        shown = what_if_runs(a.text, Trace(a.model.store, a.metadata), answer, self.nav.pes, a.model)
        self.app.push_screen(WhatIfScreen(shown, runs.retimes_a, answer.changes))


RELEASE_AFTER_S = 2.0


class WhatIfScreen(CompareScreen):
    """A run and its re-timing, pushed over the debugger's main screen: the compare view, plus ``r`` (another
    what-if, of the original run) and escape (back to the run)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "back"),
        Binding("r", "what_if", "what if"),
    ]

    def __init__(self, runs: ComparedRuns, retimer: Retimer, changes: Sequence[str]) -> None:
        super().__init__(runs)
        self.runs = runs
        self.retimer = retimer
        self.changes = tuple(changes)

    def on_mount(self) -> None:  # (MainScreen's runs too: Textual calls each class's own handler)
        self.set_timer(RELEASE_AFTER_S, CollectionsHeld.release)  # (if its footer is never drawn: a terminal out of focus)

    @on(Footer.KeysShown)
    def drawn(self) -> None:
        """The comparison is complete once its footer shows the keys: the collections held since Enter may run."""
        self.call_after_refresh(CollectionsHeld.release)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return True if action in ("back", "what_if") else super().check_action(action, parameters)

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_what_if(self) -> None:
        self.app.push_screen(WhatIfPrompt(self.retimer, " ".join(shlex.quote(c) for c in self.changes)), self._answered)

    def _answered(self, answer: WhatIfAnswer | None) -> None:
        if answer is None:
            return
        a = self.runs.sides[0]
        runs = what_if_runs(a.text, Trace(a.model.store, a.metadata), answer, self.nav.pes, a.model)
        self.app.switch_screen(WhatIfScreen(runs, self.retimer, answer.changes))

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(WHAT_IF_KEYS))
