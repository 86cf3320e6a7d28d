"""`kernbench topo show --params` and `--yaml`: every parameter with unit and provenance, and the
resolved document, which loads back as the same topology."""

from __future__ import annotations

import json
from types import MappingProxyType

import pytest

from kernbench import cli
from kernbench.topology.compile import load_topology
from kernbench.topology.spec import named_topologies

SET = "sip.ucie.bw_gbps=1024"


def run(argv, capsys):
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def params_json(capsys, *argv):
    code, out, err = run(["topo", "show", *argv, "--params", "--json"], capsys)
    assert code == 0, err
    return {row["key"]: row for row in json.loads(out)}


@pytest.mark.parametrize(
    "key, unit",
    [
        ("flit_bytes", "B"),
        ("cube.hbm.slice_capacity_bytes", "B"),
        ("sip.ucie.bw_gbps", "GB/s"),
        ("cube.links[4].prop_ns", "ns"),
        ("pe.attrs.pe_cost_model.fixed_per_cmd_cycles", "cycles"),
        ("pe.attrs.clock_freq_ghz", "GHz"),
        ("pe.attrs.gemm_tflops", "TFLOP/s"),
        ("pe.attrs.pe_cost_model.byte_cycles_recip", "cycles/B"),
        ("pe.attrs.math_elems_per_cycle", "elements/cycle"),
        ("system.sips", "count"),
        ("cube.hbm.channels_per_slice", "count"),
        ("cube.pes.attach", "router"),
        ("sip.mesh.wrap.x", "on/off"),
    ],
)
def test_params_give_each_key_the_unit_its_suffix_says(key, unit, capsys):
    assert params_json(capsys, "paper")[key]["unit"] == unit


def test_params_list_every_value_once_keyed_as_set_takes_it(capsys):
    rows = params_json(capsys, "paper")
    assert "cube.links[4].prop_ns" in rows and "cube.routers.hub.overhead_ns" in rows
    assert "name" not in rows and "description" not in rows  # the title, not parameters
    assert rows["cube.pes.attach"]["value"] == ["r0", "r0", "r1", "r1", "r2", "r2", "r3", "r3"]
    # the key works as an override as printed
    changed = params_json(capsys, "paper", "--set", "cube.links[4].prop_ns=9")
    assert changed["cube.links[4].prop_ns"]["value"] == 9.0


def test_params_say_hw_and_cal_as_the_comment_on_the_values_line_does(capsys):
    rows = params_json(capsys, "paper")
    assert rows["sip.ucie.bw_gbps"]["source"] == "hw"
    assert rows["sip.ucie.phy_overhead_ns"]["source"] == "cal"
    assert rows["sip.ucie.phy_overhead_ns"]["comment"] == "[cal] UCIe adapter/PHY latency on each side"
    # one comment, two markers: each reaches the key its text names
    host = "system.host.link"
    assert rows[f"{host}.bw_gbps"]["source"] == "hw" and rows[f"{host}.prop_ns"]["source"] == "cal"
    assert rows[f"{host}.prop_ns"]["comment"] == "[hw] bandwidth; [cal] same PCIe latency as the ring"
    # a marker that names another key of its line does not reach this one
    assert rows["cube.routers.r0.half"]["source"] == "unmarked"
    assert rows["cube.hbm.overhead_ns"]["source"] == "unmarked" and rows["cube.hbm.overhead_ns"]["line"] > 0


def test_params_say_default_where_the_schema_filled_the_value_in(capsys):
    rows = params_json(capsys, "paper")
    assert rows["sip.mesh.wrap.x"] == {
        "key": "sip.mesh.wrap.x",
        "value": False,
        "unit": "on/off",
        "source": "default",
        "help": "join the last CUBE column to the first",
    }
    assert rows["cube.routers.hub.half"]["source"] == "default"


def test_params_show_an_override_with_the_value_the_file_had(capsys):
    rows = params_json(capsys, "paper", "--set", SET, "--set", "sip.mesh.wrap.y=true")
    assert rows["sip.ucie.bw_gbps"]["value"] == 1024.0
    assert rows["sip.ucie.bw_gbps"]["source"] == "--set" and rows["sip.ucie.bw_gbps"]["set"] == SET
    assert rows["sip.ucie.bw_gbps"]["was"] == {"value": 512.0, "source": "hw"}
    assert rows["sip.mesh.wrap.y"]["was"] == {"value": False, "source": "default"}
    code, out, _ = run(["topo", "show", "paper", "--params", "--set", SET], capsys)
    assert code == 0
    (row,) = [line for line in out.splitlines() if line.startswith("sip.ucie.bw_gbps ")]
    assert row.split()[1:4] == ["1024", "GB/s", "--set"] and row.endswith(f"--set {SET} · file: 512 (hw)")


def test_params_text_is_one_line_per_parameter_after_a_tally(capsys):
    code, out, _ = run(["topo", "show", "paper", "--params"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("topology paper · ")
    rows = params_json(capsys, "paper")
    tally = {s: sum(r["source"] == s for r in rows.values()) for s in ("hw", "cal", "unmarked", "default")}
    assert lines[1] == f"{len(rows)} parameters: " + ", ".join(f"{n} {s}" for s, n in tally.items())
    keyed = [line.split()[0] for line in lines[5:]]
    assert keyed == list(rows)


# --- --yaml ----------------------------------------------------------------------


def _thaw(obj):
    if isinstance(obj, (dict, MappingProxyType)):
        return {k: _thaw(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_thaw(v) for v in obj]
    return obj


def _graph(g):
    """Everything a compiled graph is, but its name and description."""
    spec = {k: v for k, v in _thaw(g.spec).items() if k not in ("name", "description")}
    nodes = [(n.id, n.kind, n.overhead_ns, _thaw(n.attrs)) for n in g.nodes.values()]
    return spec, nodes, g.edges, g.flit_bytes


def printed_yaml(capsys, tmp_path, name, overrides=()):
    sets = [a for o in overrides for a in ("--set", o)]
    code, out, err = run(["topo", "show", name, "--yaml", *sets], capsys)
    assert code == 0, err
    path = tmp_path / f"{name}.yaml"
    path.write_text(out)
    return path, out


@pytest.mark.parametrize("name", named_topologies())
@pytest.mark.parametrize("overrides", [(), (SET, "cube.links[4].prop_ns=9", "cube.routers.hub.half=1")], ids=["as-shipped", "with-set"])
def test_yaml_loads_back_into_the_same_graph(name, overrides, tmp_path, capsys):
    path, _ = printed_yaml(capsys, tmp_path, name, overrides)
    original = load_topology(name, list(overrides))
    again = load_topology(str(path))
    assert _graph(again) == _graph(original)
    assert (again.name == original.name) is (not overrides)


def test_yaml_keeps_every_value_s_provenance_on_the_way_back(tmp_path, capsys):
    path, text = printed_yaml(capsys, tmp_path, "paper")
    before, after = params_json(capsys, "paper"), params_json(capsys, str(path))
    assert list(after) == list(before)
    for key, row in before.items():
        expected = "unmarked" if row["source"] == "default" else row["source"]  # a default is written out now
        assert (after[key]["value"], after[key]["source"]) == (row["value"], expected), key
    assert "  bw_gbps: 768  # [hw] bandwidth\n" in text and "  prop_ns: 76.88  # [cal] same PCIe latency as the ring\n" in text
    assert "      x: false  # schema default\n" in text
    # printing the printed file again gives the same document
    code, again, _ = run(["topo", "show", str(path), "--yaml"], capsys)
    assert code == 0 and again.split("\n", 1)[1] == text.split("\n", 1)[1]


def test_yaml_name_and_description_say_it_was_changed_only_when_it_was(tmp_path, capsys):
    _, plain = printed_yaml(capsys, tmp_path, "cube1")
    assert "\nname: cube1\n" in plain
    assert '\ndescription: "One CUBE of the paper configuration (8 PEs), for fast tests"\n' in plain
    path, changed = printed_yaml(capsys, tmp_path, "cube1", (SET,))
    assert "\nname: cube1+set\n" in changed
    assert f'\ndescription: "One CUBE of the paper configuration (8 PEs), for fast tests; changed by --set {SET}"\n' in changed
    assert "    bw_gbps: 1024  # --set sip.ucie.bw_gbps; file: 512 (hw)\n" in changed
    # a copy changed again says so once more, with both overrides
    code, out, _ = run(["topo", "show", str(path), "--yaml", "--set", "sip.ucie.prop_ns=4"], capsys)
    assert code == 0 and "\nname: cube1+set\n" in out and f"changed by --set {SET}; changed by --set sip.ucie.prop_ns=4" in out


def test_yaml_header_is_the_command_that_prints_it(capsys):
    import shlex

    code, text, _ = run(["topo", "show", "cube1", "--yaml", "--set", "description=two words", "--set", SET], capsys)
    header = text.splitlines()[0]
    assert code == 0 and header == f"# kernbench topo show cube1 --yaml --set 'description=two words' --set {SET}"
    code, again, _ = run(shlex.split(header.removeprefix("# "))[1:], capsys)
    assert code == 0 and again == text


def test_a_printed_topology_runs_and_shows_like_the_named_one(tmp_path, capsys):
    from kernbench import Runtime

    path, _ = printed_yaml(capsys, tmp_path, "cube1", (SET,))
    code, out, _ = run(["topo", "show", str(path)], capsys)
    assert code == 0 and out.startswith("topology cube1+set · ")
    assert _graph(Runtime(str(path)).graph) == _graph(load_topology("cube1", [SET]))


def test_yaml_quotes_what_yaml_would_read_as_something_else(tmp_path, capsys):
    odd = 'description="1e3: [hw] q #x"'
    path, text = printed_yaml(capsys, tmp_path, "cube1", (odd, "cube.sram.attach=r0"))
    spec = load_topology(str(path)).spec
    assert spec["description"].startswith("1e3: [hw] q #x; changed by --set ")
    header = text.splitlines()[0]
    assert "[hw]" not in header  # a comment carries no marker it does not mean


def test_a_control_character_never_reaches_the_printed_yaml(capsys):
    code, out, err = run(["topo", "show", "cube1", "--yaml", "--set", 'description="a \\e[31m b"'], capsys)
    assert code == 2 and out == ""
    assert "description: holds a control character" in err and "\\x1b" in err and "\x1b" not in err


# --- flags that do not go together ------------------------------------------------


@pytest.mark.parametrize(
    "flags, names",
    [
        (["--params", "--yaml"], ("--params", "--yaml")),
        (["--yaml", "--json"], ("--yaml", "--json")),
        (["--params", "--route", "sip0.cube0.pe0.dma", "sip0.cube0.hbm.slice0"], ("--route", "--params")),
        (["--yaml", "--route", "sip0.cube0.pe0.dma", "sip0.cube0.hbm.slice0"], ("--route", "--yaml")),
    ],
)
def test_flags_that_do_not_go_together_are_one_error_line(flags, names, capsys):
    code, out, err = run(["topo", "show", "cube1", *flags], capsys)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1
    assert all(name in err for name in names)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["topo", "show", "no-such-topology", "--params"], "unknown topology"),
        (["topo", "show", "cube1", "--yaml", "--set", "cube.hbm.channel_bw_gbps=-1"], "cube.hbm.channel_bw_gbps"),
        (["topo", "show", "cube1", "--params", "--set", "cube.links[99].prop_ns=1"], "indexed 0..7"),
        (["topo", "show", "cube1", "--yaml", "--set", "sip.mesh.width=200", "--set", "sip.mesh.height=200"], "the limit is 25,000 nodes"),
    ],
)
def test_params_and_yaml_keep_the_topology_errors(argv, needle, capsys):
    code, _, err = run(argv, capsys)
    assert code == 2 and err.startswith("error: ") and needle in err and "Traceback" not in err


def test_the_transcendental_rate_is_listed_as_an_assumed_default_and_set_reaches_it(capsys):
    row = params_json(capsys, "paper")["pe.attrs.math_transcendental_elems_per_cycle"]
    assert (row["value"], row["unit"], row["source"]) == (16.0, "elements/cycle", "default")
    assert "assumed" in row["help"]
    changed = params_json(capsys, "paper", "--set", "pe.attrs.math_transcendental_elems_per_cycle=32")
    assert changed["pe.attrs.math_transcendental_elems_per_cycle"]["value"] == 32.0
