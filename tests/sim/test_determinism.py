"""Same topology and inputs give an identical event stream and identical
latencies, run after run; observing a run does not change it (issue 2,
sections 3 and 4)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from simrun import Op, run

from kernbench.events.bus import Bus, Recorder
from kernbench.events.types import EventKind
from kernbench.topology.compile import load_topology

S = 16384
SCENARIO = [
    Op("write", "sip0.cube0.pe0.dma", "sip0.cube1.hbm.slice2", S),
    Op("write", "sip0.cube0.pe1.dma", "sip0.cube3.hbm.slice3", S, 512, 2048),
    Op("read", "sip0.cube3.pe0.dma", "sip0.cube1.hbm.slice0", S),
    Op("read", "sip0.cube1.pe4.dma", "sip0.cube1.hbm.slice0", S, 4096, at_ns=7.5),
    Op("send", "sip0.cube2.pe0.ipcq", "sip0.cube1.pe5.ipcq", S),
    Op("send", "host", "sip0.cube2.pe3.dma", S, at_ns=3.0),
    Op("read", "sip0.cube2.pe6.dma", "sip0.cube0.sram", S),
]


def recorded(graph, mode):
    bus = Bus()
    rec = Recorder(bus)
    results = run(graph, mode, SCENARIO, bus)
    return results, rec.events()


@pytest.mark.parametrize("mode", ["fast", "oracle"])
def test_same_scenario_twice_gives_identical_events_and_latencies(sip2x2, mode):
    r1, e1 = recorded(sip2x2, mode)
    r2, e2 = recorded(load_topology("sip2x2"), mode)  # a fresh graph, empty route cache
    assert r1 == r2
    assert len(e1) > 50
    assert e1 == e2  # every field, seq included


@pytest.mark.parametrize("mode", ["fast", "oracle"])
def test_observing_a_run_does_not_change_its_latencies(sip2x2, mode):
    unobserved = run(sip2x2, mode, SCENARIO)
    observed, _ = recorded(sip2x2, mode)
    assert unobserved == observed


@pytest.mark.parametrize("mode", ["fast", "oracle"])
def test_stream_holds_every_transfer_start_and_end_with_its_corr_id(sip2x2, mode):
    results, events = recorded(sip2x2, mode)
    corrs = [r.corr_id for r in results]
    assert len(set(corrs)) == len(SCENARIO)
    for r in results:
        mine = [e for e in events if e.corr_id == r.corr_id]
        (start,) = [e for e in mine if e.kind == EventKind.TRANSFER_START]
        (end,) = [e for e in mine if e.kind == EventKind.TRANSFER_END]
        assert (start.t_ns, end.t_ns) == (r.start_ns, r.end_ns)
        assert start.label == r.kind and start.value == r.size_bytes
        assert start.detail == f"{r.src}=>{r.dst}"
        busy = [e for e in mine if e.kind == EventKind.EDGE_BUSY]
        assert busy and all(r.start_ns <= e.t_ns < e.end_ns <= r.end_ns for e in busy)
    kinds = {e.kind for e in events}
    assert {EventKind.EDGE_BUSY, EventKind.CHANNEL_BUSY} <= kinds
    if mode == "fast":  # the oracle publishes no QUEUE_DEPTH changes
        assert EventKind.QUEUE_DEPTH in kinds


def test_event_stream_does_not_depend_on_the_hash_seed(tmp_path):
    """Run the scenario in fresh interpreters with different PYTHONHASHSEEDs."""
    here = Path(__file__).parent
    script = (
        "import hashlib, sys\n"
        f"sys.path.insert(0, {str(here)!r})\n"
        "from simrun import run\n"
        "from test_determinism import SCENARIO\n"
        "from kernbench.events.bus import Bus, Recorder\n"
        "from kernbench.topology.compile import load_topology\n"
        "bus = Bus(); rec = Recorder(bus)\n"
        "res = run(load_topology('sip2x2'), 'fast', SCENARIO, bus)\n"
        "print(hashlib.sha256(repr((res, rec.events())).encode()).hexdigest())\n"
    )
    root = Path(__file__).resolve().parents[2]
    digests = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(root))
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        digests.add(out.stdout.strip())
    assert len(digests) == 1
