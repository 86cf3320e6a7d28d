"""Property: however a stream is split into batches, the store is the same; batches columnized apart and merged
make the very store of the whole stream."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.events.bus import Bus, TupleBus
from kernbench.events.store import BatchMerger, EventStore, StoreRecorder, _time_order, columnize
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


def same_store(a: EventStore, b: EventStore) -> None:
    """Every column, both string tables, the flat index and the sorted ends are equal."""
    assert a.components == b.components and a.strings == b.strings
    for name in a.columns():
        assert a.col(name).tolist() == b.col(name).tolist(), name
    assert [x.tolist() for x in a._index.arrays()] == [x.tolist() for x in b._index.arrays()]
    assert a.all_span_ends().tolist() == b.all_span_ends().tolist()
    assert (a.start_ns, a.end_ns) == (b.start_ns, b.end_ns)


@settings(max_examples=60, deadline=None)
@given(event_lists(), st.lists(st.integers(1, 10), min_size=1, max_size=10), st.randoms(use_true_random=False), st.booleans())
def test_batches_columnized_apart_and_merged_make_the_store_of_all_the_events(events, sizes, rnd, as_tuples):
    """What the debugger builds from a child's batches is the store from_events makes (tables numbered alike)."""
    shuffled = list(events)
    rnd.shuffle(shuffled)
    records = [(e[0], int(e[1]), *e[2:]) for e in shuffled] if as_tuples else shuffled
    merger, i, k = BatchMerger(), 0, 0
    while i < len(records):
        step = sizes[k % len(sizes)]
        merger.add(columnize(records[i : i + step]))
        i, k = i + step, k + 1
    merged = merger.store()
    whole = EventStore.from_events(sorted(events, key=Event.sort_key))
    if events:
        same_store(merged, whole)
    else:
        assert len(merged) == 0
    assert merged.events() == whole.events()


def test_a_tuple_bus_publishes_the_fields_of_the_events_a_bus_does():
    events, tuples = [], []
    bus, tuple_bus = Bus(), TupleBus()
    bus.subscribe(events.append)
    tuple_bus.subscribe(tuples.append)
    for b in (bus, tuple_bus):
        b.emit(1.0, EventKind.ENGINE_BUSY, "sip0.cube0.pe0.gemm", end_ns=3.0, corr_id=7, label="gemm", value=64.0, pred=2, src="k.py:3")
        b.emit(2.0, EventKind.QUEUE_DEPTH, "a->b", value=1.5)
    assert tuples == [tuple(e) for e in events]
    assert all(type(t[1]) is int for t in tuples)  # the kind as a number: no enum to look up when unpickled
    same_store(EventStore.from_events(events), EventStore.from_events([Event(*t) for t in tuples]))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.integers(0, 6), max_size=12), max_size=8), st.randoms(use_true_random=False), st.booleans())
def test_the_time_order_of_merged_batches_is_lexsorts(runs, rnd, in_publish_order):
    """Batches each in (t_ns, seq) order, in publish order (the fast path) or not (lexsort decides): the rows'
    order is ``np.lexsort((seq, t))``'s, ties in time included."""
    seqs = list(range(sum(len(r) for r in runs)))
    if not in_publish_order:
        rnd.shuffle(seqs)
    t_parts, seq_parts, i = [], [], 0
    for r in runs:
        rows = sorted(zip([float(x) for x in r], seqs[i : i + len(r)], strict=True))
        i += len(r)
        t_parts += [t for t, _ in rows]
        seq_parts += [s for _, s in rows]
    t, seq = np.array(t_parts, dtype=np.float64), np.array(seq_parts, dtype=np.int64)
    assert _time_order(t, seq).tolist() == np.lexsort((seq, t)).tolist()
