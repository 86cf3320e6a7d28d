"""The all-reduce study: payload sweep, mesh vs torus, simulator vs α–β.

For each pair of topologies (the 2×3 mesh and torus with one PE per CUBE —
the paper's "2D-torus over six devices" — and the paper's 4×4 SIP with its
torus variant, one PE per CUBE of SIP 0) and each algorithm, every payload
from 4 KiB to 64 MiB (16 MiB for the 4×4 pair; ×4 apart) is simulated and set beside the α–β model
of the same schedule (:mod:`kernbench.models.alphabeta`). Messages are
256 KiB (the largest the tree's four TCM buffers allow in 1 MiB of
scratch): the same rule at every point, chosen so the 64 MiB points stay
affordable to simulate. Every point's numerics are checked against numpy.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kernbench.collectives import ALGORITHMS
from kernbench.sizes import size_label

PAYLOADS = tuple(4096 * 4**i for i in range(8))  # 4 KiB … 64 MiB
#: (label, mesh, torus, --pes, payloads). The 4×4 pair stops at 16 MiB: its 64 MiB points
#: (16 PEs) would take about 90 s of simulation on their own.
Pair = tuple[str, str, str, str, tuple[int, ...]]  # label, mesh topology, torus topology, PEs, payloads

PAIRS: tuple[Pair, ...] = (
    ("2×3", "mesh2x3", "torus2x3", "", PAYLOADS),
    ("4×4", "paper", "paper_torus", "sip0", PAYLOADS[:-1]),
)
CHUNK = "256KiB"
DTYPE = "float16"


@dataclass(frozen=True, slots=True)
class Point:
    topology: str
    algo: str
    payload: int
    pes: int
    sim_ns: float
    model_ns: float
    alpha_term_ns: float
    beta_term_ns: float
    max_abs_err: float
    tolerance: float

    @property
    def ratio(self) -> float:
        return self.sim_ns / self.model_ns


def run_point(topology: str, algo: str, payload: int, pes: str = "", chunk: str = CHUNK) -> Point:
    """Simulate one all-reduce and model it; raises if its numerics are off."""
    from kernbench.kernels import registry
    from kernbench.kernels.allreduce import tolerance
    from kernbench.runtime.api import Runtime

    spec = registry.get("allreduce")
    params = dict(spec.defaults(), algo=algo, payload=str(payload), pes=pes, chunk=chunk, dtype=DTYPE)
    rt = Runtime(topology)
    prepared = spec.prepare(rt, params)
    result = rt.run()
    model = prepared.summary(result)
    err = prepared.checked_error()
    p = len(result.pes)
    tol = tolerance(p, DTYPE)
    if err > tol:
        raise AssertionError(f"allreduce {algo} on {topology}, {size_label(payload)}: max |err| {err} > {tol}")
    return Point(topology, algo, payload, p, result.latency_ns, model["model_ns"], model["alpha_term_ns"], model["beta_term_ns"], err, tol)


def sweep(pairs: Iterable[Pair] | None = None, algos: Iterable[str] = ALGORITHMS) -> Iterator[tuple[str, Point, Point]]:
    for label, mesh, torus, pes, payloads in pairs or PAIRS:
        for payload in payloads:
            for algo in algos:
                yield label, _freed(run_point(mesh, algo, payload, pes)), _freed(run_point(torus, algo, payload, pes))


def _freed(point: Point) -> Point:
    """``point``, once its run's memory is given back: a Runtime's objects refer to each other, so its
    buffers (payload × PEs) waited for the cyclic collector, which counts objects, not bytes; runs piled
    up (the study peaked at 7.4 GB) where one at a time stays under 1 GB."""
    gc.collect()
    return point


def _us(ns: float) -> str:
    return f"{ns / 1000:,.2f}"


def table(rows: list[tuple[str, Point, Point]]) -> str:
    head = f"{'payload':>8}  {'algo':<4}  {'mesh µs':>10} {'α–β µs':>10} {'ratio':>6}   {'torus µs':>10} {'α–β µs':>10} {'ratio':>6}   {'torus/mesh':>10}"
    lines = [head, "─" * len(head)]
    last = None
    for _, m, t in rows:
        size = size_label(m.payload) if m.payload != last else ""
        last = m.payload
        lines.append(
            f"{size:>8}  {m.algo:<4}  {_us(m.sim_ns):>10} {_us(m.model_ns):>10} {m.ratio:>6.2f}   "
            f"{_us(t.sim_ns):>10} {_us(t.model_ns):>10} {t.ratio:>6.2f}   {t.sim_ns / m.sim_ns:>10.3f}"
        )
    return "\n".join(lines)
