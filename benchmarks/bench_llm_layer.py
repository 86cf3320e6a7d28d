"""CPU time and memory of the big decoder-layer runs, as a ratio to a bare SimPy loop measured in the same run.

    python benchmarks/bench_llm_layer.py            # llama3-70b decode, batch 8, tp 32, --no-data, seq 8192 and 131072
    python benchmarks/bench_llm_layer.py --quick    # seq 8192 only

Issue 24's bar: ``decoder-layer --model llama3-70b --phase decode --batch 8
--seq 8192 --tp 32 --no-data`` in at most ~45× the CPU time of a bare SimPy
loop of 512k timeouts (about 60 CPU s on a slow 2-core machine) and at most
2 GB; the same at ``--seq 131072`` must run. Each case runs in a child
process (``kernbench run … --json``); its CPU time (user + system) and peak
RSS come from ``os.wait4``. Prints; asserts nothing (timed tests depend on
the machine's load).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import simpy

LOOP_TIMEOUTS = 512 * 1024
CASE = ["decoder-layer", "--model", "llama3-70b", "--phase", "decode", "--batch", "8", "--tp", "32", "--no-data", "--json"]


def simpy_loop_cpu_s(n: int = LOOP_TIMEOUTS) -> float:
    """CPU seconds of one SimPy process yielding ``n`` timeouts (the calibration)."""
    env = simpy.Environment()

    def proc():
        for _ in range(n):
            yield env.timeout(1.0)

    env.process(proc())
    t0 = time.process_time()
    env.run()
    return time.process_time() - t0


def run_case(seq: int) -> tuple[float, float, dict[str, object]]:
    """(CPU s, peak RSS MiB, run record) of one decoder-layer run in a child process."""
    child = subprocess.Popen([sys.executable, "-m", "kernbench.cli", "run", *CASE, "--seq", str(seq)], stdout=subprocess.PIPE)
    assert child.stdout is not None
    out = child.stdout.read()
    _pid, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"seq {seq}: the run failed (exit {child.returncode})")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, json.loads(out)


def main() -> None:
    seqs = [8192] if "--quick" in sys.argv else [8192, 131072]
    loop = min(simpy_loop_cpu_s() for _ in range(3))
    print(f"bare SimPy loop, {LOOP_TIMEOUTS:,} timeouts: {loop:.3f} CPU s (best of 3)")
    print(f"{'seq':>8} {'CPU s':>8} {'× loop':>8} {'peak RSS':>10} {'commands':>9} {'latency ns':>12}")
    for seq in seqs:
        cpu, rss, rec = run_case(seq)
        print(f"{seq:>8} {cpu:>8.2f} {cpu / loop:>8.1f} {rss:>8.0f} MiB {rec['commands']:>9,} {rec['latency_ns']:>12,.1f}")
    print("bar (issue 24): seq 8192 at most ~45× the loop and 2048 MiB; seq 131072 runs")


if __name__ == "__main__":
    main()
