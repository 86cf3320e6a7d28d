"""Loading a topology validates everything and reports every problem at once,
each with its YAML key path and the offending value (issue 2, section 2)."""

from __future__ import annotations

import copy
import re

import pytest
import yaml

from kernbench.errors import TopologyError
from kernbench.topology.compile import load_topology
from kernbench.topology.spec import apply_overrides, load_spec, named_topologies, topology_dir


@pytest.fixture(scope="module")
def cube1_doc() -> dict:
    return yaml.safe_load((topology_dir() / "cube1.yaml").read_text())


@pytest.fixture
def write_doc(tmp_path, cube1_doc):
    """Write a mutated copy of cube1.yaml; return its path."""

    def write(mutate) -> str:
        doc = copy.deepcopy(cube1_doc)
        mutate(doc)
        path = tmp_path / "topo.yaml"
        path.write_text(yaml.safe_dump(doc))
        return str(path)

    return write


def problems_of(path_or_name, overrides=None) -> list[str]:
    with pytest.raises(TopologyError) as info:
        load_spec(path_or_name, overrides)
    return info.value.problems


def only(problems: list[str], path: str) -> str:
    hits = [p for p in problems if p.startswith(path + ":") or p.startswith(path + " ")]
    assert len(hits) == 1, (path, problems)
    return hits[0]


# --- named topologies ----------------------------------------------------


def test_named_topologies_ship_as_package_resources():
    names = named_topologies()
    assert {"paper", "cube1", "sip2x2"} <= set(names)
    for name in ("paper", "cube1", "sip2x2"):
        assert (topology_dir() / f"{name}.yaml").is_file()


def test_every_shipped_topology_loads_cleanly():
    for name in named_topologies():
        assert load_spec(name)["name"] == name


def test_unknown_named_topology_lists_the_known_ones():
    (p,) = problems_of("no_such_topo")
    assert "'no_such_topo'" in p and "paper" in p and "cube1" in p


def test_one_problem_is_one_line_naming_where(tmp_path):
    with pytest.raises(TopologyError) as info:
        load_spec("no_such_topo")
    assert str(info.value) == f"unknown topology 'no_such_topo'; named topologies: {', '.join(named_topologies())} (or a YAML file's path)"
    with pytest.raises(TopologyError) as info:
        load_spec("cube1", ["sip.mesh.widht=2"])
    assert "\n" not in str(info.value) and str(info.value).startswith(f"{topology_dir() / 'cube1.yaml'}: sip.mesh.widht: unknown key")


def test_missing_yaml_file_is_reported_not_raised_from_deep_inside(tmp_path):
    (p,) = problems_of(str(tmp_path / "absent.yaml"))
    assert "file not found" in p and "absent.yaml" in p


# --- each problem kind, with key path and value ----------------------------


def test_unknown_key_suggests_the_closest_known_key(write_doc):
    path = write_doc(lambda d: d["cube"]["routers"]["r0"].update(overhed_ns=3))
    p = only(problems_of(path), "cube.routers.r0.overhed_ns")
    assert "unknown key" in p and "did you mean 'overhead_ns'" in p


def test_unknown_top_level_key_suggests_too(write_doc):
    path = write_doc(lambda d: d.update(flit_byte=256))
    p = only(problems_of(path), "flit_byte")
    assert "did you mean 'flit_bytes'" in p


def test_wrong_type_names_expected_type_and_value(write_doc):
    path = write_doc(lambda d: d["sip"]["mesh"].update(width="two"))
    p = only(problems_of(path), "sip.mesh.width")
    assert "expected integer" in p and "'two'" in p


def test_boolean_is_not_accepted_as_a_number(write_doc):
    path = write_doc(lambda d: d["cube"]["pes"]["link"].update(bw_gbps=True))
    p = only(problems_of(path), "cube.pes.link.bw_gbps")
    assert "expected number" in p and "True" in p


def test_non_positive_bandwidth_is_rejected(write_doc):
    path = write_doc(lambda d: d["cube"]["links"][2].update(bw_gbps=0))
    p = only(problems_of(path), "cube.links[2].bw_gbps")
    assert "must be >= 0.001" in p and "got 0" in p


def test_negative_delay_is_rejected(write_doc):
    path = write_doc(lambda d: d["cube"]["links"][1].update(prop_ns=-0.5))
    p = only(problems_of(path), "cube.links[1].prop_ns")
    assert "must be >= 0" in p and "-0.5" in p


def test_missing_required_key_is_reported(write_doc):
    path = write_doc(lambda d: d["cube"]["links"][0].pop("bw_gbps"))
    p = only(problems_of(path), "cube.links[0].bw_gbps")
    assert "required key is missing" in p


def test_dangling_router_reference_suggests_a_router(write_doc):
    path = write_doc(lambda d: d["cube"]["links"][0].update(b="r22"))
    p = only(problems_of(path), "cube.links[0].b")
    assert "'r22' is not a router" in p and "did you mean 'r2'" in p


def test_attach_list_with_wrong_count_is_reported(write_doc):
    path = write_doc(lambda d: d["cube"]["hbm"]["attach"].pop())
    p = only(problems_of(path), "cube.hbm.attach")
    assert "lists 7 router(s)" in p and "count is 8" in p


def test_cube_template_with_an_unreachable_router_is_reported(write_doc):
    def isolate_r3(d):
        d["cube"]["links"] = [link for link in d["cube"]["links"] if "r3" not in (link["a"], link["b"])]

    problems = problems_of(write_doc(isolate_r3))
    assert len(problems) == 1
    (p,) = problems
    assert p.startswith("cube: no route between") and "'r3'" in p and "pe6" in p


def test_all_problems_are_reported_at_once(write_doc):
    def break_many(d):
        d["cube"]["routers"]["r0"]["overhed_ns"] = 1
        d["sip"]["mesh"]["width"] = "two"
        d["cube"]["links"][2]["bw_gbps"] = -1
        d["cube"]["links"][1]["prop_ns"] = -3
        d["system"]["host"]["link"]["bw_gbps"] = 0

    with pytest.raises(TopologyError) as info:
        load_spec(write_doc(break_many))
    err = info.value
    assert len(err.problems) == 5
    for path in (
        "cube.routers.r0.overhed_ns",
        "sip.mesh.width",
        "cube.links[2].bw_gbps",
        "cube.links[1].prop_ns",
        "system.host.link.bw_gbps",
    ):
        only(err.problems, path)
        assert path in str(err)
    assert "5 problems\n  - " in str(err) and err.source.endswith("topo.yaml")


def test_all_cross_reference_problems_are_reported_at_once(write_doc):
    def break_refs(d):
        d["cube"]["links"][0]["a"] = "rX"
        d["cube"]["pes"]["attach"] = d["cube"]["pes"]["attach"][:6]
        d["cube"]["sram"]["attach"] = "hbu"

    problems = problems_of(write_doc(break_refs))
    only(problems, "cube.links[0].a")
    only(problems, "cube.pes.attach")
    assert "did you mean 'hub'" in only(problems, "cube.sram.attach")


# --- the file itself ---------------------------------------------------------


def test_invalid_yaml_reports_line_and_column(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nsystem:\n  sips: [1, 2\n  host: {}\n")
    (p,) = problems_of(str(path))
    assert p.startswith("invalid YAML: line ") and "column" in p


def test_yaml_that_is_not_a_mapping_is_rejected(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n")
    (p,) = problems_of(str(path))
    assert "expected a mapping at the top level" in p and "list" in p


def test_yaml_tags_that_build_python_objects_are_refused(tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text("name: !!python/object/apply:os.system ['true']\n")
    (p,) = problems_of(str(path))
    assert p.startswith("invalid YAML")


# --- --set overrides ----------------------------------------------------------


def test_override_changes_the_compiled_graph():
    g = load_topology("cube1", overrides=["cube.links.0.bw_gbps=64", "cube.routers.r0.overhead_ns=5"])
    assert g.edge("sip0.cube0.r0", "sip0.cube0.r2").bw_gbps == 64.0
    assert g.node("sip0.cube0.r0").overhead_ns == 5.0
    base = load_topology("cube1")
    assert base.edge("sip0.cube0.r0", "sip0.cube0.r2").bw_gbps == 256.0


def test_apply_overrides_does_not_touch_the_original(cube1_doc):
    doc = apply_overrides(cube1_doc, ["sip.mesh.width=2", "cube.pes.link.prop_ns=1.5"])
    assert doc["sip"]["mesh"]["width"] == 2 and doc["cube"]["pes"]["link"]["prop_ns"] == 1.5
    assert cube1_doc["sip"]["mesh"]["width"] == 1


def test_override_of_unknown_key_path_suggests_the_right_one():
    p = only(problems_of("cube1", ["sip.mesh.widht=2"]), "sip.mesh.widht")
    assert "did you mean 'width'" in p


def test_override_with_invalid_value_is_reported_with_its_path():
    p = only(problems_of("cube1", ["cube.hbm.channel_bw_gbps=-4"]), "cube.hbm.channel_bw_gbps")
    assert "must be >= 0.001" in p and "-4" in p


def test_override_into_a_scalar_is_reported():
    (p,) = problems_of("cube1", ["flit_bytes.size=1"])
    assert "flit_bytes is a value, not a section" in p


def test_override_without_equals_sign_is_reported():
    (p,) = problems_of("cube1", ["flit_bytes"])
    assert "KEY.PATH=VALUE" in p


@pytest.mark.parametrize(
    "override, message",
    [
        ("cube.links.99.prop_ns=1", "cube.links.99: a list of 8 item(s) is indexed 0..7"),
        ("cube.links.x.prop_ns=1", "cube.links.x: a list of 8 item(s)"),
        ("name.foo=1", "name is a value, not a section"),
    ],
)
def test_an_override_path_through_a_list_or_a_value_is_a_topology_error(override, message):
    with pytest.raises(TopologyError, match=re.escape(message)):
        load_topology("cube1", overrides=[override])


def test_an_override_can_address_a_list_item_by_index():
    g = load_topology("cube1", overrides=["cube.links.0.prop_ns=3"])
    assert g.edge("sip0.cube0.r0", "sip0.cube0.r2").prop_ns == 3.0


def test_an_override_takes_a_list_index_as_errors_print_it():
    g = load_topology("cube1", overrides=["cube.links[0].prop_ns=3", "cube.pes.attach[1]=r0"])
    assert g.edge("sip0.cube0.r0", "sip0.cube0.r2").prop_ns == 3.0
    with pytest.raises(TopologyError, match=re.escape("cube.links.99: a list of 8 item(s) is indexed 0..7")):
        load_topology("cube1", overrides=["cube.links[99].prop_ns=1"])
