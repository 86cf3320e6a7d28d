import numpy as np
import pytest
from randtrace import in_publish_batches, random_trace

from kernbench.events.store import EventStore
from kernbench.events.types import Event, EventKind


def expected_order(events):
    return sorted(events, key=lambda e: (e.t_ns, e.seq))


def normalized(e: Event) -> Event:
    return e if e.is_span else Event(e.t_ns, e.kind, e.component, -1.0, e.corr_id, e.label, e.value, e.detail, e.seq)


@pytest.mark.parametrize("seed", range(8))
def test_store_holds_events_sorted_by_time_then_seq(seed):
    events = random_trace(seed)
    store = EventStore.from_events(events)
    assert store.events() == [normalized(e) for e in expected_order(events)]


@pytest.mark.parametrize("seed", range(8))
def test_appending_out_of_order_batches_equals_building_at_once(seed):
    events = random_trace(seed, 300)
    whole = EventStore.from_events(events)
    live = EventStore()
    seen = []
    for batch in in_publish_batches(events, seed):
        live.append(batch)
        seen.extend(batch)
        assert live.events() == [normalized(e) for e in expected_order(seen)]
    for name in whole.columns():
        if name in ("component", "label", "detail"):
            continue  # intern order depends on arrival order
        assert np.array_equal(whole.col(name), live.col(name))
    for key in whole.stream_keys().tolist():
        comp, kind = divmod(key, len(EventKind))
        lkey = live.stream_key(live.component_id(whole.components[comp]), kind)
        assert np.array_equal(whole.stream_rows(key), live.stream_rows(lkey))
        assert np.array_equal(whole.stream_ends(key), live.stream_ends(lkey))
    assert np.array_equal(whole.all_span_ends(), live.all_span_ends())
    assert whole.end_ns == live.end_ns


def test_stream_rows_list_each_component_and_kind_in_time_order():
    events = random_trace(3, 400)
    store = EventStore.from_events(events)
    t = store.col("t_ns")
    total = 0
    for key in store.stream_keys().tolist():
        rows = store.stream_rows(key)
        comp, kind = divmod(key, len(EventKind))
        assert np.all(np.diff(rows) > 0)
        assert np.all(store.col("component")[rows] == comp)
        assert np.all(store.col("kind")[rows] == kind)
        assert np.all(np.diff(t[rows]) >= 0)
        total += len(rows)
    assert total == len(store)


def test_memory_stays_well_under_100_bytes_per_event():
    events = random_trace(1, 5000)
    store = EventStore.from_events(events)
    assert store.nbytes() / len(store) < 80


def test_empty_store_answers_without_error():
    store = EventStore()
    assert len(store) == 0 and store.end_ns == 0.0
    store.append([])
    assert store.events() == []


def test_from_columns_round_trips():
    store = EventStore.from_events(random_trace(5))
    again = EventStore.from_columns({k: np.array(v) for k, v in store.columns().items()}, store.components, store.strings)
    assert again.events() == store.events()


def answers(store):
    """Everything a query reads of a store, comparable with ==."""
    keys = store.stream_keys().tolist()
    return (
        store.events(),
        keys,
        [(store.stream_rows(k).tolist(), store.stream_ends(k).tolist()) for k in keys],
        [store.stream_keys_of_component(c) for c in range(len(store.components))],
        [store.stream_keys_of_kind(k) for k in EventKind],
        store.all_span_ends().tolist(),
        (store.start_ns, store.end_ns),
    )


def built_live(events, seed):
    live = EventStore()
    for batch in in_publish_batches(events, seed):
        live.append(batch)
    return live


@pytest.mark.parametrize("seed", range(4))
def test_a_pickled_store_answers_as_the_original(seed):
    import pickle

    events = random_trace(seed, 300)
    for store in (EventStore.from_events(events), built_live(events, seed)):  # one flat index; streams appended one by one
        again = pickle.loads(pickle.dumps(store))
        assert answers(again) == answers(store)
        again.append([Event(1000.0, EventKind.ENGINE_BUSY, "sip0.cube0.pe0.gemm", 1001.0, seq=10_000)])
        store.append([Event(1000.0, EventKind.ENGINE_BUSY, "sip0.cube0.pe0.gemm", 1001.0, seq=10_000)])
        assert answers(again) == answers(store)  # and it still takes appends


@pytest.mark.parametrize("seed", range(4))
def test_compacting_a_live_built_store_changes_no_answer(seed):
    events = random_trace(seed, 300)
    live, kept = built_live(events, seed), built_live(events, seed)
    live.compact()
    assert answers(live) == answers(kept)
    late = Event(5.0, EventKind.STALL, "sip0.cube0.pe1.cpu", 250.0, seq=10_001)  # earlier than the last: re-sorts a tail
    live.append([late])
    kept.append([late])
    assert answers(live) == answers(kept)
    assert live.events() == EventStore.from_events([*events, late]).events()
