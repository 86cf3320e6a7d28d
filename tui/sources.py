"""Where the debugger's events come from: a running simulation or a file.

A source is run by the app in a worker thread::

    class Source(Protocol):
        description: str
        def run(self, emit_batch: Callable[[list[Event]], None]) -> TraceMetadata

``run`` calls ``emit_batch`` with batches of events (in publish order — the
store sorts them; a list of :class:`Event` or an already columnized
:class:`~kernbench.events.store.ColumnBatch`; an empty list is a heartbeat)
as they are produced and returns the run's metadata when it is finished. A source that already holds a whole store (a trace file) also
offers ``open() -> Trace``, which the app prefers: no per-event work.

To show a live simulation, wrap a function that runs it publishing on a
:class:`kernbench.events.bus.Bus`::

    source = CallableSource(lambda bus: run_kernel(..., bus=bus), metadata=TraceMetadata(kernel=...))
    KernbenchApp(source).run()

or, better for a long run, name a factory to call in a child process
(:class:`kernbench_tui.child_run.ProcessSource`)::

    KernbenchApp(ProcessSource("kernbench.cli:tui_simulation", (["gqa-decode"],))).run()

A live run that ends as a run able to re-time itself (``fn`` returns an object with
``metadata`` and ``retime(changes) -> Trace``, as ``tui_simulation``'s does) leaves
the source a :class:`Retimer` (``source.retimer``): the debugger's what-if prompt
re-times the run through it, without running the kernel again.

A source may also say what it is doing before the first event (a live run
spends seconds compiling the topology and deploying tensors): the app sets
``source.on_status`` to ``callback(text, metadata=None)``; ``metadata`` (a
:class:`TraceMetadata`, once known) names the kernel and topology early.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from kernbench.events.bus import Bus
from kernbench.events.store import ColumnBatch, EventStore
from kernbench.events.tracefile import Trace, TraceMetadata, open_trace
from kernbench.events.types import Event
from kernbench.printable import printable

#: what a source hands the app: events, or (from a child process) events already in columns
EmitBatch = Callable[[list[Event] | ColumnBatch], None]


@runtime_checkable
class Source(Protocol):
    description: str

    def run(self, emit_batch: EmitBatch) -> TraceMetadata: ...


@runtime_checkable
class WholeTraceSource(Protocol):
    description: str

    def open(self) -> Trace: ...


@runtime_checkable
class Retimer(Protocol):
    """A finished run's commands, re-timed on demand (``--what-if`` changes; see
    :class:`kernbench.commands.run.RecordedRun`); a refusal is a :class:`KernbenchError` of one line."""

    def retime(self, changes: Sequence[str]) -> Trace: ...


@runtime_checkable
class PublishingRetimer(Protocol):
    """A retimer that can also publish a re-timing's events as they happen (``retime_published(changes, bus)``,
    returning its metadata; :class:`kernbench.commands.run.RecordedRun`): a child process then sends them on
    while it re-times, and this process turns them into columns meanwhile, on the other core."""

    def retime_published(self, changes: Sequence[str], bus: Bus) -> TraceMetadata: ...


def run_metadata(result: object, fallback: TraceMetadata) -> TraceMetadata:
    """The metadata a source's run ended with: ``fn``'s TraceMetadata, a re-timable run's, else ``fallback``."""
    if isinstance(result, TraceMetadata):
        return result
    meta = getattr(result, "metadata", None)
    return meta if isinstance(meta, TraceMetadata) else fallback


class OpenedSource:
    """A whole trace made when it is first opened (``open_trace()``, on the app's worker thread): one side of
    ``kernbench-tui run … --what-if`` — the run, or its re-timing."""

    def __init__(self, open_trace: Callable[[], Trace], description: str) -> None:
        self._open = open_trace
        self.description = description

    def open(self) -> Trace:
        return self._open()


class CallableSource:
    """Runs ``fn(bus)`` and forwards what it publishes in batches.

    ``fn`` may return a :class:`TraceMetadata` (used if given), or anything
    else (then ``metadata`` given here is used). Batches are flushed every
    ``batch_events`` events or ``batch_s`` seconds of wall time, whichever
    comes first — so the UI gets a few messages per second, never millions;
    batch boundaries never change what ends up in the store.
    """

    def __init__(
        self,
        fn: Callable[[Bus], object],
        metadata: TraceMetadata | None = None,
        *,
        description: str = "live simulation",
        batch_events: int = 4096,
        batch_s: float = 0.05,
    ) -> None:
        self.fn = fn
        self.metadata = metadata or TraceMetadata()
        self.description = description
        self.batch_events = batch_events
        self.batch_s = batch_s
        self.retimer: Retimer | None = None  # once the run has ended, if it can be re-timed

    def run(self, emit_batch: EmitBatch) -> TraceMetadata:
        bus = Bus()
        buf: list[Event] = []
        last = time.monotonic()

        def collect(event: Event) -> None:
            nonlocal buf, last
            buf.append(event)
            if len(buf) >= self.batch_events or (len(buf) % 256 == 0 and time.monotonic() - last >= self.batch_s):
                emit_batch(buf)
                buf = []
                last = time.monotonic()

        bus.subscribe(collect)
        try:
            result = self.fn(bus)
        finally:  # what was simulated before a failure is still worth browsing
            if buf:
                emit_batch(buf)
        if isinstance(result, Retimer):
            self.retimer = result
        return run_metadata(result, self.metadata)


class TraceFileSource:
    """A saved ``.kbtrace`` file (``trace``: already opened, e.g. checked before the app started)."""

    def __init__(self, path: str | os.PathLike[str], trace: Trace | None = None) -> None:
        self.path = os.fspath(path)
        self.description = printable(os.path.basename(self.path))  # (shown: a file's name may hold anything)
        self._trace = trace
        self.retimer: Retimer | None = None  # once a what-if asked for one (kernbench_tui.rerun: its kernel run again)

    def open(self) -> Trace:
        return self._trace if self._trace is not None else open_trace(self.path)

    def run(self, emit_batch: EmitBatch) -> TraceMetadata:
        trace = self.open()
        store = trace.store
        for lo in range(0, len(store), 65536):
            emit_batch(store.events(range(lo, min(len(store), lo + 65536))))
        return trace.metadata


class StoreSource:
    """An in-memory store (tests, or a run recorded by the caller)."""

    def __init__(
        self, store: EventStore, metadata: TraceMetadata | None = None, description: str = "recorded run", retimer: Retimer | None = None
    ):
        self.store = store
        self.metadata = metadata or TraceMetadata(end_ns=store.end_ns)
        self.description = description
        self.retimer = retimer  # what re-times the run, if its caller kept it (kernbench_tui.show(result, rt))

    def open(self) -> Trace:
        return Trace(self.store, self.metadata)

    def run(self, emit_batch: EmitBatch) -> TraceMetadata:
        emit_batch(self.store.events())
        return self.metadata
