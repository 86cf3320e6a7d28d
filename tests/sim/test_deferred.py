"""Trains deferred on idle routes (Fifo.defer) give the answer planned passages give.

A read's or a send's data that finds its whole route idle is planned in closed form
(:func:`kernbench.sim.train.tandem`) and the FIFOs hold two numbers; whoever
needs more makes its owner materialize the passages. These tests hold the
closed forms to the stage-by-stage FIFO, and deferred runs to planned runs
and to the oracle, with the scenarios that make a deferred train
materialize (a train arriving among its flits, a control flit due before
its last) and fold (its work still queued when the next train comes).
"""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simrun import Op, run

from kernbench.sim import fast
from kernbench.sim import fifo as fifo_module
from kernbench.sim.serve import fifo, tandem, union
from kernbench.sim.train import Train
from kernbench.topology.compile import load_topology

EXACT_NS = 1e-6

# --- the closed forms ----------------------------------------------------------------------


@st.composite
def trains(draw):
    kind = draw(st.sampled_from(["channels", "burst", "even", "groups", "array"]))
    t0 = draw(st.floats(0.0, 50.0))
    if kind == "groups":  # groups of p flits g apart, one every T; the last group may be partial
        p, g = draw(st.integers(2, 8)), draw(st.sampled_from([0.0, 0.5, 1.0]))
        period = (p - 1) * g + draw(st.sampled_from([0.0, 0.5, 3.0]))
        return Train(draw(st.integers(1, 200)), [(0, t0, g, p, period)])
    if kind == "channels":  # what a read's channels send: groups, partial groups, or skewed starts
        b = draw(st.sampled_from([2.0, 4.0, 8.0, 0.75]))
        progs = [(t0 + draw(st.sampled_from([0.0, 0.0, 0.0, 3.5])), draw(st.integers(0, 40))) for _ in range(draw(st.integers(1, 8)))]
        if sum(c for _, c in progs) == 0:
            progs[0] = (t0, 1)
        return union(progs, b)
    if kind == "burst":
        return Train.burst(draw(st.integers(1, 600)), t0)
    if kind == "even":
        return Train.even(draw(st.integers(1, 600)), t0, draw(st.floats(0.0, 3.0)))
    times = draw(st.lists(st.floats(0.0, 300.0), min_size=1, max_size=60))
    return Train.from_times(np.sort(np.array(times)))


stages = st.lists(
    st.tuples(
        st.sampled_from([1.0, 0.5, 2.0, 0.25, 1.7]),  # service per flit
        st.sampled_from([0.0, 0.0, 0.0, 80.0, 400.0]),  # work queued there until
        st.sampled_from([0.0, 2.0, 9.6, 3.3]),  # delay to the next stage
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=300, deadline=None)
@given(trains(), stages)
def test_tandem_equals_the_fifo_stage_by_stage(train, stages):
    service, queued, delay = (list(x) for x in zip(*stages, strict=True))
    got = tandem(train, service, queued, delay)
    inp = train
    for (s, v, dl), (t_last, v_end) in zip(stages, got, strict=True):
        out = fifo(inp, s, max(v, inp.first()))
        assert t_last == pytest.approx(inp.last(), rel=1e-12, abs=1e-9)
        assert v_end == pytest.approx(out.last(), rel=1e-12, abs=1e-9)
        inp = out.shift(dl)


@settings(max_examples=300, deadline=None)
@given(trains(), st.floats(0.0, 10.0))
def test_max_minus_is_the_largest_lead_over_a_pace(train, m):
    want = max(train.at(k) - k * m for k in range(train.n))
    assert train.max_minus(m) == pytest.approx(want, rel=1e-12, abs=1e-9)


# --- deferred runs against planned ones and the oracle ----------------------------------------


@pytest.fixture
def counted(monkeypatch):
    """How often deferred trains materialized and folded."""
    seen: collections.Counter[str] = collections.Counter()
    materialize, fold = fast.FastTransfer.materialize, fifo_module.Fifo._fold

    def counting_materialize(self):
        queued = self.deferred
        materialize(self)
        if queued is not None:
            seen["materialized"] += 1
            if any(v > p.inp.first() + 1e-9 for v, p in zip(queued, self.data, strict=True)):
                seen["materialized behind queued work"] += 1  # deferred behind work still queued on its route

    def counting_fold(self):
        seen["folded"] += 1
        fold(self)

    monkeypatch.setattr(fast.FastTransfer, "materialize", counting_materialize)
    monkeypatch.setattr(fifo_module.Fifo, "_fold", counting_fold)
    return seen


def assert_all_agree(graph, ops):
    deferred, planned, oracle = run(graph, "fast", ops), run(graph, "fast", ops, defer=False), run(graph, "oracle", ops)
    for op, d, p, o in zip(ops, deferred, planned, oracle, strict=True):
        assert abs(d.end_ns - p.end_ns) <= 1e-9, (op, d.end_ns, p.end_ns)
        assert abs(d.end_ns - o.end_ns) <= EXACT_NS, (op, d.end_ns, o.end_ns)


SLOW_UCIE = load_topology("sip2x2", ["sip.ucie.bw_gbps=128"])


# Two transfers sharing the slow UCIe link cube0 → cube1, the second joining the first's deferred
# train at every stage of it (early and late): a read's data, a send's payload.
JOINS = {
    "a train arriving among deferred flits": lambda at: [
        Op("read", "sip0.cube1.pe0.dma", "sip0.cube0.hbm.slice0", 32768),
        Op("read", "sip0.cube1.pe1.dma", "sip0.cube0.hbm.slice1", 32768, at_ns=at),
    ],
    "a send joining a deferred send": lambda at: [
        Op("send", "sip0.cube0.pe0.ipcq", "sip0.cube1.pe0.ipcq", 32768),
        Op("send", "sip0.cube0.pe1.ipcq", "sip0.cube1.pe1.ipcq", 32768, at_ns=at),
    ],
}


@pytest.mark.parametrize("case", sorted(JOINS))
def test_a_transfer_joining_a_deferred_train_materializes_it(counted, case):
    for at in range(0, 1400, 40):
        assert_all_agree(SLOW_UCIE, JOINS[case](float(at)))
    assert counted["materialized"] > 0 and counted["folded"] > 0


def test_a_control_flit_due_before_the_last_deferred_flit_materializes_them(counted):
    """R2's request crosses cube0 → cube1 (R1's data direction) while R1's flits still arrive there."""
    for at in range(0, 1400, 40):
        ops = [
            Op("read", "sip0.cube1.pe0.dma", "sip0.cube0.hbm.slice0", 32768),
            Op("read", "sip0.cube0.pe2.dma", "sip0.cube1.hbm.slice3", 4096, at_ns=float(at)),
        ]
        assert_all_agree(SLOW_UCIE, ops)
    assert counted["materialized"] > 0


def test_queued_work_of_a_folded_train_delays_the_next(counted):
    """R1's flits have all reached the slow link but still queue there when R2's head comes."""
    g = SLOW_UCIE
    first = Op("read", "sip0.cube1.pe0.dma", "sip0.cube0.hbm.slice0", 65536)
    (alone,) = run(g, "fast", [first])
    waited = 0
    for at in np.linspace(0.0, alone.end_ns, 60):
        ops = [first, Op("read", "sip0.cube1.pe1.dma", "sip0.cube0.hbm.slice1", 256, at_ns=float(at))]
        assert_all_agree(g, ops)
        (r2_alone,) = run(g, "fast", [ops[1]])
        waited += run(g, "fast", ops)[1].end_ns > r2_alone.end_ns + 1.0
    assert counted["folded"] > 0 and waited > 0


def test_a_train_deferred_behind_queued_work_materializes_behind_it(counted):
    """R1 (cube0 -> cube1) fills a link's queue; R2 (cube0 -> cube2), sharing that link
    and nothing after it with R1, is deferred while R1's work still queues there, so
    behind it; R3's flits then arrive among R2's: R2 materializes, still behind R1.
    (A configuration found by search: the routes must part right after the queue.)"""
    g = SLOW_UCIE
    first = Op("read", "sip0.cube1.pe0.dma", "sip0.cube0.hbm.slice0", 65536)
    (alone,) = run(g, "fast", [first])
    for at2 in np.linspace(0.3 * alone.end_ns, alone.end_ns, 8):
        for gap in (0.0, 20.0, 60.0, 150.0, 300.0):
            ops = [
                first,
                Op("read", "sip0.cube2.pe0.dma", "sip0.cube0.hbm.slice1", 8192, at_ns=float(at2)),
                Op("read", "sip0.cube2.pe3.dma", "sip0.cube0.hbm.slice5", 8192, at_ns=float(at2) + gap),
            ]
            assert_all_agree(g, ops)
    assert counted["materialized behind queued work"] > 0


def test_sequential_reads_stay_deferred(counted):
    """One read after another on the same route: each finds it idle (the one before
    has passed) and takes its place; nothing materializes, all take the same time."""
    ops = [Op("read", "sip0.cube1.pe0.dma", "sip0.cube0.hbm.slice0", 32768, at_ns=3000.0 * i) for i in range(5)]
    assert_all_agree(SLOW_UCIE, ops)
    assert counted["materialized"] == 0
    latencies = [r.latency_ns for r in run(SLOW_UCIE, "fast", ops)]
    assert max(latencies) - min(latencies) <= 1e-9


def test_sequential_strided_reads_of_two_layouts_take_each_its_own_time(counted):
    """Idle reads alternating between a strided layout spread over the slice's eight
    channels (rows 2,304 B apart) and one whose rows all land on one channel (2,048 B
    apart): each layout drains as it falls, read after read — a layout worked out for
    one read is never taken for another's (a strided layout is built per read, so its
    identity says nothing once that read is over)."""
    ops = [Op("read", "sip0.cube0.pe0.dma", "sip0.cube0.hbm.slice0", 64 * 256, 0, 2048 if i % 2 else 2304, 1500.0 * i) for i in range(12)]
    assert_all_agree(load_topology("cube1"), ops)
    lat = [r.latency_ns for r in run(load_topology("cube1"), "fast", ops)]
    assert min(lat[1::2]) > max(lat[0::2]) + 400  # one channel: 64 bursts of 8 ns, not 8


TOPOLOGIES = {name: load_topology(name) for name in ("cube1", "sip2x2")}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(TOPOLOGIES)),
    st.lists(
        st.tuples(
            st.sampled_from(["read", "read", "send", "write"]),
            st.integers(0, 7),
            st.integers(0, 7),
            st.sampled_from([256, 4096, 32768]),
            st.floats(0.0, 1500.0),
        ),
        min_size=2,
        max_size=10,
    ),
)
def test_random_staggered_transfers_deferred_planned_and_oracle_agree(topo, spec):
    """Staggered reads and sends (writes among them) mostly on idle routes, so that
    deferral, materialization and folding all happen."""
    g = TOPOLOGIES[topo]
    cubes = 1 if topo == "cube1" else 4
    ops = []
    for op, a, b, size, at in spec:
        if op == "send":
            if a != b:
                ops.append(Op("send", f"sip0.cube{a % cubes}.pe{a}.ipcq", f"sip0.cube{(b * 3) % cubes}.pe{b}.ipcq", size, at_ns=at))
            continue
        ops.append(Op(op, f"sip0.cube{a % cubes}.pe{a}.dma", f"sip0.cube{(b * 3) % cubes}.hbm.slice{b}", size, at_ns=at))
    assert_all_agree(g, ops)


def test_a_subscriber_arriving_mid_run_sees_every_busy_span():
    """Nobody observes the bus when the first reads start (so they are deferred); a
    subscriber arrives before they finish: it gets the same events as if every train
    had been planned FIFO by FIFO (the busy spans of the links; channels are published
    for reads whose request arrives once someone observes, deferred or not)."""
    import simpy

    from kernbench.events.bus import Bus
    from kernbench.sim.network import Network

    def observed(defer: bool) -> list[tuple]:
        env = simpy.Environment()
        bus = Bus()
        net = Network(env, SLOW_UCIE, bus)
        net.defer = net.defer and defer
        seen: list[tuple] = []

        def subscribe_later():
            yield env.timeout(50.0)
            bus.subscribe(lambda e: seen.append((round(e.t_ns, 6), e.kind, e.component, round(e.end_ns or 0.0, 6), e.corr_id, e.value)))

        env.process(subscribe_later())
        net.read("sip0.cube1.pe0.dma", "sip0.cube0.hbm.slice0", 0, 32768)
        net.read("sip0.cube2.pe0.dma", "sip0.cube0.hbm.slice1", 0, 8192)
        env.run()
        return sorted(seen)

    got = observed(True)
    assert got == observed(False)
    assert sum(e[1].name == "EDGE_BUSY" for e in got) >= 8
