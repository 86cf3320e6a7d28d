"""The GEMM study: MAC efficiency against the ideal-pipeline model, and where the gap is.

Two sweeps on one CUBE (``cube1``):

* **tile count** — one PE, 128×128×128 tiles, K = 128·n for n = 1 … 256
  pipeline tiles: the composite with A K-step-major and with A row-major,
  and the primitive form: efficiency climbs as the fill is amortized, to the
  steady state the busiest engine (or the primitive form's accumulate chain)
  allows — for a row-major A, the read channel: each K-step's column block
  of A sits on one pseudo-channel;
* **tilings** — the same 512×512×1024 GEMM on the CUBE's 8 PEs with
  different tile shapes, split-K and forms.

Every point is simulated with its event stream recorded and set beside
:mod:`kernbench.models.pipeline`. The gap is attributed on the busiest
PE's PE_GEMM lane, which is what efficiency measures: the latency is the
lead-in before its first GEMM, its GEMM busy time, the idle gaps between
GEMMs, and the lead-out after its last; the model predicts each of them
(lead-in = issue + the stages before GEMM of one tile; gaps = (n − 1)·(II −
t_GEMM); lead-out = the stages after GEMM + the tail).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernbench.events.types import Event, EventKind

if TYPE_CHECKING:
    from kernbench.kernels.registry import Params
    from kernbench.models.pipeline import PipelineModel

TOPOLOGY = "cube1"
TILE_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
TILINGS = (
    dict(form="composite", tile_m=128, tile_n=128, tile_k=128, ksplit=1),
    dict(form="composite", tile_m=128, tile_n=128, tile_k=128, ksplit=1, layout="naive"),
    dict(form="primitive", tile_m=128, tile_n=128, tile_k=128, ksplit=1),
    dict(form="composite", tile_m=64, tile_n=64, tile_k=64, ksplit=1),
    dict(form="primitive", tile_m=64, tile_n=64, tile_k=64, ksplit=1),
    dict(form="primitive", tile_m=64, tile_n=128, tile_k=256, ksplit=1),
    dict(form="composite", tile_m=128, tile_n=128, tile_k=128, ksplit=2),
    dict(form="primitive", tile_m=128, tile_n=128, tile_k=128, ksplit=2),
    dict(form="composite", tile_m=128, tile_n=128, tile_k=128, ksplit=4),
)
TILING_SHAPE = dict(m=512, n=512, k=1024, pes=8)


@dataclass(frozen=True, slots=True)
class Split:
    """A latency cut along one PE's GEMM lane."""

    lead_in: float
    busy: float
    gaps: float
    lead_out: float

    @property
    def total(self) -> float:
        return self.lead_in + self.busy + self.gaps + self.lead_out


@dataclass(frozen=True, slots=True)
class GemmPoint:
    params: Params
    tiles: int
    sim_ns: float
    model_ns: float
    sim_eff_pct: float
    model_eff_pct: float
    steady_eff_pct: float  # t_GEMM / II: the model without its fill and tail
    bound: str
    sim: Split
    model: Split
    max_abs_err: float

    @property
    def gap_pts(self) -> float:
        return self.model_eff_pct - self.sim_eff_pct

    @property
    def ratio(self) -> float:
        return self.sim_ns / self.model_ns


def gemm_lane_split(events: Iterable[Event], pe: str, latency_ns: float) -> Split:
    spans = sorted((e.t_ns, e.end_ns) for e in events if e.kind is EventKind.ENGINE_BUSY and e.component == f"{pe}.gemm")
    busy = sum(b - a for a, b in spans)
    return Split(spans[0][0], busy, spans[-1][1] - spans[0][0] - busy, latency_ns - spans[-1][1])


def model_split(model: PipelineModel) -> Split:
    chain = [s for s in model.stages if s.chain]
    k = next(i for i, s in enumerate(chain) if s.engine == "gemm")
    t_gemm = chain[k].ns
    return Split(
        model.issue_ns + sum(s.ns for s in chain[:k]),
        model.tiles * t_gemm,
        (model.tiles - 1) * (model.ii_ns - t_gemm),
        sum(s.ns for s in chain[k + 1 :]) + model.tail_ns,
    )


def run_point(**overrides: Any) -> GemmPoint:
    """Simulate ``gemm-tiled`` with these options (recording events) and model it."""
    from kernbench.kernels import registry
    from kernbench.kernels.gemm_tiled import Tiling
    from kernbench.models.pipeline import predict
    from kernbench.runtime.api import Runtime

    spec = registry.get("gemm-tiled")
    params = dict(spec.defaults(), **overrides)
    rt = Runtime(TOPOLOGY)
    prepared = spec.prepare(rt, params)
    result = rt.run(record=True)
    events = result.events
    assert events is not None  # recorded
    summary = prepared.summary(result)
    node = rt.graph.node(f"{rt.pe_ids()[0]}.cpu").attrs
    model = predict(rt.graph, Tiling.of(params, len(rt.pe_ids()), node["scratch_bytes"]))
    busiest = max(result.pes, key=lambda pe: (_gemm_end(events, pe), pe))
    return GemmPoint(
        params,
        model.tiles,
        result.latency_ns,
        model.ns,
        summary["mac_eff_pct"],
        summary["model_mac_eff_pct"],
        100.0 * model_split(model).busy / model.tiles / model.ii_ns,
        model.bound,
        gemm_lane_split(events, busiest, result.latency_ns),
        model_split(model),
        prepared.checked_error(),
    )


def _gemm_end(events: Iterable[Event], pe: str) -> float:
    return max((e.end_ns for e in events if e.kind is EventKind.ENGINE_BUSY and e.component == f"{pe}.gemm"), default=0.0)


#: The tile-count sweep's columns: (heading, options).
TILE_COUNT_FORMS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("composite, A K-step-major", dict(form="composite", layout="tiled")),
    ("composite, A row-major", dict(form="composite", layout="naive")),
    ("primitive", dict(form="primitive", layout="tiled")),
)


def tile_count_sweep(counts: Iterable[int] | None = None) -> list[tuple[GemmPoint, ...]]:
    rows = []
    for n in counts or TILE_COUNTS:
        shape = dict(m=128, n=128, k=128 * n, tile_m=128, tile_n=128, tile_k=128, pes=1)
        rows.append(tuple(run_point(**options, **shape) for _, options in TILE_COUNT_FORMS))
    return rows


def tiling_sweep(tilings: Iterable[Params] | None = None, shape: Params | None = None) -> list[GemmPoint]:
    return [run_point(**(shape or TILING_SHAPE), **t) for t in tilings or TILINGS]


def _eff(p: GemmPoint) -> str:
    return f"{p.sim_eff_pct:5.1f} {p.model_eff_pct:6.1f} {p.gap_pts:+5.1f}"


def tile_count_table(rows: list[tuple[GemmPoint, ...]]) -> str:
    """MAC efficiency (%) per tile count and form: simulator, model, model − sim, and the steady state alone."""
    head = (f"{'':>5}" + "".join(f"   {name:<25}" for name, _ in TILE_COUNT_FORMS)).rstrip()
    sub = f"{'tiles':>5}" + f"   {'sim':>5} {'model':>6} {'gap':>5} {'steady':>6}" * len(TILE_COUNT_FORMS) + "   II bound"
    lines = [head, sub, "─" * len(sub)]
    for row in rows:
        cells = "".join(f"   {_eff(p)} {p.steady_eff_pct:>6.1f}" for p in row)
        lines.append(f"{row[0].tiles:>5}{cells}   {' / '.join(p.bound for p in row)}")
    return "\n".join(lines)


def _tiling_label(p: Params) -> str:
    label = f"{p['form']:<9} {p['tile_m']}×{p['tile_n']}×{p['tile_k']}" + (f" split-K {p['ksplit']}" if p["ksplit"] > 1 else "")
    return label + (" A row-major" if p.get("layout") == "naive" else "")


def tiling_table(points: list[GemmPoint]) -> str:
    head = (
        f"{'tiling':<34} {'tiles':>5}  {'sim %':>5} {'model':>6} {'gap':>5}  {'II bound':<10}"
        f"  {'Δ lead-in':>9} {'Δ gaps':>8} {'Δ lead-out':>10}  (ns, sim − model, busiest PE's GEMM lane)"
    )
    lines = [head, "─" * len(head)]
    for p in points:
        d = [p.sim.lead_in - p.model.lead_in, p.sim.gaps - p.model.gaps, p.sim.lead_out - p.model.lead_out]
        lines.append(f"{_tiling_label(p.params):<34} {p.tiles:>5}  {_eff(p)}  {p.bound:<10}  {d[0]:>9.1f} {d[1]:>8.1f} {d[2]:>10.1f}")
    return "\n".join(lines)
