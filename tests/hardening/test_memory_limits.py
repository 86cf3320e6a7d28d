"""Issue 20, class 5: memory inside the documented limits.

* A CUBE's routes are searched per source router, so a long router chain
  compiles in memory proportional to it (the all-pairs path tuples were N³);
  a route longer than ``MAX_ROUTE_HOPS`` (a transfer costs the square of its
  hops in the engine) is one error naming its ends, its length and the limit.
* ``run allreduce`` refuses payload × PEs over ``MAX_PAYLOAD_BYTES`` before
  it allocates anything.
* ``bench --study allreduce`` holds one run at a time and says so.
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import pytest
from hardening_harness import MIB, assert_failed_cleanly, child_env, cpu_scale, invoke, spawn

from kernbench import cli
from kernbench.kernels.allreduce import MAX_PAYLOAD_BYTES, check_payload
from kernbench.sizes import size_label
from kernbench.topology.compile import compile_spec
from kernbench.topology.graph import MAX_ROUTE_HOPS
from kernbench.topology.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]


# --- router chains -------------------------------------------------------------


def chain_yaml(routers: int, width: int = 1) -> str:
    """cube1 with its routers replaced by a chain r0 … r(N−1): PE 0 at the far end, everything else at r0."""
    text = (ROOT / "topologies" / "cube1.yaml").read_text()
    head, _, rest = text.partition("  routers:\n")
    _, _, tail = rest.partition("  pes:\n")
    chain = "".join(f"    r{i}: {{}}\n" for i in range(routers))
    links = "".join(f"    - {{a: r{i}, b: r{i + 1}, bw_gbps: 256, prop_ns: 1}}\n" for i in range(routers - 1))
    tail = tail.replace("attach: [r0, r0, r1, r1, r2, r2, r3, r3]", "attach: [r0, r0, r0, r0, r0, r0, r0, r0]", 2)
    tail = tail.replace("attach: [r0, r0, r0, r0", f"attach: [r{routers - 1}, r0, r0, r0", 1)  # the PEs' list comes first
    tail = tail.replace("attach: hub", "attach: r0").replace("ucie_attach: hub", "ucie_attach: r0")
    head = head.replace("mesh: {width: 1, height: 1}", f"mesh: {{width: {width}, height: 1}}")
    head = head.replace("attach: hub", "attach: r0")
    return f"{head}  routers:\n{chain}  links:\n{links}  pes:\n{tail}"


def route_case(routers: int, width: int) -> tuple[list[str], int]:
    """(the ends of the longest route the case asks for, its hops): one CUBE, PE 0's DMA to an HBM
    slice at r0; two CUBEs, PE 0's IPCQ to the other CUBE's (through r0, the UCIe attach, both ways)."""
    if width == 1:
        return ["sip0.cube0.pe0.dma", "sip0.cube0.hbm.slice7"], 1 + (routers - 1) + 1
    return ["sip0.cube0.pe0.ipcq", "sip0.cube1.pe0.ipcq"], 1 + (routers - 1) + 3 + (routers - 1) + 1


# Chains around the limit, in one CUBE and across two: each side of it, and at it.
CHAINS = [(n, w) for w, around in ((1, MAX_ROUTE_HOPS - 1), (2, (MAX_ROUTE_HOPS - 3) // 2)) for n in sorted({64, around, around + 1})]


@pytest.mark.parametrize("routers, width", CHAINS, ids=[f"{n}-routers-{w}-cubes" for n, w in CHAINS])
def test_a_route_past_the_hop_limit_is_one_error_and_one_within_it_is_shown(tmp_path, capsys, routers, width):
    path = tmp_path / "chain.yaml"
    path.write_text(chain_yaml(routers, width))
    ends, hops = route_case(routers, width)
    got = invoke(cli.main, ["topo", "show", str(path), "--json", "--route", *ends], capsys, trace_memory=False)  # memory: below
    if hops <= MAX_ROUTE_HOPS:
        assert got.status == 0, got.err
        assert f'"{ends[1]}"' in got.out and got.cpu_seconds < 20 * cpu_scale()
        return
    cause = rf"^error: the route from {ends[0]} to {ends[1]} is {hops:,} hops; the limit is {MAX_ROUTE_HOPS:,} .*shorten"
    assert_failed_cleanly(got, 2, cause, max_seconds=20)
    assert got.err.count("\n") == 1 and not got.out, got.err


@pytest.mark.parametrize("routers", [1500, 3000])
def test_a_kernel_over_a_too_long_route_stops_with_the_route_error(tmp_path, routers):
    path = tmp_path / "chain.yaml"
    path.write_text(chain_yaml(routers))
    got = spawn("kernbench.cli", ["run", "gemm-composite", "--topology", str(path)], cwd=tmp_path, env=child_env(), memory_mib=1024)
    assert_failed_cleanly(
        got, 2, rf"error: the route from sip0\.cube0\.pe0\.dma .* is {routers + 1:,} hops; the limit is", max_seconds=30, max_mib=200
    )
    assert got.err.count("\n") == 1, got.err


def compiled_chain_memory(routers: int) -> float:
    """MiB traced while a chain of ``routers`` compiles and routes from every endpoint router."""
    spec = load_spec("cube1")
    cube = spec["cube"]
    cube["routers"] = {f"r{i}": {"overhead_ns": 2.0, "half": -1} for i in range(routers)}
    cube["links"] = [{"a": f"r{i}", "b": f"r{i + 1}", "bw_gbps": 256.0, "prop_ns": 1.0} for i in range(routers - 1)]
    cube["pes"]["attach"] = [f"r{routers - 1}"] + ["r0"] * 7
    cube["hbm"]["attach"] = ["r0"] * 8
    cube["sram"]["attach"] = cube["m_cpu"]["attach"] = cube["ucie_attach"] = "r0"
    spec["sip"]["io_chiplet"]["attach"] = "r0"
    gc.collect()
    tracemalloc.start()
    try:
        graph = compile_spec(spec)
        router = graph._router  # the Graph's route function; Graph.route would refuse the long ones
        for src in (f"sip0.cube0.r{routers - 1}", "sip0.cube0.r0", f"sip0.cube0.r{routers // 2}"):
            assert len(router(graph, src, "sip0.cube0.hbm.slice0")) >= 2
        return tracemalloc.get_traced_memory()[1] / MIB
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("routers", [250, 1000, 4000])
def test_a_router_chain_compiles_in_memory_proportional_to_it(routers):
    # 1,000 routers held 2.8 GB of all-pairs paths (N³/3 references); now a few KiB per router.
    assert compiled_chain_memory(routers) < 2 + routers * 6 / 1024


def test_a_cube_keeps_the_route_trees_of_at_most_so_many_sources():
    """Routing from 200 routers of a chain keeps SOURCES_KEPT trees, not 200 (each is O(routers)): the
    compiled graph's memory is bounded by its size, however many sources a run uses."""
    from kernbench.topology.cube_paths import SOURCES_KEPT, CubePaths

    n = 400
    paths = CubePaths(tuple((f"r{i}", 2.0) for i in range(n)), tuple((f"r{i}", f"r{i + 1}", 256.0, 1.0) for i in range(n - 1)))
    gc.collect()
    tracemalloc.start()
    try:
        assert paths.path("r0", f"r{n - 1}") is not None
        one_tree = tracemalloc.get_traced_memory()[0]
        for i in range(0, n, 2):
            assert len(paths.path(f"r{i}", "r0") or ()) == i + 1
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held < (SOURCES_KEPT + 4) * one_tree, (held / MIB, one_tree / MIB)


# --- the all-reduce payload ------------------------------------------------------


PAYLOADS = [
    (payload, pes)
    for pes in (2, 6, 16, 48)
    for payload in sorted({4096, MAX_PAYLOAD_BYTES // pes // 4096 * 4096, MAX_PAYLOAD_BYTES // pes // 4096 * 4096 + 4096, 2**30, 2**40})
]


@pytest.mark.parametrize("payload, pes", PAYLOADS, ids=[f"{size_label(p)}-on-{n}" for p, n in PAYLOADS])
def test_a_payload_over_the_limit_is_refused_before_anything_is_allocated(capsys, payload, pes):
    argv = ["run", "allreduce", "--topology", "mesh2x3" if pes <= 6 else "paper", "--pes", f"0-{pes - 1}", "--payload", size_label(payload)]
    if payload * pes <= MAX_PAYLOAD_BYTES:
        check_payload(payload, pes, size_label(payload))  # within it (running the large ones would take seconds and memory)
        return
    got = invoke(cli.main, argv, capsys)
    cause = (
        rf"^error: allreduce: --payload {size_label(payload)} on {pes} PEs holds [\d,]+ MiB of buffers .*"
        rf"at most {MAX_PAYLOAD_BYTES // MIB} MiB \(payload × PEs\).*use --payload (\d+\w+) or less"
    )
    assert_failed_cleanly(got, 2, cause, max_seconds=5, max_mib=50)
    assert got.err.count("\n") == 1 and not got.out, got.err
    suggested = got.err.split("use --payload ")[1].split()[0]
    check_payload(int(suggested[:-3]) * {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[suggested[-3:]], pes, suggested)


def test_the_issues_1gib_all_reduce_is_refused_under_a_small_memory_cap(tmp_path):
    got = spawn("kernbench.cli", ["run", "allreduce", "--payload", "1GiB"], cwd=tmp_path, env=child_env(), memory_mib=512)
    assert_failed_cleanly(
        got, 2, r"^error: allreduce: --payload 1GiB on 6 PEs holds 6,144 MiB .* at most 512 MiB", max_seconds=20, max_mib=150
    )


# --- the study ----------------------------------------------------------------------


def test_the_study_sweep_gives_each_runs_memory_back_before_the_next():
    from kernbench.studies import allreduce as ar

    pair = ("2×3", "mesh2x3", "torus2x3", "", (MIB, MIB))  # 6 MiB of buffers a run
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        held = []
        for _ in ar.sweep([pair], algos=("ring",)):
            held.append((tracemalloc.get_traced_memory()[0] - base) / MIB)
    finally:
        tracemalloc.stop()
    assert max(held) < 2, held


def test_bench_study_states_its_memory_bound(capsys):
    with pytest.raises(SystemExit):
        cli.main(["bench", "--help"])
    assert "under 1 GB" in " ".join(capsys.readouterr().out.split())
