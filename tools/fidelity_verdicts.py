"""The verdict table of docs/fidelity.md: every shipped kernel's and study's ranking at each level.

    python tools/fidelity_verdicts.py [--quick]  > /tmp/verdicts.md

Each question is a set of candidate runs (a kernel, its topology and options); every
candidate runs at paper, credit and full; the verdict holds when every level picks the same
fastest candidate. Prints two Markdown tables: the verdicts, and every candidate's latency
per level (with full / paper). ``--quick`` leaves out the paper-topology GQA (256 PEs flit
by flit: about 40 s a run).
"""

from __future__ import annotations

import sys
from typing import Any

from kernbench.kernels import registry
from kernbench.runtime.api import Runtime
from kernbench.sim.fidelity import FIDELITIES

Candidate = tuple[str, str, str, dict[str, Any]]  # label, kernel, topology, options
GQA_SMALL = dict(context=512, heads=16, kv_heads=2)
AR = dict(chunk="256KiB", dtype="float16")
TIE_NS = 1e-6


def questions(quick: bool) -> list[tuple[str, list[Candidate]]]:
    qs: list[tuple[str, list[Candidate]]] = []
    if not quick:
        qs.append(
            (
                "gqa-decode variants (paper, default shape)",
                [(v, "gqa-decode", "paper", dict(variant=v)) for v in ("primitive", "opt3", "opt2")],
            )
        )
    qs += [
        (
            "gqa-decode variants (cube1, bench shape)",
            [(v, "gqa-decode", "cube1", dict(GQA_SMALL, variant=v)) for v in ("primitive", "opt3", "opt2")],
        ),
        ("gqa-decode K layout (cube1, opt2)", [(lay, "gqa-decode", "cube1", dict(GQA_SMALL, layout=lay)) for lay in ("tiled", "naive")]),
        (
            "gemm: primitive vs composite (defaults)",
            [("gemm-primitive", "gemm-primitive", "", {}), ("gemm-composite", "gemm-composite", "", {})],
        ),
        (
            "gemm-tiled F4 shape (cube1, 1 PE)",
            [
                (f, "gemm-tiled", "cube1", dict(form=f, m=96, n=64, k=2048, tile_m=96, tile_n=64, tile_k=128, pes=1))
                for f in ("composite", "primitive")
            ],
        ),
        (
            "gemm study, 16 tiles (cube1, 1 PE)",
            [
                (name, "gemm-tiled", "cube1", dict(opts, m=128, n=128, k=2048, tile_m=128, tile_n=128, tile_k=128, pes=1))
                for name, opts in (
                    ("composite K-step-major", dict(form="composite", layout="tiled")),
                    ("composite row-major", dict(form="composite", layout="naive")),
                    ("primitive", dict(form="primitive", layout="tiled")),
                )
            ],
        ),
        (
            "gemm study, tilings (cube1, 512×512×1024, 8 PEs)",
            [
                (
                    f"{t['form']} {t['tile_m']}×{t['tile_n']}×{t['tile_k']}"
                    + (f" split-K {t['ksplit']}" if t["ksplit"] > 1 else "")
                    + (" row-major" if t.get("layout") == "naive" else ""),
                    "gemm-tiled",
                    "cube1",
                    dict(t, m=512, n=512, k=1024, pes=8),
                )
                for t in _tilings()
            ],
        ),
    ]
    for payload in ("4KiB", "64KiB", "1MiB"):
        qs.append(
            (
                f"allreduce study, torus2x3, {payload}",
                [(a, "allreduce", "torus2x3", dict(AR, algo=a, payload=payload)) for a in ("ring", "2d", "tree")],
            )
        )
        qs.append(
            (
                f"allreduce study, ring: mesh2x3 vs torus2x3, {payload}",
                [(t, "allreduce", t, dict(AR, algo="ring", payload=payload)) for t in ("mesh2x3", "torus2x3")],
            )
        )
    return qs


def _tilings() -> list[dict[str, Any]]:
    from kernbench.studies.gemm import TILINGS

    return [dict(t) for t in TILINGS]


def latency(kernel: str, topology: str, options: dict[str, Any], fidelity: str) -> float:
    spec = registry.get(kernel)
    rt = Runtime(topology or spec.default_topology, fidelity=fidelity)
    spec.prepare(rt, dict(spec.defaults(), **options))
    return rt.run().latency_ns


def main(quick: bool) -> None:
    verdicts, details = [], []
    for title, cands in questions(quick):
        lat = {c[0]: {f: latency(c[1], c[2], c[3], f) for f in FIDELITIES} for c in cands}
        fastest = {f: min(v[f] for v in lat.values()) for f in FIDELITIES}
        # the fastest at each level; candidates within TIE_NS of it tie
        best = {f: [k for k, v in lat.items() if v[f] - fastest[f] <= TIE_NS] for f in FIDELITIES}
        winner = best["paper"]
        if all(best[f] == winner for f in FIDELITIES):
            verdict = "holds"
        elif all(set(winner) <= set(best[f]) for f in FIDELITIES):
            verdict = "**ties** at " + ", ".join(f for f in FIDELITIES if best[f] != winner)
        else:
            verdict = "**flips** at " + ", ".join(f for f in FIDELITIES if best[f] != winner)
        gap = max(abs(v["full"] / v["paper"] - 1) for v in lat.values())
        gap_c = max(abs(v["credit"] / v["paper"] - 1) for v in lat.values())
        cells = " | ".join(f"{' = '.join(best[f])} ({fastest[f]:,.0f})" for f in FIDELITIES)
        verdicts.append(f"| {title} | {cells} | {verdict} | {100 * gap_c:.1f} % | {100 * gap:.1f} % |")
        for name, v in lat.items():
            details.append(
                f"| {title} | {name} | {v['paper']:,.1f} | {v['credit']:,.1f} | {v['full']:,.1f} | {v['full'] / v['paper']:.3f} |"
            )
        print(f"done: {title}", file=sys.stderr, flush=True)
    print(
        "| question | paper: fastest (ns) | credit: fastest (ns) | full: fastest (ns) | verdict | max credit/paper − 1 | max full/paper − 1 |"
    )
    print("|---|---|---|---|---|---:|---:|")
    print("\n".join(verdicts))
    print()
    print("| question | candidate | paper ns | credit ns | full ns | full / paper |")
    print("|---|---|---:|---:|---:|---:|")
    print("\n".join(details))


if __name__ == "__main__":
    main("--quick" in sys.argv[1:])
