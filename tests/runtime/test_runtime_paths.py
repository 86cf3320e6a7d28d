"""Live and replay paths: the same inputs give identical dispatch accounting,
op log, latency and event stream (ADR-0064 TR6, TR7); runs are deterministic;
replay re-times a recorded command log without running kernel code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import shipped
from kernelkit import f32, rng_array, run1

import kernbench.tl as tl
from kernbench.events.types import EventKind
from kernbench.runtime.api import Runtime

ROOT = Path(__file__).resolve().parents[2]


def gemm_primitive(a, b, out, tile_k: int = 64):
    """Chunked lazy loads: prefetch the next K tile while the current one multiplies."""
    _, k = a.shape
    acc = None
    nxt = (tl.load(a[:, 0:tile_k]), tl.load(b[0:tile_k, :]))
    for k0 in range(0, k, tile_k):
        x, y = nxt
        if k0 + tile_k < k:
            nxt = (tl.load(a[:, k0 + tile_k : k0 + 2 * tile_k]), tl.load(b[k0 + tile_k : k0 + 2 * tile_k, :]))
        p = tl.dot(x, y)
        acc = p if acc is None else tl.add(acc, p)
    tl.store(out, acc)


def gemm_composite(a, b, out):
    o = tl.zeros((a.shape[0], b.shape[1]))
    tl.composite([tl.OpSpec("gemm", {"a": tl.load(a), "b": tl.ref(b)}, o)], rw_handles=[o])
    tl.store(out, o)


def multi_pe(a, b, out):
    me, n = tl.program_id(), tl.num_programs()
    rows = a.shape[0] // n
    part = tl.dot(tl.load(a[me * rows : (me + 1) * rows, :]), tl.load(b))
    if me == 0:
        tl.store(out[0:rows, :], part)
        for src in range(1, n):
            tl.store(out[src * rows : (src + 1) * rows, :], tl.wait(tl.recv_async(src, (rows, b.shape[1]))))
    else:
        tl.cycles(3 * me)
        tl.send(0, part)


KERNELS = {"gemm_primitive": (gemm_primitive, [0]), "gemm_composite": (gemm_composite, [0]), "multi_pe": (multi_pe, [0, 1, 2, 3])}


def _run(graph, name, record=True):
    fn, pes = KERNELS[name]
    rt = Runtime(graph)
    A, B = rng_array((64, 256), 1), rng_array((256, 128), 2)
    out = rt.empty((64, 128), np.float32)
    rt.launch(fn, pes=pes, args=(rt.deploy(A), rt.deploy(B), out))
    r = rt.run(record=record)
    np.testing.assert_allclose(rt.read(out), f32(A) @ f32(B), rtol=1e-4, atol=1e-3)
    return rt, r


def _stream(r):
    return [(e.t_ns, e.seq, e.kind, e.component, e.end_ns, e.corr_id, e.label, e.value, e.detail) for e in r.events]


def _accounting(r):
    return (r.latency_ns, r.op_logs, r.dispatch_cycles, r.commands, r.engine_busy_ns, r.stall_ns)


# --- determinism (TR6) ----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_same_kernel_twice_gives_identical_op_log_latency_and_event_stream(cube1, name):
    _, r1 = _run(cube1, name)
    _, r2 = _run(cube1, name)
    assert _accounting(r1) == _accounting(r2)
    assert _stream(r1) == _stream(r2)
    assert len(r1.events) > 0


def test_observing_a_run_does_not_change_it(cube1):
    _, quiet = _run(cube1, "multi_pe", record=False)
    _, seen = _run(cube1, "multi_pe", record=True)
    assert _accounting(quiet) == _accounting(seen)


_PROBE = """
import numpy as np, sys
sys.path.insert(0, {tests!r}); sys.path.insert(0, {here!r})
from test_runtime_paths import _run, _stream
from kernbench.topology.compile import load_topology
_, r = _run(load_topology("cube1"), "multi_pe")
print(repr((r.latency_ns, r.op_logs, _stream(r))))
"""


def test_runs_are_identical_across_hash_seeds():
    outs = set()
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT))
        code = _PROBE.format(tests=str(ROOT / "tests"), here=str(Path(__file__).parent))
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        outs.add(p.stdout)
    assert len(outs) == 1


# --- live vs replay (TR7) -----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_replay_gives_the_live_dispatch_accounting_op_log_latency_and_events(cube1, name):
    rt, live = _run(cube1, name)
    rep = rt.replay(live, record=True)
    assert rep.dispatch_cycles == live.dispatch_cycles
    assert rep.commands == live.commands
    assert rep.op_logs == live.op_logs
    assert rep.latency_ns == live.latency_ns
    assert rep.engine_busy_ns == live.engine_busy_ns and rep.stall_ns == live.stall_ns
    assert _stream(rep) == _stream(live)


def test_replay_runs_no_kernel_code(cube1):
    calls = []

    def k(a):
        calls.append(1)
        tl.exp(tl.load(a))

    rt = Runtime(cube1)
    r = run1(rt, k, rt.deploy(np.ones((64, 64))))
    rt.replay(r)
    rt.replay(r)
    assert calls == [1]


def test_replay_of_a_replay_is_still_identical(cube1):
    rt, live = _run(cube1, "gemm_primitive")
    twice = rt.replay(rt.replay(live))
    assert _accounting(twice) == _accounting(live)


def test_replay_with_overrides_equals_a_live_run_on_the_overridden_topology(paper):
    over = ["pe.attrs.pe_cost_model.byte_cycles_recip=0.25", "pe.attrs.pe_cost_model.fixed_per_cmd_cycles=80"]
    rt, base = _run(paper, "gemm_composite")
    rep = rt.replay(base, overrides=over)
    live_rt = Runtime("paper", overrides=over)
    _, live = _run(live_rt.graph, "gemm_composite")
    assert _accounting(rep) == _accounting(live)
    assert rep.total_dispatch_cycles > base.total_dispatch_cycles


def test_replay_with_overrides_on_cube1_equals_a_live_run(cube1):
    over = ["pe.attrs.pe_cost_model.byte_cycles_recip=0.25"]
    rt, base = _run(cube1, "gemm_composite")
    rep = rt.replay(base, overrides=over)
    _, live = _run(Runtime("cube1", overrides=over).graph, "gemm_composite")
    assert _accounting(rep) == _accounting(live)


def test_replay_under_other_math_lanes_times_the_math_commands_anew(cube1):
    """A math command's PE_MATH time is kept on the command with the engine timing it was worked
    out for: a re-timing with other math lanes must time it with those, as a live run there does."""
    over = ["pe.attrs.math_elems_per_cycle=4"]
    rt, base = _run(cube1, "gemm_primitive")
    rep = rt.replay(base, overrides=over, record=True)
    _, live = _run(Runtime("cube1", overrides=over).graph, "gemm_primitive")
    assert _accounting(rep) == _accounting(live) and _stream(rep) == _stream(live)
    assert rep.engine_busy_ns != base.engine_busy_ns


def test_replay_under_another_composite_tile_size_streams_the_new_steps(cube1):
    """A composite's streamed pieces are kept on its command once worked out (a re-timing submits
    the same commands): a re-timing at another tile size must stream that size's steps, and one
    back at the first size the first size's."""
    over = ["pe.attrs.composite_tile_bytes=16384"]  # B is 64 KiB of f16: 2 steps of 32 KiB, 4 of 16
    rt, base = _run(cube1, "gemm_composite")
    rep = rt.replay(base, overrides=over, record=True)
    _, live = _run(Runtime("cube1", overrides=over).graph, "gemm_composite")
    assert _accounting(rep) == _accounting(live) and _stream(rep) == _stream(live)
    reads = [e for e in rep.events if e.kind == EventKind.ENGINE_BUSY and e.component.endswith("dma.rd") and e.label.startswith("tile")]
    assert len(reads) == 4
    back = rt.replay(base, record=True)
    assert _accounting(back) == _accounting(base) and _stream(back) == _stream(base)


# --- every shipped kernel -------------------------------------------------------------


def _shipped():
    try:
        from kernbench.kernels.registry import kernels
    except ImportError:
        return []
    out = []
    for name, spec in kernels().items():
        marks = [] if spec.default_topology == "cube1" else [pytest.mark.slow]
        out.append(pytest.param(name, marks=marks, id=name))
    return out


@pytest.mark.parametrize("name", _shipped())
def test_every_shipped_kernel_replays_with_identical_accounting(name):
    from kernbench.kernels.registry import kernels

    spec = kernels()[name]
    rt = Runtime(spec.default_topology)
    prepared = spec.prepare(rt, shipped.params(name))
    live = rt.run()
    assert prepared.check() < 0.1
    rep = rt.replay(live)
    assert rep.dispatch_cycles == live.dispatch_cycles
    assert rep.commands == live.commands
    assert rep.op_logs == live.op_logs
    assert rep.latency_ns == live.latency_ns
    assert rep.engine_busy_ns == live.engine_busy_ns


# --- the host API -----------------------------------------------------------------------


def test_deploy_places_tensors_burst_aligned_in_the_pe_local_slice(cube1):
    rt = Runtime(cube1)
    t1 = rt.deploy(np.ones((3, 3)), pe=2)
    t2 = rt.deploy(np.ones((3, 3)), pe=2)
    assert t1.memory == t2.memory == rt.local_slice(2) == "sip0.cube0.hbm.slice2"
    burst = cube1.node(t1.memory).attrs["burst_bytes"]
    assert t1.offset == 0 and t2.offset == burst
    assert t1.dtype == np.float16
    assert rt.deploy(np.arange(4, dtype=np.int32)).dtype == np.int32


def test_a_kernel_reading_a_remote_slice_is_slower_than_a_local_one(cube1):
    lat = {}
    for where in (0, 3):
        rt = Runtime(cube1)

        def k(a):
            tl.wait(tl.load(a))

        lat[where] = run1(rt, k, rt.deploy(np.ones((128, 128)), pe=where), record=False).latency_ns
    assert lat[3] > lat[0]


def test_run_result_reports_per_pe_accounting(cube1):
    _, r = _run(cube1, "multi_pe")
    assert r.pes == tuple(f"sip0.cube0.pe{i}" for i in range(4))
    assert set(r.op_logs) == set(r.dispatch_cycles) == set(r.commands) == set(r.engine_busy_ns) == set(r.pes)
    assert (
        r.total_commands == sum(r.commands.values()) == sum(len([e for e in log if e["op"] != "cpu/cycles"]) for log in r.op_logs.values())
    )
    util = r.engine_util_pct()
    assert 0 < util["gemm"] < 100 and 0 < util["ipcq"] < 100


def test_op_logs_read_as_the_dict_they_stand_for(cube1):
    """op_logs is built per PE when read (kernbench.pe.cpu.OpLogs); it equals, prints and pickles as a dict of lists."""
    import pickle

    _, r = _run(cube1, "multi_pe")
    assert r.op_logs._built == {}, "nothing built before it is read"
    plain = {p: r.op_logs[p] for p in r.pes}
    assert r.op_logs == plain and plain == r.op_logs and repr(r.op_logs) == repr(plain)
    assert list(r.op_logs) == list(r.pes) and len(r.op_logs) == 4
    assert r.op_logs["sip0.cube0.pe1"] is r.op_logs["sip0.cube0.pe1"], "built once"
    assert pickle.loads(pickle.dumps(r.op_logs)) == plain and type(pickle.loads(pickle.dumps(r.op_logs))) is dict
    with pytest.raises(KeyError):
        r.op_logs["sip0.cube0.pe9"]
    assert max(e.end_ns for e in r.events if e.kind is EventKind.ENGINE_BUSY) <= r.latency_ns
