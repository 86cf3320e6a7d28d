"""The α–β model against hand-computed values, and its message rule against the engine."""

from __future__ import annotations

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


def test_ring_model_by_hand(torus):
    # snake 0,1,3,2,4,5: five 1-hop pairs (α 40) and 5 -> 0 over two hops (α 55.5): mean 42.5833
    # 6 x 1024 elements, 1024-element chunks: every program sends 2(p-1) = 10 messages of 8 flits
    m = predict("ring", problem(torus, 6 * 1024, 1024))
    alpha = (5 * 40 + 55.5) / 6
    assert m.ns == pytest.approx(10 * alpha + 80 * 2.0)
    assert m.alpha_term_ns == pytest.approx(10 * alpha) and m.beta_term_ns == 160.0
    # half the chunk: twice the startups, the same flits
    assert predict("ring", problem(torus, 6 * 1024, 512)).ns == pytest.approx(20 * alpha + 160)


def test_2d_model_by_hand_on_torus_and_mesh(torus, mesh):
    # grid 3 rows x 2 cols, 6144 elements, 1024-element chunks.
    # row reduce-scatter: 3072 elements = 3 messages, 24 flits; α 40 (1-hop x pairs)
    # column all-reduce of 3072 elements on rings of 3: 4 messages of 8 flits
    # row all-gather: 3 messages, 24 flits
    t = predict("2d", problem(torus, 6144, 1024))
    assert [p.messages for p in t.phases] == [3, 4, 3] and [p.flits for p in t.phases] == [24, 32, 24]
    assert t.ns == pytest.approx(10 * 40 + 80 * 2.0)
    # the mesh's column rings close over two hops (4 -> 0, 5 -> 1): column α (4·40 + 2·55.5) / 6
    m = predict("2d", problem(mesh, 6144, 1024))
    col_alpha = (4 * 40 + 2 * 55.5) / 6
    assert m.ns == pytest.approx(6 * 40 + 4 * col_alpha + 160)


def test_tree_model_by_hand(torus):
    # heap over the snake 0,1,3,2,4,5: edges 0-1 (1 hop), 0-3, 1-2, 1-4 (2 hops), 3-5 (1 hop)
    # α mean (2·40 + 3·55.5) / 5 = 49.3; height h 2; down to the last leaf d 3 (1 then 2 hops' worth
    # of messages: a second child waits for the first); s 3 messages per chunk (interior rank)
    # 6144 elements in 2048-element chunks: k 3, each 16 flits
    m = predict("tree", problem(torus, 6144, 2048))
    assert m.phases[0].messages == 2 + 3 + 2 * 3
    assert m.ns == pytest.approx(11 * (49.3 + 16 * 2.0))


def test_the_torus_model_is_never_above_the_mesh_model(torus, mesh):
    for algo in ("ring", "2d", "tree"):
        assert predict(algo, problem(torus, 50_000, 4096)).ns <= predict(algo, problem(mesh, 50_000, 4096)).ns


def test_every_prediction_prints_its_formula(torus):
    for algo, needle in (("ring", "2(p−1)·m·α"), ("2d", "α_row"), ("tree", "(h + d + (k−1)·s)")):
        assert needle in predict(algo, problem(torus, 1000, 100)).formula
