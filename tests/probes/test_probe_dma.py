"""The hop-distance DMA probe against the paper's Table "probe-pe-dma"."""

import json

import pytest

from kernbench_probes.breakdown import with_queueing
from kernbench_probes.dma import breakdowns, main, run_probe
from kernbench_probes.render import render_text
from kernbench_probes.results import PAPER_REFERENCE

KIB32, MIB1 = 32 * 2**10, 2**20


@pytest.fixture(scope="module")
def paper_probe(paper):
    return run_probe(paper)


@pytest.mark.parametrize("case", sorted(PAPER_REFERENCE))
def test_paper_32kib_latency_within_a_tenth_of_a_ns_of_the_paper(paper_probe, case):
    want = PAPER_REFERENCE[case][0]
    got = paper_probe.row(case).latency_ns[KIB32]
    assert abs(got - want) <= 0.1
    assert abs(got - want) <= 0.01 * want


@pytest.mark.parametrize("case", sorted(PAPER_REFERENCE))
def test_paper_32kib_util_within_one_point(paper_probe, case):
    want = PAPER_REFERENCE[case][1]["32KiB"]
    assert abs(paper_probe.row(case).util_pct[KIB32] - want) <= 1.0


@pytest.mark.parametrize("case", sorted(PAPER_REFERENCE))
def test_paper_1mib_util_within_three_points(paper_probe, case):
    want = PAPER_REFERENCE[case][1]["1MiB"]
    assert abs(paper_probe.row(case).util_pct[MIB1] - want) <= 3.0


def test_util_is_achieved_bandwidth_over_the_data_paths_bottleneck(paper_probe, paper):
    row = paper_probe.row("cross-cube-best")
    data_path = paper.route(row.case.memory, row.case.initiator)
    assert row.bottleneck_gbps == data_path.bottleneck_gbps == 128
    assert row.util_pct[KIB32] == pytest.approx(100 * KIB32 / row.latency_ns[KIB32] / 128)


def test_cases_come_from_the_topology_structure(paper_probe, paper):
    rows = {r.case.key: r.case for r in paper_probe.rows}
    assert rows["local"].memory == "sip0.cube0.hbm.slice0"

    def router(node_id):
        return next(paper.nodes[s] for s in paper.successors[node_id] if paper.nodes[s].kind == "router")

    home = router("sip0.cube0.pe0.dma")
    same, cross = router(rows["same-half"].memory), router(rows["cross-half"].memory)
    assert same.id != home.id and same.attrs["half"] == home.attrs["half"]
    assert cross.attrs["half"] != home.attrs["half"]
    assert rows["cross-cube-best"].memory.startswith("sip0.") and not rows["cross-cube-best"].memory.startswith("sip0.cube0.")
    # The farthest slice sits on the other SIP, across the PCIe ring.
    assert rows["cross-cube-worst"].memory.startswith("sip1.")
    assert rows["h2d-write"].op == "write" and rows["h2d-write"].initiator == "host"
    assert rows["d2h-read"].op == "read" and rows["d2h-read"].initiator == "host"


def test_worst_remote_slice_is_the_maximum_over_all_remote_slices(paper_probe, paper):
    from kernbench_probes.cases import simulate

    worst = paper_probe.row("cross-cube-worst").latency_ns[KIB32]
    best = paper_probe.row("cross-cube-best").latency_ns[KIB32]
    for node in ("sip1.cube15.hbm.slice7", "sip1.cube5.hbm.slice3", "sip0.cube15.hbm.slice6", "sip0.cube4.hbm.slice1"):
        lat = simulate(paper, "read", "sip0.cube0.pe0.dma", node, KIB32)
        assert best <= lat <= worst


@pytest.mark.parametrize("topology", ["paper", "cube1", "sip2x2"])
def test_invariants_pass(topology, request):
    result = run_probe(request.getfixturevalue(topology))
    assert result.passed
    verdicts = {v.name: v.ok for v in result.invariants}
    assert verdicts["latency monotonic in hop distance"] is True
    assert verdicts["D2H read >= H2D write"] is True


def test_one_cube_has_no_cross_cube_rows_and_skips_that_invariant(cube1):
    result = run_probe(cube1)
    assert [r.case.key for r in result.rows] == ["local", "same-half", "cross-half", "h2d-write", "d2h-read"]
    assert {v.name: v.ok for v in result.invariants}["cross-CUBE best < worst"] is None


@pytest.mark.parametrize("topology", ["paper", "cube1", "sip2x2"])
@pytest.mark.parametrize("size", [KIB32, MIB1, 1000])
def test_breakdown_adds_up_to_the_latency_with_zero_queueing_when_idle(topology, size, request):
    graph = request.getfixturevalue(topology)
    result = run_probe(graph, sizes=(size,))
    for row in result.rows:
        charges = with_queueing(graph, row.case, size, row.latency_ns[size])
        assert charges[-1].what == "queueing" and charges[-1].ns == 0.0
        assert sum(c.ns for c in charges) == pytest.approx(row.latency_ns[size], abs=1e-9)
        kinds = {c.what for c in charges}
        assert {"serialize", "drain", "train", "overhead"} <= kinds


def test_breakdown_closes_when_channels_are_slower_than_the_train(cube1):
    from kernbench.topology.compile import load_topology

    graph = load_topology("cube1", ["cube.hbm.channel_bw_gbps=8"])
    result = run_probe(graph, sizes=(KIB32,))
    for row in result.rows:
        assert with_queueing(graph, row.case, KIB32, row.latency_ns[KIB32])[-1].ns == 0.0


def test_json_has_exactly_the_documented_shape(capsys):
    assert main(["--topology", "sip2x2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"topology", "timing", "source", "sizes", "rows", "invariants"}
    assert doc["topology"] == "sip2x2" and doc["sizes"] == ["32KiB", "1MiB"] and doc["timing"] == "fast"
    for row in doc["rows"]:
        assert set(row) == {"case", "target", "latency_ns", "util_pct"}
        assert set(row["util_pct"]) == set(row["latency_ns"]) == {"32KiB", "1MiB"}
        assert row["latency_ns"]["1MiB"] > row["latency_ns"]["32KiB"] > 0
    assert [r["case"] for r in doc["rows"]][:5] == ["local", "same-half", "cross-half", "cross-cube-best", "cross-cube-worst"]
    for inv in doc["invariants"]:
        assert set(inv) == {"name", "ok", "detail"}
    assert all(inv["ok"] for inv in doc["invariants"])


def test_sizes_option_sets_the_util_columns(capsys):
    assert main(["--topology", "cube1", "--json", "--sizes", "4KiB,256B,2MiB"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc["rows"][0]["util_pct"]) == ["4KiB", "256B", "2MiB"]


def test_a_failed_invariant_exits_1(capsys):
    # A long wire inside the west half makes same-half slower than cross-half.
    assert main(["--topology", "cube1", "--set", "cube.links.0.prop_ns=50"]) == 1
    assert "FAIL  latency monotonic in hop distance" in capsys.readouterr().out


def test_bad_topology_file_is_reported_cleanly_with_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nflit_bytes: -3\nsystem: {sips: 1, nonsense: 2}\n")
    assert main(["--topology", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert "flit_bytes" in err and "nonsense" in err
    assert "Traceback" not in err


def test_unknown_source_pe_is_a_clean_error(capsys):
    assert main(["--topology", "cube1", "--source", "sip0.cube0.pe99"]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_bad_size_is_one_error_line(capsys):
    assert main(["--sizes", "12 parsecs"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: kernbench-tui probe: argument --sizes: bad size '12 parsecs'") and err.count("\n") == 1


def test_breakdown_flag_prints_where_the_time_went_closing_to_the_latency(capsys):
    assert main(["--topology", "cube1", "--breakdown"]) == 0
    out = capsys.readouterr().out
    assert "PE → local HBM (read 32KiB): where the time went" in out
    assert out.count("simulated − charges       0.000") == 5
    assert "hbm channel drain" in out and "node overhead" in out


@pytest.mark.parametrize("topology", ["paper", "sip2x2"])
@pytest.mark.parametrize("timing", ["fast", "oracle"])
def test_simulated_parts_tile_the_latency_and_agree_with_the_graphs_charges(topology, timing, request):
    """The parts `--explain` uses add up to each idle transfer's latency; their overhead and
    propagation are exactly the graph's (the last flit crosses every node and edge once), and
    nothing queues behind another transfer on an idle machine."""
    graph = request.getfixturevalue(topology)
    result = run_probe(graph, sizes=(KIB32,), mode=timing)
    for key, b in breakdowns(graph, result).items():
        latency = result.row(key).latency_ns[KIB32]
        assert sum(p.ns for p in b.parts) == pytest.approx(latency, abs=1e-9), key
        assert all(p.end >= p.start for p in b.parts) and b.parts[0].start == 0.0
        assert all(a.end == pytest.approx(z.start, abs=1e-12) for a, z in zip(b.parts, b.parts[1:], strict=False)), key
        by = b.by_cause()
        for cause, what in (("node overhead", "overhead"), ("propagation", "propagation")):
            graph_ns = sum(c.ns for c in b.charges if c.what == what)
            assert by.get(cause, 0.0) == pytest.approx(graph_ns, abs=1e-9), (key, cause)
        assert "queueing" not in by


def test_json_with_breakdown_gives_each_row_its_parts(capsys):
    assert main(["--topology", "cube1", "--json", "--breakdown"]) == 0
    doc = json.loads(capsys.readouterr().out)
    for row in doc["rows"]:
        b = row["breakdown"]
        assert set(b) == {"by_cause", "parts", "graph_charges_ns", "queueing_ns"}
        assert sum(b["by_cause"].values()) == pytest.approx(row["latency_ns"]["32KiB"], abs=1e-6)
        assert sum(p["ns"] for p in b["parts"]) == pytest.approx(row["latency_ns"]["32KiB"], abs=1e-6)
        assert b["queueing_ns"] == 0.0


@pytest.mark.parametrize("topology", ["cube1", "paper"])
def test_rendered_table_snapshot(topology, request, snapshot):
    from pathlib import Path

    snapshot.snapshot_dir = Path(__file__).resolve().parents[2] / "snapshots" / "probes"
    text = render_text(run_probe(request.getfixturevalue(topology)))
    snapshot.assert_match(text, f"dma_{topology}.txt")


def test_the_oracle_gives_the_same_table(capsys):
    assert main(["--topology", "sip2x2", "--json", "--sizes", "32KiB"]) == 0
    fast = json.loads(capsys.readouterr().out)
    assert main(["--topology", "sip2x2", "--json", "--sizes", "32KiB", "--timing", "oracle"]) == 0
    oracle = json.loads(capsys.readouterr().out)
    assert oracle["timing"] == "oracle"
    for f, o in zip(fast["rows"], oracle["rows"], strict=True):
        assert f["case"] == o["case"]
        assert abs(f["latency_ns"]["32KiB"] - o["latency_ns"]["32KiB"]) <= 1e-6
