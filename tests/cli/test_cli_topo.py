"""`kernbench topo show|list` and the dispatcher's error handling."""

import importlib

import pytest

from kernbench import cli


def run(argv, capsys):
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_every_registered_command_offers_add_parser_and_run():
    for name in cli.COMMANDS:
        module = importlib.import_module(name)
        assert callable(module.add_parser) and callable(module.run)


def test_no_command_is_one_error_line_naming_the_commands(capsys):
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: kernbench: ") and "COMMAND" in err and "usage:" not in err


def test_topo_show_paper_summarizes_hierarchy_bandwidths_and_counts(capsys):
    code, out, _ = run(["topo", "show"], capsys)
    assert code == 0
    assert "topology paper" in out
    assert "2 × 16 × 8 = 256 PEs" in out
    assert "4 × 4 (XY routing over UCIe)" in out
    assert "2048 GB/s per direction (4 links across the x mid-plane)" in out
    assert "768 GB/s per direction" in out
    assert "8 pseudo-channels × 32 GB/s = 256 GB/s" in out
    assert "32 CUBE(s), 65536 GB/s" in out
    lines = {tuple(line.split()[:2]) for line in out.splitlines()}
    assert ("hbm_slice", "256") in lines and ("router", "160") in lines and ("ucie_phy", "96") in lines


def test_topo_show_example_route_lists_hops_and_header_latency(capsys, paper):
    code, out, _ = run(["topo", "show", "paper", "--route", "sip0.cube0.pe0.dma", "sip0.cube1.hbm.slice0"], capsys)
    assert code == 0
    route = paper.route("sip0.cube0.pe0.dma", "sip0.cube1.hbm.slice0")
    assert f"{len(route)} hops" in out
    for hop in route.hops:
        assert hop.edge.id in out
    assert f"header latency (zero-payload packet: overheads + propagation) {route.header_ns:.3f} ns" in out


def test_topo_show_one_cube_says_there_is_no_mesh_or_ring(capsys):
    code, out, _ = run(["topo", "show", "cube1"], capsys)
    assert code == 0
    assert "1 × 1 × 8 = 8 PEs" in out
    assert "no UCIe links" in out and "no ring" in out


def test_topo_show_applies_overrides(capsys):
    code, out, _ = run(["topo", "show", "cube1", "--set", "cube.hbm.channel_bw_gbps=16"], capsys)
    assert code == 0
    assert "8 pseudo-channels × 16 GB/s = 128 GB/s" in out


def test_topo_list_names_the_shipped_topologies(capsys):
    code, out, _ = run(["topo", "list"], capsys)
    assert code == 0
    for name in ("paper", "cube1", "sip2x2"):
        assert name in out


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["topo", "show", "no-such-topology"], "unknown topology"),
        (["topo", "show", "cube1", "--set", "cube.hbm.channel_bw_gbps=-1"], "cube.hbm.channel_bw_gbps"),
        (["topo", "show", "cube1", "--route", "sip0.cube0.pe0.dma", "nowhere"], "unknown node"),
    ],
)
def test_user_errors_print_one_clean_message_and_exit_2(argv, needle, capsys):
    code, _, err = run(argv, capsys)
    assert code == 2
    assert err.startswith("error: ") and needle in err
    assert "Traceback" not in err


def test_bad_topology_file_reports_every_problem_with_its_key(tmp_path, capsys):
    bad = tmp_path / "broken.yaml"
    bad.write_text("name: broken\nflit_bytes: zero\ncube: {routerz: {}}\n")
    code, _, err = run(["topo", "show", str(bad)], capsys)
    assert code == 2
    assert err.startswith("error: ") and "flit_bytes" in err and "routerz" in err
