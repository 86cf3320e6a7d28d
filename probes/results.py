"""What a DMA probe run produces: its rows, its invariant verdicts, and the paper's table to compare with.

Below both the probe (``dma``) and its renderer (``render``), so neither imports the other's module for them.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernbench.sim.network import Mode
from kernbench_probes.cases import Case

# The paper's Table "probe-pe-dma": case → (latency ns at 32 KiB, {size: Util%}).
# Shown beside the measured values when the topology is the paper's own.
PAPER_REFERENCE: dict[str, tuple[float, dict[str, float]]] = {
    "local": (141.0, {"32KiB": 90.8, "1MiB": 100.0}),
    "same-half": (147.9, {"32KiB": 86.6, "1MiB": 99.9}),
    "cross-half": (161.2, {"32KiB": 79.4, "1MiB": 99.8}),
    "cross-cube-best": (330.5, {"32KiB": 77.5, "1MiB": 99.6}),
    "cross-cube-worst": (677.1, {"32KiB": 37.8, "1MiB": 97.8}),
}


@dataclass(frozen=True, slots=True)
class Row:
    case: Case
    latency_ns: dict[int, float]  # per size
    util_pct: dict[int, float]  # per size
    bottleneck_gbps: float


@dataclass(frozen=True, slots=True)
class Verdict:
    name: str
    ok: bool | None  # None: the topology has no such cases (skipped)
    detail: str


@dataclass(frozen=True, slots=True)
class ProbeResult:
    topology: str
    source: str
    sizes: tuple[int, ...]
    rows: tuple[Row, ...]
    invariants: tuple[Verdict, ...]
    candidates_simulated: int
    timing: Mode = "fast"

    @property
    def passed(self) -> bool:
        return all(v.ok is not False for v in self.invariants)

    def row(self, key: str) -> Row | None:
        return next((r for r in self.rows if r.case.key == key), None)
