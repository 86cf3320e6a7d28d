"""The event bus: subscribe/unsubscribe, the ``active`` guard, sequence
numbers in publish order, and a Recorder that returns time order (issue 2,
section 4)."""

from __future__ import annotations

import pytest

from kernbench.events.bus import Bus, Recorder, TupleBus
from kernbench.events.types import Event, EventKind


def test_a_new_bus_is_inactive():
    assert Bus().active is False


def test_subscribing_activates_and_unsubscribing_the_last_deactivates():
    bus = Bus()
    a, b = [], []
    fa = bus.subscribe(a.append)
    fb = bus.subscribe(b.append)
    assert bus.active
    bus.emit(1.0, EventKind.TRANSFER_START, "x")
    bus.unsubscribe(fa)
    assert bus.active
    bus.emit(2.0, EventKind.TRANSFER_END, "x")
    bus.unsubscribe(fb)
    assert not bus.active
    assert [e.t_ns for e in a] == [1.0] and [e.t_ns for e in b] == [1.0, 2.0]


def test_unsubscribing_a_stranger_raises():
    bus = Bus()
    with pytest.raises(ValueError):
        bus.unsubscribe(print)


def test_every_subscriber_sees_the_same_event_object():
    bus = Bus()
    a, b = [], []
    bus.subscribe(a.append)
    bus.subscribe(b.append)
    bus.emit(3.0, EventKind.EDGE_BUSY, "a->b", end_ns=4.0, corr_id=7, label="l", value=2.0, detail="d")
    assert a == b and a[0] is b[0]
    assert a[0] == Event(3.0, EventKind.EDGE_BUSY, "a->b", 4.0, 7, "l", 2.0, "d", 0)


def test_sequence_numbers_follow_publish_order_across_subscriptions():
    bus = Bus()
    seen = []
    f = bus.subscribe(seen.append)
    for t in (5.0, 1.0, 3.0):
        bus.emit(t, EventKind.QUEUE_DEPTH, "a->b", value=t)
    bus.unsubscribe(f)
    bus.subscribe(seen.append)
    bus.emit(0.0, EventKind.QUEUE_DEPTH, "a->b")
    assert [e.seq for e in seen] == [0, 1, 2, 3]


def test_recorder_sorts_by_time_then_sequence():
    bus = Bus()
    rec = Recorder(bus)
    bus.emit(5.0, EventKind.EDGE_BUSY, "e1", end_ns=6.0)  # spans may be published ahead
    bus.emit(1.0, EventKind.TRANSFER_START, "p")
    bus.emit(5.0, EventKind.QUEUE_DEPTH, "e1")
    bus.emit(1.0, EventKind.TRANSFER_END, "p")
    events = rec.events()
    assert len(rec) == 4
    assert [(e.t_ns, e.seq) for e in events] == [(1.0, 1), (1.0, 3), (5.0, 0), (5.0, 2)]
    assert [e.kind for e in events] == [
        EventKind.TRANSFER_START,
        EventKind.TRANSFER_END,
        EventKind.EDGE_BUSY,
        EventKind.QUEUE_DEPTH,
    ]


def test_recorder_can_attach_later_and_returns_a_copy():
    bus = Bus()
    rec = Recorder()
    bus.subscribe(rec)
    bus.emit(2.0, EventKind.CPU_WORK, "pe0.cpu", end_ns=3.0)
    out = rec.events()
    out.clear()
    assert len(rec.events()) == 1


def test_span_and_instant_durations():
    span = Event(2.0, EventKind.CHANNEL_BUSY, "pc0", end_ns=10.0)
    instant = Event(2.0, EventKind.TRANSFER_END, "x", end_ns=-1.0)
    assert span.is_span and span.duration_ns == 8.0
    assert not instant.is_span and instant.duration_ns == 0.0
    assert span.sort_key() == (2.0, -1)


def test_events_are_immutable():
    e = Event(1.0, EventKind.STALL, "pe0.cpu")
    with pytest.raises(AttributeError):
        e.t_ns = 2.0  # type: ignore[misc]


def test_emit_spans_publishes_what_emit_would_on_either_bus():
    spans = [(1.0, 2.0, "a->b", "serialization", -1), (2.0, 5.0, "n", "queueing", 4)]
    for cls in (Bus, TupleBus):
        one, many = [], []
        by_emit, at_once = cls(), cls()
        by_emit.subscribe(one.append)
        at_once.subscribe(many.append)
        for b in (by_emit, at_once):
            b.emit(0.5, EventKind.ENGINE_BUSY, "pe0.dma.rd", end_ns=5.0, corr_id=3)
        for t, end, where, cause, behind in spans:
            by_emit.emit(t, EventKind.TRANSIT, where, end_ns=end, corr_id=3, label=cause, value=behind, pred=0)
        at_once.emit_spans(EventKind.TRANSIT, spans, 3, 0)
        by_emit.emit(6.0, EventKind.QUEUE_DEPTH, "a->b")
        at_once.emit(6.0, EventKind.QUEUE_DEPTH, "a->b")
        assert one == many and [e[8] for e in many] == [0, 1, 2, 3]
