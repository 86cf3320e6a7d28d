"""Transfers move the bursts at their real addresses (issue 8, section 3).

A strided or sliced region moves every burst it touches, each on the
pseudo-channel its address selects, so a column block whose rows all fall
on one channel drains that channel alone. Checked against an independent
brute-force model written here from the rules (every byte's burst, channel
= burst mod channels, FIFOs flit by flit), in both timing modes.
"""

from __future__ import annotations

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench import tl
from kernbench.runtime.api import Runtime
from kernbench.sim.network import Network
from kernbench.sim.region import Region, region_of_view
from kernbench.topology.compile import load_topology

CUBE1 = load_topology("cube1")
PE = "sip0.cube0.pe0.dma"
SLICE = "sip0.cube0.hbm.slice0"


# --- the brute-force model --------------------------------------------------------------


def touched_bursts(base_offset: int, base: np.ndarray, view: np.ndarray, burst: int = 256) -> list[int]:
    """Every burst any byte of ``view`` lies in, ascending (bytes enumerated one by one)."""
    first = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    idx = np.indices(view.shape).reshape(view.ndim, -1).T
    elem = first + idx @ np.array(view.strides, dtype=np.int64)
    addrs = (base_offset + elem[:, None] + np.arange(view.itemsize)[None, :]).ravel()
    return sorted(set(int(a) // burst for a in addrs))


def serve(arrivals: list[float], s: float, free: float = 0.0) -> list[float]:
    out = []
    for a in arrivals:
        free = max(free, a) + s
        out.append(free)
    return out


def brute_read_latency(graph, initiator: str, memory: str, bursts: list[int]) -> float:
    node = graph.node(memory)
    chans, b = node.attrs["channels"], node.attrs["burst_bytes"] / node.attrs["channel_bw_gbps"]
    t = graph.route(initiator, memory).header_ns  # the request, on an idle machine
    per_ch: dict[int, int] = {}
    ready = []
    for burst in bursts:  # queued in address order at one instant
        c = burst % chans
        per_ch[c] = per_ch.get(c, 0) + 1
        ready.append(t + per_ch[c] * b)
    arr = sorted(ready)
    for hop in graph.route(memory, initiator).hops:
        arr = [d + hop.prop_ns + hop.next_overhead_ns for d in serve(arr, hop.flit_ns)]
    return arr[-1]


def brute_write_latency(graph, initiator: str, memory: str, bursts: list[int]) -> float:
    node = graph.node(memory)
    chans, b = node.attrs["channels"], node.attrs["burst_bytes"] / node.attrs["channel_bw_gbps"]
    fwd, ack = graph.route(initiator, memory), graph.route(memory, initiator)
    arr = [fwd.src_overhead_ns] * len(bursts)
    for hop in fwd.hops:
        arr = [d + hop.prop_ns + hop.next_overhead_ns for d in serve(arr, hop.flit_ns)]
    free: dict[int, float] = {}
    done = 0.0
    for t, burst in zip(arr, bursts, strict=True):  # flit k carries the k-th burst in address order
        c = burst % chans
        free[c] = max(free.get(c, 0.0), t) + b
        done = max(done, free[c])
    return done + ack.header_ns - ack.src_overhead_ns


def simulated(graph, mode: str, op: str, memory: str, region: Region) -> float:
    env = simpy.Environment()
    net = Network(env, graph, mode=mode)
    ev = getattr(net, op)(PE, memory, region=region)
    env.run()
    return ev.value.latency_ns


# --- the three regions the issue names ------------------------------------------------------


@pytest.mark.parametrize("mode", ["fast", "oracle"])
@pytest.mark.parametrize(
    "shape, index, expect",
    [
        # 128 rows of 256 B, 2048 B apart = 8 bursts: every row on one channel
        ((128, 1024), (slice(None), slice(0, 128)), 6 + 128 * 8.0),
        # 2304 B apart = 9 bursts: consecutive rows on consecutive channels
        ((128, 1152), (slice(None), slice(0, 128)), 141.0),
        # every 8th row of 256 B: 2048 B apart again
        ((1024, 128), (slice(None, None, 8),), 6 + 128 * 8.0),
    ],
    ids=["column_block_2048", "column_block_2304", "every_8th_row"],
)
def test_named_strided_reads_take_their_channels_time(mode, shape, index, expect):
    paper = load_topology("paper")
    rt = Runtime(paper, mode=mode)
    x = rt.deploy(np.zeros(shape, np.float16), pe=0)
    p = x[index]
    assert simulated(paper, mode, "read", p.memory, p.region) == pytest.approx(expect, abs=1e-9)
    assert brute_read_latency(paper, PE.replace("cube0", "cube0"), p.memory, touched_bursts(x.offset, x.array, p._view)) == pytest.approx(
        expect, abs=1e-9
    )


# --- any region, against the brute force ------------------------------------------------------


@st.composite
def views(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 40)) for _ in range(ndim))
    dtype = draw(st.sampled_from([np.float16, np.float32, np.int8]))
    index = []
    for n in shape:
        a = draw(st.integers(0, n - 1))
        b = draw(st.integers(a + 1, n))
        step = draw(st.sampled_from([1, 1, 1, 2, 3, 7]))
        index.append(slice(a, b, step) if draw(st.booleans()) or ndim == 1 else a)
    if all(not isinstance(i, slice) for i in index):
        index[-1] = slice(index[-1], index[-1] + 1)
    return shape, dtype, tuple(index), draw(st.integers(0, 40)) * 64


@settings(max_examples=150, deadline=None)
@given(views(), st.sampled_from(["read", "write"]))
def test_any_region_moves_the_bursts_it_touches(v, op):
    shape, dtype, index, pad = v
    rt = Runtime(CUBE1)
    rt.deploy(np.zeros(max(1, pad), np.int8), pe=0)  # shift the tensor off burst alignment
    x = rt.deploy(np.zeros(shape, dtype), pe=0, dtype=dtype)
    p = x[index]
    bursts = touched_bursts(x.offset, x.array, p._view)
    assert list(p.region.bursts(256)) == bursts
    brute = brute_read_latency if op == "read" else brute_write_latency
    expect = brute(CUBE1, PE, SLICE, bursts)
    for mode in ("fast", "oracle"):
        assert simulated(CUBE1, mode, op, SLICE, p.region) == pytest.approx(expect, abs=1e-9), mode


@settings(max_examples=150, deadline=None)
@given(views(), st.data())
def test_a_chunk_of_a_region_is_the_same_bytes_as_the_flat_slice(v, data):
    shape, dtype, index, pad = v
    base = np.zeros(shape, dtype)
    view = base[index]
    reg = region_of_view(base, view, pad)
    n = reg.nbytes
    assert n == view.nbytes
    lo = data.draw(st.integers(0, n - 1))
    hi = data.draw(st.integers(lo + 1, n))
    chunk = reg.chunk(lo, hi)
    assert chunk.nbytes == hi - lo
    # the chunk's bytes: the region's bytes in logical order, [lo, hi)
    flat = [a + i for a in reg.starts for i in range(reg.run_bytes)]
    got = [a + i for a in chunk.starts for i in range(chunk.run_bytes)]
    assert got == flat[lo:hi]


# --- what a kernel sees ---------------------------------------------------------------------------


def test_a_kernel_loading_a_column_block_drains_one_channel():
    rt = Runtime("paper")
    x = rt.deploy(np.arange(128 * 1024, dtype=np.float16).reshape(128, 1024), pe=0)

    def kernel(x):
        h = tl.load(x[:, 256:384])
        tl.wait(h)

    rt.launch(kernel, pes=[0], args=(x,))
    result = rt.run(record=True)
    busy = {e.component for e in result.events if e.kind.name == "CHANNEL_BUSY"}
    assert len(busy) == 1  # one pseudo-channel served all 128 bursts
    assert result.latency_ns > 128 * 8.0


@pytest.mark.parametrize(
    "index, match",
    [
        (([0, 2, 5],), "fancy indexing"),
        ((np.array([True] * 64),), "copies data|fancy"),
        ((slice(0, 100),), "past the end"),
        ((70,), "out of range"),
        ((Ellipsis, 3), "integers and slices"),
        ((slice(0, 4), slice(0, 8), 1), "indices for 2 dimensions"),
    ],
)
def test_regions_without_an_address_are_clear_errors(index, match):
    rt = Runtime("cube1")
    x = rt.deploy(np.zeros((64, 32), np.float16), pe=0)
    with pytest.raises(IndexError, match=match):
        x[index]
