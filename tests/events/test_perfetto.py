"""The Perfetto export is valid Chrome trace-event JSON with the promised tracks."""

import json

import pytest

from kernbench.events.perfetto import perfetto_trace, save_perfetto
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


def test_timestamps_are_microseconds(demo):
    events, _, _, trace = demo
    span = next(e for e in events if e.kind == EventKind.ENGINE_BUSY and e.label == "dot")
    x = next(ev for ev in trace["traceEvents"] if ev["ph"] == "X" and ev["name"] == "dot"
             and ev["ts"] == pytest.approx(span.t_ns / 1000))
    assert x["dur"] == pytest.approx(span.duration_ns / 1000)


def test_a_process_per_pe_and_a_thread_per_engine(demo):
    _, _, _, trace = demo
    names = {ev["pid"]: ev["args"]["name"] for ev in trace["traceEvents"] if ev["ph"] == "M" and ev["name"] == "process_name"}
    pes = [n for n in names.values() if ".pe" in n]
    assert pes == ["sip0.cube0.pe0", "sip0.cube0.pe1", "sip0.cube0.pe2"]
    assert len(set(names)) == len(names)
    pid = next(p for p, n in names.items() if n == "sip0.cube0.pe1")
    threads = [ev["args"]["name"] for ev in trace["traceEvents"]
               if ev["ph"] == "M" and ev["name"] == "thread_name" and ev["pid"] == pid]
    assert threads == ["cpu", "sched", "dma.rd", "dma.wr", "fs", "gemm", "math"]


def test_fifo_depths_are_counter_tracks(demo):
    events, _, _, trace = demo
    depths = [e for e in events if e.kind == EventKind.QUEUE_DEPTH]
    counters = [ev for ev in trace["traceEvents"] if ev["ph"] == "C"]
    assert len(counters) == len(depths) > 0
    assert {c["name"] for c in counters} == {e.component for e in depths}
    assert all("->" in c["name"] and "depth_flits" in c["args"] for c in counters)


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
        for ev in chain:  # each flow point lies on a slice of its own thread
            assert any(s["pid"] == ev["pid"] and s["tid"] == ev["tid"] and s["ts"] <= ev["ts"] <= s["ts"] + s["dur"]
                       for s in slices)


def test_saved_file_is_json_with_metadata(demo, tmp_path):
    _, store, meta, _ = demo
    path = tmp_path / "run.json"
    save_perfetto(path, store, meta)
    data = json.loads(path.read_text())
    assert data["otherData"]["kernel"] == "demo_gemm"
    assert len(data["traceEvents"]) > len(store)


def test_empty_store_exports_an_empty_trace():
    assert perfetto_trace(EventStore(), TraceMetadata())["traceEvents"] == []
