"""Sweep speed figures (issue 10 §3, "Speed"). Prints; asserts nothing.

    python benchmarks/bench_sweep.py [--context 131072] [--points 8] [--dask]

Runs ``kernbench sweep`` as a user does (a fresh process each time, wall time
from start to exit) over ``--points`` equal points — one GQA decode on one
CUBE (16 / 2 heads, d 128) at ``--context`` tokens, swept over the input seed,
so every point is the same work:

* ``--jobs 1`` (in-process) and ``--jobs 2`` (two spawned workers), both
  ``--no-cache``, and their ratio — on 2 idle cores the ideal is 2×, less the
  workers' start-up (~0.5 s: each imports kernbench and numpy). Each run's
  CPU time (its own and its workers') over its wall time says how many cores
  it actually got: on a shared machine that, not the code, bounds the ratio;
* the same sweep again from a full cache (no point simulated);
* with ``--dask``: on a 2-worker ``distributed.LocalCluster`` (cluster start-up
  not counted).

The rows of every run are compared: they must be identical.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def sweep(argv: list[str], out: Path, cache: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of it and its workers) of ``kernbench sweep ARGV --out OUT`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "kernbench.cli", *argv, "--out", str(out), "--cache-dir", str(cache)], check=True, stdout=subprocess.DEVNULL
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def line(name: str, run: tuple[float, float], note: str = "") -> str:
    wall, cpu = run
    return f"  {name:<18} {wall:7.2f} s wall  {cpu:7.2f} s CPU  ({cpu / wall:.2f} cores busy){note}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--context", type=int, default=131072)
    ap.add_argument("--points", type=int, default=8)
    ap.add_argument("--dask", action="store_true", help="also time a 2-worker distributed.LocalCluster")
    args = ap.parse_args()
    seeds = ",".join(str(s) for s in range(args.points))
    base = [
        "sweep",
        "gqa-decode",
        "--topology",
        "cube1",
        "--heads",
        "16",
        "--kv-heads",
        "2",
        "--context",
        str(args.context),
        "--grid",
        f"seed={seeds}",
    ]
    print(
        f"{args.points} points: gqa-decode on cube1, 16/2 heads, context {args.context:,}, one per seed; "
        f"{len(os.sched_getaffinity(0))} usable CPU(s)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cache = folder / "cache"
        one = sweep([*base, "--jobs", "1", "--no-cache"], folder / "jobs1.json", cache)
        two = sweep([*base, "--jobs", "2", "--no-cache"], folder / "jobs2.json", cache)
        print(line("--jobs 1", one, f"  {one[0] / args.points:.2f} s a point, start-up included"))
        print(line("--jobs 2", two, f"  speed-up {one[0] / two[0]:.2f}x (ideal 2x with 2 idle cores)"))
        fill = sweep([*base, "--jobs", "2"], folder / "fill.json", cache)
        hit = sweep([*base, "--jobs", "2"], folder / "hit.json", cache)
        print(line("cache: filling", fill))
        print(line("cache: all hits", hit, f"  nothing simulated: start-up, checks, {args.points} reads"))
        names = ["jobs1", "jobs2", "fill", "hit"]
        if args.dask:
            from distributed import LocalCluster

            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
                on_dask = sweep([*base, "--scheduler", cluster.scheduler_address, "--no-cache"], folder / "dask.json", cache)
            print(f"  LocalCluster (2)   {on_dask[0]:7.2f} s wall  speed-up {one[0] / on_dask[0]:.2f}x (the cluster's CPU is not counted)")
            names.append("dask")
        texts = {n: (folder / f"{n}.json").read_text() for n in names}
        same = len(set(texts.values())) == 1
        print(f"  rows identical in every run: {'yes' if same else 'NO: ' + ', '.join(texts)}")


if __name__ == "__main__":
    main()
