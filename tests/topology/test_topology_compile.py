"""Compilation gives an immutable graph with stable dotted ids; routes are XY
within a SIP, round the ring between SIPs, cached, and only ever start and end
at endpoints (issue 2, section 2)."""

from __future__ import annotations

import itertools

import pytest

from kernbench.errors import RouteError

ENDPOINT_KINDS = {
    "pe_cpu",
    "pe_sched",
    "pe_dma",
    "pe_fs",
    "pe_gemm",
    "pe_math",
    "pe_ipcq",
    "pe_tcm",
    "hbm_slice",
    "hbm_pc",
    "sram",
    "m_cpu",
    "host",
}


def test_cube1_node_and_edge_counts_follow_the_template(cube1):
    nodes, edges = cube1.kind_counts()
    # 5 routers, 8 PEs x 8 engines, 8 slices x 8 pseudo-channels, sram, m_cpu, io, host
    assert len(cube1.nodes) == 5 + 64 + 8 + 64 + 1 + 1 + 1 + 1 == 145
    assert nodes["router"] == 5 and nodes["pe_dma"] == 8 and nodes["hbm_pc"] == 64
    # every link is two directed edges
    assert edges == {
        "noc": 2 * 8,
        "pe_port": 2 * 16,
        "pe_internal": 2 * 32,
        "hbm_port": 2 * 8,
        "hbm_channel": 2 * 64,
        "sram_port": 2,
        "m_cpu_port": 2,
        "io": 2,
        "pcie": 2,
    }
    assert len(cube1.edges) == 264
    assert "ucie_phy" not in nodes  # a 1x1 mesh has no neighbours


def test_paper_topology_has_256_pes_in_2_sips_of_4x4_cubes(paper):
    nodes, edges = paper.kind_counts()
    assert nodes["pe_cpu"] == nodes["pe_dma"] == 256
    assert nodes["hbm_slice"] == 256 and nodes["hbm_pc"] == 2048
    assert nodes["router"] == 32 * 5 and nodes["io_chiplet"] == 2 and nodes["host"] == 1
    # PHYs only toward existing neighbours: 2 x (2 directions x 12 links) per SIP
    assert nodes["ucie_phy"] == 2 * 48
    assert edges["ucie"] == 2 * 2 * 24 and edges["ucie_port"] == 2 * 96
    assert edges["pcie"] == 2 + 2  # one ring link between the two SIPs, one host link
    assert len(paper.nodes) == 4675 and len(paper.edges) == 8616


@pytest.mark.parametrize(
    "node_id, kind",
    [
        ("sip0.cube5.pe3.dma", "pe_dma"),
        ("sip0.cube5.hbm.pc12", "hbm_pc"),
        ("sip0.cube5.r2", "router"),
        ("sip1.cube15.hbm.slice7", "hbm_slice"),
        ("sip1.cube0.phy.e", "ucie_phy"),
        ("sip0.io", "io_chiplet"),
        ("host", "host"),
    ],
)
def test_stable_dotted_node_ids(paper, node_id, kind):
    assert paper.node(node_id).kind == kind


def test_pseudo_channel_numbering_is_slice_major(paper):
    pc = paper.node("sip0.cube5.hbm.pc12")
    assert (pc.attrs["slice"], pc.attrs["channel"]) == (1, 4)
    assert paper.edge("sip0.cube5.hbm.slice1", "sip0.cube5.hbm.pc12").kind == "hbm_channel"


def test_every_edge_has_a_reverse_with_the_same_parameters(paper):
    for e in paper.edges:
        r = paper.edge(e.dst, e.src)
        assert (r.bw_gbps, r.prop_ns, r.kind) == (e.bw_gbps, e.prop_ns, e.kind)


def test_edge_indices_are_positions(paper):
    assert all(e.index == i for i, e in enumerate(paper.edges))


def test_successors_and_edges_from_are_by_destination(paper):
    for n in ("sip0.cube5.r0", "sip0.cube5.hub", "sip0.cube5.pe3.tcm", "sip0.cube5.hbm.slice2", "sip0.io", "host"):
        assert list(paper.successors[n]) == sorted(e.dst for e in paper.edges if e.src == n)
        assert paper.edges_from(n) == tuple(paper.edge(n, d) for d in paper.successors[n])
    assert paper.successors["sip0.cube5.pe3.cpu"] == () and paper.edges_from("nowhere") == ()


def test_graph_is_immutable(cube1):
    with pytest.raises(TypeError):
        cube1.nodes["x"] = None  # type: ignore[index]
    with pytest.raises(AttributeError):
        cube1.edges[0].bw_gbps = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        cube1.spec["name"] = "other"  # type: ignore[index]


def test_unknown_node_suggests_a_close_id(paper):
    with pytest.raises(RouteError, match=r"did you mean 'sip0.cube5.pe3.dma'"):
        paper.node("sip0.cube5.pe3.dam")


# --- routing ----------------------------------------------------------------


def test_routes_are_computed_once_and_cached(paper):
    a = paper.route("sip0.cube0.pe0.dma", "sip0.cube15.hbm.slice7")
    assert paper.route("sip0.cube0.pe0.dma", "sip0.cube15.hbm.slice7") is a


def test_local_route_is_pe_router_slice(paper):
    r = paper.route("sip0.cube5.pe0.dma", "sip0.cube5.hbm.slice0")
    assert r.nodes == ("sip0.cube5.pe0.dma", "sip0.cube5.r0", "sip0.cube5.hbm.slice0")
    assert [h.edge.id for h in r.hops] == [
        "sip0.cube5.pe0.dma->sip0.cube5.r0",
        "sip0.cube5.r0->sip0.cube5.hbm.slice0",
    ]


def cubes_visited(route) -> list[int]:
    """CUBE indices along a route, in order (a new entry whenever SIP or CUBE changes)."""
    out: list[int] = []
    last = None
    for n in route.nodes:
        parts = n.split(".")
        if len(parts) > 1 and parts[1].startswith("cube"):
            if (parts[0], parts[1]) != last:
                out.append(int(parts[1][4:]))
                last = (parts[0], parts[1])
    return out


def test_mesh_routes_go_x_first_then_y(paper):
    # cube5 = (1, 1), cube14 = (2, 3) in the 4x4 mesh
    r = paper.route("sip0.cube5.pe0.dma", "sip0.cube14.hbm.slice7")
    assert cubes_visited(r) == [5, 6, 10, 14]
    # and the other way round: x first again
    back = paper.route("sip0.cube14.pe7.dma", "sip0.cube5.hbm.slice0")
    assert cubes_visited(back) == [14, 13, 9, 5]


def test_mesh_hop_leaves_and_enters_through_facing_phys(paper):
    r = paper.route("sip0.cube5.pe0.dma", "sip0.cube6.hbm.slice0")
    i = r.nodes.index("sip0.cube5.phy.e")
    assert r.nodes[i + 1] == "sip0.cube6.phy.w"
    assert paper.edge("sip0.cube5.phy.e", "sip0.cube6.phy.w").kind == "ucie"


def test_crossing_sips_goes_through_both_io_chiplets(paper):
    r = paper.route("sip0.cube5.pe0.dma", "sip1.cube5.hbm.slice0")
    i = r.nodes.index("sip0.io")
    assert r.nodes[i + 1] == "sip1.io"
    assert paper.edge("sip0.io", "sip1.io").kind == "pcie"
    # leaves sip0 from the IO chiplet's CUBE 0 and enters sip1 at its CUBE 0
    assert r.nodes[i - 1] == "sip0.cube0.hub" and r.nodes[i + 2] == "sip1.cube0.hub"
    assert cubes_visited(r) == [5, 4, 0, 0, 1, 5]


def test_host_routes_enter_and_leave_through_the_io_chiplet(paper):
    h2d = paper.route("host", "sip1.cube3.hbm.slice2")
    assert h2d.nodes[:3] == ("host", "sip0.io", "sip1.io")
    assert h2d.nodes[-1] == "sip1.cube3.hbm.slice2"
    d2h = paper.route("sip0.cube3.pe0.dma", "host")
    assert d2h.nodes[-2:] == ("sip0.io", "host")
    assert cubes_visited(d2h) == [3, 2, 1, 0]


def endpoint_sample(g, n_cubes: int, sips: int) -> list[str]:
    out = []
    for s in range(sips):
        for c in range(n_cubes):
            out += [f"sip{s}.cube{c}.pe{p}.dma" for p in (0, 3, 6)]
            out += [f"sip{s}.cube{c}.hbm.slice{k}" for k in (1, 4, 7)]
            out += [f"sip{s}.cube{c}.sram", f"sip{s}.cube{c}.pe5.ipcq"]
    return [*out, "host"]


@pytest.mark.parametrize("topo, n_cubes, sips", [("cube1", 1, 1), ("sip2x2", 4, 1)])
def test_routes_never_pass_through_an_endpoint(request, topo, n_cubes, sips):
    g = request.getfixturevalue(topo)
    eps = endpoint_sample(g, n_cubes, sips)
    for a, b in itertools.permutations(eps, 2):
        r = g.route(a, b)
        assert r.nodes[0] == a and r.nodes[-1] == b
        assert len(set(r.nodes)) == len(r.nodes), r.nodes
        for n in r.nodes[1:-1]:
            assert g.nodes[n].kind not in ENDPOINT_KINDS, (a, b, r.nodes)
        for x, y in itertools.pairwise(r.nodes):
            g.edge(x, y)  # consecutive nodes are joined by an edge


def test_paper_routes_between_sips_never_pass_through_an_endpoint(paper):
    eps = ["host", "sip0.cube0.pe0.dma", "sip0.cube15.hbm.slice7", "sip1.cube10.pe4.dma", "sip1.cube3.sram"]
    for a, b in itertools.permutations(eps, 2):
        r = paper.route(a, b)
        assert all(paper.nodes[n].kind not in ENDPOINT_KINDS for n in r.nodes[1:-1]), r.nodes


def test_route_to_unknown_node_raises_route_error(cube1):
    with pytest.raises(RouteError, match="unknown node"):
        cube1.route("sip0.cube0.pe0.dma", "sip0.cube0.hbm.slice9")


@pytest.mark.parametrize("dst", ["sip0.cube0.hbm.pc3", "sip0.cube0.phy"])
def test_route_to_a_non_endpoint_raises_route_error(cube1, dst):
    with pytest.raises(RouteError):
        cube1.route("sip0.cube0.pe0.dma", dst)


def test_route_header_is_overheads_plus_propagation(paper):
    r = paper.route("sip0.cube5.pe0.dma", "sip0.cube5.hbm.slice2")
    # pe0.dma(0) -> r0(2) -> r1(2) over the 7.6 ns wire -> slice2(0)
    assert r.nodes == ("sip0.cube5.pe0.dma", "sip0.cube5.r0", "sip0.cube5.r1", "sip0.cube5.hbm.slice2")
    assert r.header_ns == pytest.approx(2 + 7.6 + 2)
    assert r.bottleneck_gbps == 256.0


# --- recompiling ------------------------------------------------------------


@pytest.mark.parametrize(
    "change, shared",
    [
        ("pe.attrs.tcm_bw_gbps=1024", True),  # what a re-timing recompiles under: the routing is the same
        ("cube.pes.link.bw_gbps=64", True),
        ("sip.ucie.prop_ns=3", True),
        ("cube.links[2].bw_gbps=128", False),  # a CUBE link's bandwidth decides its least-latency paths
    ],
)
def test_a_recompiled_graph_routes_as_a_fresh_compile(change, shared):
    """A graph compiled again under a changed parameter shares the node paths of the graphs of its routing
    (kernbench.topology.compile._Routing) and builds the hops from its own edges and nodes: its routes and
    hops are the ones a compile that shares nothing gives."""
    from kernbench.topology import compile as compiling
    from kernbench.topology.compile import load_topology

    base = load_topology("paper")
    ends = [n.id for n in base.nodes.values() if n.kind in ("pe_dma", "pe_ipcq", "hbm_slice", "sram", "m_cpu", "host")]
    pairs = [(a, b) for a in ends[::23] for b in ends[::17] if a != b]
    pairs += [("host", "sip1.cube15.hbm.slice7"), ("sip1.cube9.pe2.dma", "host")]
    pairs.append(("sip0.cube0.pe0.dma", "sip0.cube0.hbm.slice6"))  # r0 to r3: r1 or r2 at equal latency, ties by name
    for p in pairs:
        base.route(*p)
    recompiled = load_topology("paper", [change])
    assert (recompiled._router is base._router) is shared
    compiling._router.cache_clear()
    compiling._template_paths.cache_clear()
    fresh = load_topology("paper", [change])
    assert fresh._router is not recompiled._router
    for p in pairs:
        route = recompiled.route(*p)
        assert route == fresh.route(*p), p
        assert [h.edge for h in route.hops] == [recompiled.edge(a, b) for a, b in itertools.pairwise(route.nodes)], p
        assert [h.next_overhead_ns for h in route.hops] == [recompiled.nodes[n].overhead_ns for n in route.nodes[1:]], p
    via = "r1" if shared else "r2"  # r0-r1 at half the bandwidth: r0 to r3 goes by r2
    assert f"sip0.cube0.{via}" in recompiled.route(*pairs[-1]).nodes
