"""``CompareApp``: two runs on one time axis (``kernbench-tui compare A B``).

Each side is a source as for :class:`~kernbench_tui.app.KernbenchApp` (a trace
file, or a kernel simulated in a child process). Both load at once, each in
its own worker thread, into a store of its own; a side is drawn as soon as it
is complete (a live side says what it is doing until then). The two models are
navigated as one :class:`~kernbench_tui.pair.TimelinePair`.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.message import Message
from textual.screen import Screen
from textual.worker import get_current_worker

from kernbench.errors import KernbenchError
from kernbench.events.store import ColumnBatch, EventStore
from kernbench.events.tracefile import Trace, TraceMetadata
from kernbench.events.types import Event
from kernbench.printable import printable
from kernbench_tui.commands import DebuggerCommands
from kernbench_tui.compared import ComparedRuns, SideRun
from kernbench_tui.screens.compare import CompareScreen
from kernbench_tui.sources import Retimer, Source, WholeTraceSource

LABELS = ("A", "B")


class SideCancelled(Exception):
    """Raised into a side's source when the app closes, to end it early."""


class SideStatus(Message):
    def __init__(self, index: int, text: str, metadata: TraceMetadata | None = None) -> None:
        super().__init__()
        self.index, self.text, self.metadata = index, text, metadata


class SideLoaded(Message):
    def __init__(self, index: int, trace: Trace) -> None:
        super().__init__()
        self.index, self.trace = index, trace


class SideFailed(Message):
    def __init__(self, index: int, error: str, recorded: EventStore) -> None:
        super().__init__()
        self.index, self.error, self.recorded = index, error, recorded


class CompareApp(ComparedRuns, App[None]):
    CSS_PATH = Path(__file__).with_name("app.tcss")
    TITLE = "kernbench compare"
    COMMANDS = App.COMMANDS | {DebuggerCommands}

    def __init__(self, sides: list[tuple[str, Source | WholeTraceSource]], retimer: Retimer | None = None) -> None:
        """``sides``: (text as written, source) for A and B; ``retimer``: what re-times A (``run … --what-if``)."""
        App.__init__(self)
        runs = [SideRun(label, text, source) for label, (text, source) in zip(LABELS, sides, strict=True)]
        ComparedRuns.__init__(self, runs, retimer)

    def get_default_screen(self) -> Screen[None]:
        return CompareScreen()

    def start_source(self) -> None:
        for index in range(len(self.sides)):
            self.run_worker(lambda i=index: self._load(i), thread=True, name=f"side-{LABELS[index]}")

    def _load(self, index: int) -> None:
        """Worker body: read or simulate one side whole, then hand its store to the UI."""
        worker = get_current_worker()
        source = self.sides[index].source
        store = EventStore()

        def emit(batch: list[Event] | ColumnBatch) -> None:
            if worker.is_cancelled:
                raise SideCancelled()
            if len(batch):
                store.append_columns(batch) if isinstance(batch, ColumnBatch) else store.append(batch)

        if hasattr(source, "on_status"):
            source.on_status = lambda text, meta=None: self.post_message(SideStatus(index, text, meta))
        try:
            trace = source.open() if isinstance(source, WholeTraceSource) else Trace(store, source.run(emit))
            self.post_message(SideLoaded(index, trace))
        except SideCancelled:
            return
        except KernbenchError as exc:
            self.post_message(SideFailed(index, str(exc), store))
        except Exception as exc:  # a crashing kernel must not take the debugger down
            self.post_message(SideFailed(index, f"{type(exc).__name__}: {exc}", store))

    # ------------------------------------------------------------ side messages
    def on_side_status(self, message: SideStatus) -> None:
        side = self.sides[message.index]
        side.status = message.text
        if message.metadata is not None:
            side.metadata = message.metadata
        self._show_runs()

    def on_side_loaded(self, message: SideLoaded) -> None:
        side = self.sides[message.index]
        side.model.set_store(message.trace.store)
        side.metadata = message.trace.metadata
        side.running = False
        self._arrived()

    def on_side_failed(self, message: SideFailed) -> None:
        side = self.sides[message.index]
        side.model.set_store(message.recorded)  # what ran before the failure is still worth a look
        side.running = False
        side.error = printable(message.error, keep="\n")
        self.notify(side.error, title=f"{side.label} failed: {side.text}", severity="error", timeout=30)
        self._arrived()

    def _arrived(self) -> None:
        self.arrived()
        self._show_runs()

    def _show_runs(self) -> None:
        self.main.run = self.run_state()

    @property
    def main(self) -> CompareScreen:
        for screen in self.screen_stack:
            if isinstance(screen, CompareScreen):
                return screen
        raise LookupError("compare screen not mounted")
