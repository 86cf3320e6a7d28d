"""``kernbench bench --study allreduce|gemm|llm-layer|all``: run the studies and print their tables (all: allreduce and gemm)."""

from __future__ import annotations

import time

from kernbench.sizes import size_label

STUDIES = ("allreduce", "gemm", "llm-layer", "all")  # all: the paper's two cross-checks (allreduce, gemm)


def allreduce_report() -> str:
    from kernbench.models.alphabeta import FORMULAS
    from kernbench.studies import allreduce as ar

    out = [
        "All-reduce: simulated latency vs the α–β model (ratio = sim / model), mesh vs torus",
        f"float16 payload per PE, {ar.CHUNK} messages, one PE per CUBE; every point's sum checked against numpy",
        "  each step charged to its critical pair: its own α (overheads + propagation + wormhole fill) and β (1 / 128 GB/s, the CUBE hub port)",
    ]
    out += [f"  {algo:<5} {formula}" for algo, formula in FORMULAS.items()]
    for pair in ar.PAIRS:
        label, mesh, torus, _pes, payloads = pair
        rows = list(ar.sweep([pair]))
        out += [
            "",
            f"{label}: {mesh} vs {torus}, {rows[0][1].pes} PEs, {size_label(payloads[0])} … {size_label(payloads[-1])}",
            ar.table(rows),
        ]
    return "\n".join(out)


def gemm_report() -> str:
    from kernbench.models.pipeline import PipelineModel
    from kernbench.studies import gemm as g

    shape = g.TILING_SHAPE
    return "\n".join(
        [
            "GEMM: MAC efficiency (%) = achieved FLOP/s / peak of the PEs used; simulator vs the ideal-pipeline model",
            f"  {PipelineModel.formula}",
            "  gap = model − sim (points); steady = t_GEMM / II, the model without fill and tail",
            "",
            f"tile count: one PE of {g.TOPOLOGY}, 128×128×128 tiles, K = 128 × tiles",
            g.tile_count_table(g.tile_count_sweep()),
            "",
            f"tilings: {shape['m']}×{shape['n']}×{shape['k']} on {shape['pes']} PEs of {g.TOPOLOGY}",
            g.tiling_table(g.tiling_sweep()),
        ]
    )


def llm_layer_report() -> str:
    from kernbench.studies import llm_layer

    return llm_layer.report()


def run_studies(which: str) -> int:
    if which not in STUDIES:
        raise ValueError(f"unknown study {which!r}; choose one of {', '.join(STUDIES)}")
    for name, report in (("gemm", gemm_report), ("allreduce", allreduce_report), ("llm-layer", llm_layer_report)):
        if which == name or (which == "all" and name != "llm-layer"):
            t0 = time.perf_counter()
            print(report())
            print(f"\n({name} study: {time.perf_counter() - t0:.0f} s of simulation)\n")
    return 0
