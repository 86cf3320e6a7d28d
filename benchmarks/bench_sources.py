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
  command log under a changed parameter (``Runtime.replay``, what ``--what-if``
  and ``--speedups`` do): the re-timing speed-up, against the run in this
  process and against what a user would do instead, ``kernbench run
  gqa-decode --set …`` as a process of its own (CPU of the child);
* the same re-timing with its events recorded (what the debugger's what-if
  prompt runs, to show both timelines) against the recorded full run;
* the residual: the simulation alone (a re-timing with no change), the
  topology's recompile for the change, and the kernel's Python and numerics
  (full run − simulation), against what a 5× re-timing would need.
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
    inside, calls, whole = _time_inside_capture()
    print(
        f"  time inside the capture (site_of, timed per call): {1e3 * inside:.1f} ms over {calls:,} commands "
        f"= {1e6 * inside / calls:.2f} µs each, {100 * inside / whole:.1f} % of that run's {whole:.3f} s"
    )
    rt = _prepared()
    full = runs["plain, capture"][1]
    change = "pe.attrs.tcm_bw_gbps=1024"
    retimes = best(
        args.repeat,
        {
            "plain": lambda: (None, _timed(lambda: rt.replay(base, overrides=[change]))),
            "recorded": lambda: (None, _timed(lambda: rt.replay(base, overrides=[change], record=True))),
        },
    )
    retime, recorded = retimes["plain"][1], retimes["recorded"][1]
    cli = min(_child_cpu(["run", "gqa-decode", "--set", change]) for _ in range(args.repeat))
    print(f"  re-timing the command log ({change}): {retime:.3f} s")
    print(f"    vs the full run in this process {full:.3f} s: {full / retime:.1f}x faster")
    print(f"    vs `kernbench run gqa-decode --set {change}` as a process {cli:.3f} s: {cli / retime:.1f}x faster")
    full_rec = runs["recorded, capture"][1]
    print(
        f"  recorded re-timing (events kept: the debugger's what-if): {recorded:.3f} s, vs the recorded full run {full_rec:.3f} s: {full_rec / recorded:.1f}x faster"
    )
    _residual(rt, base, change, full, retime, args.repeat)


def _residual(rt: Runtime, base: RunResult, change: str, full: float, retime: float, repeat: int) -> None:
    """What a re-timing is made of, against what 5x would need: the simulation S (a re-timing with no
    change: the same engine, no recompile), recompiling the topology for the change, and the kernel's
    Python and numerics K = full run − S. full / re-timing = (K + S) / (S + compile) reaches 5 only when
    S + compile ≤ (K + S) / 5 — and as S shrinks so does the full run, which holds S too: with K as it
    is, only when S ≤ (K − 5 compile) / 4."""
    from kernbench.runtime.api import _reload

    sim = min(_timed(lambda: rt.replay(base)) for _ in range(repeat))
    compile_s = min(_timed(lambda: _reload(rt.graph, [change])) for _ in range(repeat))
    kernel = full - sim
    print(
        f"  residual: simulation S {sim:.3f} s + recompile {compile_s:.3f} s; kernel Python and numerics K = full - S = {kernel:.3f} s; "
        f"5x needs S + recompile <= {(kernel + sim) / 5:.3f} s at this S, so S <= (K - 5 recompile) / 4 = {(kernel - 5 * compile_s) / 4:.3f} s"
    )


def _time_inside_capture() -> tuple[float, int, float]:
    """(seconds spent in site_of, its calls, the run's seconds) of one unrecorded run: the capture's cost
    measured directly (an upper bound: the per-call clock reads are counted in)."""
    rt = _prepared()
    real = context.site_of
    spent = [0.0, 0]
    clock = time.perf_counter

    def timed(frame: Any) -> str:
        t = clock()
        try:
            return real(frame)
        finally:
            spent[0] += clock() - t
            spent[1] += 1

    context.site_of = timed  # type: ignore[assignment]
    try:
        t = clock()
        rt.run()
        whole = clock() - t
    finally:
        context.site_of = real
    return spent[0], int(spent[1]), whole


def _child_cpu(argv: list[str]) -> float:
    """CPU seconds (user + system) of ``kernbench ARGV`` (its main) as a child process."""
    import resource
    import subprocess
    import sys

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-c", "import sys; from kernbench.cli import main; sys.exit(main(sys.argv[1:]))", *argv],
        check=True,
        capture_output=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _timed(fn: Callable[[], object]) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


if __name__ == "__main__":
    main()
