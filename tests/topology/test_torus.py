"""Torus topologies: wrap-around UCIe links, dimension-order routing the shorter
way round with a parity tie-break, validation of shapes where that is
undefined, and what `kernbench topo show` says of them (issue 11, section 1)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernbench.cli import main
from kernbench.errors import TopologyError
from kernbench.topology.compile import load_topology
from kernbench.topology.shape import GridShape
from kernbench.topology.spec import load_spec


@pytest.fixture(scope="module")
def torus2x3():
    return load_topology("torus2x3")


@pytest.fixture(scope="module")
def mesh2x3():
    return load_topology("mesh2x3")


@pytest.fixture(scope="module")
def paper_torus():
    return load_topology("paper_torus")


def ipcq(cube: int, sip: int = 0) -> str:
    return f"sip{sip}.cube{cube}.pe0.ipcq"


def cube_path(graph, c0: int, c1: int) -> list[int]:
    """The CUBEs a route between two PEs visits, in order (one entry per CUBE)."""
    out: list[int] = []
    for node in graph.route(ipcq(c0), ipcq(c1)).nodes:
        c = int(node.split(".")[1][4:])
        if not out or out[-1] != c:
            out.append(c)
    return out


def ucie_hops(graph, c0: int, c1: int) -> int:
    return sum(1 for e in graph.route(ipcq(c0), ipcq(c1)).edges if e.kind == "ucie")


def ring_distance(a: int, b: int, n: int, wrap: bool) -> int:
    d = abs(a - b)
    return min(d, n - d) if wrap else d


# --- the shapes that ship ---------------------------------------------------


def test_torus2x3_wraps_its_three_cube_columns_and_keeps_one_link_per_row(torus2x3, mesh2x3):
    shape = GridShape.of(torus2x3.spec)
    assert (shape.width, shape.height, shape.wrap_x, shape.wrap_y) == (2, 3, False, True)
    _, edges = torus2x3.kind_counts()
    _, mesh_edges = mesh2x3.kind_counts()
    # mesh: 3 row links + 4 column links; the torus adds one wrap per column (2)
    assert mesh_edges["ucie"] == 2 * 7 and edges["ucie"] == 2 * 9
    assert torus2x3.edge("sip0.cube4.phy.s", "sip0.cube0.phy.n").kind == "ucie"
    assert torus2x3.edge("sip0.cube5.phy.s", "sip0.cube1.phy.n").kind == "ucie"


def test_paper_torus_gives_every_cube_four_phys_and_is_otherwise_the_paper(paper_torus, paper):
    nodes, edges = paper_torus.kind_counts()
    pnodes, pedges = paper.kind_counts()
    assert nodes["ucie_phy"] == 2 * 16 * 4
    assert edges["ucie"] == 2 * 2 * 32  # 2 SIPs x 32 links (16 rows/cols of 4, each a ring), both ways
    for kind in ("pe_cpu", "hbm_pc", "router", "io_chiplet"):
        assert nodes[kind] == pnodes[kind]
    assert edges["pcie"] == pedges["pcie"]
    wrap = paper_torus.edge("sip1.cube3.phy.e", "sip1.cube0.phy.w")
    inner = paper_torus.edge("sip1.cube0.phy.e", "sip1.cube1.phy.w")
    assert (wrap.bw_gbps, wrap.prop_ns) == (inner.bw_gbps, inner.prop_ns) == (512, 8)


def test_the_mesh_topologies_compile_exactly_as_before_the_torus_existed(paper):
    # no wrap: PHYs only toward existing neighbours (the paper count is unchanged)
    nodes, edges = paper.kind_counts()
    assert nodes["ucie_phy"] == 96 and edges["ucie"] == 96
    assert GridShape.of(paper.spec) == GridShape(4, 4, False, False)


# --- routing --------------------------------------------------------------


def test_every_route_crosses_the_closed_form_number_of_ucie_links(paper_torus, paper, torus2x3, mesh2x3):
    for graph in (paper_torus, paper, torus2x3, mesh2x3):
        shape = GridShape.of(graph.spec)
        for c0, c1 in itertools.product(range(shape.cubes), repeat=2):
            (x0, y0), (x1, y1) = shape.xy(c0), shape.xy(c1)
            expect = ring_distance(x0, x1, shape.width, shape.wrap_x) + ring_distance(y0, y1, shape.height, shape.wrap_y)
            assert ucie_hops(graph, c0, c1) == expect, (graph.name, c0, c1)


def test_torus_takes_the_shorter_way_round(paper_torus, torus2x3):
    # 4-ring in x: 0 -> 3 is one hop west over the wrap, not three east
    assert cube_path(paper_torus, 0, 3) == [0, 3]
    assert paper_torus.route(ipcq(0), ipcq(3)).nodes[3:5] == ("sip0.cube0.phy.w", "sip0.cube3.phy.e")
    # 3-ring in y (2 x 3 torus): row 0 -> row 2 is one hop north over the wrap
    assert cube_path(torus2x3, 0, 4) == [0, 4]
    assert cube_path(torus2x3, 5, 1) == [5, 1]


@pytest.mark.parametrize(
    "c0, c1, path",
    [
        (0, 2, [0, 1, 2]),  # x: 0 even -> east
        (2, 0, [2, 3, 0]),  # x: 2 even -> east, over the wrap
        (1, 3, [1, 0, 3]),  # x: 1 odd -> west, over the wrap
        (3, 1, [3, 2, 1]),  # x: 3 odd -> west
        (0, 8, [0, 4, 8]),  # y: row 0 even -> south
        (4, 12, [4, 0, 12]),  # y: row 1 odd -> north, over the wrap
    ],
)
def test_half_way_round_goes_positive_from_even_coordinates_negative_from_odd(paper_torus, c0, c1, path):
    assert cube_path(paper_torus, c0, c1) == path


def test_tie_break_and_dimension_order_together(paper_torus):
    # (1,1) -> (3,3): x tie from odd x=1 -> west (1,1)->(0,1)->(3,1); then y tie from odd y=1 -> north
    assert cube_path(paper_torus, 5, 15) == [5, 4, 7, 3, 15]


def test_exchange_with_the_cube_half_way_round_loads_both_directions_equally(paper_torus):
    # Recursive doubling's distance-2 step in a row of 4: all four exchanges together
    # use each directed UCIe link of the row exactly once.
    used = []
    for c in range(4):
        used += [e.id for e in paper_torus.route(ipcq(c), ipcq((c + 2) % 4)).edges if e.kind == "ucie"]
    assert len(used) == 8 and len(set(used)) == 8


def test_routes_are_dimension_ordered_x_before_y(paper_torus):
    for c0, c1 in itertools.product(range(16), repeat=2):
        sides = [n.rsplit(".", 1)[1] for n in paper_torus.route(ipcq(c0), ipcq(c1)).nodes if ".phy." in n]
        leaving = sides[0::2]
        ys = [i for i, d in enumerate(leaving) if d in "ns"]
        xs = [i for i, d in enumerate(leaving) if d in "ew"]
        assert not xs or not ys or max(xs) < min(ys)


def test_routes_between_sips_still_take_the_ring(paper_torus):
    nodes = paper_torus.route("sip0.cube5.pe0.dma", "sip1.cube10.hbm.slice3").nodes
    assert "sip0.io" in nodes and "sip1.io" in nodes


# --- the shape's closed forms, for any shape --------------------------------

shapes = st.builds(
    lambda w, h, wx, wy: GridShape(w, h, wx and w >= 3, wy and h >= 3),
    st.integers(1, 7),
    st.integers(1, 7),
    st.booleans(),
    st.booleans(),
)


@given(shapes)
def test_steps_walk_between_neighbours_and_match_the_hop_count(shape):
    for c0, c1 in itertools.product(range(shape.cubes), repeat=2):
        steps = shape.steps(c0, c1)
        assert len(steps) == shape.hops(c0, c1)
        here = c0
        for nxt, side in steps:
            assert (side, nxt) in shape.neighbours(here)
            here = nxt
        assert here == c1


@given(shapes)
def test_diameter_is_the_longest_route(shape):
    longest = max(shape.hops(a, b) for a, b in itertools.product(range(shape.cubes), repeat=2))
    assert shape.diameter == longest


@given(shapes)
def test_a_route_is_never_longer_than_the_other_way_round(shape):
    for c0, c1 in itertools.product(range(shape.cubes), repeat=2):
        (x0, y0), (x1, y1) = shape.xy(c0), shape.xy(c1)
        dx = ring_distance(x0, x1, shape.width, shape.wrap_x)
        dy = ring_distance(y0, y1, shape.height, shape.wrap_y)
        assert shape.hops(c0, c1) == dx + dy


# --- validation ------------------------------------------------------------


@pytest.mark.parametrize("width, what", [(1, "join a CUBE to itself"), (2, "duplicate the one link")])
def test_a_wrap_in_a_dimension_shorter_than_three_is_rejected_with_its_key_path(width, what):
    with pytest.raises(TopologyError) as exc:
        load_spec("sip2x2", [f"sip.mesh.width={width}", "sip.mesh.wrap.x=true"])
    msg = str(exc.value)
    assert "sip.mesh.wrap.x" in msg and f"sip.mesh.width is {width}" in msg and what in msg
    assert "shorter way round" in msg


def test_both_bad_wraps_are_reported_at_once():
    with pytest.raises(TopologyError) as exc:
        load_spec("sip2x2", ["sip.mesh.wrap.x=true", "sip.mesh.wrap.y=true"])
    assert len(exc.value.problems) == 2


def test_wrap_must_be_a_boolean():
    with pytest.raises(TopologyError) as exc:
        load_spec("paper", ["sip.mesh.wrap.x=3"])
    assert "sip.mesh.wrap.x: expected boolean" in str(exc.value)


def test_unknown_wrap_key_suggests_the_right_one():
    with pytest.raises(TopologyError) as exc:
        load_spec("paper", ["sip.mesh.wrap.z=true"])
    assert "sip.mesh.wrap.z: unknown key" in str(exc.value)


def test_a_torus_can_be_declared_by_override():
    g = load_topology("sip2x2", ["sip.mesh.width=3", "sip.mesh.wrap.x=true"])
    assert g.edge("sip0.cube2.phy.e", "sip0.cube0.phy.w").kind == "ucie"


# --- topo show --------------------------------------------------------------


@pytest.mark.parametrize(
    "name, lines",
    [
        (
            "torus2x3",
            [
                "2 × 3 torus (wrap in y), XY routing over UCIe the shorter way round",
                "torus tie-break          half-way round: east/south from an even coordinate, west/north from an odd one",
                "torus diameter           2 UCIe hop(s)",
                "torus bisection (UCIe)   1536 GB/s per direction (3 links across the x mid-plane)",
            ],
        ),
        (
            "paper_torus",
            [
                "4 × 4 torus (wrap in x and y)",
                "torus diameter           4 UCIe hop(s)",
                "torus bisection (UCIe)   4096 GB/s per direction (8 links across the x mid-plane)",
            ],
        ),
        (
            "mesh2x3",
            [
                "CUBE mesh per SIP       2 × 3 (XY routing over UCIe)",
                "mesh diameter           3 UCIe hop(s)",
                "mesh bisection (UCIe)   1536 GB/s per direction (3 links across the x mid-plane)",
            ],
        ),
        ("paper", ["mesh diameter           6 UCIe hop(s)"]),
    ],
)
def test_topo_show_states_shape_diameter_and_bisection(capsys, name, lines):
    assert main(["topo", "show", name]) == 0
    out = capsys.readouterr().out
    for line in lines:
        assert line in out


def test_an_odd_grid_says_its_cut_is_not_a_bisection(capsys):
    assert main(["topo", "show", "sip2x2", "--set", "sip.mesh.width=3", "--set", "sip.mesh.height=1"]) == 0
    assert "no cut halves an odd grid" in capsys.readouterr().out
