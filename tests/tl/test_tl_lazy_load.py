"""ADR-0062: ``tl.load`` is lazy. It returns at once, the first consuming op
waits; loads overlap compute, serialize on the one read channel, log one
``memory/dma_read`` each, and a dropped in-flight load keeps its buffer."""

from __future__ import annotations

import numpy as np
import pytest
from kernelkit import PE0, busy, events, rng_array, run1

import kernbench.tl as tl
from kernbench.events.types import EventKind, StallReason
from kernbench.runtime.api import Runtime
from kernbench.tl.context import current


@pytest.fixture
def rt(cube1):
    return Runtime(cube1)


# --- TR1: overlap is real --------------------------------------------------------


def _overlap_kernel(with_load: bool, with_gemm: bool):
    def k(a, b, c):
        x, y = tl.load(a), tl.load(b)
        tl.wait(x)
        tl.wait(y)  # GEMM operands resident before the measured part
        if with_load:
            tl.load(c)
        if with_gemm:
            tl.dot(x, y)

    return k


def test_a_load_and_an_independent_gemm_overlap_ending_near_max_not_sum(cube1):
    # GEMM 64x256x128 (~0.5 us + fetch/store) against a 128 KiB load (~0.55 us)
    A, B, C = rng_array((64, 256), 1), rng_array((256, 128), 2), rng_array((256, 256), 3)
    t = {}
    for name, load, gemm in [("none", False, False), ("load", True, False), ("gemm", False, True), ("both", True, True)]:
        rt = Runtime(cube1)
        t[name] = run1(rt, _overlap_kernel(load, gemm), rt.deploy(A), rt.deploy(B), rt.deploy(C), record=False).latency_ns
    load, gemm, both = t["load"] - t["none"], t["gemm"] - t["none"], t["both"] - t["none"]
    assert 0.5 < load / gemm < 2.0, "the two should be of comparable duration"
    assert both < load + gemm
    # near max: only the second command's dispatch (< 15 ns) separates the two starts
    assert max(load, gemm) <= both <= max(load, gemm) + 15.0


def test_tl_load_returns_before_its_dma_completes(rt):
    seen = {}

    def k(a):
        h = tl.load(a)
        seen["pending"] = h.ref.id in current()._in_flight
        tl.wait(h)
        seen["after"] = h.ref.id in current()._in_flight

    r = run1(rt, k, rt.deploy(np.ones((256, 256))))
    assert seen == {"pending": True, "after": False}
    (issue,) = events(r, EventKind.LOAD_ISSUE)
    (done,) = events(r, EventKind.LOAD_COMPLETE)
    (d,) = events(r, EventKind.DISPATCH)
    assert issue.t_ns == d.end_ns < done.t_ns


# --- TR2: auto-wait correctness ---------------------------------------------------


def test_the_auto_waited_handle_carries_the_same_bytes_as_hbm(rt):
    A = rng_array((128, 64), 4)
    out = rt.empty((128, 64), np.float16)
    seen = {}

    def k(a, out):
        h = tl.load(a)
        tl.cycles(5)  # unrelated work between issue and first use
        seen["v"] = h.numpy()
        tl.store(out, h)

    run1(rt, k, rt.deploy(A), out, record=False)
    assert seen["v"].tobytes() == A.tobytes()
    assert rt.read(out).tobytes() == A.tobytes()


def test_the_first_consuming_op_stalls_on_the_pending_load(rt):
    def k(a, b):
        x = tl.load(a)
        y = tl.load(b)
        tl.add(x, y)

    r = run1(rt, k, rt.deploy(np.ones((128, 128))), rt.deploy(np.ones((128, 128))))
    waits = events(r, EventKind.LOAD_WAIT)
    assert [w.label.split(":")[0] for w in waits] == ["h0", "h1"]
    stalls = events(r, EventKind.STALL)
    assert {s.label for s in stalls} == {StallReason.LAZY_LOAD.value}
    completes = {e.label: e.t_ns for e in events(r, EventKind.LOAD_COMPLETE)}
    for w in waits:
        assert w.end_ns == completes[w.label]
    (add,) = [e for e in events(r, EventKind.DISPATCH) if e.label == "MathCmd"]
    assert add.t_ns == max(completes.values())


# --- TR3: two in flight -------------------------------------------------------------


def test_two_loads_in_flight_serialize_on_the_read_channel_and_both_resolve(rt):
    A, B = rng_array((128, 128), 5), rng_array((128, 128), 6)
    seen = {}

    def k(a, b):
        x = tl.load(a)
        y = tl.load(b)
        tl.cycles(1)
        seen["x"], seen["y"] = x.numpy(), y.numpy()

    r = run1(rt, k, rt.deploy(A), rt.deploy(B))
    np.testing.assert_array_equal(seen["x"], A)
    np.testing.assert_array_equal(seen["y"], B)
    first, second = busy(r, "dma.rd")
    assert first.end_ns <= second.t_ns
    assert second.t_ns == first.end_ns, "the second read starts when the first one ends"
    d2 = [e for e in events(r, EventKind.DISPATCH)][1]
    assert d2.end_ns < first.end_ns, "the second load was issued while the first was in flight"


# --- TR4: op-log compatibility -------------------------------------------------------


@pytest.mark.parametrize("blocking", [False, True])
def test_each_load_logs_exactly_one_dma_read(rt, blocking):
    def k(a):
        hs = [tl.load(a[i * 16 : (i + 1) * 16, :]) for i in range(5)]
        if blocking:
            for h in hs:
                tl.wait(h)
        acc = hs[0]
        for h in hs[1:]:
            acc = tl.add(acc, h)

    r = run1(rt, k, rt.deploy(np.ones((80, 64))))
    ops = [e["op"] for e in r.op_logs[PE0]]
    assert ops.count("memory/dma_read") == 5
    assert len(busy(r, "dma.rd")) == 5


# --- TR5: no overlap, no change --------------------------------------------------------


def _use_at_once(blocking: bool):
    def k(a, b, out):
        x = tl.load(a)
        if blocking:
            tl.wait(x)
        y = tl.exp(x)
        z = tl.load(b)
        if blocking:
            tl.wait(z)
        tl.store(out, tl.add(y, z))

    return k


def test_load_then_immediate_use_has_the_latency_of_a_blocking_load(cube1):
    A, B = rng_array((128, 64), 7), rng_array((128, 64), 8)
    res = []
    for blocking in (False, True):
        rt = Runtime(cube1)
        out = rt.empty((128, 64))
        res.append((run1(rt, _use_at_once(blocking), rt.deploy(A), rt.deploy(B), out), rt.read(out)))
    (lazy, o1), (block, o2) = res
    assert lazy.latency_ns == block.latency_ns
    assert lazy.dispatch_cycles == block.dispatch_cycles
    assert [(e["op"], e["t_ns"]) for e in lazy.op_logs[PE0]] == [(e["op"], e["t_ns"]) for e in block.op_logs[PE0]]
    np.testing.assert_array_equal(o1, o2)
    assert {s.label for s in events(lazy, EventKind.STALL)} == {StallReason.LAZY_LOAD.value}
    assert {s.label for s in events(block, EventKind.STALL)} == {StallReason.EXPLICIT_WAIT.value}


# --- scratch lifetime (ADR-0062 "Negative") ----------------------------------------------


def test_a_dropped_in_flight_load_keeps_its_scratch_until_it_lands(rt):
    seen = {}

    def k(a):
        ctx = current()
        h = tl.load(a)
        seen["held"] = ctx.scratch_used
        del h
        seen["dropped_in_flight"] = ctx.scratch_used
        tl.cycles(10_000)  # the DMA lands meanwhile
        seen["after_landing"] = ctx.scratch_used

    A = np.ones((128, 128))  # 32 KiB float16
    r = run1(rt, k, rt.deploy(A))
    assert seen["held"] == 32768
    assert seen["dropped_in_flight"] == 32768
    assert seen["after_landing"] == 0
    assert r.scratch_peak_bytes[PE0] == 32768


def test_a_new_tile_cannot_reuse_the_buffer_of_a_dropped_load_still_in_flight(cube1):
    rt = Runtime("cube1", overrides=["pe.attrs.scratch_bytes=49152"])  # 1.5 tiles of 32 KiB
    a = rt.deploy(np.ones((128, 128)))

    def reuse_early(a):
        h = tl.load(a)
        del h
        tl.load(a)  # would need the first buffer back

    rt.launch(reuse_early, pes=[0], args=(a,))
    with pytest.raises(Exception, match="scratch exhausted"):
        rt.run()

    def reuse_after_wait(a):
        h = tl.load(a)
        tl.wait(h)
        del h
        tl.wait(tl.load(a))

    r = run1(rt, reuse_after_wait, a)
    assert r.scratch_peak_bytes[PE0] == 32768


def test_scratch_peak_counts_live_handles_only(rt):
    def k(a):
        for _ in range(50):  # 50 x 32 KiB > 1 MiB, but one tile live at a time
            tl.wait(tl.load(a))

    r = run1(rt, k, rt.deploy(np.ones((128, 128))), record=False)
    assert r.scratch_peak_bytes[PE0] <= 2 * 32768
