"""Timing-engine speed figures. Prints; asserts nothing.

    PYTHONPATH=. python benchmarks/bench_engine.py [--quick]

* isolated 32 KiB reads on paper, one at a time (fast mode): transfers/s,
  the first use of each (PE, slice) pair (routing and FIFO set-up included)
  and steady state (the same reads again on the same network);
* 5,000 concurrent 32 KiB reads on paper (half within a CUBE, half to a
  random CUBE of the SIP), all issued at t = 0: transfers/s;
* one isolated read over a 10-hop path at 4 KiB, 64 KiB and 4 MiB (fast):
  wall µs, and the 4 MiB / 4 KiB ratio (a transfer's cost should not grow
  with its size);
* a contended mix (cube1, 12 streams sharing links and channels), oracle vs
  fast wall time, with the largest difference of their latencies;
* modeled events/s (what the engine publishes when observed) as a fraction
  of bare SimPy timeouts/s measured in the same run on the same core.
"""

from __future__ import annotations

import contextlib
import random
import statistics
import sys
import time

import simpy

from kernbench.events.bus import Bus
from kernbench.runtime.loop import collector_paused
from kernbench.sim.clock import Environment
from kernbench.sim.network import Network
from kernbench.topology.compile import load_topology


def isolated_wall_us(graph, mode: str, initiator: str, memory: str, size: int, repeats: int) -> float:
    """Median wall time of one transfer on an otherwise idle network (µs): one
    network, each transfer run to its end before the next starts."""
    env = Environment()
    net = Network(env, graph, mode=mode)
    env.run(net.read(initiator, memory, 0, size))  # warm: routes, FIFOs
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        env.run(net.read(initiator, memory, 0, size))
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def paper_ops(n: int, seed: int = 0) -> list[tuple[str, str, int]]:
    rng = random.Random(seed)
    pes = [f"sip{s}.cube{c}.pe{p}.dma" for s in range(2) for c in range(16) for p in range(8)]
    ops = []
    for _ in range(n):
        pe = rng.choice(pes)
        sip, cube = pe.split(".")[:2]
        c = rng.randrange(16) if rng.random() < 0.5 else int(cube[4:])  # like a kernel's: mostly same SIP
        ops.append((pe, f"{sip}.cube{c}.hbm.slice{rng.randrange(8)}", rng.randrange(256) * 256))
    return ops


def transfers_per_second(graph, n: int, concurrent: bool, warm: bool = False, as_a_run: bool = False) -> tuple[float, float]:
    """``warm``: the same reads once before, on the same network (routes, FIFOs, channels
    set up); ``as_a_run``: Python's cycle collector set as ``Runtime.run`` sets it."""
    ops = paper_ops(n)
    env = Environment()
    net = Network(env, graph)
    if warm:
        for pe, mem, off in ops:
            env.run(net.read(pe, mem, off, 32768))
    with collector_paused() if as_a_run else contextlib.nullcontext():
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


def contended_mix(graph, mode: str, bus: Bus | None = None) -> tuple[float, list[float], int]:
    """12 streams on cube1 crossing the same routers and slices; (wall s, latencies, events)."""
    rng = random.Random(7)
    c = "sip0.cube0."
    env = Environment()
    net = Network(env, graph, bus, mode=mode)
    count = [0]
    if bus is not None:
        bus.subscribe(lambda _e: count.__setitem__(0, count[0] + 1))
    evs = []

    def issue(kind, a, b, size, at):
        yield env.timeout(at)
        r = yield (net.send(a, b, size) if kind == "send" else getattr(net, kind)(a, b, rng.randrange(64) * 256, size))
        return r

    for i in range(12):
        kind = ["read", "write", "send"][i % 3]
        a = f"{c}pe{i % 8}.{'ipcq' if kind == 'send' else 'dma'}"
        b = f"{c}pe{(i + 3) % 8}.ipcq" if kind == "send" else f"{c}hbm.slice{(i * 5) % 8}"
        evs.append(env.process(issue(kind, a, b, [8192, 32768, 131072][i % 3], rng.uniform(0, 50))))
    t0 = time.perf_counter()
    env.run()
    return time.perf_counter() - t0, [e.value.latency_ns for e in evs], count[0]


def bare_simpy_timeouts_per_second(n: int = 200_000) -> float:
    env = simpy.Environment()

    def proc():
        for _ in range(n):
            yield env.timeout(1.0)

    env.process(proc())
    t0 = time.perf_counter()
    env.run()
    return n / (time.perf_counter() - t0)


def main() -> None:
    quick = "--quick" in sys.argv
    paper = load_topology("paper")
    cube1 = load_topology("cube1")
    pe = "sip0.cube0.pe0.dma"
    for mode in ("fast", "oracle"):  # warm the route cache
        isolated_wall_us(paper, mode, pe, "sip0.cube0.hbm.slice0", 4096, 2)

    n = 1000 if quick else 5000
    rate_seq, _ = transfers_per_second(paper, n, concurrent=False)
    rate_warm, _ = transfers_per_second(paper, n, concurrent=False, warm=True)
    rate_run, _ = transfers_per_second(paper, n, concurrent=False, warm=True, as_a_run=True)
    rate_con, sim_ns = transfers_per_second(paper, n, concurrent=True)
    print(f"fast, 32 KiB reads on paper, one at a time       : {rate_seq:10,.0f} transfers/s  (first use of each route)")
    print(f"fast, 32 KiB reads on paper, one at a time       : {rate_warm:10,.0f} transfers/s  (steady state: routes and FIFOs set up)")
    print(
        f"fast, 32 KiB reads on paper, one at a time       : {rate_run:10,.0f} transfers/s  (steady state, the collector as a run sets it)"
    )
    print(f"fast, 32 KiB reads on paper, {n} concurrent     : {rate_con:10,.0f} transfers/s  (simulated {sim_ns:,.0f} ns)")

    far = "sip0.cube5.hbm.slice7"
    hops = len(paper.route(far, pe))
    reps = 50 if quick else 300
    small = isolated_wall_us(paper, "fast", pe, far, 4096, reps)
    mid = isolated_wall_us(paper, "fast", pe, far, 64 * 1024, reps)
    big = isolated_wall_us(paper, "fast", pe, far, 4 * 2**20, reps)
    print(f"fast, one isolated read over {hops} hops, 4 KiB   : {small:8.1f} us wall")
    print(f"fast, one isolated read over {hops} hops, 64 KiB  : {mid:8.1f} us wall")
    print(f"fast, one isolated read over {hops} hops, 4 MiB   : {big:8.1f} us wall  (4 MiB / 4 KiB = {big / small:.2f}x)")

    # (the best of 3: one run is a few ms, where a shared machine's hiccups show)
    wall_f, lat_f, _ = min(contended_mix(cube1, "fast") for _ in range(3))
    wall_o, lat_o, _ = min(contended_mix(cube1, "oracle") for _ in range(3))
    worst = max(abs(a - b) for a, b in zip(lat_f, lat_o, strict=True))
    print(
        f"contended mix (cube1, 12 streams): fast {wall_f * 1e3:7.1f} ms, oracle {wall_o * 1e3:7.1f} ms wall "
        f"(oracle / fast = {wall_o / wall_f:.1f}x); largest latency difference {worst:.2e} ns"
    )

    wall_b, _, events = contended_mix(cube1, "fast", Bus())
    bare = bare_simpy_timeouts_per_second(50_000 if quick else 200_000)
    ev_rate = events / wall_b
    print(
        f"modeled events/s (contended mix, observed)        : {ev_rate:10,.0f}  = {ev_rate / bare:.2f} x bare SimPy ({bare:,.0f} timeouts/s)"
    )


if __name__ == "__main__":
    main()
