"""One transfer on an idle machine takes exactly what a flit-by-flit hand
computation from the topology's parameters says (``oracle_flits``), in both
timing modes.

The shipped topologies charge no overhead at a PE's DMA port, an HBM slice,
SRAM or the host, so a model that drops — or double-charges — one of those
overheads gives the same answers there. These tests run on ``cube1`` with
every such overhead set to a distinct non-zero value.
"""

from __future__ import annotations

import oracle_flits as ref
import pytest
import simpy

from kernbench.events.bus import Bus
from kernbench.sim.network import Network
from kernbench.sim.region import Region
from kernbench.topology.compile import load_topology

OVERHEADS = [
    "cube.pes.dma_overhead_ns=1.5",
    "cube.hbm.overhead_ns=3.25",
    "cube.sram.overhead_ns=0.75",
    "system.host.overhead_ns=4.5",
    "cube.routers.hub.overhead_ns=2.5",
]
PE0, PE5 = "sip0.cube0.pe0", "sip0.cube0.pe5"
SLICE0, SLICE2 = "sip0.cube0.hbm.slice0", "sip0.cube0.hbm.slice2"
SRAM = "sip0.cube0.sram"
MODES = ("fast", "oracle")


@pytest.fixture(scope="module")
def g():
    return load_topology("cube1", OVERHEADS)


def simulate(graph, mode: str, start):
    env = simpy.Environment()
    net = Network(env, graph, Bus(), mode=mode)
    ev = start(net)
    env.run()
    return ev.value


def test_the_overrides_really_are_non_zero(g):
    # the point of this module: every endpoint charges something
    for node in (f"{PE0}.dma", SLICE0, SRAM, "host", f"{PE0}.ipcq"):
        assert g.nodes[node].overhead_ns > 0, node


READS = {
    "local-32KiB": (f"{PE0}.dma", SLICE0, 0, 32768),
    "cross-half-4KiB": (f"{PE0}.dma", SLICE2, 0, 4096),
    "unaligned-1000B": (f"{PE0}.dma", SLICE0, 100, 1000),
    "one-byte": (f"{PE0}.dma", SLICE0, 511, 1),
    "sram-8KiB": (f"{PE0}.dma", SRAM, 256, 8192),
    "host-d2h-16KiB": ("host", SLICE0, 0, 16384),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(READS))
def test_an_idle_read_takes_the_flit_by_flit_time(g, case, mode):
    init, mem, off, size = READS[case]
    got = simulate(g, mode, lambda n: n.read(init, mem, off, size))
    assert got.latency_ns == pytest.approx(ref.read_ns(g, init, mem, [off], size), abs=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(READS))
def test_an_idle_write_takes_the_flit_by_flit_time_and_its_acknowledgement(g, case, mode):
    init, mem, off, size = READS[case]
    got = simulate(g, mode, lambda n: n.write(init, mem, off, size))
    assert got.latency_ns == pytest.approx(ref.write_ns(g, init, mem, [off], size), abs=1e-6)


SENDS = {
    "pe-to-pe": (f"{PE0}.ipcq", f"{PE5}.ipcq"),
    # one way between endpoints of different overheads: each node's overhead is paid on reaching it
    "host-to-pe": ("host", f"{PE5}.ipcq"),
    "pe-to-sram": (f"{PE0}.dma", SRAM),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", [1, 1000, 4096, 4097])
@pytest.mark.parametrize("pair", list(SENDS))
def test_a_send_moves_ceil_size_over_flit_flits(g, pair, size, mode):
    src, dst = SENDS[pair]
    got = simulate(g, mode, lambda n: n.send(src, dst, size))
    assert got.latency_ns == pytest.approx(ref.send_ns(g, src, dst, size), abs=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_a_strided_read_moves_one_burst_per_run_including_a_partial_last(g, mode):
    # 1000 B over 4 runs of one burst, 2048 B apart: ceil(1000 / 256) = 4 bursts
    b = g.flit_bytes
    got = simulate(g, mode, lambda n: n.read(f"{PE0}.dma", SLICE0, 512, 1000, stride_bytes=2048))
    starts, run = ref.strided(512, b, 2048, 4)
    assert got.latency_ns == pytest.approx(ref.read_ns(g, f"{PE0}.dma", SLICE0, starts, run), abs=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("run", [256, 100, 300])
def test_a_region_of_runs_moves_exactly_the_bursts_its_bytes_touch(g, run, mode):
    starts = [k * 4096 + (0 if run == 256 else 200) for k in range(6)]
    region = Region(tuple(starts), run)
    got = simulate(g, mode, lambda n: n.read(f"{PE0}.dma", SLICE0, region=region))
    assert got.latency_ns == pytest.approx(ref.read_ns(g, f"{PE0}.dma", SLICE0, starts, run), abs=1e-6)
    got = simulate(g, mode, lambda n: n.write(f"{PE0}.dma", SLICE0, region=region))
    assert got.latency_ns == pytest.approx(ref.write_ns(g, f"{PE0}.dma", SLICE0, starts, run), abs=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_a_write_to_one_hot_channel_drains_alone(g, mode):
    # every burst 8 channels x 256 B apart lands on channel 0: 16 bursts back to back there
    ch = g.nodes[SLICE0].attrs["channels"]
    starts = [k * ch * g.flit_bytes for k in range(16)]
    region = Region(tuple(starts), g.flit_bytes)
    got = simulate(g, mode, lambda n: n.write(f"{PE0}.dma", SLICE0, region=region))
    assert got.latency_ns == pytest.approx(ref.write_ns(g, f"{PE0}.dma", SLICE0, starts, g.flit_bytes), abs=1e-6)


def test_the_shipped_cube1_probe_latency_is_the_papers_and_the_references(cube1):
    # the paper's 141.0 ns local 32 KiB read is what the reference gives on cube1 too
    assert ref.read_ns(cube1, f"{PE0}.dma", SLICE0, [0], 32768) == pytest.approx(141.0, abs=0.05)
    got = simulate(cube1, "fast", lambda n: n.read(f"{PE0}.dma", SLICE0, 0, 32768))
    assert got.latency_ns == pytest.approx(ref.read_ns(cube1, f"{PE0}.dma", SLICE0, [0], 32768), abs=1e-6)
