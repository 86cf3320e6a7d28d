"""The probe's contribution to ``kernbench bench`` (entry point ``kernbench.benches``).

kernbench never imports probes (probes sit above it); it finds this through
the ``kernbench.benches`` entry-point group declared in pyproject.toml.
"""

from __future__ import annotations

from kernbench.sim.network import Mode
from kernbench.sizes import size_label
from kernbench.topology.compile import load_topology
from kernbench_probes.dma import run_probe


def benches(mode: Mode = "fast") -> dict[str, float]:
    """Latency of every hop-distance DMA probe case on the paper topology."""
    res = run_probe(load_topology("paper"), mode=mode)
    return {f"probe-dma/{row.case.key}/{size_label(s)}": lat for row in res.rows for s, lat in row.latency_ns.items()}
