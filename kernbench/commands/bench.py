"""``kernbench bench``: run the shipped benches and compare latencies with the goldens.

The model is deterministic, so every latency must match
``benchmarks/goldens.json`` exactly. ``--check`` exits 1 on any difference
(a changed, missing or new bench) and prints the diff; ``--regen`` rewrites
the goldens file and prints what moved. Without a flag the comparison is
printed and the exit status is 0.

Benches: the two GEMM forms at their defaults, the three GQA decode
variants at a moderate shape (sip2x2, 32 query / 4 KV heads, d 128, 4096
tokens, 8 PEs per KV head), a few points of the all-reduce and GEMM studies
(``kernbench.studies.benches``; ``--study`` runs the whole studies and
prints their tables), and whatever installed packages contribute
through the ``kernbench.benches`` entry points — the hop-distance DMA probe
cases on the paper topology at 32 KiB and 1 MiB (``probes/bench.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from kernbench.errors import KernbenchError
from kernbench.studies.benches import STUDY_BENCHES

def _default_goldens() -> Path:
    """The repo's goldens file (beside the package in a checkout, else under the cwd)."""
    beside = Path(__file__).resolve().parents[2] / "benchmarks" / "goldens.json"
    return beside if beside.exists() else Path.cwd() / "benchmarks" / "goldens.json"


GOLDENS = _default_goldens()
FORMAT = 1

GQA_BENCH_SHAPE = dict(heads=32, kv_heads=4, head_dim=128, context=4096, tile=128, pes_per_head=8, seed=0)
GQA_BENCH_TOPOLOGY = "sip2x2"


def _kernel(name: str, topology: str | None = None, **params) -> Callable[[], dict[str, float]]:
    def run() -> dict[str, float]:
        from kernbench.kernels import registry
        from kernbench.runtime.api import Runtime

        spec = registry.get(name)
        p = dict(spec.defaults(), **params)
        rt = Runtime(topology or spec.default_topology)
        prepared = spec.prepare(rt, p)
        result = rt.run()
        label = name + (f"/{p['variant']}" if "variant" in p else "")
        return {label: result.latency_ns}

    return run


BENCHES: tuple[Callable[[], dict[str, float]], ...] = (
    _kernel("gemm-primitive"),
    _kernel("gemm-composite"),
    *(_kernel("gqa-decode", GQA_BENCH_TOPOLOGY, variant=v, **GQA_BENCH_SHAPE) for v in ("primitive", "opt3", "opt2")),
    *STUDY_BENCHES,
)
ENTRY_POINT_GROUP = "kernbench.benches"


def plugin_benches() -> list[Callable[[], dict[str, float]]]:
    """Benches other packages contribute (the DMA probe's cases), by entry point.

    kernbench sits below probes and never imports them; an installed
    package declares ``[project.entry-points."kernbench.benches"]``.
    """
    from importlib.metadata import entry_points

    return [ep.load() for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)]


def run_benches() -> dict[str, float]:
    out: dict[str, float] = {}
    for bench in (*BENCHES, *plugin_benches()):
        out.update(bench())
    return out


def load_goldens(path: Path) -> dict[str, float]:
    if not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise KernbenchError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("latency_ns"), dict):
        raise KernbenchError(f"{path}: expected {{'format': {FORMAT}, 'latency_ns': {{bench: ns}}}}")
    return {k: float(v) for k, v in doc["latency_ns"].items()}


def save_goldens(path: Path, latencies: dict[str, float]) -> None:
    doc = {"format": FORMAT, "latency_ns": dict(sorted(latencies.items()))}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")


def diff(golden: dict[str, float], now: dict[str, float]) -> list[str]:
    """One line per bench that is not an exact match."""
    lines = []
    for name in sorted(set(golden) | set(now)):
        g, n = golden.get(name), now.get(name)
        if g == n:
            continue
        if g is None:
            lines.append(f"  + {name}: {n!r} ns (new, no golden)")
        elif n is None:
            lines.append(f"  - {name}: golden {g!r} ns (bench no longer produced)")
        else:
            pct = 100.0 * (n - g) / g if g else float("inf")
            lines.append(f"  ~ {name}: golden {g!r} ns -> now {n!r} ns ({pct:+.4f}%)")
    return lines


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser("bench", help="run the shipped benches against the goldens", description=__doc__.split("\n")[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if any latency differs from the goldens")
    mode.add_argument("--regen", action="store_true", help="rewrite the goldens and print what moved")
    mode.add_argument("--study", choices=("allreduce", "gemm", "all"), help="run a study and print its tables (model vs simulator) instead")
    p.add_argument("--goldens", type=Path, default=GOLDENS, metavar="FILE", help=f"goldens file (default: {GOLDENS.name} in benchmarks/)")
    return p


def run(args: argparse.Namespace) -> int:
    if args.study:
        from kernbench.studies.report import run_studies

        return run_studies(args.study)
    path: Path = args.goldens
    golden = load_goldens(path)
    if args.check and not golden:
        raise KernbenchError(f"{path}: no goldens to check against; run `kernbench bench --regen`")
    now = run_benches()
    moved = diff(golden, now)
    if args.regen:
        save_goldens(path, now)
        print(f"wrote {len(now)} bench latencies to {path}")
        print("\n".join(["moved:"] + moved) if moved else "nothing moved")
        return 0
    width = max(len(k) for k in now)
    for name in sorted(now):
        mark = "ok" if golden.get(name) == now[name] else "DIFF"
        print(f"{name:<{width}}  {now[name]:>14.3f} ns  {mark}")
    if moved:
        print(f"\n{len(moved)} bench(es) differ from {path}:", file=sys.stderr)
        print("\n".join(moved), file=sys.stderr)
        if args.check:
            print("run `kernbench bench --regen` if the change is intended", file=sys.stderr)
            return 1
    else:
        print(f"\nall {len(now)} latencies match {path}")
    return 0
