"""The LLM-layer study: decode and prefill latency of each model's layer over batch, context and tp, and where it goes.

Each point runs ``decoder-layer`` (or ``moe-layer`` for Mixtral) on the
paper topology with ``--no-data`` (the same latency as with data, at a
fraction of the cost) and ``--explain``: its critical path is split into

- **compute**: segments on the PE's engines (PE_CPU dispatch, scheduler,
  FETCH/STORE, GEMM, MATH);
- **communication**: segments of IPCQ messages (the all-reduces, the
  flash-decoding merges, the MoE combine), wherever they run;
- **memory**: the rest, the DMA transfers' segments (HBM channel drain, the
  NoC links and routers they cross, queueing in front of them).

Beside it, the **HBM roofline**: the bytes a layer must move at least —
its weights once (for Mixtral only the experts that have tokens) and its KV
cache (read in decode, written in prefill) — over the aggregate HBM
bandwidth of the PEs it runs on, each PE's own slice's pseudo-channels ×
their bandwidth, read from the topology. No schedule beats it in decode;
the ratio says how far the layer is from it, and where it is more than 3×
the study names the ``--explain`` cause that dominates the critical path.
**Tokens/s** is an estimate for the whole model: tokens of the step over
(layer latency × the model's layers), as if every layer took as long and
nothing else ran.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernbench.layers.placement import Plan, choose_pes
from kernbench.layers.presets import PRESETS, ModelShape
from kernbench.layers.tensors import DTYPES
from kernbench.topology.graph import Graph
from kernbench.topology.ids import local_slice

TOPOLOGY = "paper"
DTYPE = "bfloat16"
#: (model, phase, batch, seq, tp): the default grid (a few minutes of simulation on a slow 2-core machine)
GRID: tuple[tuple[str, str, int, int, int], ...] = (
    ("llama3-8b", "decode", 1, 1024, 8),
    ("llama3-8b", "decode", 8, 1024, 8),
    ("llama3-8b", "decode", 8, 8192, 8),
    ("llama3-8b", "decode", 8, 8192, 16),
    ("llama3-8b", "decode", 8, 8192, 32),
    ("llama3-70b", "decode", 1, 8192, 32),
    ("llama3-70b", "decode", 8, 8192, 32),
    ("llama3-70b", "decode", 8, 32768, 32),
    ("mixtral-8x7b", "decode", 1, 1024, 8),
    ("mixtral-8x7b", "decode", 8, 1024, 8),
    ("llama3-8b", "prefill", 1, 256, 8),
)
#: a grid small enough for a test
QUICK: tuple[tuple[str, str, int, int, int], ...] = (
    ("llama3-8b", "decode", 1, 256, 8),
    ("llama3-8b", "decode", 4, 1024, 16),
    ("mixtral-8x7b", "decode", 1, 256, 8),
    ("llama3-8b", "prefill", 1, 32, 8),
)
RATIO_EXPLAINED = 3.0  # beyond this multiple of the roofline a point names its dominant cause

_COMPUTE_KINDS = frozenset({"PE_CPU", "PE_SCHEDULER", "PE_FETCH_STORE", "PE_FETCH", "PE_STORE", "PE_GEMM", "PE_MATH"})


@dataclass(frozen=True, slots=True)
class Point:
    model: str
    phase: str
    batch: int
    seq: int
    tp: int
    latency_ns: float
    compute_ns: float
    memory_ns: float
    comm_ns: float
    bound_ns: float  # the HBM roofline
    dominant: str  # the --explain cause with the most critical-path ns
    tokens_per_s: float  # the whole model's, estimated

    @property
    def ratio(self) -> float:
        return self.latency_ns / self.bound_ns


def split(path: Iterable[dict[str, Any]]) -> tuple[float, float, float]:
    """(compute, memory, communication) ns of a critical path (``attribution.path``): see the module docstring."""
    compute = memory = comm = 0.0
    for seg in path:
        ns = float(seg["end_ns"]) - float(seg["start_ns"])
        label, comp = str(seg.get("label", "")), str(seg["component"])
        if label.startswith(("send", "recv", "Ipcq")) or ".ipcq" in comp:
            comm += ns
        elif seg.get("kind") in _COMPUTE_KINDS:
            compute += ns
        else:
            memory += ns
    return compute, memory, comm


def hbm_gbps(graph: Graph, pe_ids: Iterable[str]) -> float:
    """Aggregate HBM bandwidth (GB/s = bytes/ns) of the PEs' own slices: pseudo-channels × channel bandwidth."""
    total = 0.0
    for pe in pe_ids:
        attrs = graph.node(local_slice(pe)).attrs
        total += attrs["channels"] * attrs["channel_bw_gbps"]
    return total


def roofline_bytes(shape: ModelShape, plan: Plan, dtype: str = DTYPE) -> float:
    """The bytes one layer step moves at least: its weights once (a mixture only the experts that get tokens
    under balanced routing) and its KV cache (read in decode, written in prefill)."""
    item = np.dtype(DTYPES[dtype]).itemsize
    weights = shape.weight_elements()
    if shape.experts > 1:
        used = min(shape.experts, plan.tokens * shape.top_k)
        weights -= (shape.experts - used) * 3 * shape.hidden * shape.ffn
    kv = plan.batch * plan.seq * shape.kv_heads * shape.head_dim * 2
    return float((weights + kv) * item)


def run_point(model: str, phase: str, batch: int, seq: int, tp: int) -> Point:
    """Simulate one point (no data, explained) and set it beside its roofline."""
    from kernbench.kernels import registry
    from kernbench.runtime.api import Runtime

    shape = PRESETS[model]
    spec = registry.get("moe-layer" if shape.experts > 1 else "decoder-layer")
    rt = Runtime(TOPOLOGY, data=False)
    params = dict(spec.defaults(), model=model, phase=phase, batch=batch, seq=seq, tp=tp, dtype=DTYPE)
    spec.validate(params, len(rt.pe_ids()))
    spec.prepare(rt, params)
    result = rt.run(record=True)
    att: dict[str, Any] = dict(result.explain().as_json())
    compute, memory, comm = split(att["path"])
    plan = Plan(shape, phase, batch, seq, tp)
    pes = [rt.pe_ids()[i] for i in choose_pes(rt.pe_ids(), tp, params["placement"])]
    bound = roofline_bytes(shape, plan) / hbm_gbps(rt.graph, pes)
    by_cause: dict[str, float] = att["by_cause"]
    dominant = max(sorted(by_cause), key=lambda c: by_cause[c])
    tokens = plan.tokens
    return Point(
        model,
        phase,
        batch,
        seq,
        tp,
        result.latency_ns,
        compute,
        memory,
        comm,
        bound,
        dominant,
        tokens / (result.latency_ns * 1e-9 * shape.layers),
    )


def sweep(grid: Iterable[tuple[str, str, int, int, int]] | None = None) -> Iterator[Point]:
    """The grid's points (default: :data:`GRID`), one simulated (and dropped) at a time."""
    for point in GRID if grid is None else grid:
        yield run_point(*point)


def table(points: list[Point]) -> str:
    head = (
        f"{'model':<13} {'phase':<7} {'batch':>5} {'seq':>6} {'tp':>3} {'latency µs':>11} {'compute':>8} {'memory':>8} {'comm':>8} "
        f"{'roofline µs':>11} {'× roof':>7} {'tok/s (est.)':>12}  why (> {RATIO_EXPLAINED:g}× roofline)"
    )
    lines = [head, "-" * len(head)]
    for p in points:
        why = p.dominant if p.ratio > RATIO_EXPLAINED else ""
        lines.append(
            f"{p.model:<13} {p.phase:<7} {p.batch:>5} {p.seq:>6} {p.tp:>3} {p.latency_ns / 1e3:>11,.1f} "
            f"{p.compute_ns / 1e3:>8,.1f} {p.memory_ns / 1e3:>8,.1f} {p.comm_ns / 1e3:>8,.1f} "
            f"{p.bound_ns / 1e3:>11,.1f} {p.ratio:>7.2f} {p.tokens_per_s:>12,.1f}  {why}"
        )
    return "\n".join(lines)


def plot(points: list[Point]) -> str:
    """Decode latency over context, one line per (model, batch, tp): a text plot."""
    from kernbench.sweep.plot import render

    rows = [
        {"seq": p.seq, "series": f"{p.model} b{p.batch} tp{p.tp}", "latency_us": p.latency_ns / 1e3} for p in points if p.phase == "decode"
    ]
    return render(rows, "latency_us", "seq", ["seq", "series"], width=90, height=18)


def report(grid: Iterable[tuple[str, str, int, int, int]] | None = None) -> str:
    points = list(sweep(grid))
    return "\n".join(
        [
            "LLM layer: one decoder layer's latency on the paper topology (bfloat16, --no-data, packed placement, ring all-reduce)",
            "  compute / memory / comm: the critical path's µs on PE engines / on DMA transfers (HBM, NoC) / on IPCQ messages",
            "  roofline: (weights once + KV cache bytes) / (HBM bandwidth of the PEs used: channels × channel GB/s of each PE's slice)",
            "  tok/s (est.): the whole model's tokens per second, estimated as tokens / (layer latency × layers)",
            "",
            table(points),
            "",
            plot(points),
        ]
    )
