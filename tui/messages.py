"""Messages between the source worker, the widgets and the app."""

from __future__ import annotations

from textual.message import Message

from kernbench.events.store import ColumnBatch
from kernbench.events.tracefile import Trace, TraceMetadata
from kernbench.events.types import Event
from kernbench_tui.why import WhyPath


class EventsArrived(Message):
    """A batch of events from a running source, already in columns (posted
    from the worker, which did the per-event work)."""

    def __init__(self, batch: ColumnBatch) -> None:
        super().__init__()
        self.batch = batch


class TraceOpened(Message):
    """A whole trace was loaded (file or in-memory store)."""

    def __init__(self, trace: Trace) -> None:
        super().__init__()
        self.trace = trace


class SourceStatus(Message):
    """What a source is doing before its first event (one line, from the worker),
    and the run's metadata once the source knows it."""

    def __init__(self, text: str, metadata: TraceMetadata | None = None) -> None:
        super().__init__()
        self.text = text
        self.metadata = metadata


class SourceFinished(Message):
    def __init__(self, metadata: TraceMetadata) -> None:
        super().__init__()
        self.metadata = metadata


class SourceFailed(Message):
    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class SpanSelected(Message):
    """The user clicked a span in the lanes (or a panel chose one)."""

    def __init__(self, event: Event, at_ns: float) -> None:
        super().__init__()
        self.event = event
        self.at_ns = at_ns


class PEsChosen(Message):
    """The PE picker changed which PEs are shown."""

    def __init__(self, pes: list[str]) -> None:
        super().__init__()
        self.pes = pes


class PathComputed(Message):
    """The critical path of the recording (from the worker that walked it), or why there is none."""

    def __init__(self, result: WhyPath | str) -> None:
        super().__init__()
        self.result = result
