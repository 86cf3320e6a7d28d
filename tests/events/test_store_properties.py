"""Property: however a stream is split into batches, the store is the same."""

from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.events.bus import Bus
from kernbench.events.store import EventStore, StoreRecorder
from kernbench.events.types import SPAN_KINDS, Event, EventKind

KINDS = list(EventKind)


@st.composite
def event_lists(draw):
    n = draw(st.integers(0, 60))
    out = []
    for seq in range(n):
        kind = draw(st.sampled_from(KINDS))
        t = float(draw(st.integers(0, 20)))
        end = t + draw(st.integers(0, 10)) if kind in SPAN_KINDS else -1.0
        comp = draw(st.sampled_from(["sip0.cube0.pe0.cpu", "sip0.cube0.pe0.gemm", "a->b"]))
        out.append(Event(t, kind, comp, end, draw(st.integers(-1, 3)), draw(st.sampled_from(["", "x", "y"])), seq=seq))
    return out


@settings(max_examples=60, deadline=None)
@given(event_lists(), st.lists(st.integers(1, 10), min_size=1, max_size=10), st.randoms(use_true_random=False))
def test_any_batching_and_arrival_order_gives_the_same_store(events, sizes, rnd):
    shuffled = list(events)
    rnd.shuffle(shuffled)
    live, i, k = EventStore(), 0, 0
    while i < len(shuffled):
        step = sizes[k % len(sizes)]
        live.append(shuffled[i : i + step])
        i, k = i + step, k + 1
    whole = EventStore.from_events(events)
    assert live.events() == whole.events()
    assert list(live.all_span_ends()) == sorted(e.end_ns for e in events if e.kind in SPAN_KINDS)


def test_store_recorder_collects_a_bus_stream():
    bus = Bus()
    rec = StoreRecorder(bus, batch_events=3)
    for i in range(10):
        bus.emit(float(10 - i), EventKind.QUEUE_DEPTH, "a->b", value=float(i))
    store = rec.finish()
    assert [e.value for e in store.events()] == [float(i) for i in reversed(range(10))]
