"""PE engine semantics as events show them: PE_CPU publishes each stall with
its reason and what it waits on; PE_SCHEDULER streams composite tiles so the
read of one tile overlaps compute of the previous; composites sharing a
handle run in program order; busy totals equal the published spans."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from kernelkit import PE0, busy, dispatches, events, f32, rng_array, run1

import kernbench.tl as tl
from kernbench.events.types import EventKind, StallReason
from kernbench.runtime.api import Runtime


@pytest.fixture
def rt(cube1):
    return Runtime(cube1)


def stalls(r, pe: str = PE0):
    return events(r, EventKind.STALL, f"{pe}.cpu")


# --- stall reasons ----------------------------------------------------------------


def test_auto_wait_stall_names_the_pending_load(rt):
    def k(a):
        tl.exp(tl.load(a))

    r = run1(rt, k, rt.deploy(np.ones((64, 64))))
    (s,) = stalls(r)
    assert s.label == StallReason.LAZY_LOAD.value == "lazy-load auto-wait"
    assert s.detail.startswith("h0:load a")  # the tensor is named after the kernel's parameter
    assert s.end_ns > s.t_ns


def test_explicit_wait_on_a_load_is_its_own_stall_reason(rt):
    def k(a):
        tl.wait(tl.load(a))

    r = run1(rt, k, rt.deploy(np.ones((64, 64))))
    (s,) = stalls(r)
    assert (s.label, s.detail.split(" ")[0]) == (StallReason.EXPLICIT_WAIT.value, "h0:load")


def test_recv_wait_stall_names_the_posted_receive(rt):
    def k(a):
        if tl.program_id() == 1:
            x = tl.load(a)
            tl.send(0, tl.exp(x))
        else:
            tl.wait(tl.recv_async(1, (64, 64), np.float16))

    rt.launch(k, pes=[0, 1], args=(rt.deploy(np.ones((64, 64))),))
    r = rt.run(record=True)
    (s,) = stalls(r, PE0)
    assert s.label == StallReason.RECV_WAIT.value and s.detail == "h0:recv from 1"
    sends = busy(r, "ipcq", "sip0.cube0.pe1")
    assert s.end_ns == sends[-1].end_ns, "the receiver resumes when the message lands"


def test_issuing_more_long_commands_than_the_queue_holds_stalls_on_queue_full(rt):
    depth = rt.graph.node(f"{PE0}.cpu").attrs["sched_queue_depth"]
    n = depth + 6

    def k(a, b):
        x, y = tl.load(a), tl.load(b)
        tl.wait(x)
        tl.wait(y)
        for _ in range(n):
            tl.dot(x, y)  # ~0.5 us each on PE_GEMM; dispatch is ~13 ns

    r = run1(rt, k, rt.deploy(rng_array((128, 128), 1)), rt.deploy(rng_array((128, 128), 2)))
    full = [s for s in stalls(r) if s.label == StallReason.QUEUE_FULL.value]
    assert len(full) >= n - depth - 1
    assert all(s.detail == f"oldest of {depth} in-flight commands" for s in full)
    gemm_ends = sorted(e.end_ns for e in busy(r, "gemm"))
    # each queue-full stall ends exactly when an earlier command completes
    ends = {round(e.end_ns, 6) for e in r.events if e.kind is EventKind.ENGINE_BUSY and e.component.endswith((".fetch", ".store", ".gemm"))}
    assert all(round(s.end_ns, 6) in ends for s in full)
    assert len(gemm_ends) == n


def test_a_deep_enough_queue_removes_the_queue_full_stalls():
    rt = Runtime("cube1", overrides=["pe.attrs.sched_queue_depth=64"])

    def k(a, b):
        x, y = tl.load(a), tl.load(b)
        tl.wait(x)
        tl.wait(y)
        for _ in range(22):
            tl.dot(x, y)

    r = run1(rt, k, rt.deploy(rng_array((128, 128), 1)), rt.deploy(rng_array((128, 128), 2)))
    assert not [s for s in stalls(r) if s.label == StallReason.QUEUE_FULL.value]


def test_stall_spans_add_up_to_the_reported_stall_time(rt):
    def k(a, b):
        x = tl.load(a)
        y = tl.load(b)
        tl.add(x, y)
        tl.wait(tl.load(a))

    r = run1(rt, k, rt.deploy(np.ones((128, 128))), rt.deploy(np.ones((128, 128))))
    assert sum(s.end_ns - s.t_ns for s in stalls(r)) == pytest.approx(r.stall_ns[PE0])


# --- busy spans -------------------------------------------------------------------


def test_every_engine_publishes_busy_spans_that_sum_to_its_busy_time(rt):
    def k(a, b, out):
        x, y = tl.load(a), tl.load(b)
        z = tl.exp(tl.dot(x, y))
        if tl.program_id() == 0:
            tl.send(1, z)
            tl.store(out, tl.copy(z))
        else:
            tl.wait(tl.recv_async(0, (64, 64)))

    out = rt.empty((64, 64), np.float32)
    rt.launch(k, pes=[0, 1], args=(rt.deploy(rng_array((64, 64), 1)), rt.deploy(rng_array((64, 64), 2)), out))
    r = rt.run(record=True)
    spans = defaultdict(float)
    for e in r.events:
        if e.kind in (EventKind.ENGINE_BUSY, EventKind.DISPATCH, EventKind.CPU_WORK) and e.component.startswith(PE0):
            eng = e.component[len(PE0) + 1 :]
            spans[eng] += e.end_ns - e.t_ns
    for eng, total in r.engine_busy_ns[PE0].items():
        assert spans[eng] == pytest.approx(total), eng
        assert total > 0, f"{eng} did no work"


# --- composites stream tiles ---------------------------------------------------------


def _tiles_kernel(a, b, out):
    x = tl.load(a)
    o = tl.zeros((64, 1024))
    tl.composite([tl.OpSpec("gemm", {"a": x, "b": tl.ref(b)}, o)], rw_handles=[o])
    tl.store(out, o)


def test_tile_reads_of_a_streamed_composite_overlap_the_gemm_of_earlier_tiles(rt):
    A, B = rng_array((64, 128), 3), rng_array((128, 1024), 4)  # B 256 KiB -> 8 tiles of 32 KiB
    out = rt.empty((64, 1024), np.float32)
    r = run1(rt, _tiles_kernel, rt.deploy(A), rt.deploy(B), out)
    (comp,) = [e for e in dispatches(r) if e.label == "CompositeCmd"]
    reads = sorted((e for e in busy(r, "dma.rd") if e.corr_id == comp.corr_id), key=lambda e: e.t_ns)
    gemms = sorted((e for e in busy(r, "gemm") if e.corr_id == comp.corr_id), key=lambda e: e.t_ns)
    assert len(reads) == len(gemms) == 8
    assert [e.label.split(" ")[1] for e in reads] == [str(i) for i in range(8)]
    for i in range(1, 8):  # tile i's read overlaps tile i-1's GEMM (or the one before)
        assert reads[i].t_ns < gemms[i - 1].end_ns, f"tile {i} read does not overlap compute"
    for i in range(8):  # tile i computes only after its bytes arrived
        assert gemms[i].t_ns >= reads[i].end_ns
    serial = sum(e.end_ns - e.t_ns for e in reads + gemms)
    assert gemms[-1].end_ns - reads[0].t_ns < serial
    # one dispatch for the whole stream, no redispatch per tile
    assert [e.label for e in dispatches(r)] == ["DmaReadCmd", "CompositeCmd", "DmaWriteCmd"]
    np.testing.assert_allclose(rt.read(out), f32(A) @ f32(B), rtol=1e-5, atol=1e-3)


def _spans_by_corr(r):
    by = defaultdict(list)
    for e in r.events:
        if e.kind is EventKind.ENGINE_BUSY and not e.component.endswith(".sched"):
            by[e.corr_id].append(e)
    return by


def _two_composites(shared: bool):
    def k(a, b, c, out):
        x = tl.load(a)
        o1 = tl.zeros((64, 512))
        o2 = o1 if shared else tl.zeros((64, 512))
        tl.composite([tl.OpSpec("gemm", {"a": x, "b": tl.ref(b)}, o1)], rw_handles=[o1])
        tl.composite([tl.OpSpec("gemm", {"a": x, "b": tl.ref(c)}, o2, extra={"accumulate": True})], rw_handles=[o2])
        tl.store(out, o2)

    return k


def test_two_composites_sharing_an_rw_handle_run_in_program_order(rt):
    A, B, C = rng_array((64, 128), 5), rng_array((128, 512), 6), rng_array((128, 512), 7)
    out = rt.empty((64, 512), np.float32)
    r = run1(rt, _two_composites(True), rt.deploy(A), rt.deploy(B), rt.deploy(C), out)
    c1, c2 = [e.corr_id for e in dispatches(r) if e.label == "CompositeCmd"]
    by = _spans_by_corr(r)
    # The second composite's stages that touch the shared handle wait for the
    # first; its DMA_READ of HBM-only tl.ref tiles may prefetch meanwhile.
    touching = [e for e in by[c2] if not e.component.endswith(".dma.rd")]
    assert min(e.t_ns for e in touching) >= max(e.end_ns for e in by[c1])
    np.testing.assert_allclose(rt.read(out), f32(A) @ f32(B) + f32(A) @ f32(C), rtol=1e-5, atol=1e-3)


def test_two_independent_composites_may_overlap(rt):
    A, B, C = rng_array((64, 128), 5), rng_array((128, 512), 6), rng_array((128, 512), 7)
    out = rt.empty((64, 512), np.float32)
    r = run1(rt, _two_composites(False), rt.deploy(A), rt.deploy(B), rt.deploy(C), out)
    c1, c2 = [e.corr_id for e in dispatches(r) if e.label == "CompositeCmd"]
    by = _spans_by_corr(r)
    assert min(e.t_ns for e in by[c2]) < max(e.end_ns for e in by[c1])
    again = Runtime(rt.graph)
    shared = run1(again, _two_composites(True), *[again.deploy(x) for x in (A, B, C)], again.empty((64, 512), np.float32))
    assert r.latency_ns < shared.latency_ns


def test_a_single_op_command_waits_for_the_composite_that_writes_its_operand(rt):
    A, B = rng_array((64, 128), 8), rng_array((128, 256), 9)
    out = rt.empty((64, 256), np.float32)

    def k(a, b, out):
        o = tl.zeros((64, 256))
        tl.composite([tl.OpSpec("gemm", {"a": tl.load(a), "b": tl.ref(b)}, o)], rw_handles=[o])
        tl.store(out, tl.exp(tl.scale(o, 0.01)))

    r = run1(rt, k, rt.deploy(A), rt.deploy(B), out)
    comp_end = max(e.end_ns for e in busy(r, "gemm"))
    (scale_math,) = [e for e in busy(r, "math") if e.label == "scale"]
    assert scale_math.t_ns >= comp_end
    np.testing.assert_allclose(rt.read(out), np.exp((f32(A) @ f32(B)) * 0.01), rtol=1e-4)


def test_the_composite_tile_size_comes_from_the_topology():
    A, B = rng_array((64, 128), 3), rng_array((128, 1024), 4)
    for tile, n in [(32768, 8), (65536, 4), (1 << 20, 1)]:
        rt = Runtime("cube1", overrides=[f"pe.attrs.composite_tile_bytes={tile}"])
        r = run1(rt, _tiles_kernel, rt.deploy(A), rt.deploy(B), rt.empty((64, 1024), np.float32))
        assert len(busy(r, "gemm")) == n


def test_pes_with_equal_engine_attributes_share_their_cost_model_gemm_array_and_timing(rt):
    from kernbench.pe.cost import DispatchCostModel
    from kernbench.pe.processing_element import _engines
    from kernbench.pe.work import GemmArray

    attrs = dict(rt.graph.node(f"{PE0}.cpu").attrs)
    made = _engines(attrs)
    assert made[0] == DispatchCostModel.from_attrs(attrs) and made[1] == GemmArray.from_attrs(attrs)
    same = _engines(dict(attrs, pe=attrs["pe"] + 1))  # another PE: its place is no engine parameter
    assert all(x is y for x, y in zip(made, same, strict=True))
    faster = _engines(dict(attrs, gemm_tflops=attrs["gemm_tflops"] * 2))
    assert faster[0] is made[0] and faster[1] != made[1] and faster[2] != made[2]
    dearer = _engines(dict(attrs, pe_cost_model=dict(attrs["pe_cost_model"], fixed_per_cmd_cycles=99.0)))
    assert dearer[0].fixed_per_cmd_cycles == 99.0 and dearer[1] == made[1] and dearer[2] is made[2]  # (one timing object)
