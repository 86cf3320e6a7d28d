"""Where the debugger's events come from: a running simulation or a file.

A source is run by the app in a worker thread::

    class Source(Protocol):
        description: str
        def run(self, emit_batch: Callable[[list[Event]], None]) -> TraceMetadata

``run`` calls ``emit_batch`` with batches of events (in publish order — the
store sorts them) as they are produced and returns the run's metadata when it
is finished. A source that already holds a whole store (a trace file) also
offers ``open() -> Trace``, which the app prefers: no per-event work.

To show a live simulation, wrap a function that runs it publishing on a
:class:`kernbench.events.bus.Bus`::

    source = CallableSource(lambda bus: run_kernel(..., bus=bus), metadata=TraceMetadata(kernel=...))
    KernbenchApp(source).run()
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from kernbench.events.bus import Bus
from kernbench.events.store import EventStore
from kernbench.events.tracefile import Trace, TraceMetadata, open_trace
from kernbench.events.types import Event

EmitBatch = Callable[[list[Event]], None]


@runtime_checkable
class Source(Protocol):
    description: str

    def run(self, emit_batch: EmitBatch) -> TraceMetadata: ...


@runtime_checkable
class WholeTraceSource(Protocol):
    description: str

    def open(self) -> Trace: ...


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
        meta = result if isinstance(result, TraceMetadata) else self.metadata
        return meta


class TraceFileSource:
    """A saved ``.kbtrace`` file."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)
        self.description = os.path.basename(self.path)

    def open(self) -> Trace:
        return open_trace(self.path)

    def run(self, emit_batch: EmitBatch) -> TraceMetadata:
        trace = self.open()
        store = trace.store
        for lo in range(0, len(store), 65536):
            emit_batch(store.events(range(lo, min(len(store), lo + 65536))))
        return trace.metadata


class StoreSource:
    """An in-memory store (tests, or a run recorded by the caller)."""

    def __init__(self, store: EventStore, metadata: TraceMetadata | None = None, description: str = "recorded run"):
        self.store = store
        self.metadata = metadata or TraceMetadata(end_ns=store.end_ns)
        self.description = description

    def open(self) -> Trace:
        return Trace(self.store, self.metadata)

    def run(self, emit_batch: EmitBatch) -> TraceMetadata:
        emit_batch(self.store.events())
        return self.metadata
