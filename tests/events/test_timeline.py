"""Every TimelineModel query against a brute-force scan of the event list."""

import pytest
from randtrace import EDGES, LANES, in_publish_batches, random_trace

from kernbench.events.store import EventStore
from kernbench.events.timeline import TimelineModel
from kernbench.events.types import SPAN_KINDS, Event, EventKind
from kernbench.topology.ids import pe_of

SEEDS = range(12)
TIMES = [-1.0, 0.0, 0.5, 3.0, 17.0, 41.0, 50.0, 99.0, 100.0, 139.0, 140.0, 200.0]
STALLISH = (EventKind.STALL, EventKind.LOAD_WAIT)


def spans(events, lane=None):
    return [e for e in events if e.kind in SPAN_KINDS and (lane is None or e.component == lane)]


def key(e):
    return (e.t_ns, e.seq)


def brute_active(events, lane, t):
    return sorted((e for e in spans(events, lane) if e.t_ns <= t < e.end_ns), key=key)


def brute_in(events, lane, t0, t1):
    return sorted((e for e in spans(events, lane) if e.t_ns < t1 and (e.end_ns > t0 or e.t_ns >= t0)), key=key)


def brute_changes(events, pe=None, lane=None, kind=None, starts_only=False):
    out = []
    for e in events:
        if pe is not None and pe_of(e.component) != pe:
            continue
        if lane is not None and e.component != lane:
            continue
        if kind is not None and e.kind != kind:
            continue
        out.append(e.t_ns)
        if e.kind in SPAN_KINDS and not starts_only:
            out.append(e.end_ns)
    return sorted(out)


def brute_depth(events, edge, t):
    samples = [e for e in sorted(events, key=key) if e.kind == EventKind.QUEUE_DEPTH and e.component == edge and e.t_ns <= t]
    return samples[-1].value if samples else 0.0


def union(intervals):
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def model_for(events, live_seed=None):
    if live_seed is None:
        return TimelineModel(EventStore.from_events(events))
    store = EventStore()
    for batch in in_publish_batches(events, live_seed):
        store.append(batch)
    return TimelineModel(store)


@pytest.fixture(params=[(s, live) for s in SEEDS for live in (False, True)], ids=lambda p: f"seed{p[0]}-{'live' if p[1] else 'whole'}")
def case(request):
    seed, live = request.param
    events = random_trace(seed)
    return events, model_for(events, seed if live else None)


def strip(e: Event):
    return (e.t_ns, e.kind, e.component, e.end_ns, e.label, e.seq)


def test_active_spans_and_lane_state_match_brute_force(case):
    events, model = case
    for lane in LANES:
        for t in TIMES:
            got = model.active_spans(lane, t)
            assert [strip(e) for e in got] == [strip(e) for e in brute_active(events, lane, t)]
            state = model.lane_state(lane, t)
            want = brute_active(events, lane, t)
            if not want:
                assert state.status == "idle" and state.event is None
            elif any(e.kind in STALLISH for e in want):
                assert state.status == "stalled"
                stalls = [e for e in want if e.kind == EventKind.STALL] or [e for e in want if e.kind in STALLISH]
                assert strip(state.event) == strip(stalls[-1])
            else:
                assert state.status == "busy" and strip(state.event) == strip(want[-1])


def test_spans_in_window_match_brute_force(case):
    events, model = case
    for lane in LANES:
        for t0, t1 in [(0, 100), (3, 4), (17, 17.5), (40, 90), (-5, 2), (99, 200), (5, 5)]:
            rows = model.spans_in(lane, t0, t1)
            got = [strip(e) for e in model.store.events(rows)]
            assert got == [strip(e) for e in brute_in(events, lane, t0, t1)], (lane, t0, t1)


def test_occupancy_matches_brute_force_union(case):
    events, model = case
    for lane in LANES:
        for t0, t1 in [(0, 100), (10, 30), (50, 51), (0, 150)]:
            want = union((max(e.t_ns, t0), min(e.end_ns, t1)) for e in brute_in(events, lane, t0, t1)) / (t1 - t0)
            assert model.occupancy(lane, t0, t1) == pytest.approx(want)


def test_lane_cells_conserve_busy_time_and_counts(case):
    events, model = case
    for lane in LANES:
        t0, t1, n = 0.0, 120.0, 16
        cells = model.lane_cells(lane, t0, t1, n)
        width = (t1 - t0) / n
        for i in range(n):
            a, b = t0 + i * width, t0 + (i + 1) * width
            inside = [e for e in brute_in(events, lane, t0, t1) if e.t_ns < b and (e.end_ns > a or (e.t_ns >= a))]
            assert cells.count[i] == len(inside), (lane, i)
            assert cells.starts[i] == sum(1 for e in inside if a <= e.t_ns < b)
            want_busy = min(1.0, sum(max(0.0, min(e.end_ns, b) - max(e.t_ns, a)) for e in inside) / width)
            assert cells.busy[i] == pytest.approx(want_busy)
            if inside:
                cover = {}
                for e in inside:
                    k = (e.label, int(e.kind))
                    c = max(0.0, min(e.end_ns, b) - max(e.t_ns, a))
                    cov, cnt = cover.get(k, (0.0, 0))
                    cover[k] = (cov + c, cnt + 1)
                best = max(cover.values(), key=lambda v: (round(v[0], 9), v[1]))
                got = (model.store.strings[cells.label[i]], int(cells.kind[i]))
                assert (round(cover[got][0], 9), cover[got][1]) == (round(best[0], 9), best[1])
            else:
                assert cells.label[i] == -1 and cells.kind[i] == -1


def test_next_and_previous_change_match_brute_force(case):
    events, model = case
    scopes = [
        dict(),
        dict(pe="sip0.cube0.pe0"),
        dict(lane=LANES[1]),
        dict(kind=EventKind.STALL),
        dict(pe="sip0.cube0.pe1", kind=EventKind.DISPATCH),
        dict(lane=LANES[0], kind=EventKind.LOAD_ISSUE),
    ]
    for scope in scopes:
        for starts_only in (False, True):
            changes = brute_changes(events, starts_only=starts_only, **scope)
            for t in TIMES:
                after = [c for c in changes if c > t]
                before = [c for c in changes if c < t]
                assert model.next_change(t, starts_only=starts_only, **scope) == (after[0] if after else None)
                assert model.prev_change(t, starts_only=starts_only, **scope) == (before[-1] if before else None)


def test_fifo_queries_match_brute_force(case):
    events, model = case
    for t in TIMES:
        depths = {edge: brute_depth(events, edge, t) for edge in EDGES if any(e.component == edge for e in events)}
        assert model.fifo_depths_at(t) == depths
        want = sorted(((d, e) for e, d in depths.items() if d > 0), key=lambda x: (-x[0], x[1]))
        assert [(f.depth, f.edge) for f in model.deepest_fifos_at(t, 2)] == want[:2]
    for t0, t1 in [(0, 100), (20, 30), (50, 50)]:
        for edge in EDGES:
            samples = [e.value for e in events if e.kind == EventKind.QUEUE_DEPTH and e.component == edge and t0 <= e.t_ns <= t1]
            want = max([brute_depth(events, edge, t0), *samples])
            assert model.fifo_max_over(edge, t0, t1) == want


def test_fifo_series_is_max_depth_per_bucket(case):
    events, model = case
    t0, t1, n = 10.0, 90.0, 8
    w = (t1 - t0) / n
    for edge in EDGES:
        series = model.fifo_series(edge, t0, t1, n)
        for i in range(n):
            a, b = t0 + i * w, t0 + (i + 1) * w
            samples = [e.value for e in events if e.kind == EventKind.QUEUE_DEPTH and e.component == edge and a <= e.t_ns < b]
            assert series[i] == max([brute_depth(events, edge, a), *samples])


def test_busiest_components_over_a_window_match_brute_force(case):
    events, model = case
    for t0, t1 in [(0, 100), (10, 30), (55, 56)]:
        want = []
        for lane in LANES:
            sp = [e for e in brute_in(events, lane, t0, t1) if e.kind == EventKind.ENGINE_BUSY]
            busy = union((max(e.t_ns, t0), min(e.end_ns, t1)) for e in sp) / (t1 - t0)
            if busy > 0:
                want.append((lane, busy))
        want.sort(key=lambda x: (-x[1], x[0]))
        got = [(f.edge, f.depth) for f in model.busiest_over(EventKind.ENGINE_BUSY, t0, t1, k=3)]
        assert [g[0] for g in got] == [w[0] for w in want[:3]]
        assert [g[1] for g in got] == pytest.approx([w[1] for w in want[:3]])


def brute_join(events, issue, kind):
    """First ``kind`` event with the issue's corr_id; else, among those with
    corr_id -1, the first on the same component with the same handle at or
    after the issue."""
    ordered = [e for e in sorted(events, key=key) if e.kind == kind]
    if issue.corr_id >= 0:
        same = [e.t_ns for e in ordered if e.corr_id == issue.corr_id]
        if same:
            return same[0]
    loose = [
        e.t_ns for e in ordered if e.corr_id < 0 and e.component == issue.component and e.label == issue.label and e.t_ns >= issue.t_ns
    ]
    return loose[0] if loose else None


def test_loads_join_completion_and_wait_like_brute_force(case):
    events, model = case
    issues = [e for e in sorted(events, key=key) if e.kind == EventKind.LOAD_ISSUE]
    got = model.loads()
    assert [(ld.issued_ns, ld.handle) for ld in got] == [(e.t_ns, e.label) for e in issues]
    for ld, e in zip(got, issues, strict=True):
        assert ld.complete_ns == brute_join(events, e, EventKind.LOAD_COMPLETE)
        assert ld.waited_at_ns == brute_join(events, e, EventKind.LOAD_WAIT)


def test_loads_in_flight_match_brute_force(case):
    events, model = case
    issues = [e for e in sorted(events, key=key) if e.kind == EventKind.LOAD_ISSUE]
    for t in TIMES:
        want = []
        for e in issues:
            done = brute_join(events, e, EventKind.LOAD_COMPLETE)
            end = float("inf") if done is None else done
            if e.t_ns <= t < end:
                want.append((e.t_ns, e.label, e.corr_id))
        got = [(ld.issued_ns, ld.handle, ld.corr_id) for ld in model.loads_in_flight(t)]
        assert got == want


def test_stalls_at_match_brute_force(case):
    events, model = case
    for t in TIMES:
        want = sorted((e for e in events if e.kind == EventKind.STALL and e.t_ns <= t < e.end_ns), key=key)
        assert [strip(e) for e in model.stalls_at(t)] == [strip(e) for e in want]


def test_events_around_match_brute_force(case):
    events, model = case
    ordered = sorted(events, key=key)
    filters = [dict(), dict(kinds={EventKind.STALL, EventKind.QUEUE_DEPTH}), dict(text="PE1"), dict(text="load_a")]
    for flt in filters:

        def ok(e, flt=flt):
            if "kinds" in flt and e.kind not in flt["kinds"]:
                return False
            if "text" in flt:
                n = flt["text"].lower()
                return n in e.component.lower() or n in e.label.lower() or n in e.detail.lower()
            return True

        for t in TIMES:
            before, after = model.events_around(t, 5, 7, chunk=16, **flt)
            want_b = [e for e in ordered if e.t_ns < t and ok(e)][-5:]
            want_a = [e for e in ordered if e.t_ns >= t and ok(e)][:7]
            assert [strip(e) for e in model.store.events(before)] == [strip(e) for e in want_b]
            assert [strip(e) for e in model.store.events(after)] == [strip(e) for e in want_a]


def test_pe_utilization_is_the_union_of_its_engines_busy_time(case):
    events, model = case
    t1 = max(max(e.t_ns for e in events), max(e.end_ns for e in events))
    t0 = model.start_ns
    for pe in ("sip0.cube0.pe0", "sip0.cube0.pe1"):
        engines = [e for e in spans(events) if pe_of(e.component) == pe and not e.component.endswith(".cpu")]
        want = union((max(e.t_ns, t0), min(e.end_ns, t1)) for e in engines) / (t1 - t0)
        assert model.pe_utilization(pe) == pytest.approx(want)


def test_rows_with_corr_list_what_a_request_caused(case):
    events, model = case
    for corr in (-1, 0, 3, 99):
        want = [] if corr < 0 else [strip(e) for e in sorted(events, key=key) if e.corr_id == corr]
        assert [strip(e) for e in model.store.events(model.rows_with_corr(corr))] == want


def test_pes_are_listed_in_natural_order():
    events = [Event(0.0, EventKind.ENGINE_BUSY, f"sip0.cube0.pe{p}.gemm", end_ns=1.0, seq=p) for p in (10, 2, 1)]
    assert TimelineModel(EventStore.from_events(events)).pes() == ["sip0.cube0.pe1", "sip0.cube0.pe2", "sip0.cube0.pe10"]
