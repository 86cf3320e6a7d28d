"""GQA decode speed figures (issue 4, "Speed"). Prints; asserts nothing.

    PYTHONPATH=. python benchmarks/bench_gqa.py [--variant opt2] [--profile]

* the default GQA decode (64 / 8 heads, d 128, context 32768, tile 128) on the
  paper topology (256 PEs): wall time (setup + run, and run alone), peak
  Python memory (tracemalloc) and max RSS, simulated events (counted by a Bus
  subscriber, so publishing is on — the same cost the TUI pays);
* wall time at four context lengths (8K … 64K) to show growth is linear in
  the work (tiles);
* with ``--profile``: the top functions of a cProfile of the default run.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import time
import tracemalloc

from kernbench.events.bus import Bus
from kernbench.kernels import gqa_decode as gq
from kernbench.kernels import registry
from kernbench.runtime.api import Runtime


def one_run(variant: str, context: int, count_events: bool = True) -> dict:
    spec = registry.get("gqa-decode")
    p = dict(spec.defaults(), variant=variant, context=context)
    t0 = time.perf_counter()
    rt = Runtime(spec.default_topology)
    prepared = spec.prepare(rt, p)
    t1 = time.perf_counter()
    bus = Bus()
    n = [0]
    if count_events:

        def counter(_event) -> None:
            n[0] += 1

        bus.subscribe(counter)
    result = rt.run(bus=bus)
    t2 = time.perf_counter()
    err = prepared.check()
    s = prepared.summary(result)
    return {
        "setup_s": t1 - t0,
        "run_s": t2 - t1,
        "wall_s": t2 - t0,
        "events": n[0],
        "tiles": s["tiles"],
        "commands": result.total_commands,
        "latency_ns": result.latency_ns,
        "max_abs_err": err,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", default="opt2", choices=gq.VARIANTS)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()

    tracemalloc.start()
    r = one_run(args.variant, 32768)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"GQA decode ({args.variant}) default shape on paper, 256 PEs")
    print(f"  wall time        {r['wall_s']:.2f} s (setup {r['setup_s']:.2f} s, simulate {r['run_s']:.2f} s; under tracemalloc)")
    print(f"  peak memory      {peak / 2**20:.0f} MiB traced (Python heap), max RSS {rss_mb:.0f} MiB")
    print(f"  simulated events {r['events']:,} ({r['commands']:,} PE commands, {r['tiles']:,} tiles)")
    print(f"  latency          {r['latency_ns']:,.1f} ns, max |err| {r['max_abs_err']:.2g}")
    print("\n  context   tiles   events     wall s   µs/tile")
    for ctx in (8192, 16384, 32768, 65536):
        x = one_run(args.variant, ctx)
        print(f"  {ctx:>7} {x['tiles']:>7} {x['events']:>9,} {x['wall_s']:>8.2f} {1e6 * x['wall_s'] / x['tiles']:>9.0f}")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        one_run(args.variant, 32768, count_events=False)
        prof.disable()
        print()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
