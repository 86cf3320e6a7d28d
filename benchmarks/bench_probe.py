"""Wall time of the whole DMA probe on the paper topology (target: well under 2 s).

    python benchmarks/bench_probe.py [--repeat N]

Prints the cold time (topology load + compile + probe, routes not yet
cached, as ``kernbench-tui probe`` runs it) and the warm time of the probe
alone on an already compiled graph, best of N, plus how many candidate
transfers the case search simulated after merging those with identical
route timing.
"""

from __future__ import annotations

import argparse
import io
import time
from contextlib import redirect_stdout

from kernbench.topology.compile import load_topology
from kernbench_probes.cases import simulate
from kernbench_probes.dma import main as probe_main
from kernbench_probes.dma import run_probe


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    t0 = time.perf_counter()
    with redirect_stdout(io.StringIO()):
        code = probe_main([])
    cold = time.perf_counter() - t0

    t0 = time.perf_counter()
    graph = load_topology("paper")
    load = time.perf_counter() - t0
    warm = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        result = run_probe(graph)
        warm.append(time.perf_counter() - t0)
    remote = [n.id for n in graph.nodes_of_kind("hbm_slice") if (n.attrs["sip"], n.attrs["cube"]) != (0, 0)]
    t0 = time.perf_counter()
    for node in remote:
        simulate(graph, "read", "sip0.cube0.pe0.dma", node, 32 * 2**10)
    unmerged = time.perf_counter() - t0
    print(f"probe on paper, end to end (load + compile + probe + render): {cold * 1e3:8.1f} ms  (exit {code})")
    print(f"topology load + compile:                                     {load * 1e3:8.1f} ms")
    print(f"probe on a compiled graph, best of {args.repeat}:                        {min(warm) * 1e3:8.1f} ms")
    print(f"remote-slice candidates: {len(remote)}, simulated after merging equal route timings: {result.candidates_simulated}")
    print(f"simulating all {len(remote)} candidates without merging:                  {unmerged * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
