"""Routes checked by brute force: every simple path inside a CUBE template,
and both ways round a ring of SIPs.

Inside a CUBE the route is the least-latency router path — latency of one
flit: per edge ``prop_ns + flit_bytes / bw_gbps`` plus the overhead of the
router it reaches — ties broken by hop count, then by router names. The
template below is built so that one pair has two paths of *equal* latency
and different hop counts, and another pair's shortest wire passes a slow
router (its overhead must count).
"""

from __future__ import annotations

import itertools

import pytest
import yaml

from kernbench.topology.compile import compile_spec, load_topology
from kernbench.topology.spec import resolve, validate_spec

LINKS = [
    # r0 -> r1: direct (10 + 2 + 2 = 14 ns) or through r2 (3 + 1 + 2 + 5 + 1 + 2 = 14 ns): a tie, fewer hops wins
    {"a": "r0", "b": "r1", "bw_gbps": 128, "prop_ns": 10},
    {"a": "r0", "b": "r2", "bw_gbps": 256, "prop_ns": 3},
    {"a": "r2", "b": "r1", "bw_gbps": 256, "prop_ns": 5},
    # r2 -> r3: direct (10 + 1 + 2 = 13 ns) beats the short wires through the slow hub (2 + 1 + 20 + 2 + 1 + 2 = 28 ns)
    {"a": "r2", "b": "r3", "bw_gbps": 256, "prop_ns": 10},
    {"a": "r2", "b": "hub", "bw_gbps": 256, "prop_ns": 2},
    {"a": "hub", "b": "r3", "bw_gbps": 256, "prop_ns": 2},
]
ROUTERS = {"r0": 2.0, "r1": 2.0, "r2": 2.0, "r3": 2.0, "hub": 20.0}


def _doc(name: str) -> dict:
    return yaml.safe_load(resolve(name).read_text())


@pytest.fixture(scope="module")
def crafted():
    doc = _doc("cube1")
    doc["name"] = "crafted-routes"
    for r, ov in ROUTERS.items():
        doc["cube"]["routers"][r]["overhead_ns"] = ov
    doc["cube"]["links"] = LINKS
    return compile_spec(validate_spec(doc, "crafted"))


def _brute_force(graph, a: str, b: str) -> tuple[str, ...]:
    prefix = "sip0.cube0."
    adj: dict[str, list[str]] = {r: [] for r in ROUTERS}
    for link in LINKS:
        adj[link["a"]].append(link["b"])
        adj[link["b"]].append(link["a"])

    def latency(path):
        return sum(
            graph.edge(prefix + u, prefix + v).prop_ns
            + graph.flit_bytes / graph.edge(prefix + u, prefix + v).bw_gbps
            + graph.nodes[prefix + v].overhead_ns
            for u, v in itertools.pairwise(path)
        )

    paths = []

    def walk(path):
        if path[-1] == b:
            paths.append(tuple(path))
            return
        for n in adj[path[-1]]:
            if n not in path:
                walk([*path, n])

    walk([a])
    return min(paths, key=lambda p: (round(latency(p), 9), len(p), p))


def test_the_crafted_template_has_a_latency_tie_and_a_slow_router(crafted):
    pre = "sip0.cube0."
    hop = lambda u, v: crafted.edge(pre + u, pre + v).prop_ns + crafted.flit_bytes / crafted.edge(pre + u, pre + v).bw_gbps
    ov = lambda r: crafted.nodes[pre + r].overhead_ns
    assert hop("r0", "r1") + ov("r1") == pytest.approx(hop("r0", "r2") + ov("r2") + hop("r2", "r1") + ov("r1"))
    assert hop("r2", "hub") + hop("hub", "r3") < hop("r2", "r3")  # shortest wire, if overheads were free


@pytest.mark.parametrize("a, b", list(itertools.permutations(sorted(ROUTERS), 2)))
def test_a_cube_route_is_the_least_latency_router_path_fewest_hops_on_a_tie(crafted, a, b):
    got = tuple(n.rsplit(".", 1)[1] for n in crafted.route(f"sip0.cube0.{a}", f"sip0.cube0.{b}").nodes)
    assert got == _brute_force(crafted, a, b)


def test_a_pe_to_hbm_route_takes_the_direct_link_on_a_latency_tie(crafted):
    # pe0 sits at r0, slice2 at r1
    nodes = crafted.route("sip0.cube0.pe0.dma", "sip0.cube0.hbm.slice2").nodes
    assert nodes == ("sip0.cube0.pe0.dma", "sip0.cube0.r0", "sip0.cube0.r1", "sip0.cube0.hbm.slice2")


@pytest.fixture(scope="module")
def ring4():
    doc = _doc("cube1")
    doc["name"] = "ring4"
    doc["system"]["sips"] = 4
    doc["system"]["sip_ring"] = {"bw_gbps": 768, "prop_ns": 76.88}
    return compile_spec(validate_spec(doc, "ring4"))


@pytest.mark.parametrize("s0", range(4))
@pytest.mark.parametrize("s1", range(4))
def test_a_sip_ring_route_goes_the_shorter_way_and_ties_go_up(ring4, s0, s1):
    if s0 == s1:
        return
    up = (s1 - s0) % 4
    step = 1 if up <= 4 - up else -1  # the shorter way; half way round: up
    want = [f"sip{(s0 + step * i) % 4}.io" for i in range(min(up, 4 - up) + 1)]
    nodes = ring4.route(f"sip{s0}.cube0.pe0.dma", f"sip{s1}.cube0.hbm.slice0").nodes
    assert [n for n in nodes if n.endswith(".io")] == want


def test_shipped_topologies_route_every_cube_pair_by_brute_force_latency():
    # the shipped template has no latency ties: every pair's route is the unique least-latency path
    g = load_topology("cube1")
    spec = g.spec["cube"]
    routers = sorted(spec["routers"])
    adj = {r: [] for r in routers}
    for link in spec["links"]:
        adj[link["a"]].append(link["b"])
        adj[link["b"]].append(link["a"])

    def paths(a, b, path=None):
        path = path or [a]
        if path[-1] == b:
            yield tuple(path)
            return
        for n in adj[path[-1]]:
            if n not in path:
                yield from paths(a, b, [*path, n])

    pre = "sip0.cube0."
    for a, b in itertools.permutations(routers, 2):
        lat = lambda p: sum(
            g.edge(pre + u, pre + v).prop_ns + g.flit_bytes / g.edge(pre + u, pre + v).bw_gbps + g.nodes[pre + v].overhead_ns
            for u, v in itertools.pairwise(p)
        )
        best = min(paths(a, b), key=lambda p: (round(lat(p), 9), len(p), p))
        got = tuple(n.rsplit(".", 1)[1] for n in g.route(pre + a, pre + b).nodes)
        assert got == best, (a, b)
