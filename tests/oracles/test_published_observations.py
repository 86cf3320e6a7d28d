"""What the engine publishes is in the documented units and names: queue
depths in flits (events/types.py), channel spans under the graph's own
pseudo-channel node ids; and a streamed tile's chunk is exactly its bytes.
Expectations by hand or brute force."""

from __future__ import annotations

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.events.bus import Bus
from kernbench.events.types import EventKind
from kernbench.sim.network import Network
from kernbench.sim.region import Region
from kernbench.topology.compile import load_topology

SRC, DST = "sip0.cube0.pe0.ipcq", "sip0.cube0.pe1.ipcq"


def recorded(graph, start):
    env = simpy.Environment()
    bus = Bus()
    seen = []
    bus.subscribe(seen.append)
    net = Network(env, graph, bus)
    start(net)
    env.run()
    net.flush()
    return seen


def test_a_queue_depth_counts_flits_not_nanoseconds():
    # a 128 GB/s PE port: one 256 B flit is 2 ns on the wire, so ns and flits differ
    g = load_topology("cube1", ["cube.pes.link.bw_gbps=128"])
    n = 12  # flits of the first send
    evs = recorded(g, lambda net: (net.send(SRC, DST, n * g.flit_bytes), net.send(SRC, DST, 3 * g.flit_bytes)))
    first_edge = g.route(SRC, DST).hops[0].edge.id
    depths = [e for e in evs if e.kind is EventKind.QUEUE_DEPTH and e.component == first_edge]
    # both heads arrive together; the second send's head waits behind all n flits of the first
    assert [d.value for d in depths] == [n, 0.0]
    assert depths[1].t_ns - depths[0].t_ns == pytest.approx(n * g.flit_bytes / 128)


@pytest.mark.parametrize("k", [0, 3, 6])
def test_channel_spans_name_the_slices_own_pseudo_channel_nodes(k):
    g = load_topology("cube1")
    mem = f"sip0.cube0.hbm.slice{k}"
    evs = recorded(g, lambda net: net.read("sip0.cube0.pe0.dma", mem, 0, 4096))
    names = {e.component for e in evs if e.kind is EventKind.CHANNEL_BUSY}
    # the graph links each slice to its own pseudo-channels
    own = {n for n in g.successors[mem] if g.nodes[n].kind == "hbm_pc"}
    assert names == own and len(own) == g.nodes[mem].attrs["channels"]


@st.composite
def regions(draw):
    run = draw(st.integers(1, 700))
    runs = draw(st.integers(1, 12))
    stride = draw(st.integers(run, run + 900))
    base = draw(st.integers(0, 5000))
    return Region.strided(base, run, stride, runs)


@settings(max_examples=300, deadline=None)
@given(r=regions(), data=st.data())
def test_a_chunk_is_exactly_the_regions_logical_bytes_lo_to_hi(r, data):
    lo = data.draw(st.integers(0, r.nbytes - 1))
    hi = data.draw(st.integers(lo + 1, r.nbytes))
    every = np.concatenate([np.arange(s, s + r.run_bytes) for s in r.starts])  # logical (C) order
    c = r.chunk(lo, hi)
    got = np.concatenate([np.arange(s, s + c.run_bytes) for s in c.starts])
    assert np.array_equal(np.sort(got), np.sort(every[lo:hi]))
