"""Every directed edge is a FIFO, so concurrent streams share a link; HBM
pseudo-channels work in parallel for uniform addresses and serialize for a
skewed pattern (issue 2, section 3). Both timing modes must show it."""

from __future__ import annotations

import pytest
from simrun import Op, latency, run

from kernbench.events.bus import Bus, Recorder
from kernbench.events.types import EventKind

MODES = ["fast", "oracle"]
C = "sip0.cube0."
N = 128  # flits in 32 KiB


@pytest.mark.parametrize("mode", MODES)
def test_two_streams_share_one_link_bandwidth(cube1, mode):
    """pe0->pe2 and pe1->pe3 both cross r0->r1 (256 GB/s, 1 ns per flit)."""
    a = Op("send", C + "pe0.ipcq", C + "pe2.ipcq", 32768)
    b = Op("send", C + "pe1.ipcq", C + "pe3.ipcq", 32768)
    one = latency(cube1, mode, a)
    both = max(r.end_ns for r in run(cube1, mode, [a, b]))
    # the shared edge serves all 2N flits back to back: exactly N ns more than one stream
    assert both == pytest.approx(one + N * 1.0, abs=1e-9)
    assert 1.8 < both / one < 2.0  # shared, not each at full rate


@pytest.mark.parametrize("mode", MODES)
def test_streams_on_disjoint_links_do_not_slow_each_other(cube1, mode):
    a = Op("send", C + "pe0.ipcq", C + "pe2.ipcq", 32768)
    b = Op("send", C + "pe4.ipcq", C + "pe6.ipcq", 32768)  # r2 -> r3
    one = latency(cube1, mode, a)
    assert [r.latency_ns for r in run(cube1, mode, [a, b])] == pytest.approx([one, one], abs=1e-9)


@pytest.mark.parametrize("mode", MODES)
def test_four_streams_take_four_times_the_shared_link(cube1, mode):
    """pe0, pe1 (at r0) and pe4, pe5 (at r2, routed via r0) all cross r0->r1."""
    ops = [Op("send", C + f"pe{p}.ipcq", C + f"pe{q}.ipcq", 32768) for p, q in ((0, 2), (1, 3), (4, 2), (5, 3))]
    assert all("sip0.cube0.r0->sip0.cube0.r1" in [h.edge.id for h in cube1.route(o.a, o.b).hops] for o in ops)
    one = latency(cube1, mode, ops[0])
    makespan = max(r.end_ns for r in run(cube1, mode, ops))
    assert makespan >= 4 * N * 1.0
    assert makespan / one > 3.5


def channel_spans(graph, mode, op):
    bus = Bus()
    rec = Recorder(bus)
    (r,) = run(graph, mode, [op], bus)
    spans = [e for e in rec.events() if e.kind == EventKind.CHANNEL_BUSY]
    return r.latency_ns, spans


@pytest.mark.parametrize("mode", MODES)
def test_contiguous_read_uses_all_eight_pseudo_channels(paper, mode):
    lat, spans = channel_spans(paper, mode, Op("read", "sip0.cube5.pe0.dma", "sip0.cube5.hbm.slice0", 32768))
    assert {e.component for e in spans} == {f"sip0.cube5.hbm.pc{c}" for c in range(8)}
    assert sum(e.value for e in spans) == N
    # paced by the 256 GB/s slice port: ~1 ns per flit (+ 13 ns of header, burst and hops)
    assert lat == pytest.approx(N * 1.0 + 13.0, abs=1e-9)


@pytest.mark.parametrize("mode", MODES)
def test_stride_of_eight_bursts_puts_every_burst_on_one_channel(paper, mode):
    op = Op("read", "sip0.cube5.pe0.dma", "sip0.cube5.hbm.slice1", 32768, 0, 8 * 256)
    lat, spans = channel_spans(paper, mode, op)
    assert {e.component for e in spans} == {"sip0.cube5.hbm.pc8"}
    # one channel, 8 ns per burst: header 2 + 128 x 8 + (port 1 + router 2 + port 1)
    assert lat == pytest.approx(2 + N * 8.0 + 4, abs=1e-9)
    uniform = latency(paper, mode, Op("read", "sip0.cube5.pe0.dma", "sip0.cube5.hbm.slice1", 32768))
    assert 7.0 < lat / uniform < 8.0


@pytest.mark.parametrize("mode", MODES)
def test_skewed_write_is_bound_by_one_channel_too(paper, mode):
    op = Op("write", "sip0.cube5.pe0.dma", "sip0.cube5.hbm.slice0", 32768, 512, 8 * 256)
    # flit 0 reaches the slice at 4, then one 8 ns burst after another, ack 2
    assert latency(paper, mode, op) == pytest.approx(4 + N * 8.0 + 2, abs=1e-9)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["read", "write"])
def test_fan_in_of_four_pes_to_one_slice_is_bound_by_the_slice(cube1, mode, kind):
    """pe0, pe1, pe2, pe4 each move 32 KiB to/from slice0: 512 bursts through one
    256 GB/s slice port and 8 channels of 32 GB/s, i.e. >= 512 ns in all."""
    ops = [Op(kind, C + f"pe{p}.dma", C + "hbm.slice0", 32768, p * 32768) for p in (0, 1, 2, 4)]
    one = latency(cube1, mode, ops[0])
    assert one == pytest.approx(141.0, abs=1e-9)
    makespan = max(r.end_ns for r in run(cube1, mode, ops))
    assert 4 * N <= makespan <= 4 * N + 40.0
