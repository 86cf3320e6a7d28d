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
from kernbench.events.timeline import TimelineModel
from kernbench.events.tracefile import Trace, TraceMetadata
from kernbench.events.types import Event
from kernbench.printable import printable
from kernbench_tui.commands import DebuggerCommands
from kernbench_tui.navigator import Navigator
from kernbench_tui.pair import TimelinePair
from kernbench_tui.run_state import RunState
from kernbench_tui.screens.compare import CompareScreen
from kernbench_tui.sources import Retimer, Source, StoreSource, WholeTraceSource

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


class SideRun:
    """One side: what the user named, its source, its events once loaded, how it went."""

    def __init__(self, label: str, text: str, source: Source | WholeTraceSource) -> None:
        self.label = label
        self.text = printable(text)  # as written (the file or "KERNEL [options]"), shown as text: never parsed again
        self.source = source
        self.model = TimelineModel(EventStore())
        self.metadata = TraceMetadata(kernel=self.text)
        self.running = True
        self.error: str | None = None
        self.status = "waiting to start"

    @property
    def latency_ns(self) -> float | None:
        """The run's latency: the simulator's figure if recorded, else its last event."""
        if self.running:
            return None
        latency = self.metadata.extra.get("latency_ns") if isinstance(self.metadata.extra, dict) else None
        return float(latency) if latency is not None else (self.metadata.end_ns or self.model.end_ns)

    def state(self) -> RunState:
        if self.error is not None:
            note = f"{self.label} failed: {self.error}"
        elif self.running:
            note = f"{self.label}: {self.status} …"
        else:
            note = ""
        return RunState(self.metadata, self.running, self.error, len(self.model.store), note)


class ComparedRuns:
    """Two runs on one time axis: each side, the pair of their models and the navigator over it — what the
    compare screen reads of its debugger. :class:`CompareApp` loads its sides; the debugger's what-if
    prompt (:class:`~kernbench_tui.screens.whatif.WhatIfScreen`) compares two already in hand."""

    def __init__(self, sides: list[SideRun], retimer: Retimer | None = None) -> None:
        """``retimer``: what re-times run A under other changes (the ``r`` prompt), if anything does."""
        self.sides = sides
        self.pair = TimelinePair(*(side.model for side in self.sides))
        self.nav = Navigator(self.pair)
        self.retimes_a = retimer  # (not TimelineApp.retimer(): a compare screen asks this one)

    @property
    def running(self) -> bool:
        return any(side.running for side in self.sides)

    @property
    def error(self) -> str | None:
        """Every side's failure, one clause each (None if both ran)."""
        failed = [f"{side.label} ({side.text}): {side.error}" for side in self.sides if side.error is not None]
        return "; ".join(failed) or None

    @property
    def metadata(self) -> TraceMetadata:
        return self.sides[0].metadata

    @property
    def store(self) -> EventStore:
        return self.sides[0].model.store

    def run_state(self) -> tuple[RunState, ...]:
        return tuple(side.state() for side in self.sides)

    def start_source(self) -> None:
        """Nothing to load: both sides are in hand (CompareApp loads its own)."""

    def arrived(self) -> None:
        """A side is complete: the axis fits the longer run; the first side also sets Δt and the cursor."""
        nav = self.nav
        nav.ensure_pes()
        nav.fit()
        if sum(not side.running for side in self.sides) == 1:
            nav.default_dt()
            nav.cursor_ns = nav.start_ns


def side_of(label: str, text: str, trace: Trace, model: TimelineModel | None = None) -> SideRun:
    """A side already loaded: ``trace`` as run ``label``, named ``text``; ``model``: one already answering
    questions of ``trace.store`` (its caches are reused: a what-if's run A is the debugger's own)."""
    side = SideRun(label, text, StoreSource(trace.store, trace.metadata, description=text))
    if model is not None and model.store is trace.store:
        side.model = model
    else:
        side.model.set_store(trace.store)
    side.metadata = trace.metadata
    side.running = False
    return side


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
