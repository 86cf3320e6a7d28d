"""Perfetto export: every kind of trace event carries its time in
microseconds (the trace-event format's unit), whole nanoseconds rounded
once; a transfer's hops are one flow from its first hop to its last; spans
that only touch share a track."""

from __future__ import annotations

import pytest

from kernbench.events.perfetto import perfetto_trace
from kernbench.events.store import EventStore
from kernbench.events.types import Event, EventKind

GEMM = "sip0.cube0.pe0.gemm"
CPU = "sip0.cube0.pe0.cpu"
EDGES = ["sip0.cube0.r0->sip0.cube0.r1", "sip0.cube0.r1->sip0.cube0.r3", "sip0.cube0.r3->sip0.cube0.hbm.slice6"]


@pytest.fixture(scope="module")
def trace():
    evs = [
        Event(1500.0, EventKind.ENGINE_BUSY, GEMM, end_ns=2500.0, label="gemm", seq=0),
        Event(2500.0, EventKind.ENGINE_BUSY, GEMM, end_ns=2750.0, label="gemm", seq=1),  # touches the first
        Event(3250.0, EventKind.LOAD_ISSUE, CPU, corr_id=4, label="h0", value=64.0, seq=2),
        Event(4750.0, EventKind.QUEUE_DEPTH, EDGES[0], value=3.0, seq=3),
    ]
    evs += [
        Event(100.0 * (i + 1), EventKind.EDGE_BUSY, e, end_ns=100.0 * (i + 1) + 8, corr_id=7, value=8, seq=10 + i)
        for i, e in enumerate(EDGES)
    ]
    return perfetto_trace(EventStore.from_events(evs))["traceEvents"]


def test_spans_are_in_microseconds(trace):
    spans = sorted((e["ts"], e["dur"]) for e in trace if e["ph"] == "X" and e["cat"] == "engine_busy")
    assert spans == [(1.5, 1.0), (2.5, 0.25)]


def test_instants_are_in_microseconds(trace):
    (inst,) = [e for e in trace if e["ph"] == "i"]
    assert inst["ts"] == 3.25


def test_queue_depth_counters_are_in_microseconds_and_flits(trace):
    (c,) = [e for e in trace if e["ph"] == "C"]
    assert c["ts"] == 4.75 and c["args"] == {"depth_flits": 3.0}


def test_a_transfer_is_one_flow_from_its_first_hop_to_its_last(trace):
    flow = sorted((e["ts"], e["ph"]) for e in trace if e.get("cat") == "transfer")
    assert flow == [(0.1, "s"), (0.2, "t"), (0.3, "f")]
    assert all(e["id"] == 7 for e in trace if e.get("cat") == "transfer")


def test_spans_that_only_touch_share_one_track(trace):
    tids = {e["tid"] for e in trace if e["ph"] == "X" and e["cat"] == "engine_busy"}
    assert len(tids) == 1
