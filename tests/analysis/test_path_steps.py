"""The critical path read as steps (``kernbench run --explain``, the debugger's Why panel).

Steps regroup the path's segments and nothing else: every segment is in
exactly one step, in order; steps follow each other without gap, and their
durations add up to the latency. A transfer is one step with its parts; a
run of like spans on one component is one step.
"""

from __future__ import annotations

import itertools

import pytest
from test_critical_path import SHIPPED, shipped_run

from kernbench.analysis.critical import Segment, attribute
from kernbench.analysis.steps import path_steps


def assert_steps_tile_the_path(path):
    steps = path_steps(path)
    assert [s for step in steps for s in step.segments] == list(path)  # each segment once, in order
    for before, after in itertools.pairwise(steps):
        assert after.start_ns == pytest.approx(before.end_ns, abs=1e-9)
    assert sum(step.ns for step in steps) == pytest.approx(path[-1].end_ns - path[0].start_ns, abs=1e-6)
    return steps


@pytest.mark.parametrize(
    "name, opts, topo", SHIPPED[:1] + SHIPPED[4:5] + SHIPPED[-4:-3], ids=lambda v: str(v) if isinstance(v, str) else ""
)
def test_steps_of_a_shipped_kernel_tile_its_latency(name, opts, topo):
    result = shipped_run(name, opts, topo, "fast")
    a = attribute(result.events, result.latency_ns)
    steps = assert_steps_tile_the_path(a.path)
    assert steps[0].start_ns == 0.0 and steps[-1].end_ns == result.latency_ns
    for step in steps:
        if step.transfer:  # a transfer's parts all belong to the transfer's span
            assert len({s.span_component for s in step.segments}) == 1
            assert {s.corr_id for s in step.segments} == {step.first.corr_id}
        else:  # one component, one cause
            assert len({(s.component, s.cause) for s in step.segments}) == 1


def seg(t0, t1, comp, cause, kind, via="next stage", corr=1, label="x", span=""):
    return Segment(t0, t1, comp, cause, kind, corr, label, via, span_component=span or comp)


def test_a_run_of_like_spans_is_one_step_and_a_transfer_folds_its_parts():
    path = [
        seg(0, 10, "pe0.cpu", "dispatch", "PE_CPU", via="start", label="MathCmd"),
        seg(10, 20, "pe0.cpu", "dispatch", "PE_CPU", via="in order", label="MathCmd"),
        seg(20, 25, "pe0.cpu", "dispatch", "PE_CPU", via="in order", label="DmaReadCmd"),
        seg(25, 30, "pe0.dma->r0", "serialization", "edge", corr=7, span="pe0.dma.rd"),
        seg(30, 38, "hbm.pc3", "hbm channel drain", "hbm channel", via="transfer", corr=7, span="pe0.dma.rd"),
        seg(38, 40, "pe0.math", "math", "PE_MATH"),
    ]
    steps = assert_steps_tile_the_path(path)
    assert [(s.cause, s.what) for s in steps] == [("dispatch ×3", "MathCmd ×2, DmaReadCmd"), ("transfer", "x (corr 7)"), ("math", "x")]
    assert steps[1].parts() == [("hbm channel drain", 8), ("serialization", 5)]
    assert steps[0].via == "start" and steps[1].via == "next stage"


def test_two_transfers_back_to_back_are_two_steps():
    path = [
        seg(0, 5, "r0", "node overhead", "node", via="start", corr=1),
        seg(5, 9, "r0->r1", "serialization", "edge", via="transfer", corr=1),
        seg(9, 12, "r1", "node overhead", "node", via="engine busy", corr=2),
    ]
    steps = assert_steps_tile_the_path(path)
    assert [len(s.segments) for s in steps] == [2, 1] and all(s.transfer for s in steps)
