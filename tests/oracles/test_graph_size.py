"""The size check's arithmetic (``graph_size``) counts what the compiler builds,
on every shipped topology and on a few resized ones."""

from __future__ import annotations

import pytest

from kernbench.topology.compile import compile_spec, graph_size
from kernbench.topology.spec import load_spec

TORUS_BUG = pytest.mark.xfail(
    strict=True,
    reason="graph_size counts mesh neighbours only ((w-1)*h + w*(h-1) UCIe links): a wrapped "
    "dimension's links and PHYs are missing, so the size limit under-counts a torus",
)
CASES = [
    ("cube1", []),
    ("sip2x2", []),
    ("mesh2x3", []),
    ("paper", []),
    pytest.param("torus2x3", [], marks=TORUS_BUG),
    pytest.param("paper_torus", [], marks=TORUS_BUG),
    ("cube1", ["cube.pes.count=2", "cube.pes.attach=[r0, r1]", "cube.hbm.attach=[r2, r3]"]),
    ("paper", ["system.sips=3", "cube.hbm.channels_per_slice=4"]),
]


@pytest.mark.parametrize("name, overrides", CASES)
def test_graph_size_counts_the_nodes_and_edges_the_compiler_builds(name, overrides):
    spec = load_spec(name, overrides)
    g = compile_spec(spec)
    assert graph_size(spec) == (len(g.nodes), len(g.edges))
