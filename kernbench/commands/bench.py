"""``kernbench bench``: run the shipped benches and compare latencies with the goldens.

The model is deterministic, so every latency must match
``kernbench/commands/goldens.json`` exactly. ``--check`` exits 1 on any difference
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
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernbench.cliargs import description
from kernbench.errors import KernbenchError
from kernbench.inputs import exists, read_regular
from kernbench.outputs import check_outputs, to_json, write_text_atomic
from kernbench.studies.benches import STUDY_BENCHES

if TYPE_CHECKING:
    from kernbench.sim.network import Mode

#: Ships inside the package, so ``bench --check`` works from anywhere; in a
#: checkout (editable install) ``--regen`` rewrites the repository's file.
GOLDENS = Path(__file__).resolve().with_name("goldens.json")
FORMAT = 1

GQA_BENCH_SHAPE = dict(heads=32, kv_heads=4, head_dim=128, context=4096, tile=128, pes_per_head=8, seed=0)
GQA_BENCH_TOPOLOGY = "sip2x2"


def _kernel(name: str, topology: str | None = None, **params: Any) -> Callable[..., dict[str, float]]:
    def run(mode: Mode = "fast") -> dict[str, float]:
        from kernbench.kernels import registry
        from kernbench.runtime.api import Runtime

        spec = registry.get(name)
        p = dict(spec.defaults(), **params)
        rt = Runtime(topology or spec.default_topology, mode=mode)
        spec.prepare(rt, p)
        result = rt.run()
        label = name + (f"/{p['variant']}" if "variant" in p else "")
        return {label: result.latency_ns}

    return run


BENCHES: tuple[Callable[..., dict[str, float]], ...] = (
    _kernel("gemm-primitive"),
    _kernel("gemm-composite"),
    *(_kernel("gqa-decode", GQA_BENCH_TOPOLOGY, variant=v, **GQA_BENCH_SHAPE) for v in ("primitive", "opt3", "opt2")),
    *STUDY_BENCHES,
)
ENTRY_POINT_GROUP = "kernbench.benches"


def plugin_benches() -> list[Callable[..., dict[str, float]]]:
    """Benches other packages contribute (the DMA probe's cases), by entry point.

    kernbench sits below probes and never imports them; an installed
    package declares ``[project.entry-points."kernbench.benches"]``.
    """
    from importlib.metadata import entry_points

    return [ep.load() for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)]


def run_benches(mode: Mode = "fast") -> dict[str, float]:
    """Every bench's latency; each bench takes the timing mode (``mode=``)."""
    out: dict[str, float] = {}
    for bench in (*BENCHES, *plugin_benches()):
        out.update(bench(mode=mode))
    return out


MAX_GOLDENS_BYTES = 1 << 20


def load_goldens(path: Path) -> dict[str, float]:
    """The goldens in ``path`` ({} when there is no such file); anything else wrong is one error."""
    try:
        if not exists(path, "--goldens"):
            return {}
        data = read_regular(path, MAX_GOLDENS_BYTES, "--goldens")
        doc = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as exc:
        raise KernbenchError(f"{path}: not valid JSON ({type(exc).__name__}: {str(exc)[:120]})") from None
    shape = f"{path}: expected {{'format': {FORMAT}, 'latency_ns': {{bench: ns}}}} with finite numbers and printable names"
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("latency_ns"), dict):
        raise KernbenchError(shape)
    values = doc["latency_ns"].values()
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values):
        raise KernbenchError(shape)
    if not all(k.isprintable() for k in doc["latency_ns"]):
        raise KernbenchError(shape)
    return {str(k): float(v) for k, v in doc["latency_ns"].items()}


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def save_goldens(path: Path, latencies: dict[str, float]) -> None:
    doc = {"format": FORMAT, "latency_ns": dict(sorted(latencies.items()))}
    write_text_atomic(path, to_json(doc, indent=2) + "\n")


#: How far the oracle may differ from the goldens (the fast mode's, to the bit): the two
#: modes are exact, but add the same times up in another order.
ORACLE_TOLERANCE_NS = 1e-6


def diff(golden: dict[str, float], now: dict[str, float], tolerance_ns: float = 0.0) -> list[str]:
    """One line per bench that does not match (exactly, or within ``tolerance_ns``)."""
    lines = []
    for name in sorted(set(golden) | set(now)):
        g, n = golden.get(name), now.get(name)
        if g == n or (g is not None and n is not None and abs(g - n) <= tolerance_ns):
            continue
        if g is None:
            lines.append(f"  + {name}: {n!r} ns (new, no golden)")
        elif n is None:
            lines.append(f"  - {name}: golden {g!r} ns (bench no longer produced)")
        else:
            pct = 100.0 * (n - g) / g if g else float("inf")
            lines.append(f"  ~ {name}: golden {g!r} ns -> now {n!r} ns ({pct:+.4f}%)")
    return lines


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = subparsers.add_parser("bench", help="run the shipped benches against the goldens", description=description(__doc__))
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if any latency differs from the goldens")
    mode.add_argument("--regen", action="store_true", help="rewrite the goldens and print what moved")
    mode.add_argument(
        "--study",
        choices=("allreduce", "gemm", "llm-layer", "all"),
        help=(
            "run a study and print its tables (model vs simulator) instead; one point in memory at a time, "
            "under 1 GB (allreduce ~2 min, its largest point 64 MiB on 6 PEs); llm-layer: decoder layers beside their "
            "HBM roofline, ~6 min, up to 1.4 GB (its 70B 32k-context point's events, kept for --explain); all: allreduce and gemm"
        ),
    )
    p.add_argument(
        "--goldens", type=Path, default=GOLDENS, metavar="FILE", help="goldens file (default: the one shipped in kernbench/commands/)"
    )
    p.add_argument("--json", action="store_true", help="print the latencies and the differences as one JSON object")
    p.add_argument(
        "--timing",
        choices=("fast", "oracle"),
        default="fast",
        help=f"fast (default; goldens are its latencies to the bit) or oracle, flit by flit (matches them within {ORACLE_TOLERANCE_NS:g} ns)",
    )
    return p


def run(args: argparse.Namespace) -> int:
    if args.study:
        from kernbench.studies.report import run_studies

        return run_studies(args.study)
    path: Path = args.goldens
    golden = load_goldens(path)
    if args.check and not golden:
        raise KernbenchError(f"{path}: no goldens to check against; run `kernbench bench --regen`")
    if args.regen:
        if args.timing != "fast":
            raise KernbenchError("--regen writes the fast mode's latencies; drop --timing oracle")
        check_outputs([("--goldens", path)])
    now = run_benches(args.timing)
    tolerance = ORACLE_TOLERANCE_NS if args.timing == "oracle" else 0.0
    moved = diff(golden, now, tolerance)
    if args.regen:
        save_goldens(path, now)
    if args.json:
        print(
            to_json(
                {"goldens": str(path), "latency_ns": dict(sorted(now.items())), "differences": moved, "regenerated": bool(args.regen)},
                indent=2,
            )
        )
        return 1 if args.check and moved else 0
    if args.regen:
        print(f"wrote {len(now)} bench latencies to {path}")
        print("\n".join(["moved:", *moved]) if moved else "nothing moved")
        return 0
    width = max(len(k) for k in now)
    for name in sorted(now):
        g = golden.get(name)
        mark = "ok" if g is not None and abs(g - now[name]) <= tolerance else "DIFF"
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
