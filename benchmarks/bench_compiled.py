"""Would compiling the engine with mypyc make re-timing fast enough? The same engine compiled and interpreted,
CPU of a re-timing and of a full run. Prints; asserts nothing.

    python benchmarks/bench_compiled.py [--rounds 4] [--repeat 4] [--keep DIR]

Copies this checkout's ``kernbench`` package (and ``pyproject.toml``, for mypy's settings) twice into a
temporary folder, compiles MODULES in one copy with ``mypyc`` (mypy is a test dependency and ships it; a C
compiler is needed; about 1.5 min of CPU), and leaves the other as Python. Each round then runs one child
process per copy, back to back, so that load on a shared machine hits both alike; a child imports
kernbench from its copy (``PYTHONPATH``), checks which modules are compiled, and measures the default GQA
decode (paper topology) as benchmarks/bench_sources.py does: CPU seconds (``process_time``) of the full
run (``rt.run()``: kernel Python, numerics, simulation) and of re-timing its command log with no change
(``rt.replay(base)``: the simulation S alone), ``--repeat`` of each. Prints the best and the median over
all rounds, and the ratios. ``--keep DIR`` builds in DIR and keeps it (e.g. for
``PYTHONPATH=DIR/compiled python benchmarks/check_exact.py``, run from ``DIR/compiled`` with its
``.so`` files and again without them: the outputs are byte-identical, 2026-12-03).

Result (2026-12-03, 2 shared cores under load 4-6): the simulation S (a re-timing) 1.3-1.5x cheaper
compiled (medians 0.483 -> 0.368 s, best 0.456 -> 0.331 s; other runs 1.36-1.64x), the full run
1.2-1.3x; machine instructions of one re-timing (valgrind's callgrind, instrumentation switched on
around it with ``callgrind_control -i on``) 2.28 G interpreted, 1.59 G compiled: 1.44x. Short of the
1.8x that would have made it worth a compiled build. What limits it: most of S is CPython's object work,
which compiled code calls just as the interpreter does. mypyc removes the bytecode loop of our modules
(26 % of the interpreted instructions; 7.5 % remain, SimPy's and api.py's), but the heap's tuple
comparisons (SimPy's ``(time, priority, id, event)`` entries: in this re-timing the heap holds about
1,000 entries at about 5 distinct times, 256 of them at each, most of priority NORMAL, so a comparison
goes down to the id; heappush and heappop, 0.33 G either way, 15 % of the interpreted re-timing and 21 %
of the compiled one), allocation and reference counts stay, and attribute
and dict look-ups on SimPy's events and other Python objects grow (0.13 G -> 0.30 G: mypyc's generic
look-up against 3.11's specialised bytecode).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The engine's hot modules (the simulation a re-timing runs), and the bases their classes derive from:
# a compiled class cannot derive from an interpreted one (fast.FastTransfer <- fast_record.FastRecord
# <- transfer.Transfer). kernbench/runtime/api.py (the heap loop) stays interpreted: mypyc's dataclass
# leaves RunResult._store (a field(init=False) with a default) unset, and what-if re-timing reads it.
# kernbench/pe/commands.py too: its frozen dataclasses' class attributes (is_composite) become fields.
MODULES = (
    "kernbench/pe/cpu.py",
    "kernbench/pe/scheduler.py",
    "kernbench/pe/composite.py",
    "kernbench/pe/lane.py",
    "kernbench/pe/tcm.py",
    "kernbench/pe/cost.py",
    "kernbench/pe/work.py",
    "kernbench/pe/requests.py",
    "kernbench/pe/scale.py",
    "kernbench/pe/steps.py",
    "kernbench/sim/fast.py",
    "kernbench/sim/fast_record.py",
    "kernbench/sim/train.py",
    "kernbench/sim/fifo.py",
    "kernbench/sim/deferral.py",
    "kernbench/sim/network.py",
    "kernbench/sim/clock.py",
    "kernbench/sim/transfer.py",
    "kernbench/sim/transit.py",
    "kernbench/sim/hbm.py",
    "kernbench/sim/region.py",
    "kernbench/topology/graph.py",
)

# What mypyc forces on the sources, applied to the compiled copy only (file, text, replacement):
PATCHES = (
    # a compiled class refuses ``del obj.attr`` unless the class names it (TransferEngine.close)
    (
        "kernbench/sim/transfer.py",
        '    """One way to compute a network\'s transfers (a timing mode)."""\n',
        '    """One way to compute a network\'s transfers (a timing mode)."""\n\n    __deletable__ = ("net",)\n',
    ),
    # a compiled ``float`` parameter turns an int into a float: an ENGINE_BUSY event's value (bytes,
    # an int) would read 8192.0 where Python keeps 8192, and the recorded event stream would differ
    ("kernbench/pe/lane.py", "value: float = 0.0, pred", "value: int | float = 0.0, pred"),
    ("kernbench/pe/lane.py", "corr_id: int, value: float, pred", "corr_id: int, value: int | float, pred"),
)


def child(repeat: int) -> None:
    from kernbench.kernels import registry
    from kernbench.runtime.api import Runtime

    names = [m[: -len(".py")].replace("/", ".") for m in MODULES]
    compiled = [m for m in names if str(importlib.import_module(m).__file__).endswith(".so")]

    def prepared() -> Runtime:
        spec = registry.get("gqa-decode")
        rt = Runtime(spec.default_topology)
        spec.prepare(rt, spec.defaults())
        return rt

    full, replay = [], []
    rt = prepared()
    base = rt.run()
    for _ in range(repeat):
        other = prepared()
        t = time.process_time()
        other.run()
        full.append(time.process_time() - t)
        t = time.process_time()
        rt.replay(base)
        replay.append(time.process_time() - t)
    print(json.dumps({"compiled": compiled, "full": full, "replay": replay, "latency": repr(base.latency_ns)}))


def build(where: Path) -> tuple[Path, Path]:
    """Two copies of the package under ``where``: ``plain`` and ``compiled`` (MODULES through mypyc)."""
    out = []
    for name in ("plain", "compiled"):
        tree = where / name
        if tree.exists():
            shutil.rmtree(tree)
        shutil.copytree(ROOT / "kernbench", tree / "kernbench", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
        out.append(tree)
    plain, compiled = out
    for tree in (plain, compiled):  # (both: the same sources, one compiled)
        for file, text, new in PATCHES:
            path = tree / file
            source = path.read_text()
            if text not in source:
                raise SystemExit(f"{file} has changed: {text!r} is not in it; update PATCHES")
            path.write_text(source.replace(text, new, 1))
    mypyc = Path(sys.executable).with_name("mypyc")
    t = time.time()
    subprocess.run([str(mypyc), *MODULES], cwd=compiled, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"compiled {len(MODULES)} modules with mypyc in {time.time() - t:.0f} s (wall)")
    return plain, compiled


def side(tree: Path, repeat: int) -> dict[str, object]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", "--repeat", str(repeat)],
        env=env,
        cwd=tree,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    got: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=4)
    ap.add_argument("--keep", type=Path, help="build in this folder and keep it")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.repeat)
        return
    with tempfile.TemporaryDirectory(prefix="kb-mypyc-") as tmp:
        plain, compiled = build(args.keep.resolve() if args.keep else Path(tmp))
        times: dict[str, dict[str, list[float]]] = {}
        seen: dict[str, dict[str, object]] = {}
        for _ in range(args.rounds):
            for name, tree in (("interpreted", plain), ("compiled", compiled)):
                got = seen[name] = side(tree, args.repeat)
                t = times.setdefault(name, {"full": [], "replay": []})
                t["full"] += got["full"]  # type: ignore[arg-type]
                t["replay"] += got["replay"]  # type: ignore[arg-type]
    for name in ("interpreted", "compiled"):
        mods: list[str] = seen[name]["compiled"]  # type: ignore[assignment]
        print(f"{name:12}: {len(mods)} of {len(MODULES)} modules compiled; gqa-decode latency {seen[name]['latency']} ns")
    n = len(times["compiled"]["replay"])
    for label, key in (("re-timing (simulation S)", "replay"), ("full run", "full")):
        for how, f in (("best", min), ("median", statistics.median)):
            i, c = f(times["interpreted"][key]), f(times["compiled"][key])
            print(f"  {label:25} {how:6} of {n}: {i:.3f} s -> {c:.3f} s: {i / c:.2f}x")
    fi, fc = statistics.median(times["interpreted"]["full"]), statistics.median(times["compiled"]["full"])
    si, sc = statistics.median(times["interpreted"]["replay"]), statistics.median(times["compiled"]["replay"])
    print(f"  full - S (kernel Python, numerics), medians: {fi - si:.3f} s -> {fc - sc:.3f} s")
    print(f"  full / re-timing, medians (no recompile counted): {fi / si:.2f}x -> {fc / sc:.2f}x")


if __name__ == "__main__":
    main()
