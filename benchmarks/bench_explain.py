"""What ``--explain`` costs (issue 10, "Speed"). Prints; asserts nothing.

    python benchmarks/bench_explain.py [--variant opt2] [--repeat 3]

For the default GQA decode (paper topology), CPU seconds (``process_time``,
so other load on a shared machine counts less) of:

* the run with no events recorded (what ``kernbench run`` pays),
* the run with events recorded (what ``--explain``, ``--trace`` and the TUI pay),
* the attribution from the recorded events: building the column store, then
  walking the critical path and summing it,

and the attribution's share of each run time. The issue's budget is 20 %.
"""

from __future__ import annotations

import argparse
import time

from kernbench.analysis.critical import attribute
from kernbench.events.store import EventStore
from kernbench.kernels import registry
from kernbench.runtime.api import Runtime


def run(variant: str, record: bool):
    spec = registry.get("gqa-decode")
    rt = Runtime(spec.default_topology)
    spec.prepare(rt, dict(spec.defaults(), variant=variant))
    t = time.process_time()
    result = rt.run(record=record)
    return result, time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variant", default="opt2")
    ap.add_argument("--repeat", type=int, default=3, help="take the best of this many runs of each")
    args = ap.parse_args()
    plain = min(run(args.variant, False)[1] for _ in range(args.repeat))
    best = None
    for _ in range(args.repeat):
        result, t = run(args.variant, True)
        if best is None or t < best[1]:
            best = (result, t)
    assert best is not None
    result, recorded = best
    events = result.events or []
    store_s = walk_s = float("inf")
    for _ in range(args.repeat):
        t = time.process_time()
        store = EventStore.from_events(events)
        t1 = time.process_time()
        a = attribute(store, result.latency_ns)
        t2 = time.process_time()
        store_s, walk_s = min(store_s, t1 - t), min(walk_s, t2 - t1)
    total = store_s + walk_s
    print(
        f"gqa-decode ({args.variant}) on paper: latency {result.latency_ns:,.3f} ns, {len(events):,} events, "
        f"path {len(a.path)} segments, attribution sums to the latency within {abs(sum(a.by_cause.values()) - result.latency_ns):.1e} ns"
    )
    print(f"  run, no events          {plain:8.3f} s")
    print(f"  run, events recorded    {recorded:8.3f} s   ({recorded / plain:.2f}x)")
    print(f"  column store            {store_s:8.3f} s")
    print(f"  critical path + sums    {walk_s:8.3f} s")
    print(
        f"  attribution in all      {total:8.3f} s   = {100 * total / recorded:.1f} % of the recorded run, "
        f"{100 * total / plain:.1f} % of the plain run (budget 20 %)"
    )


if __name__ == "__main__":
    main()
