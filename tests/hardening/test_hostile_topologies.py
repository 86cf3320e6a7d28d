"""§3: hostile or huge topology input costs bounded time and memory and ends in one clear error;
`topo show` and the probe stay fast on the largest topology allowed."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hardening_harness import assert_failed_cleanly, child_env, cpu_scale, invoke, spawn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernbench import cli
from kernbench.errors import TopologyError
from kernbench.topology import yamldoc
from kernbench.topology.compile import MAX_GRAPH_EDGES, MAX_GRAPH_NODES, graph_size, load_topology
from kernbench.topology.spec import load_spec

PAPER = Path(__file__).resolve().parents[2] / "topologies" / "paper.yaml"


def alias_bomb(levels: int, fan: int) -> str:
    text = 'a0: &a0 ["lol", "lol"]\n'
    for i in range(1, levels):
        text += f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]\n"
    return text


def merge_bomb(levels: int) -> str:
    text = "m0: &m0 {k0: 1}\n"
    for i in range(1, levels):
        text += f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}], k{i}: [*m{i - 1}, *m{i - 1}]}}\n"
    return text


HOSTILE = {
    "binary": (lambda: os.urandom(4096), r"not UTF-8 text|invalid YAML"),
    "latin-1": (lambda: "name: caf\xe9\n".encode("latin-1"), r"not UTF-8 text \(byte 0xe9"),
    "NUL bytes": (lambda: b"name: a\x00b\n", r"invalid YAML: line 1: .*#x0000"),
    "alias bomb": (lambda: alias_bomb(12, 9).encode(), r"expands to more than 100,000 values"),
    "wide alias bomb": (lambda: alias_bomb(4, 400).encode(), r"expands to more than 100,000 values"),
    "merge-key bomb": (lambda: merge_bomb(40).encode(), r"expands to more than 100,000 values|deeper than"),
    "merge of a scalar": (lambda: b"name: a\nsub:\n  <<: 3\n", r"sub: '<<' merges mappings only \(line 3, column 7\)"),
    "recursive alias": (lambda: b"a: &a [1, *a]\n", r"expands to more than 100,000 values"),
    "1000-deep flow nesting": (lambda: ("x: " + "[" * 1000 + "]" * 1000).encode(), r"nested deeper than 32 levels"),
    "1000-deep block nesting": (lambda: "".join("  " * i + f"k{i}:\n" for i in range(1000)).encode(), r"nested deeper than 32 levels"),
    "deep via aliases": (
        lambda: "".join(f"a{i}: &a{i} [{'*a' + str(i - 1) if i else 1}]\n" for i in range(200)).encode(),
        r"nests deeper than 32 levels",
    ),
    "over 1 MiB": (lambda: b"# " + b"x" * (2**20) + b"\nname: big\n", r"larger than 1024 KiB"),
    "huge integer": (lambda: b"flit_bytes: " + b"9" * 5000 + b"\n", r"unreadable value|must be <="),
    "not a mapping": (lambda: b"- 1\n- 2\n", r"expected a mapping at the top level"),
    "two documents": (lambda: b"name: a\n---\nname: b\n", r"expected a single document"),
    "python tag": (lambda: b"name: !!python/object/apply:os.system ['true']\n", r"could not determine a constructor"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_file_is_one_bounded_error(tmp_path, capsys, case):
    make, cause = HOSTILE[case]
    path = tmp_path / "t.yaml"
    path.write_bytes(make())
    got = invoke(cli.main, ["topo", "show", str(path)], capsys)
    assert_failed_cleanly(got, 2, cause, max_seconds=5, max_mib=60)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=2000) | st.text(max_size=2000).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_any_bytes_as_a_topology_end_in_a_topology_error(tmp_path, capsys, data):
    path = tmp_path / "t.yaml"
    path.write_bytes(data)
    got = invoke(cli.main, ["topo", "show", str(path)], capsys, trace_memory=False)
    assert_failed_cleanly(got, 2, r"error: .*t\.yaml", max_seconds=5)


@settings(max_examples=60, deadline=None)
@given(levels=st.integers(2, 30), fan=st.integers(1, 30))
def test_aliases_are_bounded_by_their_expanded_size_whatever_the_shape(levels, fan):
    sizes = [3]  # a0: the list and its two strings
    for _ in range(1, levels):
        sizes.append(1 + fan * sizes[-1])
    expanded = 1 + levels + sum(sizes)  # the root mapping, its keys, its values
    depth = 1 + levels
    text = alias_bomb(levels, fan)
    if expanded > yamldoc.MAX_NODES or depth > yamldoc.MAX_DEPTH:
        with pytest.raises(TopologyError, match=r"expands to more than|nests deeper than"):
            yamldoc.load(text, "<t>")
    else:
        doc, _ = yamldoc.load(text, "<t>")
        assert len(doc[f"a{levels - 1}"]) == (2 if levels == 1 else fan)


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/urandom", "/dev/null", "."])
def test_a_device_or_folder_is_not_read(capsys, special):
    got = invoke(cli.main, ["topo", "show", special], capsys)
    assert_failed_cleanly(got, 2, r"not a regular file", max_seconds=2, max_mib=20)


@pytest.mark.parametrize(
    "override, cause",
    [
        (["sip.mesh.width=1000", "sip.mesh.height=1000"], r"sip\.mesh\.width: must be <= 256"),
        (["sip.mesh.width=64", "sip.mesh.height=64"], r"compiles to [\d,]+ nodes and [\d,]+ edges; the limit is 25,000 nodes"),
        (["system.sips=256"], r"compiles to .* the limit is"),
        (["cube.hbm.channels_per_slice=1024"], r"compiles to .* the limit is"),
        (["pe.attrs.composite_tile_bytes=1"], r"composite_tile_bytes: 1 is less than one flit"),
        (["cube.links.0.prop_ns=1e30"], r"prop_ns: must be <= 1e\+06"),
        (["cube.links.0.bw_gbps=1e-30"], r"bw_gbps: must be >= 0.001"),
        (["pe.attrs.clock_freq_ghz=1e30"], r"clock_freq_ghz: must be <= 1000"),
    ],
)
def test_a_huge_machine_or_absurd_value_is_refused_before_compiling(capsys, override, cause):
    argv = ["topo", "show", "paper"] + [x for o in override for x in ("--set", o)]
    got = invoke(cli.main, argv, capsys)
    assert_failed_cleanly(got, 2, cause, max_seconds=3, max_mib=40)


def test_the_size_estimate_is_exact_for_the_shipped_topologies():
    for name in ("cube1", "sip2x2", "paper"):
        graph = load_topology(name)
        assert graph_size(graph.spec) == (len(graph.nodes), len(graph.edges))


@settings(max_examples=25, deadline=None)
@given(sips=st.integers(1, 3), w=st.integers(1, 3), h=st.integers(1, 3), channels=st.integers(1, 4), host=st.booleans(), sram=st.booleans())
def test_the_size_estimate_is_exact_for_any_shape(sips, w, h, channels, host, sram):
    sets = [f"system.sips={sips}", f"sip.mesh.width={w}", f"sip.mesh.height={h}", f"cube.hbm.channels_per_slice={channels}"]
    sets += [] if host else ["system.host=null"]
    sets += [] if sram else ["cube.sram=null"]
    graph = load_topology("paper", sets)
    assert graph_size(graph.spec) == (len(graph.nodes), len(graph.edges))


def largest_allowed_mesh() -> int:
    side = 1
    while True:
        nodes, edges = graph_size(load_spec("paper", [f"sip.mesh.width={side + 1}", f"sip.mesh.height={side + 1}"]))
        if nodes > MAX_GRAPH_NODES or edges > MAX_GRAPH_EDGES:
            return side
        side += 1


@pytest.mark.slow
def test_topo_show_and_the_probe_are_fast_on_the_largest_allowed_topology(tmp_path):
    side = largest_allowed_mesh()
    assert side >= 8
    text = PAPER.read_text().replace("mesh: {width: 4, height: 4}", f"mesh: {{width: {side}, height: {side}}}")
    path = tmp_path / "largest.yaml"
    path.write_text(re.sub(r"^name: paper", "name: largest", text, flags=re.M))
    show = spawn("kernbench.cli", ["topo", "show", str(path)], cwd=tmp_path, env=child_env())
    assert show.status == 0 and f"{side} × {side}" in show.out, show.err
    assert show.cpu_seconds < 10 * cpu_scale() and show.peak_mib < 600
    probe = spawn("kernbench_probes.dma", ["--topology", str(path), "--json"], cwd=tmp_path, env=child_env())
    assert probe.status == 0, probe.err
    assert probe.cpu_seconds < 20 * cpu_scale() and probe.peak_mib < 800
