"""Engine speed figures (issue 2, section 6). Prints; asserts nothing.

    PYTHONPATH=. python benchmarks/bench_engine.py

* transfers per second in the fast mode (many independent reads on the paper topology)
* wall time of one isolated transfer of 4 KiB, 64 KiB and 4 MiB (fast mode): a
  transfer moves as one chunk per 16 flits, at most four, so the cost stops
  growing at 64 flits (64 KiB vs 4 MiB stays near 1; 4 KiB is one chunk)
* oracle vs fast wall time on one 32 KiB read whose data crosses 6 hops
"""

from __future__ import annotations

import random
import statistics
import time

import simpy

from kernbench.sim.network import FAST_CHUNKS, MIN_CHUNK_FLITS, Network
from kernbench.topology.compile import load_topology


def isolated_wall_us(graph, mode: str, initiator: str, memory: str, size: int, repeats: int) -> float:
    """Median wall time of one transfer on an otherwise idle network (µs)."""
    env = simpy.Environment()
    net = Network(env, graph, mode=mode)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        env.run(net.read(initiator, memory, 0, size))
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def transfers_per_second(graph, n: int, concurrent: bool) -> tuple[float, float]:
    rng = random.Random(0)
    pes = [f"sip{s}.cube{c}.pe{p}.dma" for s in range(2) for c in range(16) for p in range(8)]
    ops = []
    for _ in range(n):
        pe = rng.choice(pes)
        sip, cube = pe.split(".")[:2]
        # mostly same-SIP traffic, like a kernel's
        c = rng.randrange(16) if rng.random() < 0.5 else int(cube[4:])
        ops.append((pe, f"{sip}.cube{c}.hbm.slice{rng.randrange(8)}", rng.randrange(256) * 256))
    env = simpy.Environment()
    net = Network(env, graph)
    t0 = time.perf_counter()
    if concurrent:
        for pe, mem, off in ops:
            net.read(pe, mem, off, 32768)
        env.run()
    else:
        for pe, mem, off in ops:
            env.run(net.read(pe, mem, off, 32768))
    wall = time.perf_counter() - t0
    return n / wall, env.now


def main() -> None:
    paper = load_topology("paper")
    pe = "sip0.cube0.pe0.dma"

    # warm the route cache once so every figure below is steady-state
    for mode in ("fast", "oracle"):
        isolated_wall_us(paper, mode, pe, "sip0.cube0.hbm.slice0", 4096, 2)

    rate_seq, _ = transfers_per_second(paper, 5000, concurrent=False)
    rate_con, sim_ns = transfers_per_second(paper, 5000, concurrent=True)
    print(f"fast mode, 32 KiB reads on paper, one at a time   : {rate_seq:10,.0f} transfers/s")
    print(f"fast mode, 32 KiB reads on paper, 5000 concurrent : {rate_con:10,.0f} transfers/s  (sim {sim_ns:,.0f} ns)")

    remote = "sip0.cube5.hbm.slice7"  # two mesh hops away
    small = isolated_wall_us(paper, "fast", pe, remote, 4096, 300)
    mid = isolated_wall_us(paper, "fast", pe, remote, 64 * 1024, 300)
    big = isolated_wall_us(paper, "fast", pe, remote, 4 * 2**20, 300)
    hops = len(paper.route(remote, pe))
    print(f"fast mode, one isolated read over {hops} hops, 4 KiB : {small:8.1f} us wall  (one train: a transfer moves as one chunk per {MIN_CHUNK_FLITS} flits, at most {FAST_CHUNKS})")
    print(f"fast mode, one isolated read over {hops} hops, 64 KiB: {mid:8.1f} us wall  ({FAST_CHUNKS} chunks, as every larger transfer)")
    print(f"fast mode, one isolated read over {hops} hops, 4 MiB : {big:8.1f} us wall  (4 MiB / 4 KiB = {big / small:.2f}x, 4 MiB / 64 KiB = {big / mid:.2f}x)")

    six = next(
        m.id
        for m in sorted(paper.nodes.values(), key=lambda n: n.id)
        if m.kind in ("hbm_slice", "sram") and len(paper.route(m.id, pe)) == 6
    )
    print(f"6-hop read path: {' -> '.join(paper.route(six, pe).nodes)}")
    fast = isolated_wall_us(paper, "fast", pe, six, 32768, 300)
    oracle = isolated_wall_us(paper, "oracle", pe, six, 32768, 50)
    print(f"32 KiB read over 6 hops: fast {fast:8.1f} us, oracle {oracle:8.1f} us wall  (oracle / fast = {oracle / fast:.1f}x)")


if __name__ == "__main__":
    main()
