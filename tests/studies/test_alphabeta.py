"""The α–β model against hand-computed values, and its message rule against the engine."""

from __future__ import annotations

import functools

import pytest
import simpy

from kernbench.collectives import Group
from kernbench.models.alphabeta import Problem, message_cost, predict
from kernbench.sim.network import Network
from kernbench.topology.compile import load_topology

PES = tuple(f"sip0.cube{c}.pe0" for c in range(6))


@pytest.fixture(scope="module")
def torus():
    return load_topology("torus2x3")


@pytest.fixture(scope="module")
def mesh():
    return load_topology("mesh2x3")


def problem(graph, elements, chunk, rows=3):
    return Problem(graph, Group(tuple(range(6)), rows), PES, elements, 2, chunk)


def test_alpha_and_beta_of_one_ucie_hop_by_hand(torus):
    # ipcq -> r0 -> hub -> phy.e => phy.w -> hub -> r0 -> ipcq
    # header: ipcq 2 + [0+2] + [5.25+2] + [0+2] + [8+2] + [0+2] + [5.25+2] + [0+2] = 34.5 ns
    # flits:  1 + 2 + 0.5 + 0.5 + 0.5 + 2 + 1 = 7.5 ns, the slowest 2 ns (128 GB/s hub port)
    c = message_cost(torus, "sip0.cube0.pe0", "sip0.cube1.pe0")
    assert c.alpha_ns == pytest.approx(34.5 + 7.5 - 2) == 40.0
    assert c.flit_ns == 2.0 and c.beta_ns_per_byte == 1 / 128 and c.bottleneck_gbps == 128
    # two hops (x, then y over the wrap): three more edges, header +14, flits +1.5
    assert message_cost(torus, "sip0.cube5.pe0", "sip0.cube0.pe0").alpha_ns == pytest.approx(55.5)


@pytest.mark.parametrize("size", [1, 256, 1000, 4096, 65536])
@pytest.mark.parametrize("mode", ["fast", "oracle"])
def test_a_message_alone_takes_exactly_alpha_plus_its_flits(torus, size, mode):
    env = simpy.Environment()
    net = Network(env, torus, mode=mode)
    done = net.send("sip0.cube5.pe0.ipcq", "sip0.cube0.pe0.ipcq", size)
    env.run()
    assert done.value.latency_ns == pytest.approx(message_cost(torus, "sip0.cube5.pe0", "sip0.cube0.pe0").ns(size))


# Per-pair α on the 2×3 grids (one PE per CUBE, CUBE c at x = c % 2, y = c // 2): 40 ns for one
# UCIe hop, +15.5 ns per further hop. The snake order is 0, 1, 3, 2, 4, 5; on the mesh its closing
# pair 5 -> 0 crosses three hops (α 71), on the torus two (y wraps: α 55.5); every other ring pair
# is one hop (α 40). Each step lasts as long as its critical pair: the sender whose messages, at its
# own pair's α and β (2 ns per flit, the 128 GB/s hub port), take longest.


@pytest.mark.parametrize("topology, closing_alpha", [("torus2x3", 55.5), ("mesh2x3", 71.0)])
def test_ring_model_charges_each_step_to_its_critical_pair_by_hand(topology, closing_alpha, request):
    graph = request.getfixturevalue(topology.removesuffix("2x3"))
    # 6 x 1024 elements, 1024-element chunks: 10 steps of one message of 8 flits per rank, every
    # step's critical pair the closing one
    m = predict("ring", problem(graph, 6 * 1024, 1024))
    assert m.ns == pytest.approx(10 * (closing_alpha + 8 * 2.0))
    assert m.alpha_term_ns == pytest.approx(10 * closing_alpha) and m.beta_term_ns == 160.0
    (phase,) = m.phases
    assert {(s.cost.src, s.cost.dst) for s in phase.steps} == {("sip0.cube5.pe0", "sip0.cube0.pe0")}
    # half the chunk: twice the startups, the same flits
    assert predict("ring", problem(graph, 6 * 1024, 512)).ns == pytest.approx(20 * closing_alpha + 160)


def test_2d_model_by_hand_on_torus_and_mesh(torus, mesh):
    # grid 3 rows x 2 cols, 6144 elements, 1024-element chunks.
    # row reduce-scatter: 3072 elements = 3 messages, 24 flits; α 40 (1-hop x pairs)
    # column all-reduce of 3072 elements on rings of 3: 4 messages of 8 flits
    # row all-gather: 3 messages, 24 flits
    t = predict("2d", problem(torus, 6144, 1024))
    assert [p.messages for p in t.phases] == [3, 4, 3] and [p.flits for p in t.phases] == [24, 32, 24]
    assert t.ns == pytest.approx(10 * 40 + 80 * 2.0)  # the torus's column rings close over one hop
    # the mesh's column rings close over two hops (4 -> 0, 5 -> 1): each column step's critical pair
    m = predict("2d", problem(mesh, 6144, 1024))
    assert m.ns == pytest.approx(6 * 40 + 4 * 55.5 + 160)


@pytest.mark.parametrize(
    "topology, up, down, busiest",
    [
        # heap over the snake (positions 0-5 = CUBEs 0, 1, 3, 2, 4, 5); pairs by position:
        # torus: 1-0 40, 2-0 55.5, 3-1 55.5, 4-1 55.5, 5-2 40
        # up:   leaf 3: 55.5 + 40 (the first of three equal paths)
        # down: root -> 1 (40), 1 -> 3 (55.5), then 1 -> 4 (55.5): position 4 waits for its sibling
        # busiest: position 1 sends up (40) and down twice (55.5, 55.5)
        ("torus2x3", [55.5, 40], [40, 55.5, 55.5], [40, 55.5, 55.5]),
        # mesh: 4-1 is three hops (71)
        ("mesh2x3", [71, 40], [40, 55.5, 71], [40, 55.5, 71]),
    ],
)
def test_tree_model_charges_each_message_to_its_own_pair_by_hand(topology, up, down, busiest, request):
    graph = request.getfixturevalue(topology.removesuffix("2x3"))
    # 6144 elements in 2048-element chunks: k 3 chunks of 16 flits (32 ns of β each)
    m = predict("tree", problem(graph, 6144, 2048))
    msg = 16 * 2.0
    want = sum(a + msg for a in up) + sum(a + msg for a in down) + 2 * sum(a + msg for a in busiest)
    assert m.ns == pytest.approx(want)
    assert [p.messages for p in m.phases] == [len(up), len(down), 2 * len(busiest)]


def test_ring_model_on_the_papers_4x4_mesh_by_hand():
    # 16 PEs (PE 0 of every CUBE of SIP 0, CUBE c at x = c % 4, y = c // 4), snake order over the
    # 4 x 4 grid: it ends at CUBE 12 and closes over three hops (α 71). 4 KiB of float16:
    # 128-element segments, one message of one flit; 30 steps, each charged to the closing pair.
    graph = load_topology("paper")
    pes = tuple(f"sip0.cube{c}.pe0" for c in range(16))
    m = predict("ring", Problem(graph, Group(tuple(range(16)), 4), pes, 2048, 2, 131072))
    assert m.ns == pytest.approx(30 * (71 + 2.0))


def test_the_torus_model_is_never_above_the_mesh_model(torus, mesh):
    for algo in ("ring", "2d", "tree"):
        assert predict(algo, problem(torus, 50_000, 4096)).ns <= predict(algo, problem(mesh, 50_000, 4096)).ns


def test_every_prediction_prints_its_formula(torus):
    for algo, needle in (("ring", "2(p−1)·m·α_max"), ("2d", "α_row,max"), ("tree", "(k−1)·per_chunk")):
        assert needle in predict(algo, problem(torus, 1000, 100)).formula


@functools.cache
def _placement(topology: str, pes: str) -> tuple[object, Group, tuple[str, ...]]:
    """A study point's graph, group and PEs, chosen as the allreduce kernel chooses them."""
    from kernbench.kernels.allreduce import make_group, select_pes
    from kernbench.runtime.api import Runtime

    rt = Runtime(topology)
    pe_ids, rows = select_pes(rt, pes)
    return rt.graph, make_group(len(pe_ids), rows, ""), tuple(pe_ids)


def _model_us(topology: str, algo: str, payload: int, pes: str) -> float:
    """The study's α–β prediction of one point, without simulating it."""
    import numpy as np

    from kernbench.collectives import chunk_elements
    from kernbench.studies import allreduce as ar

    graph, group, pe_ids = _placement(topology, pes)
    chunk = chunk_elements(256 * 1024, np.dtype(ar.DTYPE))
    assert ar.CHUNK == "256KiB"
    return predict(algo, Problem(graph, group, pe_ids, payload // 2, 2, chunk)).ns / 1000


def test_the_studies_page_shows_the_models_alpha_beta_for_every_point():
    """docs/studies.md's α–β columns are the model's (per-pair α), mesh and torus, 2×3 and 4×4."""
    import re
    from pathlib import Path

    from kernbench.sizes import parse_size
    from kernbench.studies import allreduce as ar

    page = (Path(__file__).resolve().parents[2] / "docs" / "studies.md").read_text()
    checked = 0
    for label, mesh_topo, torus_topo, pes, _payloads in ar.PAIRS:
        table = page.split(f"```text\n{label}: {mesh_topo} vs {torus_topo}", 1)[1].split("```", 1)[0]
        payload = 0
        for line in table.splitlines()[3:]:
            cols = line.split()
            if re.fullmatch(r"\d+[KMG]iB", cols[0]):
                payload = parse_size(cols.pop(0), "payload")
            algo, _mesh_sim, mesh_model, _r1, _torus_sim, torus_model = cols[:6]
            for topo, shown in ((mesh_topo, mesh_model), (torus_topo, torus_model)):
                assert f"{_model_us(topo, algo, payload, pes):,.2f}" == shown, (topo, algo, payload)
                checked += 1
    assert checked == 2 * 3 * (8 + 7)


@pytest.mark.parametrize(
    "topology, pes, want_ns",
    [
        # 4 KiB of float16 on 6 PEs: segments of 341-342 elements (3 flits), one message each,
        # 10 steps, each charged to the closing pair: three hops on the mesh, two on the torus
        ("mesh2x3", "", 10 * (71.0 + 3 * 2.0)),
        ("torus2x3", "", 10 * (55.5 + 3 * 2.0)),
        # on 16 PEs: 128-element segments (one flit), 30 steps; the 4x4 torus closes over one hop
        ("paper", "sip0", 30 * (71.0 + 2.0)),
        ("paper_torus", "sip0", 30 * (40.0 + 2.0)),
    ],
)
def test_the_4kib_ring_points_the_page_explains_by_hand(topology, pes, want_ns):
    """The α–β column docs/studies.md quotes for its 4 KiB ring ratios (0.77, 0.61, 2.19,
    1.26 µs; the page test holds the page to the model) is the per-pair hand computation."""
    assert _model_us(topology, "ring", 4096, pes) * 1000 == pytest.approx(want_ns)


# --- the other collectives ---------------------------------------------------------


@pytest.mark.parametrize("topology, closing_alpha", [("torus2x3", 55.5), ("mesh2x3", 71.0)])
def test_reduce_scatter_and_all_gather_are_the_rings_halves_by_hand(topology, closing_alpha, request):
    graph = request.getfixturevalue(topology.removesuffix("2x3"))
    # 6 x 1024 elements, 1024-element chunks: 5 steps of one message of 8 flits, each charged to the closing pair
    pr = problem(graph, 6 * 1024, 1024)
    for op in ("reduce-scatter", "all-gather"):
        m = predict("ring", pr, op)
        assert m.ns == pytest.approx(5 * (closing_alpha + 8 * 2.0))
        assert m.alpha_term_ns == pytest.approx(5 * closing_alpha) and m.beta_term_ns == 80.0
    assert "(p−1)·m·α_max" in predict("ring", pr, "all-gather").formula


@pytest.mark.parametrize("elements, chunk", [(6 * 1024, 1024), (50_000 - 2, 777), (5, 64)])
def test_the_ring_all_reduce_is_its_reduce_scatter_then_its_all_gather(torus, mesh, elements, chunk):
    for graph in (torus, mesh):
        pr = problem(graph, elements, chunk)
        ring = predict("ring", pr)
        halves = [predict("ring", pr, op) for op in ("reduce-scatter", "all-gather")]
        assert ring.ns == pytest.approx(sum(h.ns for h in halves))
        assert ring.phases[0].steps == halves[0].phases[0].steps + halves[1].phases[0].steps


# Round-robin rounds of 6 members (the circle method, member 5 fixed): r0 (0,5) (1,4) (2,3);
# r1 (1,5) (0,2) (3,4); r2 (2,5) (0,4) (1,3); r3 (3,5) (0,1) (2,4); r4 (4,5) (0,3) (1,2).
# CUBE c sits at x = c % 2, y = c // 2. On the torus (y wraps) the farthest pair of r0, r1, r2
# and r4 is two hops (α 55.5), every pair of r3 one hop (α 40); on the mesh r0's (0,5) is
# three hops (71), r1, r2 and r4 two, r3 one.


@pytest.mark.parametrize(
    "topology, round_alphas",
    [("torus2x3", [55.5, 55.5, 55.5, 40, 55.5]), ("mesh2x3", [71, 55.5, 55.5, 40, 55.5])],
)
def test_all_to_all_model_charges_each_round_to_its_farthest_pair_by_hand(topology, round_alphas, request):
    graph = request.getfixturevalue(topology.removesuffix("2x3"))
    # 6 x 1024 elements: parts of 1024 elements (2 KiB, 8 flits), one message per part
    m = predict("pairwise", problem(graph, 6 * 1024, 1024), "all-to-all")
    assert [s.cost.alpha_ns for s in m.phases[0].steps] == pytest.approx(round_alphas)
    assert m.ns == pytest.approx(sum(a + 8 * 2.0 for a in round_alphas))
    # half the chunk: two messages of 4 flits per part, twice the startups, the same flits
    half = predict("pairwise", problem(graph, 6 * 1024, 512), "all-to-all")
    assert half.ns == pytest.approx(sum(2 * a + 8 * 2.0 for a in round_alphas))


def test_an_odd_group_takes_one_round_more_each_member_sitting_one_out(torus):
    # five PE 0s (CUBEs 0-4), 5 x 1000 elements: 5 rounds, parts of 1000 elements (2000 B: 8 flits)
    pes = tuple(f"sip0.cube{c}.pe0" for c in range(5))
    m = predict("pairwise", Problem(torus, Group(tuple(range(5))), pes, 5000, 2, 4096), "all-to-all")
    steps = m.phases[0].steps
    assert len(steps) == 5 and all(s.messages == 1 and s.flits == 8 for s in steps)
    assert "p−1 rounds (p if odd)" in m.formula
