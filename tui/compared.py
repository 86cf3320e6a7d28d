"""Runs compared on one time axis: each side (what the user named, its source, its events) and the pair of
their models with its navigator — what a compare screen reads (:class:`ComparedRuns`). Apart from the apps
and screens that show them, so that the compare app and the debugger's what-if both build on it without
importing each other."""

from __future__ import annotations

from kernbench.events.store import EventStore
from kernbench.events.timeline import TimelineModel
from kernbench.events.tracefile import Trace, TraceMetadata
from kernbench.printable import printable
from kernbench_tui.navigator import Navigator
from kernbench_tui.pair import TimelinePair
from kernbench_tui.run_state import RunState
from kernbench_tui.sources import Retimer, Source, StoreSource, WholeTraceSource


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
