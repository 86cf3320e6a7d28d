"""The Perfetto export is valid Chrome trace-event JSON with the promised tracks."""

import json
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.events.perfetto import pack_tracks, perfetto_trace, save_perfetto
from kernbench.events.store import EventStore
from kernbench.events.tracefile import TraceMetadata
from kernbench.events.types import EventKind
from kernbench_tui.demo import DemoParams, demo_events

REQUIRED = {
    "X": {"name", "ph", "ts", "dur", "pid", "tid", "cat"},
    "i": {"name", "ph", "ts", "pid", "tid", "s"},
    "C": {"name", "ph", "ts", "pid", "args"},
    "M": {"name", "ph", "pid", "args"},
    "s": {"name", "ph", "ts", "pid", "tid", "id", "cat"},
    "t": {"name", "ph", "ts", "pid", "tid", "id", "cat"},
    "f": {"name", "ph", "ts", "pid", "tid", "id", "cat"},
}


@pytest.fixture(scope="module")
def demo():
    events, meta = demo_events(DemoParams(n_pes=3, tiles=4))
    store = EventStore.from_events(events)
    return events, store, meta, perfetto_trace(store, meta)


def test_every_event_has_the_keys_its_phase_requires(demo):
    _, _, _, trace = demo
    assert set(trace) >= {"traceEvents", "displayTimeUnit"}
    for ev in trace["traceEvents"]:
        assert ev["ph"] in REQUIRED, ev
        missing = REQUIRED[ev["ph"]] - set(ev)
        assert not missing, (ev, missing)
        assert isinstance(ev["pid"], int) and isinstance(ev.get("tid", 0), int)
        if "ts" in ev:
            assert isinstance(ev["ts"], (int, float)) and ev["ts"] >= 0
        if ev["ph"] == "X":
            assert ev["dur"] >= 0
        if ev["ph"] == "C":
            assert all(isinstance(v, (int, float)) for v in ev["args"].values())
        if ev["ph"] == "i":
            assert ev["s"] in ("g", "p", "t")


def test_timestamps_are_whole_nanoseconds_written_in_microseconds(demo):
    events, _, _, trace = demo
    span = next(e for e in events if e.kind == EventKind.ENGINE_BUSY and e.label == "dot")
    start, end = round(span.t_ns), round(span.end_ns)
    x = next(ev for ev in trace["traceEvents"] if ev["ph"] == "X" and ev["name"] == "dot" and ev["ts"] == start / 1000)
    assert x["dur"] == (end - start) / 1000
    for ev in trace["traceEvents"]:
        for key in ("ts", "dur"):
            if key in ev:  # at most three decimals: a whole number of ns
                assert round(ev[key] * 1000) == pytest.approx(ev[key] * 1000, abs=1e-6), ev
                assert len(repr(ev[key]).split(".")[-1]) <= 3 or "e" in repr(ev[key]), ev


def _threads(trace, pid):
    return [ev["args"]["name"] for ev in trace["traceEvents"] if ev["ph"] == "M" and ev["name"] == "thread_name" and ev["pid"] == pid]


def test_a_process_per_pe_and_engine_threads_in_lane_order(demo):
    _, _, _, trace = demo
    names = {ev["pid"]: ev["args"]["name"] for ev in trace["traceEvents"] if ev["ph"] == "M" and ev["name"] == "process_name"}
    pes = [n for n in names.values() if ".pe" in n]
    assert pes == ["sip0.cube0.pe0", "sip0.cube0.pe1", "sip0.cube0.pe2"]
    assert len(set(names)) == len(names)
    pid = next(p for p, n in names.items() if n == "sip0.cube0.pe1")
    threads = _threads(trace, pid)
    bases = [t.split(" #")[0] for t in threads]
    assert list(dict.fromkeys(bases)) == ["cpu", "sched", "dma.rd", "dma.wr", "fetch", "store", "gemm", "math"]
    assert bases == sorted(bases, key=bases.index)  # an engine's extra tracks follow it
    for base in set(bases):
        extra = [t for t in threads if t.startswith(base + " #")]
        assert extra == [f"{base} #{k}" for k in range(2, len(extra) + 2)]


def test_spans_on_one_thread_never_overlap(demo):
    _, _, _, trace = demo
    by_thread = {}
    for ev in trace["traceEvents"]:
        if ev["ph"] == "X":
            by_thread.setdefault((ev["pid"], ev["tid"]), []).append((round(ev["ts"] * 1000), round((ev["ts"] + ev["dur"]) * 1000)))
    assert any(len(v) > 1 for v in by_thread.values())
    for spans in by_thread.values():
        spans.sort()
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in pairwise(spans)), spans


def test_fifo_depths_are_counter_tracks_one_sample_per_nanosecond(demo):
    events, _, _, trace = demo
    depths = [e for e in sorted(events, key=lambda e: (e.t_ns, e.seq)) if e.kind == EventKind.QUEUE_DEPTH]
    last = {}
    for e in depths:
        last[(e.component, round(e.t_ns))] = e.value
    counters = [ev for ev in trace["traceEvents"] if ev["ph"] == "C"]
    assert len(counters) == len(last) > 0
    assert {(c["name"], round(c["ts"] * 1000)): c["args"]["depth_flits"] for c in counters} == last
    assert all("->" in c["name"] for c in counters)


def test_flow_arrows_join_each_transfers_hops_in_order(demo):
    events, _, _, trace = demo
    flows = [ev for ev in trace["traceEvents"] if ev["ph"] in "stf"]
    slices = [ev for ev in trace["traceEvents"] if ev["ph"] == "X"]
    by_id = {}
    for ev in flows:
        by_id.setdefault(ev["id"], []).append(ev)
    hops = {}
    for e in events:
        if e.kind == EventKind.EDGE_BUSY:
            hops.setdefault(e.corr_id, []).append(e)
    assert set(by_id) == {c for c, h in hops.items() if len(h) > 1}
    for corr, chain in by_id.items():
        assert [ev["ph"] for ev in chain] == ["s"] + ["t"] * (len(chain) - 2) + ["f"]
        assert len(chain) == len(hops[corr])
        assert [ev["ts"] for ev in chain] == sorted(ev["ts"] for ev in chain)
        for ev in chain:  # each flow point starts a slice of its own thread
            assert any(s["pid"] == ev["pid"] and s["tid"] == ev["tid"] and s["ts"] == ev["ts"] for s in slices)


def test_saved_file_is_json_with_metadata(demo, tmp_path):
    _, store, meta, _ = demo
    path = tmp_path / "run.json"
    save_perfetto(path, store, meta)
    data = json.loads(path.read_text())
    assert data["otherData"]["kernel"] == "demo_gemm"
    assert len(data["traceEvents"]) > len(store)


def test_empty_store_exports_an_empty_trace():
    assert perfetto_trace(EventStore(), TraceMetadata())["traceEvents"] == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 15)), max_size=40))
def test_track_packing_uses_as_few_tracks_as_the_deepest_overlap(pairs):
    spans = [(a, a + d, row) for row, (a, d) in enumerate(pairs)]
    placed, count = pack_tracks(spans)
    assert set(placed) == {row for *_, row in spans}
    for k in range(count):
        mine = sorted((a, b) for a, b, row in spans if placed[row] == k)
        assert all(x_end <= y_start for (_, x_end), (y_start, _) in pairwise(mine))
    # the most spans open at once: at each span's start (in start order), those before it still running
    order = sorted(spans)
    depth = max((1 + sum(1 for y in order[:i] if y[1] > x[0]) for i, x in enumerate(order)), default=1)
    assert count == depth
