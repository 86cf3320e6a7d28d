"""What recording each command's source line costs, and how fast what-if re-timing is (issue 26).
Prints; asserts nothing.

    python benchmarks/bench_sources.py [--repeat 5]

For the default GQA decode (paper topology), CPU seconds (``process_time``;
best of ``--repeat``, the two variants of each pair interleaved so that load
on a shared machine hits both alike) of:

* the run with no events recorded, with the source capture of
  :mod:`kernbench.tl.sites` and with it switched off (``site_of`` returning
  ""): the capture's cost, as a ratio measured in this one process;
* the same pair with events recorded (events/s with and without);
* the full run (kernel Python, numerics, simulation) against re-timing its
  command log (``Runtime.replay``, what ``--what-if`` and ``--speedups`` do):
  the re-timing speed-up.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import kernbench.tl.context as context
from kernbench.kernels import registry
from kernbench.runtime.api import RunResult, Runtime


def _prepared() -> Runtime:
    spec = registry.get("gqa-decode")
    rt = Runtime(spec.default_topology)
    spec.prepare(rt, spec.defaults())
    return rt


def run(record: bool, capture: bool) -> tuple[RunResult, float]:
    rt = _prepared()
    real = context.site_of
    if not capture:
        context.site_of = lambda _frame: ""  # type: ignore[assignment]
    try:
        t = time.process_time()
        result = rt.run(record=record)
        return result, time.process_time() - t
    finally:
        context.site_of = real


def best(repeat: int, fns: dict[str, Callable[[], tuple[Any, float]]]) -> dict[str, tuple[Any, float]]:
    out: dict[str, tuple[Any, float]] = {}
    for _ in range(repeat):
        for name, fn in fns.items():
            got = fn()
            if name not in out or got[1] < out[name][1]:
                out[name] = got
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    runs = best(
        args.repeat,
        {
            "plain, capture": lambda: run(False, True),
            "plain, no capture": lambda: run(False, False),
            "recorded, capture": lambda: run(True, True),
            "recorded, no capture": lambda: run(True, False),
        },
    )
    base = runs["plain, capture"][0]
    print(f"gqa-decode (default) on paper: latency {base.latency_ns:,.3f} ns, {base.total_commands:,} commands")
    for mode in ("plain", "recorded"):
        on, off = runs[f"{mode}, capture"][1], runs[f"{mode}, no capture"][1]
        events = len(runs[f"{mode}, capture"][0].events or []) if mode == "recorded" else 0
        rate = f", {events / on:,.0f} vs {events / off:,.0f} events/s" if events else ""
        print(f"  {mode:8}: {off:.3f} s without source capture, {on:.3f} s with: {100 * (on / off - 1):+.1f} % CPU{rate}")
    rt = _prepared()
    full = runs["plain, capture"][1]
    retime = min(_timed(lambda: rt.replay(base)) for _ in range(args.repeat))
    print(f"  re-timing the command log: {retime:.3f} s vs the full run's {full:.3f} s: {full / retime:.1f}x faster")


def _timed(fn: Callable[[], object]) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


if __name__ == "__main__":
    main()
