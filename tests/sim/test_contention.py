"""Fast mode vs the flit-by-flit oracle under contention (issue 2, section 3).

The fast mode moves a whole flit train through an edge when its head gets
there, first come first served; the oracle interleaves flits in arrival
order. Measured on the scenarios below (32 KiB each, all issued at t = 0
unless staggered), with error = (fast end - oracle end) / oracle latency:

    scenario                                 makespan   per transfer
    two sends sharing r0->r1                  0.00 %    -46.6 %, 0.0 %
    two reads sharing r1->r0                  0.00 %    -44.1 %, 0.0 %
    two sends, second 40 ns later             0.00 %    -37.4 %, 0.0 %
    four writes sharing r0->r1                0.00 %    -44.1 % .. 0.0 %
    four sends sharing r0->r1                 0.00 %    -63.3 % .. 0.0 %
    fan-in: 4 reads from one slice            0.00 %    0.0 % (exact)
    fan-in: 4 writes to one slice            -2.91 %    -72.3 % .. -2.9 %
    crossing flows in one CUBE (3 sends)     -1.07 %    -45.9 % .. 0.0 %
    crossing flows over the 2x2 mesh         +3.49 %    -43.5 % .. +3.5 %

Stated tolerance (tested): the makespan within 4 %; each transfer ends no
more than 4 % of its oracle latency *later* than in the oracle, and up to
75 % *earlier* (the first-come train is not slowed by one that arrives after
its head: the oracle shares the link fairly, the fast mode serves trains in
turn). The per-transfer bound is wide because of that policy, not because of
noise: where the shared edge is the bottleneck the fast mode gives the same
total but a different split.

Not within tolerance (xfail, reported): trains that *merge onto a faster
link*. Each is paced by a slower upstream edge (128 GB/s hub ports) and they
share a 512 GB/s UCIe hop; the oracle fills one train's gaps with the
other's flits, the fast mode reserves the edge until the first train's tail.
Measured makespan error: +76.7 % (two writes), +85.7 % (two sends),
+114.8 % (four corner PEs reading from the neighbour CUBE).
"""

from __future__ import annotations

import pytest
from simrun import Op, run

C = "sip0.cube0."
S = 32768

MAKESPAN_TOL = 0.04
LATE_TOL = 0.04
EARLY_TOL = 0.75

SCENARIOS = {
    "two_streams_sends": ("cube1", [Op("send", C + "pe0.ipcq", C + "pe2.ipcq", S), Op("send", C + "pe1.ipcq", C + "pe3.ipcq", S)]),
    "two_streams_reads": ("cube1", [Op("read", C + "pe0.dma", C + "hbm.slice2", S), Op("read", C + "pe1.dma", C + "hbm.slice3", S)]),
    "two_streams_staggered": (
        "cube1",
        [Op("send", C + "pe0.ipcq", C + "pe2.ipcq", S), Op("send", C + "pe1.ipcq", C + "pe3.ipcq", S, at_ns=40.0)],
    ),
    "four_streams_writes": (
        "cube1",
        [Op("write", C + f"pe{p}.dma", C + f"hbm.slice{s}", S) for p, s in ((0, 2), (1, 3), (4, 6), (5, 7))],
    ),
    "four_streams_sends": (
        "cube1",
        [Op("send", C + f"pe{p}.ipcq", C + f"pe{q}.ipcq", S) for p, q in ((0, 2), (1, 3), (4, 2), (5, 3))],
    ),
    "fan_in_reads_one_slice": ("cube1", [Op("read", C + f"pe{p}.dma", C + "hbm.slice0", S, p * S) for p in (0, 1, 2, 4)]),
    "fan_in_writes_one_slice": ("cube1", [Op("write", C + f"pe{p}.dma", C + "hbm.slice0", S, p * S) for p in (0, 1, 2, 4)]),
    "crossing_in_one_cube": (
        "cube1",
        [
            Op("send", C + "pe0.ipcq", C + "pe6.ipcq", S),  # r0 -> r2 -> r3
            Op("send", C + "pe2.ipcq", C + "pe4.ipcq", S),  # r1 -> r0 -> r2
            Op("send", C + "pe1.ipcq", C + "pe3.ipcq", S),  # r0 -> r1
        ],
    ),
    "crossing_over_the_mesh": (
        "sip2x2",
        [
            Op("write", "sip0.cube0.pe0.dma", "sip0.cube1.hbm.slice2", S),
            Op("write", "sip0.cube0.pe1.dma", "sip0.cube3.hbm.slice3", S),
            Op("read", "sip0.cube3.pe0.dma", "sip0.cube1.hbm.slice0", S),
            Op("send", "sip0.cube2.pe0.ipcq", "sip0.cube1.pe5.ipcq", S),
        ],
    ),
}

MERGING = {
    "merge_two_writes_onto_ucie": (
        "sip2x2",
        [Op("write", "sip0.cube0.pe0.dma", "sip0.cube1.hbm.slice0", S), Op("write", "sip0.cube0.pe2.dma", "sip0.cube1.hbm.slice2", S)],
    ),
    "merge_two_sends_onto_ucie": (
        "sip2x2",
        [Op("send", "sip0.cube0.pe0.ipcq", "sip0.cube1.pe0.ipcq", S), Op("send", "sip0.cube0.pe2.ipcq", "sip0.cube1.pe2.ipcq", S)],
    ),
    "merge_four_corners_read_the_neighbour": (
        "sip2x2",
        [Op("read", f"sip0.cube0.pe{p}.dma", f"sip0.cube1.hbm.slice{p}", S) for p in (0, 2, 4, 6)],
    ),
}


def errors(request, topo, ops):
    g = request.getfixturevalue(topo)
    fast, oracle = run(g, "fast", ops), run(g, "oracle", ops)
    makespan = max(r.end_ns for r in fast) / max(r.end_ns for r in oracle) - 1.0
    per = [(f.end_ns - o.end_ns) / o.latency_ns for f, o in zip(fast, oracle)]
    return makespan, per


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_fast_agrees_with_oracle_within_stated_tolerance(request, name):
    makespan, per = errors(request, *SCENARIOS[name])
    assert abs(makespan) <= MAKESPAN_TOL, (name, makespan)
    assert max(per) <= LATE_TOL, (name, per)
    assert min(per) >= -EARLY_TOL, (name, per)


@pytest.mark.parametrize(
    "name", ["two_streams_sends", "two_streams_reads", "two_streams_staggered", "four_streams_writes", "four_streams_sends", "fan_in_reads_one_slice"]
)
def test_makespan_is_exact_when_one_shared_edge_is_the_bottleneck(request, name):
    makespan, _ = errors(request, *SCENARIOS[name])
    assert abs(makespan) <= 1e-9


def test_fan_in_reads_to_one_slice_agree_exactly(request):
    _, per = errors(request, *SCENARIOS["fan_in_reads_one_slice"])
    assert max(abs(x) for x in per) <= 1e-9


@pytest.mark.xfail(
    strict=True,
    reason="fast mode reserves a shared edge for a whole train from head to tail; trains "
    "paced by a slower upstream edge that merge onto a faster link are serialized instead "
    "of interleaved (makespan +76.7 % / +85.7 % / +114.8 % vs the oracle)",
)
@pytest.mark.parametrize("name", list(MERGING))
def test_fast_agrees_with_oracle_when_trains_merge_onto_a_faster_link(request, name):
    makespan, per = errors(request, *MERGING[name])
    assert abs(makespan) <= MAKESPAN_TOL, (name, makespan)
    assert max(per) <= LATE_TOL, (name, per)
