"""The fidelity ladder (``kernbench/sim/fidelity.py``, ``docs/fidelity.md``), level by level,
against hand arithmetic from the topology's numbers:

* ``paper``: the default; ``--fidelity paper`` is today's model in both timing modes;
* ``credit``: a link's buffer covers its round trip, so an idle transfer is the paper's to
  the bit; a link serves its input ports round-robin and sends a data flit only with a
  credit; a full buffer holds the flits behind it (backpressure, head-of-line blocking);
* ``full``: a burst to a closed bank waits ``trcd_ns``; to another row of an open bank
  ``trp_ns + trcd_ns``; to the open row nothing; a burst inside a refresh window waits it
  out and activates; an idle 32 KiB read pays one activate (14 ns) over the paper's 141.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import simpy
from kernelkit import busy, rng_array, run1

import kernbench.tl as tl
from kernbench.kernels import registry
from kernbench.runtime.api import Runtime
from kernbench.sim.fidelity import BankedChannels, BankTiming, CreditLinks
from kernbench.sim.network import Network
from kernbench.topology.compile import load_topology

PE0, PE1 = "sip0.cube0.pe0", "sip0.cube0.pe1"
SLICE0 = "sip0.cube0.hbm.slice0"


def transfer_ns(graph, fidelity: str, op: str, src: str, dst: str, size: int) -> float:
    env = simpy.Environment()
    net = Network(env, graph, fidelity=fidelity)
    ev = net.read(src, dst, 0, size) if op == "read" else net.write(src, dst, 0, size) if op == "write" else net.send(src, dst, size)
    env.run()
    return ev.value.latency_ns


@pytest.fixture(scope="module")
def cube1():
    return load_topology("cube1")


# --- paper ------------------------------------------------------------------------


def test_paper_is_the_default_and_the_same_in_both_timing_modes():
    spec = registry.get("gemm-composite")
    lat = []
    for kw in ({}, {"fidelity": "paper"}, {"fidelity": "paper", "mode": "oracle"}):
        rt = Runtime(spec.default_topology, **kw)
        spec.prepare(rt, dict(spec.defaults()))
        lat.append(rt.run().latency_ns)
    assert lat[0] == lat[1] == pytest.approx(lat[2], abs=1e-6)


# --- credit -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "op, src, dst, size",
    [("read", f"{PE0}.dma", SLICE0, 32768), ("write", f"{PE0}.dma", SLICE0, 32768), ("send", f"{PE0}.ipcq", f"{PE1}.ipcq", 4096)],
)
def test_an_idle_transfer_at_credit_is_the_papers_to_the_bit(cube1, op, src, dst, size):
    assert transfer_ns(cube1, "credit", op, src, dst, size) == transfer_ns(cube1, "paper", op, src, dst, size)


def test_the_papers_local_read_is_141_ns_at_credit(cube1):
    assert transfer_ns(cube1, "credit", "read", f"{PE0}.dma", SLICE0, 32768) == pytest.approx(141.0, abs=0.05)


def test_a_link_buffer_covers_its_round_trip_and_at_least_credit_buffer_flits():
    graph = load_topology("paper")
    links = CreditLinks(simpy.Environment(), graph)
    for e in graph.edges:
        flit = 256 / e.bw_gbps
        trip = flit + e.prop_ns + graph.node(e.dst).overhead_ns
        assert links.credits[e.index] == max(16, math.ceil(trip / flit) + 1)
    ring = next(e for e in graph.edges if e.kind == "pcie")  # the SIP ring, 768 GB/s over 76.88 ns: hundreds of flits
    assert links.credits[ring.index] > 200


def test_a_link_serves_its_input_ports_round_robin_not_in_arrival_order(cube1):
    env = simpy.Environment()
    links = CreditLinks(env, cube1)
    order: list[tuple[int, float]] = []
    e = 0
    for port in (7, 7, 7, 3, 3, 3):  # port 7's three arrive first, all at t = 0
        links.enqueue(e, port, lambda d, p=port: order.append((p, d)))
    env.run()
    flit = links.flit_ns[e]
    assert [p for p, _ in order] == [3, 7, 3, 7, 3, 7]
    assert [d for _, d in order] == pytest.approx([flit * (i + 1) for i in range(6)])


def test_a_data_flit_waits_for_a_credit_and_a_control_flit_does_not(cube1):
    env = simpy.Environment()
    links = CreditLinks(env, cube1)
    e = 0
    links.credits[e] = 2
    sent: list[str] = []
    for name in ("a", "b", "c"):
        links.enqueue(e, -1, lambda d, n=name: sent.append(n))
    links.enqueue(e, 5, lambda d: sent.append("ctl"), data=False)
    env.run()
    assert sent == ["a", "ctl", "b"]  # c holds: the receiver's buffer is full
    links.credit(e)
    env.run()
    assert sent == ["a", "ctl", "b", "c"]


def hot_and_cool_writes(fidelity: str) -> tuple[float, float]:
    """PE0 writes 64 KiB whose 256 bursts all land on pseudo-channel 0 (256 B every 2 KiB):
    its flits pass the slice's port in 256 ns, the channel drains them in 2,048. At 300 ns
    PE1 writes 7 bursts, one on each of channels 1-7 of the same slice, through that port."""
    graph = load_topology("cube1")
    env = simpy.Environment()
    net = Network(env, graph, fidelity=fidelity)
    hot = net.write(f"{PE0}.dma", SLICE0, 0, 64 * 1024, stride_bytes=2048)
    cool: list[simpy.Event] = []

    def later():
        yield env.timeout(300.0)
        cool.append(net.write(f"{PE1}.dma", SLICE0, (1 << 24) + 256, 7 * 256))

    env.process(later())
    env.run()
    return hot.value.latency_ns, cool[0].value.latency_ns


def test_backpressure_a_hot_channel_holds_up_a_write_behind_it_only_at_credit(cube1):
    hot_p, cool_p = hot_and_cool_writes("paper")
    hot_c, cool_c = hot_and_cool_writes("credit")
    alone = transfer_ns(cube1, "paper", "write", f"{PE1}.dma", SLICE0, 7 * 256)
    # the hot channel drains 256 bursts of 8 ns either way: the hot write takes as long
    assert hot_c == pytest.approx(hot_p)
    # paper: the hot write's flits all passed the port by 300 ns (unbounded buffers), so the
    # cool write runs as if alone; credit: the slice's 16-flit buffer is full of flits waiting
    # for channel 0: each of the cool write's flits waits for a slot, freed by a hot burst
    # (every 8 ns) or by one of its own bursts served (8 ns after it lands)
    assert cool_p == pytest.approx(alone)
    assert cool_c > 3 * cool_p


# --- full -------------------------------------------------------------------------

HBM3 = BankTiming(banks=16, row_bytes=1024, trcd_ns=14.0, trp_ns=14.0, trefi_ns=3900.0, trfc_ns=350.0)


def test_a_bank_activates_a_closed_row_precharges_an_open_one_and_hits_the_open_row():
    b = BankedChannels(HBM3, channels=8, burst_bytes=256, burst_ns=8.0)
    # slice burst 0: channel 0, local 0 -> bank 0 row 0 (closed): activate 14, then 8
    assert b.serve(0, 0, 0.0) == (14.0, 22.0)
    # burst 8: channel 0, local 1 -> same row: a hit, right after the channel's last burst
    assert b.serve(0, 8, 0.0) == (22.0, 30.0)
    # local 64 = 4 bursts a row x 16 banks: bank 0, row 1 -> precharge + activate from 30
    assert b.serve(0, 8 * 64, 0.0) == (30.0 + 14 + 14, 66.0)
    assert (b.hits, b.misses) == (1, 2)


def test_a_burst_in_a_refresh_window_waits_it_out_and_activates():
    b = BankedChannels(HBM3, channels=8, burst_bytes=256, burst_ns=8.0)
    b.serve(0, 0, 0.0)
    # channel 0 refreshes [3900, 4250): a hit on its open row at 3950 waits, reopens the row
    assert b.serve(0, 8, 3950.0) == (4250.0 + 14, 4272.0)
    # every channel refreshes in the same windows: channel 4's first burst at 7,850 is in [7800, 8150)
    assert b.serve(4, 4, 7850.0) == (8150.0 + 14, 8172.0)
    # and a burst that would run into the next window goes after it: 11,695 + 8 > 11,700
    assert b.serve(4, 12, 11695.0) == (11700.0 + 350 + 14, 12072.0)


def test_an_idle_32_kib_read_at_full_pays_one_activate_over_the_papers_141_ns(cube1):
    paper = transfer_ns(cube1, "paper", "read", f"{PE0}.dma", SLICE0, 32768)
    full = transfer_ns(cube1, "full", "read", f"{PE0}.dma", SLICE0, 32768)
    # every channel's 16 bursts open 4 rows in 4 banks at once: one trcd ahead of the first
    assert full == pytest.approx(paper + 14.0)


@pytest.mark.parametrize("name", ["gemm-composite", "gemm-primitive"])
def test_full_never_makes_an_uncontended_gemm_faster_than_paper(name):
    spec = registry.get(name)
    lat = {}
    for f in ("paper", "full"):
        rt = Runtime(spec.default_topology, fidelity=f)
        spec.prepare(rt, dict(spec.defaults()))
        lat[f] = rt.run().latency_ns
    assert lat["full"] >= lat["paper"]


def test_a_kernel_runs_at_every_level_with_the_same_numerics():
    outs = {}
    for f in ("paper", "credit", "full"):
        rt = Runtime("cube1", fidelity=f)
        X = rng_array((64, 64), 3)
        x, out = rt.deploy(X), rt.empty((64, 64), dtype=np.float16)

        def kernel(x, out):
            tl.store(out, tl.load(x))

        r = run1(rt, kernel, x, out)
        outs[f] = (rt.read(out), busy(r, "dma.rd")[0].end_ns - busy(r, "dma.rd")[0].t_ns)
    assert all(np.array_equal(outs["paper"][0], o) for o, _ in outs.values())
    assert outs["credit"][1] == outs["paper"][1] < outs["full"][1]


def test_an_unknown_level_is_one_clear_error():
    with pytest.raises(ValueError, match="fidelity must be one of paper, credit, full"):
        Runtime("cube1", fidelity="exact")


@pytest.mark.parametrize("variant", ["opt2", "opt3"])
def test_gqa_decode_at_credit_and_full_stays_within_0_9_to_5_times_paper(variant):
    spec = registry.get("gqa-decode")
    lat = {}
    for f in ("paper", "credit", "full"):
        rt = Runtime("cube1", fidelity=f)
        spec.prepare(rt, dict(spec.defaults(), variant=variant, context=512, heads=16, kv_heads=2))
        lat[f] = rt.run().latency_ns
    for f in ("credit", "full"):
        assert 0.9 <= lat[f] / lat["paper"] <= 5.0
