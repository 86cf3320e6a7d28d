"""The critical path and the latency attribution (issue: "why this latency").

Every nanosecond of a run's latency belongs to exactly one (component,
cause) pair: the path's segments tile [0, latency] and the sums by cause and
by component kind equal the latency, in both timing modes, on every shipped
kernel and on random small kernels. Where the model can be computed by hand
(one command, two reads that collide) the attribution is checked against it.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernelkit import PE0, rng_array

import kernbench.tl as tl
from kernbench.analysis.critical import NoCausesError, PathError, attribute, critical_path
from kernbench.events.store import EventStore
from kernbench.kernels import registry
from kernbench.runtime.api import Runtime

SHIPPED = [
    ("gemm-primitive", {}, "cube1"),
    ("gemm-primitive", {"layout": "naive"}, "cube1"),
    ("gemm-composite", {}, "cube1"),
    *(
        ("gqa-decode", dict(heads=16, kv_heads=2, head_dim=64, context=512, tile=64, variant=v, layout=lay), "cube1")
        for v in ("primitive", "opt2", "opt3")
        for lay in ("tiled", "naive")
    ),
    ("gqa-decode", dict(heads=16, kv_heads=2, head_dim=64, context=1024, tile=64, pes_per_head=8, variant="opt2"), "sip2x2"),
    ("allreduce", dict(algo="ring", payload="64KiB", chunk="16KiB"), "mesh2x3"),
    ("allreduce", dict(algo="tree", payload="64KiB", chunk="16KiB"), "torus2x3"),
    ("allreduce", dict(algo="2d", payload="32KiB", chunk="8KiB"), "torus2x3"),
    ("gemm-tiled", dict(form="primitive", pes=2, m=256, n=128, k=512), "cube1"),
    ("gemm-tiled", dict(form="composite", pes=8, m=512, n=256, k=1024, ksplit=4), "cube1"),
]


def shipped_run(name, opts, topo, mode):
    spec = registry.get(name)
    rt = Runtime(topo, mode=mode)
    spec.prepare(rt, dict(spec.defaults(), **opts))
    return rt.run(record=True)


def assert_tiles_the_latency(result):
    a = attribute(result.events, result.latency_ns)
    assert a.latency_ns == result.latency_ns
    assert sum(a.by_cause.values()) == pytest.approx(result.latency_ns, abs=1e-6)
    assert sum(a.by_component_kind.values()) == pytest.approx(result.latency_ns, abs=1e-6)
    assert sum(a.by_component.values()) == pytest.approx(result.latency_ns, abs=1e-6)
    path = a.path
    assert path[0].start_ns == 0.0 and path[-1].end_ns == result.latency_ns
    for before, after in itertools.pairwise(path):
        assert after.start_ns == pytest.approx(before.end_ns, abs=1e-9), (before, after)  # connected
        assert after.ns > 0.0
    return a


@pytest.mark.parametrize("mode", ["fast", "oracle"])
@pytest.mark.parametrize("name, opts, topo", SHIPPED, ids=[f"{n}-{'-'.join(map(str, o.values()))}" for n, o, _ in SHIPPED])
def test_every_shipped_kernel_attributes_its_latency_exactly(name, opts, topo, mode):
    assert_tiles_the_latency(shipped_run(name, opts, topo, mode))


@pytest.mark.parametrize("name, opts, topo", SHIPPED[3:6] + SHIPPED[-3:], ids=lambda v: str(v) if isinstance(v, str) else "")
def test_both_timing_modes_attribute_alike(name, opts, topo):
    fast = attribute(shipped_run(name, opts, topo, "fast").events)
    oracle = attribute(shipped_run(name, opts, topo, "oracle").events)
    assert fast.by_cause.keys() == oracle.by_cause.keys()
    for cause, ns in fast.by_cause.items():
        assert oracle.by_cause[cause] == pytest.approx(ns, abs=1e-6), cause


# --- by hand --------------------------------------------------------------------------


def test_one_gemm_is_its_dispatch_handoff_fetch_engine_and_store(cube1):
    """A lone GEMM on resident operands: every term computed from the PE's own parameters."""
    rt = Runtime(cube1)
    M, K, N = 64, 128, 32

    def k():
        a, b = tl.full((M, K), 1.0, np.float16), tl.full((K, N), 1.0, np.float16)
        tl.dot(a, b)

    rt.launch(k, pes=[0])
    result = rt.run(record=True)
    a = assert_tiles_the_latency(result)
    attrs = rt.graph.node(f"{PE0}.cpu").attrs
    tcm = attrs["tcm_bw_gbps"]
    r, c = attrs["gemm_array_rows"], attrs["gemm_array_cols"]  # N = 32 fills half the 64 columns: one pass per K
    gemm = attrs["gemm_pipeline_cycles"] / attrs["clock_freq_ghz"] + -(-M // r) * -(-N // c) * K * 2.0 * r * c / (
        attrs["gemm_tflops"] * 1e3
    )
    assert a.by_cause["gemm"] == pytest.approx(gemm, abs=1e-9)
    assert a.by_cause["fetch"] == pytest.approx((M * K * 2 + K * N * 2) / tcm, abs=1e-9)
    assert a.by_cause["store"] == pytest.approx(M * N * 4 / tcm, abs=1e-9)
    assert a.by_cause["scheduler hand-off"] == pytest.approx(attrs["sched_overhead_ns"], abs=1e-9)
    dispatch = sum(e.end_ns - e.t_ns for e in result.events if e.kind.name == "DISPATCH" and e.label == "GemmCmd")
    assert a.by_cause["dispatch"] == pytest.approx(dispatch, abs=1e-9)  # the GEMM's own and the fills' before it
    assert set(a.by_component_kind) == {"PE_CPU", "PE_SCHEDULER", "PE_FETCH_STORE", "PE_GEMM"}


def test_a_read_behind_another_on_the_same_channel_queues_behind_it(cube1):
    """Two PEs read the same bursts of one slice at once: the second's critical flit waits on the
    pseudo-channel for the first's bursts, and the path says whose."""
    rt = Runtime(cube1)
    x = rt.deploy(rng_array((64, 64)), pe=0)  # 8 KiB on slice 0

    def k(t):
        h = tl.load(t)
        tl.wait(h)

    rt.launch(k, pes=[0, 1], args=(x,))
    result = rt.run(record=True)
    a = assert_tiles_the_latency(result)
    queued = [s for s in a.path if s.cause == "queueing"]
    assert queued and all(s.kind in ("hbm channel", "edge") and s.behind >= 0 for s in queued)
    reads = {e.corr_id for e in result.events if e.kind.name == "TRANSFER_START"}
    assert {s.behind for s in queued} <= reads
    assert {s.corr_id for s in queued}.isdisjoint({s.behind for s in queued})  # behind the other read


def test_a_receive_puts_the_sender_on_the_path(cube1):
    rt = Runtime(cube1)

    def k():
        if tl.program_id() == 0:
            x = tl.full((64, 64), 1.0)
            y = tl.exp(x)
            tl.send(1, y)
        else:
            tl.wait(tl.recv_async(0, (64, 64)))
            tl.cycles(10)

    rt.launch(k, pes=[0, 1])
    result = rt.run(record=True)
    a = assert_tiles_the_latency(result)
    comps = [s.component for s in a.path]
    assert any(c.startswith("sip0.cube0.pe0.") for c in comps) and any(c.startswith("sip0.cube0.pe1.") for c in comps)
    assert any(s.via == "recv wait" for s in a.path)
    assert a.by_cause["cpu work"] == pytest.approx(10 / rt.graph.node(f"{PE0}.cpu").attrs["clock_freq_ghz"], abs=1e-9)


# --- random small kernels -----------------------------------------------------------------

OPS = st.sampled_from(["load", "dot", "add", "exp", "store", "cycles", "composite", "wait", "copy"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    programs=st.lists(st.lists(OPS, min_size=1, max_size=10), min_size=1, max_size=4),
    ring=st.booleans(),
    mode=st.sampled_from(["fast", "oracle"]),
)
def test_random_small_kernels_attribute_their_latency_exactly(cube1, programs, ring, mode):
    rt = Runtime(cube1, mode=mode)
    n = len(programs)
    ins = [rt.deploy(rng_array((32, 32), i), pe=i) for i in range(n)]
    outs = [rt.empty((32, 32), np.float16, pe=(i + 1) % 8) for i in range(n)]

    def k(As, Os):
        me = tl.program_id()
        x = tl.load(As[me])
        acc = tl.zeros((32, 32))
        for op in programs[me]:
            if op == "load":
                x = tl.load(As[(me + 1) % n])
            elif op == "dot":
                acc = tl.dot(x, x)
            elif op == "add":
                acc = tl.add(acc, x)
            elif op == "exp":
                acc = tl.exp(tl.scale(acc, 1e-3))
            elif op == "store":
                tl.store(Os[me], acc)
            elif op == "cycles":
                tl.cycles(7)
            elif op == "composite":
                y = tl.ref(As[me])
                tl.composite([tl.OpSpec("gemm", {"a": y, "b": y}, out=acc)], rw_handles=[acc])
            elif op == "wait":
                tl.wait(x)
            elif op == "copy":
                acc = tl.copy(acc)
        if ring and n > 1:
            tl.send((me + 1) % n, acc)
            tl.wait(tl.recv_async((me - 1) % n, (32, 32)))

    rt.launch(k, pes=list(range(n)), args=(ins, outs))
    assert_tiles_the_latency(rt.run(record=True))


# --- from files, and what cannot be explained ------------------------------------------------


def test_a_saved_trace_explains_the_same_as_the_live_run(tmp_path):
    from kernbench.events.tracefile import open_trace, save_trace

    result = shipped_run(*SHIPPED[4], "fast")
    live = attribute(result.events)
    save_trace(tmp_path / "run.kbtrace", EventStore.from_events(result.events))
    again = attribute(open_trace(tmp_path / "run.kbtrace").store)
    assert again.by_cause == live.by_cause and again.path == live.path


def test_a_stream_without_causes_says_so():

    result = shipped_run(*SHIPPED[0], "fast")
    with pytest.raises(NoCausesError, match="without causes"):
        critical_path(EventStore.from_events([e._replace(pred=-1) for e in result.events]))
    with pytest.raises(PathError, match="not at the run's latency"):
        attribute(result.events, result.latency_ns + 5.0)


def test_an_empty_run_has_an_empty_path():
    assert attribute([]).path == () and attribute([]).latency_ns == 0.0


def _drain_parts(graph, mode, op, stride=None, size=32 * 1024):
    """The drain parts of one transfer on an idle cube1 network (PE 0 ↔ its own slice)."""
    import simpy

    from kernbench.sim.network import Network

    env = simpy.Environment()
    net = Network(env, graph, mode=mode, explain=True)
    pe, mem = "sip0.cube0.pe0.dma", "sip0.cube0.hbm.slice0"
    ev = net.read(pe, mem, 0, size, stride_bytes=stride) if op == "read" else net.write(pe, mem, 0, size)
    env.run(ev)
    return [p for p in ev.value.parts if p.cause == "drain"]


@pytest.mark.parametrize("mode", ["fast", "oracle"])
def test_a_contiguous_read_drains_on_the_memory_not_one_channel(cube1, mode):
    """32 KiB contiguous: 16 bursts on each of the slice's 8 channels, all queued at once, the last
    of each served at the same instant; no one channel is critical, so the drain is named after the slice."""
    (drain,) = _drain_parts(cube1, mode, "read")
    assert drain.component == "sip0.cube0.hbm.slice0"


@pytest.mark.parametrize("mode", ["fast", "oracle"])
def test_a_contiguous_write_drains_on_the_channel_of_its_last_burst(cube1, mode):
    """A write's bursts reach the channels one after another (burst k on channel k mod 8): the
    last burst, on the eighth channel, is written last; no tie."""
    (drain,) = _drain_parts(cube1, mode, "write")
    assert drain.component == "sip0.cube0.hbm.pc7"


@pytest.mark.parametrize("mode", ["fast", "oracle"])
def test_a_one_channel_read_drains_on_that_channel(cube1, mode):
    """One burst every 8 bursts: all on one pseudo-channel, which is then named (a hot channel shows)."""
    burst = 256
    (drain,) = _drain_parts(cube1, mode, "read", stride=8 * burst, size=16 * burst)
    assert drain.component.startswith("sip0.cube0.hbm.") and drain.component != "sip0.cube0.hbm.slice0"
    assert drain.component.rsplit(".", 1)[1].startswith("pc")


def test_a_drain_is_an_hbm_channel_whatever_it_is_named_after():
    from kernbench.analysis.critical import _cause_kind

    assert _cause_kind("drain", "sip0.cube0.hbm.slice3") == ("hbm channel drain", "hbm channel")
    assert _cause_kind("drain", "sip0.cube0.hbm.pc5") == ("hbm channel drain", "hbm channel")
    assert _cause_kind("overhead", "sip0.cube0.hbm.slice3") == ("node overhead", "node")
