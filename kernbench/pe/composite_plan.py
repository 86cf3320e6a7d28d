"""What a CompositeCmd does on a PE, step by step, worked out once per shape of composite and kept:
its :class:`Plan` (each step's FETCH and STORE bytes, its ops on their engines and their service
times) and, per command, the HBM pieces each step reads and writes (:func:`planned`). A re-timing
under other engine parameters plans again; :mod:`kernbench.pe.composite` runs the plan."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernbench.handles import HandleRef
from kernbench.pe.commands import CompositeCmd, OpSpec
from kernbench.pe.opkinds import op_kind
from kernbench.pe.steps import Piece, op_steps, step_count
from kernbench.pe.work import GemmDims

if TYPE_CHECKING:
    from kernbench.pe.processing_element import ProcessingElement


@dataclass(frozen=True, slots=True)
class Stage:
    """One op of the composite on its engine in one step: the lane and its time."""

    engine: str  # "gemm" or "math"
    service_ns: float
    kind: str


@dataclass(frozen=True, slots=True)
class StepPlan:
    """One step on the engines: FETCH of its operands' pieces, the ops with work in it,
    STORE of the results final after it (``stores``: whether it stores at all)."""

    fetch_bytes: int
    stages: tuple[Stage, ...]
    store_bytes: int
    stores: bool
    runs: tuple[tuple[str, tuple[float, ...]], ...]  # the stages as runs of one engine: (engine, service times)


def _runs(stages: list[Stage]) -> tuple[tuple[str, tuple[float, ...]], ...]:
    """Consecutive stages on one engine, grouped: (the engine, their service times in order)."""
    runs: list[tuple[str, list[float]]] = []
    for st in stages:
        if runs and runs[-1][0] == st.engine:
            runs[-1][1].append(st.service_ns)
        else:
            runs.append((st.engine, [st.service_ns]))
    return tuple([(engine, tuple(services)) for engine, services in runs])


Read = tuple[int, str, Piece]  # an HBM operand's piece: (op, operand name, piece)
Write = tuple[int, Piece]  # an HBM result's piece final after the step: (op, piece)


@dataclass(frozen=True, slots=True)
class Plan:
    """What a composite of one shape does, step by step (the same for every composite of that shape)."""

    n_tiles: int
    steps: tuple[StepPlan, ...]
    reads: tuple[tuple[Read, ...], ...]  # per step
    writes: tuple[tuple[Write, ...], ...]  # per step
    label: str
    hbm_in: bool  # a step reads an HBM operand
    hbm_out: bool  # a step writes an HBM result
    fetch_label: str  # its FETCH and STORE spans' labels
    store_label: str


def plan_of(pe: ProcessingElement, cmd: CompositeCmd) -> Plan:
    """The plan for ``cmd`` on ``pe``, computed once per shape of composite (``cmd.plan_key``)."""
    key = cmd.plan_id
    if key is None:  # an unhashable extra value: plan it every time
        return _make_plan(pe, cmd.ops)
    cache = pe.composite_plans
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = _make_plan(pe, cmd.ops)
    return hit


def _make_plan(pe: ProcessingElement, ops: tuple[OpSpec, ...]) -> Plan:
    n = step_count(ops, pe.composite_tile_bytes)
    per_op = [op_steps(op, n) for op in ops]
    steps, reads, writes = [], [], []
    for i in range(n):
        fetch = store = 0
        stages = []
        step_reads: list[Read] = []
        step_writes: list[Write] = []
        for j, (op, st) in enumerate(zip(ops, per_op, strict=True)):
            for (name, r), pieces in zip(op.operands.items(), st.operands, strict=True):
                p = pieces[i]
                if p is not None:
                    fetch += p.nbytes
                    if r.space == "hbm":
                        step_reads.append((j, name, p))
            out = st.out[i]
            if out is not None:
                store += out.nbytes
                if op.out is not None and op.out.space == "hbm":
                    step_writes.append((j, out))
            work = st.work[i]
            if work:
                k = op_kind(op.kind)
                stages.append(
                    Stage(k.engine, _gemm_ns(pe, op, work) if k.engine == "gemm" else pe.math_ns(work * k.passes, k.rate), op.kind)
                )
        steps.append(StepPlan(fetch, tuple(stages), store, bool(store) or i == n - 1, _runs(stages)))
        reads.append(tuple(step_reads))
        writes.append(tuple(step_writes))
    label = "+".join(op.kind for op in ops) if len(ops) <= 3 else f"{ops[0].kind}+{len(ops) - 1} ops"
    return Plan(n, tuple(steps), tuple(reads), tuple(writes), label, any(reads), any(writes), f"fetch {label}", f"store {label}")


def _gemm_ns(pe: ProcessingElement, op: OpSpec, flops: float) -> float:
    """A GEMM op's step of ``flops`` on PE_GEMM: its K-slice through the R×C array."""
    refs = list(op.operands.values())
    d = GemmDims.of([r.shape for r in refs], op.extra)
    a, b = refs[0], refs[1]
    return pe.gemm_ns(d.m, d.n, flops / (2.0 * d.m * d.n), a.nbytes // max(1, math.prod(a.shape)), b.nbytes // max(1, math.prod(b.shape)))


Streams = tuple[tuple[tuple[HandleRef, Piece], ...], ...]  # per step, each HBM tensor's piece


Planned = tuple[object, Plan, Streams, Streams]  # (the engine timing, the plan, its reads, its writes)


def planned(pe: ProcessingElement, cmd: CompositeCmd) -> Planned:
    """``cmd``'s plan on ``pe`` and, per step, each HBM tensor's piece it reads and each HBM
    result's piece it writes (none: one shared tuple of empty steps). They follow from the command
    and the PE's engine timing alone (the plan's pieces, this command's tensors): worked out once
    per command and timing (one object per set of engine parameters,
    :attr:`ProcessingElement.timing`) and kept on the command, as its cached properties are (a
    re-timing submits it again; under other parameters they are worked out again)."""
    plan = plan_of(pe, cmd)
    ops, n = cmd.ops, plan.n_tiles
    reads = tuple([_once([(ops[j].operands[name], p) for j, name, p in step]) for step in plan.reads]) if plan.hbm_in else _nothing(n)
    writes = tuple([_once([(ops[j].out, p) for j, p in step]) for step in plan.writes]) if plan.hbm_out else _nothing(n)
    kept = cmd.__dict__["_planned"] = (pe.timing, plan, reads, writes)
    return kept


@functools.cache
def _nothing(n: int) -> Streams:
    """``n`` steps that move nothing from or to HBM."""
    return ((),) * n


def _once(parts: list[tuple[HandleRef | None, Piece]]) -> tuple[tuple[HandleRef, Piece], ...]:
    """Each tensor's piece once (a ``tl.ref`` two ops read alike is read once), in order."""
    if len(parts) < 2:  # (a step's one read, or none: the common cases, nothing to compare)
        return tuple(parts)  # type: ignore[arg-type]  # (a planned result is an op's out)
    seen = set()
    out = []
    for r, p in parts:
        assert r is not None  # (a planned result is an op's out)
        key = (r.id, p.key)
        if key not in seen:
            seen.add(key)
            out.append((r, p))
    return tuple(out)
