"""``KernbenchApp``: a thin Textual view over a :class:`TimelineModel`.

Launch on a live simulation or a trace file::

    from kernbench_tui.app import KernbenchApp
    from kernbench_tui.sources import CallableSource, TraceFileSource

    KernbenchApp(CallableSource(run_fn, metadata)).run()   # run_fn(bus) simulates
    KernbenchApp(TraceFileSource("run.kbtrace")).run()

The source runs in a worker thread; live events arrive as batched
:class:`~kernbench_tui.messages.EventsArrived` messages and are appended to the store
on the UI thread, so the user browses what has been simulated so far.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from textual.app import App
from textual.screen import Screen
from textual.timer import Timer
from textual.worker import NoActiveWorker, get_current_worker

from kernbench.errors import KernbenchError
from kernbench.events.store import ColumnBatch, EventStore, columnize
from kernbench.events.timeline import TimelineModel
from kernbench.events.tracefile import TraceMetadata
from kernbench.events.types import Event
from kernbench.printable import printable
from kernbench_tui.commands import DebuggerCommands
from kernbench_tui.compared import ComparedRuns
from kernbench_tui.messages import EventsArrived, SourceFailed, SourceFinished, SourceStatus, TraceOpened
from kernbench_tui.navigator import Navigator
from kernbench_tui.run_state import RunState
from kernbench_tui.screens.main import MainScreen, TimelineApp
from kernbench_tui.sources import Retimer, Source, TraceFileSource, WholeTraceSource

MAX_PENDING_BATCHES = 2
LIVE_REFRESH_S = 0.25
PREPARING_TICK_S = 0.5  # how often the "preparing … 2.5 s" line counts up
LIVE_SWITCH_INTERVAL_S = 0.0005


class SourceCancelled(Exception):
    """Raised into a running simulation when the app closes, to end it early."""


@dataclass(frozen=True)
class RunOutputs:
    """What ``kernbench-tui run`` was asked for besides the view: files written once the run ends (a failed
    run's events beside them as ``NAME.partial.EXT``, as ``kernbench run`` does) and the critical path shown."""

    trace: str | None = None
    perfetto: str | None = None
    explain: bool = False
    by: str = "cause"  # --explain --by line / function: the Source view (its heat per line) rather than the Why panel
    what_if: tuple[str, ...] = ()  # --what-if: not this app but a comparison of the run and its re-timing (kernbench_tui.cli)


class KernbenchApp(App[None]):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live elsewhere
    TITLE = "kernbench"
    COMMANDS = App.COMMANDS | {DebuggerCommands}
    ENABLE_COMMAND_PALETTE = True

    def __init__(self, source: Source | WholeTraceSource, *, follow: bool = True, outputs: RunOutputs | None = None) -> None:
        super().__init__()
        self.source = source
        self.outputs = outputs or RunOutputs()
        self.store = EventStore()
        self.model = TimelineModel(self.store)
        self.nav = Navigator(self.model, follow=follow)
        self.metadata = TraceMetadata(kernel=getattr(source, "description", ""))
        self.running = True
        self.error: str | None = None
        self.status = f"loading {self.metadata.kernel or 'the run'}"
        self._started = time.monotonic()
        self._preparing: Timer | None = None
        self._batch_slots = threading.Semaphore(MAX_PENDING_BATCHES)
        self._live_refresh: Timer | None = None
        self._switch_interval: float | None = None

    def get_default_screen(self) -> Screen[None]:
        return MainScreen()

    @property
    def main(self) -> MainScreen:
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen):
                return screen
        raise LookupError("main screen not mounted")

    def start_source(self) -> None:
        """Run the source in a worker thread (called once the main screen is up).

        While it runs, the interpreter switches threads every
        LIVE_SWITCH_INTERVAL_S instead of 5 ms: the simulation is pure Python
        and would otherwise make every hop of the UI's event loop wait for
        the GIL, so keys would take hundreds of ms to answer.
        """
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(LIVE_SWITCH_INTERVAL_S)
        self._started = time.monotonic()
        self._preparing = self.set_interval(PREPARING_TICK_S, self._tick_preparing)
        self.run_worker(self._run_source, thread=True, exclusive=True, name="source")

    @property
    def description(self) -> str:
        """The run as its user named it (the source's description: ``gqa-decode --variant opt3``, a file's name)."""
        return printable(getattr(self.source, "description", "") or self.metadata.kernel or "the run")

    def prepare_what_if(self) -> None:
        """The compare screen a what-if's answer opens, imported on a worker thread while the prompt is typed in
        (:class:`~kernbench_tui.screens.whatif.WhatIfHost`)."""
        self.run_worker(_import_compare_screen, thread=True, group="what-if-import", name="compare screen import")

    def push_what_if(self, runs: ComparedRuns, retimer: Retimer, changes: Sequence[str]) -> None:
        """The run and its re-timing side by side, over the main screen (:class:`~kernbench_tui.screens.whatif.WhatIfHost`)."""
        from kernbench_tui.screens.compare import WhatIfScreen

        self.push_screen(WhatIfScreen(runs, retimer, changes))

    def retimer(self) -> Retimer | str:
        """What re-times the run for the ``r`` prompt: a finished live run's (its command logs and Runtime,
        kept by the source), or one line saying why this run cannot be re-timed."""
        if self.running:
            return "the run is still going: re-time it once it has ended"
        if self.error is not None:
            return "the run failed: only a run that ended can be re-timed"
        found = getattr(self.source, "retimer", None)
        if isinstance(found, Retimer):
            return found
        if isinstance(self.source, TraceFileSource):  # (its kernel run again for the command log, on the first what-if)
            from kernbench.events.tracefile import Trace
            from kernbench_tui.rerun import SavedTraceRetimer

            made = SavedTraceRetimer.of(Trace(self.store, self.metadata), stopping=_worker_cancelled)
            if not isinstance(made, str):
                self.source.retimer = made  # (kept: the kernel runs again once; closed with the app)
            return made
        return f"{self.description} holds no command log to re-time (a live run does: kernbench-tui run KERNEL, or show(result, rt))"

    def on_unmount(self) -> None:
        """A live run's child stays after the run to re-time it: it ends with the app."""
        close = getattr(getattr(self.source, "retimer", None), "close", None)
        if callable(close):
            close()

    def run_state(self) -> RunState:
        """The run as the screen shows it (handed down as ``MainScreen.run``)."""
        return RunState(self.metadata, self.running, self.error, len(self.store), self.placeholder())

    def _show_run(self) -> None:
        self.main.run = self.run_state()

    def placeholder(self) -> str:
        """The line the lanes show while there is nothing to draw yet (or at all)."""
        if len(self.store):
            return ""
        if self.error is not None:
            return "the run failed before its first event (the message is in the notification)"
        if self.running:
            return f"{self.status} … {time.monotonic() - self._started:.1f} s"
        return "no events in this run"

    def _tick_preparing(self) -> None:
        if len(self.store) or not self.running:
            self._stop_preparing()
        self._show_run()

    def _stop_preparing(self) -> None:
        if self._preparing is not None:
            self._preparing.stop()
            self._preparing = None

    def on_source_status(self, message: SourceStatus) -> None:
        self.status = message.text
        if message.metadata is not None:
            self.metadata = message.metadata
        self._show_run()

    def _source_done(self) -> None:
        self._stop_preparing()
        self.running = False
        if self._switch_interval is not None:
            sys.setswitchinterval(self._switch_interval)
            self._switch_interval = None

    def _run_source(self) -> None:
        worker = get_current_worker()

        def emit(batch: list[Event] | ColumnBatch) -> None:
            if len(batch) == 0:  # a heartbeat: only check whether to stop
                if worker.is_cancelled:
                    raise SourceCancelled()
                return
            # Back-pressure: at most MAX_PENDING_BATCHES batches wait for the UI, so a
            # fast simulation cannot flood the message queue (or starve keys).
            while not self._batch_slots.acquire(timeout=0.05):
                if worker.is_cancelled:
                    raise SourceCancelled()
            if worker.is_cancelled:  # the app is closing: stop the simulation here
                raise SourceCancelled()
            if not isinstance(batch, ColumnBatch):
                batch = columnize(batch)  # per-event work stays off the UI thread
            self.post_message(EventsArrived(batch))

        if hasattr(self.source, "on_status"):
            self.source.on_status = lambda text, meta=None: self.post_message(SourceStatus(text, meta))
        try:
            opener = getattr(self.source, "open", None)
            if callable(opener):
                self.post_message(TraceOpened(opener()))
                return
            meta = cast(Source, self.source).run(emit)  # no open(): a source that runs
            self.post_message(SourceFinished(meta))
        except SourceCancelled:  # the app is closing; nothing will be shown
            self._source_done()
            return
        except KernbenchError as exc:
            self.post_message(SourceFailed(str(exc)))
        except Exception as exc:  # a crashing kernel must not take the debugger down
            self.post_message(SourceFailed(f"{type(exc).__name__}: {exc}"))

    # ------------------------------------------------------------ source messages
    def on_events_arrived(self, message: EventsArrived) -> None:
        self._batch_slots.release()
        first = len(self.store) == 0
        self.store.append_columns(message.batch)
        self.nav.on_new_events()
        if first and not self.nav.follow:
            self.nav.fit()
            self.nav.default_dt()
        if first:
            self._show_run()
        elif self._live_refresh is None:
            # Redraw for new data at most LIVE_REFRESH_S apart; keys redraw at once.
            self._live_refresh = self.set_timer(LIVE_REFRESH_S, self._refresh_live)

    def _refresh_live(self) -> None:
        self._live_refresh = None
        if not any(isinstance(screen, MainScreen) for screen in self.screen_stack):
            return  # the app is closing (its screens are gone) as the refresh came due
        self._show_run()

    def on_trace_opened(self, message: TraceOpened) -> None:
        self.store = message.trace.store
        self.model.set_store(self.store)
        self.metadata = message.trace.metadata
        self._source_done()
        self.nav.follow = False
        self.nav.ensure_pes()
        self.nav.fit()
        self.nav.default_dt()
        self.nav.cursor_ns = self.nav.start_ns
        self._show_run()

    def on_source_finished(self, message: SourceFinished) -> None:
        self._source_done()
        self.store.compact()  # streams indexed batch by batch, folded into one flat index: fewer objects to keep and scan
        self.metadata = message.metadata
        if self.nav.follow:
            self.nav.on_new_events()
        self.nav.default_dt()
        self._show_run()
        self._write_outputs(partial=False)
        if self.outputs.explain:
            self.main.action_critical_path()
            self.main.action_panel("source" if self.outputs.by in ("line", "function") else "why")

    def on_source_failed(self, message: SourceFailed) -> None:
        self._source_done()
        self.error = message.error
        self.notify(message.error, title="simulation failed", severity="error", timeout=30)
        self._show_run()
        if len(self.store):
            self._write_outputs(partial=True)

    def _write_outputs(self, partial: bool) -> None:
        """``--trace`` / ``--perfetto`` of ``kernbench-tui run``, written as ``kernbench run`` writes them."""
        out = self.outputs
        if not (out.trace or out.perfetto):
            return
        from kernbench.commands.run import save_outputs

        try:
            saved = save_outputs(out.trace, out.perfetto, self.store, self.metadata, partial)
        except (KernbenchError, OSError) as exc:
            self.error = self.error or f"saving the run failed: {exc}"
            self.notify(str(exc), title="saving the run failed", severity="error", timeout=30)
            return
        self.notify(f"saved {', '.join(saved)}", title="run saved")


if TYPE_CHECKING:  # the app offers what its screen reads of it (MainScreen.debugger)
    _offers: type[TimelineApp] = KernbenchApp


def _import_compare_screen() -> None:
    import kernbench_tui.screens.compare  # noqa: F401


def _worker_cancelled() -> bool:
    """Whether the worker this runs in was cancelled (escape in the what-if prompt); False outside a worker."""
    try:
        return get_current_worker().is_cancelled
    except NoActiveWorker:
        return False
