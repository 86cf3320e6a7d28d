"""The DMA probe's verdicts at their boundaries, and its case choice by
brute force.

The paper states the invariants: latency monotonic (non-decreasing) in hop
distance, D2H read >= H2D write, and the best remote CUBE strictly faster
than the worst. Equal latencies sit exactly on those boundaries.
"""

from __future__ import annotations

import re

from kernbench.topology.compile import load_topology
from kernbench_probes.cases import Case, CaseFinder, simulate
from kernbench_probes.dma import Row, check_invariants


def rows(lat: dict[str, float]) -> list[Row]:
    return [Row(Case(k, k, "read", "i", "m"), {1: v}, {1: 0.0}, 1.0) for k, v in lat.items()]


def verdict(lat: dict[str, float], name: str):
    (v,) = [v for v in check_invariants(rows(lat), 1) if v.name == name]
    return v.ok


def test_equal_best_and_worst_remote_latency_fails_best_lt_worst():
    assert verdict({"cross-cube-best": 300.0, "cross-cube-worst": 300.0}, "cross-CUBE best < worst") is False
    assert verdict({"cross-cube-best": 300.0, "cross-cube-worst": 300.5}, "cross-CUBE best < worst") is True


def test_equal_d2h_and_h2d_passes_d2h_ge_h2d():
    assert verdict({"d2h-read": 458.1, "h2d-write": 458.1}, "D2H read >= H2D write") is True
    assert verdict({"d2h-read": 458.0, "h2d-write": 458.1}, "D2H read >= H2D write") is False


def test_equal_neighbouring_hop_distances_pass_monotonicity():
    name = "latency monotonic in hop distance"
    assert verdict({"local": 141.0, "same-half": 141.0, "cross-half": 161.2}, name) is True
    assert verdict({"local": 141.0, "same-half": 140.9, "cross-half": 161.2}, name) is False


def _natural(s: str) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s))


def test_the_best_and_worst_remote_slices_are_the_brute_force_extremes_first_in_natural_order():
    g = load_topology("sip2x2")
    src = "sip0.cube0.pe0"
    size = 4096
    remote = sorted((n.id for n in g.nodes_of_kind("hbm_slice") if (n.attrs["sip"], n.attrs["cube"]) != (0, 0)), key=_natural)
    lat = {m: simulate(g, "read", f"{src}.dma", m, size) for m in remote}
    best = min(remote, key=lambda m: (round(lat[m], 9), _natural(m)))
    worst = min(remote, key=lambda m: (-round(lat[m], 9), _natural(m)))
    # there are ties at both ends (mirror-image slices), so the order matters
    assert sum(round(v, 9) == round(lat[worst], 9) for v in lat.values()) > 1
    cases = {c.key: c.memory for c in CaseFinder(g, src, size).find()}
    assert (cases["cross-cube-best"], cases["cross-cube-worst"]) == (best, worst)
