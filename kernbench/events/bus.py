"""The event bus: components publish, subscribers listen.

Publishing is guarded by the caller (``if bus.active: bus.emit(...)``) so
that with no subscriber no :class:`Event` is even constructed; see
``benchmarks/bench_bus.py`` for the measured cost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from operator import itemgetter

from kernbench.events.types import Event, EventKind

Subscriber = Callable[[Event], None]
Span = tuple[float, float, str, str, float]  # what emit_spans publishes each span from: (t_ns, end_ns, component, label, value)

_TIME_ORDER = itemgetter(0, 8)  # Event.sort_key (t_ns, seq), read in C (a recorded GQA default sorts 149k events)
_T_NS = itemgetter(0)  # Event.t_ns
# ``_new(Event, fields)``: an Event from its fields in order, one C call (a functools.partial over it cost ~300 instructions
# an event more: 46 M of a recorded GQA re-timing's 3.68 G in callgrind; cProfile counts this call, not the partial's)
_new = tuple.__new__


def _fan_out(subscribers: list[Subscriber], event: Event) -> None:
    for fn in subscribers:
        fn(event)


class Bus:
    """Fan-out of events to subscribers, stamping each with a sequence number.

    Sequence numbers follow publish order, which is deterministic because the
    simulation is; ``(t_ns, seq)`` is the total order every recorder uses.
    """

    __slots__ = ("_publish", "_seq", "_subscribers", "active")

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []
        self.active = False
        self._seq = 0
        self._publish: Subscriber = partial(_fan_out, self._subscribers)  # what an event is handed to

    def subscribe(self, fn: Subscriber) -> Subscriber:
        self._subscribers.append(fn)
        self._subscribed()
        return fn

    def unsubscribe(self, fn: Subscriber) -> None:
        self._subscribers.remove(fn)
        self._subscribed()

    def _subscribed(self) -> None:
        subs = self._subscribers
        self.active = bool(subs)
        # one subscriber (a recorder: a list's append), the common case, is handed each event directly;
        # else each in turn (a partial over the list, not a bound method: the bus holds no cycle)
        self._publish = subs[0] if len(subs) == 1 else partial(_fan_out, subs)

    def emit(
        self,
        t_ns: float,
        kind: EventKind,
        component: str,
        end_ns: float = -1.0,
        corr_id: int = -1,
        label: str = "",
        value: float = 0.0,
        detail: str = "",
        pred: int = -1,
        src: str = "",
    ) -> int:
        """Build and publish one event (call only when :attr:`active`); its ``seq``. ~149k a recorded
        GQA re-timing: hot callers pass the fields by position (no keyword matching)."""
        seq = self._seq
        self._seq = seq + 1
        self._publish(_new(Event, (t_ns, kind, component, end_ns, corr_id, label, value, detail, seq, pred, src)))
        return seq

    def emit_spans(self, kind: EventKind, spans: Iterable[Span], corr_id: int, pred: int) -> None:
        """Publish one span of ``kind`` per ``(t_ns, end_ns, component, label, value)`` in ``spans``, in order,
        each with ``corr_id`` and ``pred``: what :meth:`emit` would, in one call (a transfer's TRANSIT parts,
        ~28k a recorded GQA re-timing)."""
        publish = self._publish
        for t_ns, end_ns, component, label, value in spans:
            seq = self._seq
            self._seq = seq + 1
            publish(_new(Event, (t_ns, kind, component, end_ns, corr_id, label, value, "", seq, pred, "")))


class TupleBus(Bus):
    """A bus that publishes each event as a plain tuple of :class:`Event`'s fields in order, its kind as a
    number: what a child process sends its parent (a list of them pickles at C speed and unpickles without
    an enum lookup per event; :func:`kernbench.events.store.columnize` reads them as it reads events).
    Subscribers take tuples, not :class:`Event` records."""

    __slots__ = ()

    def emit(
        self,
        t_ns: float,
        kind: EventKind,
        component: str,
        end_ns: float = -1.0,
        corr_id: int = -1,
        label: str = "",
        value: float = 0.0,
        detail: str = "",
        pred: int = -1,
        src: str = "",
    ) -> int:
        seq = self._seq
        self._seq = seq + 1
        event = (t_ns, _KIND_NUMBERS[kind], component, end_ns, corr_id, label, value, detail, seq, pred, src)
        self._publish(event)  # type: ignore[arg-type]  # (a tuple of an Event's fields: this bus's subscribers take those)
        return seq

    def emit_spans(self, kind: EventKind, spans: Iterable[Span], corr_id: int, pred: int) -> None:
        publish, number = self._publish, _KIND_NUMBERS[kind]
        for t_ns, end_ns, component, label, value in spans:
            seq = self._seq
            self._seq = seq + 1
            publish((t_ns, number, component, end_ns, corr_id, label, value, "", seq, pred, ""))  # type: ignore[arg-type]


_KIND_NUMBERS = tuple(range(len(EventKind)))  # EventKind member -> plain int, by index (an enum's hash is a Python call)


class Recorder:
    """Keeps the stream in memory; :meth:`events` returns it in time order."""

    def __init__(self, bus: Bus | None = None) -> None:
        self._events: list[Event] = []
        # subscribed to a bus, it holds events in publish order, which is seq order
        self._in_seq_order = bus is not None
        if bus is not None:
            bus.subscribe(self._events.append)  # (the list's own append: no Python call an event)

    def __call__(self, event: Event) -> None:
        self._in_seq_order = False  # (events handed over by hand: any order)
        self._events.append(event)

    def __len__(self) -> int:
        return len(self._events)

    def events(self) -> list[Event]:
        """All events sorted by ``(t_ns, seq)`` (spans may be published ahead). Held in seq order, a
        stable sort by ``t_ns`` alone gives that order, and compares floats rather than pairs."""
        return sorted(self._events, key=_T_NS if self._in_seq_order else _TIME_ORDER)
