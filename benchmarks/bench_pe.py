"""PE / runtime speed figures (issue 3, "Speed"). Prints; asserts nothing.

    PYTHONPATH=. python benchmarks/bench_pe.py [--profile]

* simulated commands per wall-second, live path (greenlet kernel + numerics)
  and replay path (re-timing the recorded command log), on a kernel that
  issues many small commands;
* SimPy events per wall-second of the engine on that run vs a bare SimPy
  timeout loop measured in the same process (target: ratio >= 1/3).

Two event counts, each taken in a separate counting run so that counting
costs no wall time in the timed runs:

* *modeled events*: what the engine publishes on its bus (dispatch charges,
  engine busy spans, stalls, loads, transfers, edge spans, …) — the engine's
  own events, the figure the target is about;
* *SimPy events*: calls to ``Environment.schedule``. PE_CPU runs ahead of
  SimPy's clock while it only touches its own engines, so a compute-only
  kernel needs almost none; they are printed to show where SimPy is used.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import math
import pstats
import statistics
import time

import numpy as np
import simpy

import kernbench.runtime.loop as loop
import kernbench.tl as tl
from kernbench.runtime.api import Runtime

N_TILES = 1500  # commands per kernel ~ 3 * N_TILES + 2


def many_small(a, out):
    """Per step: a lazy load, a MATH op, and a running add — ~3 small commands."""
    acc = tl.load(a[0:8, :])
    for i in range(N_TILES):
        r = i % 16
        x = tl.load(a[r * 8 : r * 8 + 8, :])
        acc = tl.add(acc, tl.scale(x, 0.5))
    tl.store(out, acc)


def compute_only(a, out):
    """MATH commands on TCM-resident tiles: the PE path without NoC transfers."""
    acc = tl.zeros((8, 64))
    x = tl.full((8, 64), 0.5)
    for _ in range(3 * N_TILES):
        acc = tl.add(acc, x)
    tl.store(out, acc)


def setup():
    rt = Runtime("cube1")
    a = rt.deploy(np.random.default_rng(0).standard_normal((128, 64)))
    out = rt.empty((8, 64))
    return rt, a, out


def live_run(kernel=many_small):
    rt, a, out = setup()
    rt.launch(kernel, pes=[0], args=(a, out))
    return rt, rt.run()


class _Counter:
    n = 0


def count_events(fn) -> tuple[int, object]:
    """Schedule entries ``fn`` runs: SimPy's ``schedule`` calls on a plain SimPy environment (the bare loop),
    and on a run's schedule (``kernbench.sim.clock.Environment``, whose ``timeout``, ``call_at`` and ``fire``
    push without ``schedule``) the entries its loop takes, stepped one at a time in the same order."""
    orig, orig_loop = simpy.Environment.schedule, loop.run_loop

    def counting(self, event, priority=1, delay=0):
        _Counter.n += 1
        return orig(self, event, priority, delay)

    def counting_loop(env, _max_sim_ns, _tick) -> None:
        while env.peek() != math.inf:
            env.step()
            _Counter.n += 1

    _Counter.n = 0
    simpy.Environment.schedule = counting
    loop.run_loop = counting_loop
    try:
        out = fn()
    finally:
        simpy.Environment.schedule = orig
        loop.run_loop = orig_loop
    return _Counter.n, out


def count_modeled(fn) -> int:
    """Events the engine publishes during ``fn(bus)``."""
    from kernbench.events.bus import Bus

    bus = Bus()
    n = [0]

    def tally(_event) -> None:
        n[0] += 1

    bus.subscribe(tally)
    fn(bus)
    return n[0]


def bare_simpy(n: int) -> float:
    """Wall seconds for n timeouts yielded by one process."""
    env = simpy.Environment()

    def proc():
        for _ in range(n):
            yield env.timeout(1)

    env.process(proc())
    t0 = time.perf_counter()
    env.run()
    return time.perf_counter() - t0


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="cProfile the live and the replay run")
    args = ap.parse_args()

    bare_n = 200_000
    ev_bare, _ = count_events(lambda: bare_simpy(bare_n))
    t_bare, _ = best(lambda: bare_simpy(bare_n), args.repeats)
    bare_eps = ev_bare / t_bare
    print(f"bare SimPy timeout loop: {bare_n / t_bare:10,.0f} timeouts/s = {bare_eps:10,.0f} events/s")
    for kernel in (many_small, compute_only):
        rt, live = live_run(kernel)
        cmds = live.total_commands
        ev_live, _ = count_events(lambda kernel=kernel: live_run(kernel))
        modeled = count_modeled(lambda bus, rt=rt, live=live: rt.replay(live, bus=bus))
        t_live, m_live = best(lambda kernel=kernel: live_run(kernel), args.repeats)
        t_rep, m_rep = best(lambda rt=rt, live=live: rt.replay(live), args.repeats)
        print(f"\n{kernel.__name__}: {(kernel.__doc__ or '').strip()}")
        print(
            f"  {cmds} commands on one PE of cube1, simulated latency {live.latency_ns:.0f} ns, "
            f"{modeled / cmds:.2f} modeled events and {ev_live / cmds:.2f} SimPy events per command"
        )
        for name, t, m in (("live", t_live, m_live), ("replay", t_rep, m_rep)):
            eps = modeled / t
            print(
                f"  {name:<7}: {cmds / t:10,.0f} commands/s  ({t * 1e3:7.1f} ms best, {m * 1e3:7.1f} median)  "
                f"{eps:10,.0f} modeled events/s = {eps / bare_eps:.2f} of bare SimPy"
            )
    print("\ntarget: engine (modeled) events/s >= 0.33 of bare SimPy timeouts/s")
    rt, live = live_run()

    if args.profile:
        for name, fn in (("live", live_run), ("replay", lambda: rt.replay(live))):
            prof = cProfile.Profile()
            prof.enable()
            fn()
            prof.disable()
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(18)
            print(f"\n--- cProfile {name} (by own time) ---")
            print(s.getvalue())


if __name__ == "__main__":
    main()
