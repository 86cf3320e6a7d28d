"""How fast can exact contention be in numpy? Prints; asserts nothing.

    PYTHONPATH=. python benchmarks/bench_merge_floor.py [--quick]

The fast engine is exact under contention because it merges, flit by flit,
every train whose flits interleave at a FIFO (``Fifo._merge``). This script
puts a number on what that costs at best, for the 5,000-concurrent-read
case of ``bench_engine.py``:

* counted in the real run: passages planned and merges made per read, and
  the flits in a merge (every train with flits still to come);
* timed alone: the leanest numpy merge of that many flits: one
  concatenate, a stable argsort, Lindley's recursion as three whole-array
  calls, the scatter back and a change check (about 10 numpy calls, no
  Train objects, no cascade to the next FIFO);
* the ceiling those give: if every merge cost only that and everything
  else per read cost what an isolated read costs today, transfers/s would
  be at most ``1 / (isolated + merges_per_read × lean_merge)``.
"""

from __future__ import annotations

import statistics
import sys
import time
import timeit

import numpy as np
import simpy
from bench_engine import paper_ops, transfers_per_second

from kernbench.sim.fifo import Fifo
from kernbench.sim.network import Network
from kernbench.topology.compile import load_topology


def merge_counts(graph, n: int) -> tuple[int, list[tuple[int, int]], float]:
    """Run ``n`` concurrent 32 KiB reads: passages planned, (trains, flits) of each merge, the wall time."""
    sizes: list[tuple[int, int]] = []
    passages = 0
    merge, arrive = Fifo._merge, Fifo.arrive

    def counting_merge(self, members, v0):
        sizes.append((len(members), sum(p.n - k for p, k in members)))
        return merge(self, members, v0)

    def counting_arrive(self, p, now):
        nonlocal passages
        passages += 1
        return arrive(self, p, now)

    Fifo._merge, Fifo.arrive = counting_merge, counting_arrive
    try:
        env = simpy.Environment()
        net = Network(env, graph)
        for pe, mem, off in paper_ops(n):
            net.read(pe, mem, off, 32768)
        t0 = time.perf_counter()
        env.run()
        wall = time.perf_counter() - t0
    finally:
        Fifo._merge, Fifo.arrive = merge, arrive
    return passages, sizes, wall


def lean_merge_us(flits: int, trains: int, s: float = 2.0, repeats: int = 20_000) -> float:
    """Wall µs of the leanest exact merge of ``flits`` flits from ``trains`` sorted trains."""
    rng = np.random.default_rng(0)
    parts = [np.sort(rng.uniform(0.0, flits * s, flits // trains)) for _ in range(trains)]
    old = [p + 1.0 for p in parts]

    def merge() -> bool:
        arr = np.concatenate(parts)
        order = arr.argsort(kind="stable")
        idx = np.arange(1, len(arr) + 1, dtype=np.float64) * s
        dep_sorted = idx + np.maximum(np.maximum.accumulate(arr[order] - (idx - s)), 0.0)
        dep = np.empty(len(arr))
        dep[order] = dep_sorted
        return bool((np.abs(np.concatenate(old) - dep) > 1e-9).any())

    n = max(1, repeats // 10)
    return min(timeit.repeat(merge, number=n, repeat=5)) / n * 1e6


def main() -> None:
    quick = "--quick" in sys.argv
    paper = load_topology("paper")
    n = 1000 if quick else 5000
    passages, sizes, wall = merge_counts(paper, n)
    trains = round(statistics.mean(t for t, _ in sizes)) if sizes else 1
    flits = round(statistics.mean(f for _, f in sizes)) if sizes else 0
    # (the best of 3: the ceiling is an upper bound, so the cheapest isolated read is the one to use)
    iso = 1e6 / max(transfers_per_second(paper, 1000 if quick else 3000, concurrent=False, warm=True)[0] for _ in range(3))
    lean = lean_merge_us(flits, trains)
    per_read = len(sizes) / n
    print(f"{n} concurrent 32 KiB reads on paper             : {n / wall:10,.0f} transfers/s now")
    print(f"passages planned per read                        : {passages / n:10.2f}")
    print(f"merges per read                                  : {per_read:10.2f}  (on average {flits} flits of {trains} trains each)")
    print(f"{f'the leanest numpy merge of {flits} flits':49s}: {lean:10.1f} us")
    print(f"an isolated read (steady state, best of 3)       : {iso:10.1f} us")
    print(
        f"ceiling with lean merges, nothing else added     : {1e6 / (iso + per_read * lean):10,.0f} transfers/s"
        f"  (1 / ({iso:.0f} + {per_read:.2f} x {lean:.1f}) us)"
    )


if __name__ == "__main__":
    main()
