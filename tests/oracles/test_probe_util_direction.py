"""The probe's Util% is relative to the bottleneck of the route the *data* travels.

Every shipped link is the same bandwidth both ways, so a read's request
route and data route have the same bottleneck and the direction never
shows. Here one directed edge is made slow — the one out of HBM slice 0,
which only data read *from* slice 0 crosses — and the probe's rows are
checked against what the construction says each transfer's data crosses:
reads from slice 0 are bottlenecked by the slow edge, the host's write into
slice 0 is not (its data goes the other way, into the slice).
"""

from __future__ import annotations

import pytest

from kernbench.topology.compile import load_topology
from kernbench.topology.graph import Edge, Graph
from kernbench_probes.dma import run_probe

SLICE = "sip0.cube0.hbm.slice0"
SIZE = 4096


@pytest.fixture(scope="module")
def slow_out_of_slice0():
    g = load_topology("cube1")
    slow = min(e.bw_gbps for e in g.edges) / 4
    (out,) = [e for e in g.edges if e.src == SLICE and e.kind == "hbm_port"]  # the slice -> its router
    edges = [Edge(e.src, e.dst, slow if e is out else e.bw_gbps, e.prop_ns, e.kind) for e in g.edges]
    slowed = Graph(g.name, list(g.nodes.values()), edges, g.flit_bytes, g.spec, g._router)
    return slowed, slow, out


def test_a_read_from_the_slice_is_bottlenecked_by_the_edge_out_of_it_a_write_into_it_is_not(slow_out_of_slice0):
    g, slow, out = slow_out_of_slice0
    rows = {r.case.key: r for r in run_probe(g, sizes=(SIZE,)).rows}
    reads = [k for k, r in rows.items() if r.case.memory == SLICE and r.case.op == "read"]
    writes = [k for k, r in rows.items() if r.case.memory == SLICE and r.case.op == "write"]
    assert reads and writes, sorted(rows)  # the local read, the D2H read, the H2D write
    for key in reads:
        assert rows[key].bottleneck_gbps == slow, key
    into = g.edge(out.dst, out.src)  # the write's data enters the slice: the same link, the other way
    for key in writes:
        r = rows[key]
        assert r.bottleneck_gbps > slow and r.bottleneck_gbps <= into.bw_gbps, key
    for key, r in rows.items():
        assert r.util_pct[SIZE] == pytest.approx(100.0 * SIZE / r.latency_ns[SIZE] / r.bottleneck_gbps), key
