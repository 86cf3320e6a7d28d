"""A finished run leaves no cycles for the collector: its machine (PEs, scheduler, network, FIFOs,
transfers) is freed by reference counting as the run returns (``_dismantle``), so the cycle
collection after it has only the result to look at (kernbench.runtime.loop.collector_paused)."""

from __future__ import annotations

import gc

import pytest

from kernbench.kernels import registry
from kernbench.runtime.api import Runtime

#: the run's Environment binds SimPy's event classes to itself, as SimPy does (it, its 3 bound methods, its dict, its
#: schedule's times and counter: 7; SimPy's own made 8)
SIMPY_OWN = 8


def _garbage_after(run) -> int:
    """Objects the collector finds unreachable after ``run()`` (collections held off meanwhile)."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        result = run()
        assert result.latency_ns > 0
        return gc.collect()
    finally:
        if was:
            gc.enable()


@pytest.mark.parametrize("mode", ["fast", "oracle"])
@pytest.mark.parametrize("record", [False, True])
def test_a_run_and_its_replay_leave_no_garbage_cycles(mode, record):
    spec = registry.get("gqa-decode")
    rt = Runtime("sip2x2", mode=mode)
    params = dict(spec.defaults(), heads=4, kv_heads=2, head_dim=64, context=512, tile=64, pes_per_head=2)
    spec.prepare(rt, params)
    base = rt.run()
    spec.prepare(rt, params)
    assert _garbage_after(lambda: rt.run(record=record)) <= SIMPY_OWN
    assert _garbage_after(lambda: rt.replay(base, overrides=["pe.attrs.tcm_bw_gbps=1024"], record=record)) <= SIMPY_OWN
