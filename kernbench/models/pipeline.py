"""The ideal-pipeline model of a tiled GEMM, from the topology's parameters.

A PE works through ``n`` pipeline tiles (the primitive form's K-steps, or
the composite's K-steps). Each tile passes through stages on the PE's
engines — DMA read, FETCH, GEMM, and for the primitive form STORE of the
partial and the running sum's FETCH, MATH, STORE (a composite accumulates in
the GEMM engine and stores C, then writes it, once, after its last step):

    T = fill + (n − 1) · II + tail
    fill = issue + Σ stage times of one tile          (the first tile, alone)
    II   = max(Σ stage times per engine per tile,      (the busiest engine)
               recurrence)                             (a loop-carried chain)
    tail = what follows the last tile (the last accumulate; split-K
           partials over IPCQ, arriving back to back over the leader's
           inbound link, each added as it lands; storing C)

    MAC efficiency = 2·m·n·k / (P · peak · T)

Stage times (every one a topology parameter or a sum of them):

    DMA  t = header(request) + header(data) + Σ flit_ns(data hops) + max_k (d_k + (F − 1 − k)·M)
         d_k: when the k-th of the F bursts leaves the memory (each channel serves its own
         bursts back to back from the request's arrival, burst b on channel b mod channels),
         M: the data route's slowest flit time. For S contiguous, burst-aligned bytes:
         t(S) = header(request) + burst / channel_bw + header(data) + Σ flit_ns(data hops)
                + (⌈S/burst⌉ − 1) · max(M, burst / (channels · channel_bw))
         A composite's K-step of a row-major A is a column block: tile_m runs a row pitch
         apart, all on one channel when the pitch is a multiple of channels × burst.
    FETCH, STORE  S / tcm_bw_gbps
    GEMM  gemm_pipeline_cycles / clock + ⌈m/R⌉·⌈n/C⌉·k · 2·R·C / (gemm_tflops · 10³)
    MATH  (math_pipeline_cycles + ⌈elements / math_elems_per_cycle⌉) / clock
    issue  (FIXED + logical_bytes · R) / clock + cpu_overhead + sched_overhead   (ADR-0064)

Recurrences: the primitive form's step i ``tl.add`` needs step i − 1's
sum, so FETCH(2·C₃₂) + MATH + STORE(C₃₂) of one ``tile_m × tile_n``
float32 tile bounds II from below whatever the engines' occupancy; with
split-K the leader's ksplit − 1 partial sums of each output tile form such
a chain too (spread over the tile's pipeline tiles), and their work counts
on its FETCH, MATH and STORE.

What the model omits: the wait of a DMA request behind another on the
same read channel beyond its own time (it assumes transfers back to back),
a composite's reader stalling for a free buffer two steps ahead when GEMM
is slower than DMA only at the start (it charges the steady rate from the
first step),
HBM channels shared by reads and writes, a composite's reader running at
most two tile buffers ahead, the scheduler's in-order lanes interleaving
tiles of different commands, and dispatch stalls when the command queue
is full. Those are the study's residuals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kernbench.handles import HandleRef, HbmTensor
from kernbench.pe.commands import CompositeCmd, DmaReadCmd, DmaWriteCmd, GemmCmd, IpcqSendCmd, MathCmd, OpSpec, PeCommand
from kernbench.pe.cost import DispatchCostModel
from kernbench.pe.work import GemmArray
from kernbench.topology.graph import Graph
from kernbench.topology.ids import local_slice, pe_key

if TYPE_CHECKING:
    from kernbench.kernels.gemm_tiled import Tiling


@dataclass(frozen=True, slots=True)
class Stage:
    name: str
    engine: str  # the resource it occupies: cpu, dma.rd, dma.wr, fetch, store, gemm, math
    ns: float
    chain: bool = True  # on one tile's critical path (else overlapped, e.g. dispatch ahead)


@dataclass(frozen=True, slots=True)
class PipelineModel:
    form: str
    tiles: int
    stages: tuple[Stage, ...]
    issue_ns: float
    recurrence_ns: float
    tail_ns: float

    formula = "T = fill + (n − 1)·II + tail,  fill = issue + Σ stages,  II = max(busiest engine per tile, recurrence)"

    @property
    def fill_ns(self) -> float:
        return self.issue_ns + sum(s.ns for s in self.stages if s.chain)

    def busy_ns(self) -> dict[str, float]:
        """Per-tile occupancy of each engine."""
        out: dict[str, float] = {}
        for s in self.stages:
            out[s.engine] = out.get(s.engine, 0.0) + s.ns
        return out

    @property
    def ii_ns(self) -> float:
        return max([*self.busy_ns().values(), self.recurrence_ns])

    @property
    def bound(self) -> str:
        """What sets II: an engine, or the recurrence."""
        busy = self.busy_ns()
        top = max(sorted(busy), key=lambda engine: busy[engine])
        return "recurrence" if self.recurrence_ns > busy[top] else top

    @property
    def ns(self) -> float:
        return self.fill_ns + (self.tiles - 1) * self.ii_ns + self.tail_ns


# --- stage times from the topology -------------------------------------------


@dataclass(frozen=True, slots=True)
class Engines:
    """A PE's service-time parameters, read from the topology."""

    clock_ghz: float
    gemm: GemmArray
    math_lanes: float
    math_fixed_cycles: float
    tcm_gbps: float
    cpu_overhead_ns: float
    sched_overhead_ns: float
    tile_bytes: int
    cost: DispatchCostModel

    @classmethod
    def of(cls, graph: Graph, pe: str) -> Engines:
        a = graph.node(f"{pe}.cpu").attrs
        return cls(
            a["clock_freq_ghz"],
            GemmArray.from_attrs(a),
            a["math_elems_per_cycle"],
            a["math_pipeline_cycles"],
            a["tcm_bw_gbps"],
            a["cpu_overhead_ns"],
            a["sched_overhead_ns"],
            a["composite_tile_bytes"],
            DispatchCostModel.from_attrs(a),
        )

    def gemm_ns(self, m: int, n: int, k: float) -> float:
        """An f16 GEMM tile on the R×C array (kernbench.pe.work.GemmArray)."""
        return self.gemm.ns(m, n, k)

    def math_ns(self, elements: float) -> float:
        return (self.math_fixed_cycles + math.ceil(elements / self.math_lanes)) / self.clock_ghz

    def tcm_ns(self, nbytes: float) -> float:
        return nbytes / self.tcm_gbps

    def dispatch_ns(self, cmd: PeCommand) -> float:
        return self.cost.cycles_to_ns(self.cost.dispatch_cycles(cmd)) + self.cpu_overhead_ns


def read_ns(graph: Graph, pe: str, memory: str, starts: list[int], run_bytes: int) -> float:
    """An idle DMA read of runs of ``run_bytes`` at byte ``starts`` of a memory (a tensor
    placed on a burst boundary): every burst queues on its channel when the request
    arrives; the data flits leave as their bursts finish and cross the data route at the
    pace of its slowest hop (max-plus over the flits)."""
    req = graph.route(f"{pe}.dma", memory)
    data = graph.route(memory, f"{pe}.dma")
    m = graph.node(memory).attrs
    burst, channels = m["burst_bytes"], m["channels"]
    burst_ns = burst / m["channel_bw_gbps"]
    bursts = sorted({b for a in starts for b in range(a // burst, (a + run_bytes - 1) // burst + 1)})
    per_channel: dict[int, int] = {}
    for b in bursts:
        per_channel[b % channels] = per_channel.get(b % channels, 0) + 1
    leave = sorted(burst_ns * (j + 1) for count in per_channel.values() for j in range(count))
    pace = max(h.flit_ns for h in data.hops)
    flits = len(leave)
    last: float = max(d + (flits - 1 - k) * pace for k, d in enumerate(leave))
    return req.header_ns + data.header_ns + sum(h.flit_ns for h in data.hops) + last


def dma_ns(graph: Graph, pe: str, memory: str, nbytes: int) -> float:
    """An idle DMA of ``nbytes`` contiguous, burst-aligned bytes between a PE and a memory."""
    req = graph.route(f"{pe}.dma", memory)
    data = graph.route(memory, f"{pe}.dma")
    m = graph.node(memory).attrs
    burst_ns = m["burst_bytes"] / m["channel_bw_gbps"]
    rate = max(max(h.flit_ns for h in data.hops), burst_ns / m["channels"])
    flits = -(-nbytes // m["burst_bytes"])
    ns: float = req.header_ns + burst_ns + data.header_ns + sum(h.flit_ns for h in data.hops) + (flits - 1) * rate
    return ns


# --- the two forms -------------------------------------------------------------

# Stand-ins for the operands of the commands whose dispatch cost is modelled (it depends on a
# command's kind and descriptor size only, not on the handles or regions it names).
_REF = HandleRef(0, "h", (1,), "float16")
_PTR = HbmTensor("p", "", 0, np.zeros(1, np.float16)).whole()
_OP = {"a": _REF, "b": _REF}


def _split_k_tail(graph: Graph, t: Tiling, pe: str, peer: str, e: Engines) -> float:
    """The leader's last tile: ksplit − 1 float32 partials arrive back to back over its
    inbound link (they share it), each is added as it lands, then C is stored."""
    from kernbench.models.alphabeta import message_cost

    c32 = 4 * t.tile_m * t.tile_n
    add = e.tcm_ns(2 * c32) + e.math_ns(t.tile_m * t.tile_n) + e.tcm_ns(c32)
    cost = message_cost(graph, peer, pe)
    t_send = e.dispatch_ns(IpcqSendCmd(0, _REF, c32, None)) + e.sched_overhead_ns
    done = 0.0
    for j in range(1, t.ksplit):
        landed = t_send + cost.alpha_ns + j * cost.flits(c32) * cost.flit_ns
        done = max(done, landed) + add
    store = e.dispatch_ns(DmaWriteCmd(_REF, _PTR, 0)) + e.sched_overhead_ns + dma_ns(graph, pe, local_slice(pe), c32 // 2)
    return done + store


def _split_k_work(t: Tiling, e: Engines, per_tile: int) -> tuple[list[Stage], float]:
    """The leader's ksplit − 1 partial sums of every output tile, spread over its pipeline
    tiles; and the chain they form (each sum needs the last) as a bound on II."""
    if t.ksplit == 1:
        return [], 0.0
    c32, elems = 4 * t.tile_m * t.tile_n, t.tile_m * t.tile_n
    share = (t.ksplit - 1) / per_tile
    stages = [
        Stage("FETCH split-K sum", "fetch", share * e.tcm_ns(2 * c32), chain=False),
        Stage("MATH split-K sum", "math", share * e.math_ns(elems), chain=False),
        Stage("STORE split-K sum", "store", share * e.tcm_ns(c32), chain=False),
    ]
    return stages, share * (e.tcm_ns(2 * c32) + e.math_ns(elems) + e.tcm_ns(c32))


def primitive_model(graph: Graph, t: Tiling) -> PipelineModel:
    pe, peer = _pes(graph, t)
    e = Engines.of(graph, pe)
    mem = local_slice(pe)
    a, b, c32 = 2 * t.tile_m * t.tile_k, 2 * t.tile_k * t.tile_n, 4 * t.tile_m * t.tile_n
    read = e.dispatch_ns(DmaReadCmd(_PTR, _REF, 0))
    dot = e.dispatch_ns(GemmCmd(_REF, _REF, _REF, 1, 1, 1))
    add = e.dispatch_ns(MathCmd("add", (_REF, _REF), _REF, {}))
    stages = (
        Stage("dispatch loads, dot, add", "cpu", 2 * read + dot + add, chain=False),
        Stage("DMA read A block", "dma.rd", dma_ns(graph, pe, mem, a)),
        Stage("DMA read B block", "dma.rd", dma_ns(graph, pe, mem, b)),
        Stage("FETCH A, B", "fetch", e.tcm_ns(a + b)),
        Stage("GEMM", "gemm", e.gemm_ns(t.tile_m, t.tile_n, t.tile_k)),
        Stage("STORE partial", "store", e.tcm_ns(c32)),
        Stage("FETCH sum, partial", "fetch", e.tcm_ns(2 * c32), chain=False),
        Stage("MATH add", "math", e.math_ns(t.tile_m * t.tile_n), chain=False),
        Stage("STORE sum", "store", e.tcm_ns(c32), chain=False),
    )
    accumulate = e.tcm_ns(2 * c32) + e.math_ns(t.tile_m * t.tile_n) + e.tcm_ns(c32)
    split, split_chain = _split_k_work(t, e, t.steps)
    store_c = e.dispatch_ns(DmaWriteCmd(_REF, _PTR, 0)) + e.sched_overhead_ns + dma_ns(graph, pe, mem, c32 // 2)
    tail = (accumulate if t.steps > 1 else 0.0) + (_split_k_tail(graph, t, pe, peer, e) if t.ksplit > 1 else store_c)
    issue = 2 * read + e.sched_overhead_ns
    recurrence = max(accumulate if t.steps > 1 else 0.0, split_chain)
    return PipelineModel("primitive", _busiest(t) * t.steps, (*stages, *split), issue, recurrence, tail)


def _a_step_runs(t: Tiling, ks: int) -> tuple[list[int], int]:
    """The first K-step of A's row block (``ks`` columns): its runs (byte offsets in the
    block, length). Row-major: one run per row, a row pitch apart; K-step-major: the
    step's blocks, one after another (or part of each row of one block)."""
    kp, tm, tk = t.k // t.ksplit, t.tile_m, t.tile_k
    if t.layout == "naive":
        return [r * 2 * kp for r in range(tm)], 2 * ks
    if ks % tk == 0:
        return [0], 2 * tm * ks
    return [r * 2 * tk for r in range(tm)], 2 * ks


def composite_model(graph: Graph, t: Tiling) -> PipelineModel:
    """One composite GEMM per output tile: K in ``n`` steps of about a composite tile of
    A or B each; per step the slice of A (in its layout) and of B it consumes; C stored
    and, when it is the output (no split-K), written once, after the last step."""
    pe, peer = _pes(graph, t)
    e = Engines.of(graph, pe)
    mem = local_slice(pe)
    kp = t.k // t.ksplit
    a, b, c16, c32 = 2 * t.tile_m * kp, 2 * kp * t.tile_n, 2 * t.tile_m * t.tile_n, 4 * t.tile_m * t.tile_n
    hbm_out = t.ksplit == 1
    n = max(1, min(-(-max(a, b) // e.tile_bytes), kp))
    ks = kp // n
    starts, run = _a_step_runs(t, ks)
    stages = [
        Stage("DMA read A step", "dma.rd", read_ns(graph, pe, mem, starts, run)),
        Stage("DMA read B step", "dma.rd", dma_ns(graph, pe, mem, 2 * ks * t.tile_n)),
        Stage("FETCH", "fetch", e.tcm_ns((a + b) / n)),
        Stage("GEMM", "gemm", e.gemm_ns(t.tile_m, t.tile_n, ks)),
    ]
    extra: dict[str, int | bool] = {"m": 1, "k": 1, "n": 1}
    if t.layout == "tiled":
        extra["a_kstep_major"] = True
    cmd = CompositeCmd((OpSpec("gemm", _OP, _REF, extra=extra),), ())
    stages.insert(0, Stage("dispatch composite", "cpu", e.dispatch_ns(cmd) / n, chain=False))
    issue = e.dispatch_ns(cmd) + e.sched_overhead_ns
    if hbm_out:  # STORE C, then write it
        tail = e.tcm_ns(c16) + dma_ns(graph, pe, mem, c16)
    else:  # STORE the partial sum; the split-K exchange
        tail = e.tcm_ns(c32) + _split_k_tail(graph, t, pe, peer, e)
    split, split_chain = _split_k_work(t, e, n)
    return PipelineModel("composite", _busiest(t) * n, (*stages, *split), issue, split_chain, tail)


def _busiest(t: Tiling) -> int:
    """Output tiles of the busiest worker."""
    return -(-t.tiles // t.workers)


def _pes(graph: Graph, t: Tiling) -> tuple[str, str]:
    """The leader PE of the busiest worker and its last K-part peer (program order = PE order)."""
    pes = sorted((n.id[: -len(".cpu")] for n in graph.nodes_of_kind("pe_cpu")), key=pe_key)
    return pes[0], pes[t.ksplit - 1]


MODELS = {"primitive": primitive_model, "composite": composite_model}


def predict(graph: Graph, t: Tiling) -> PipelineModel:
    return MODELS[t.form](graph, t)
