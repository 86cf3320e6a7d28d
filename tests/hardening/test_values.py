"""§2: every number is finite and in its field's range, every spelling of a number reads, duplicate keys
and emptied sections are refused, and each problem says where it is (key path and line, or the --set)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from hardening_harness import assert_failed_cleanly, invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernbench import cli
from kernbench.errors import TopologyError
from kernbench.topology.schema import Field, MapOf, Section
from kernbench.topology.spec import TOPOLOGY_SCHEMA, load_spec
from kernbench_probes import dma

CUBE1 = Path(__file__).resolve().parents[2] / "topologies" / "cube1.yaml"


def numeric_fields(schema=TOPOLOGY_SCHEMA, path=""):
    """(override path, Field) of every number the shipped cube1 topology has."""
    if isinstance(schema, dict):
        schema = Section(schema)
    if isinstance(schema, Section):
        for key, sub in schema.fields.items():
            yield from numeric_fields(sub, f"{path}.{key}" if path else key)
    elif isinstance(schema, MapOf):
        yield from numeric_fields(schema.value, f"{path}.r0")
    elif isinstance(schema, Field) and schema.kind in (int, float):
        yield path, schema


SPEC = load_spec("cube1")


def present(path: str) -> bool:
    node = SPEC
    for part in path.split("."):
        if not isinstance(node, dict) or node.get(part) is None:
            return False
        node = node[part]
    return True


FIELDS = sorted((p, f) for p, f in numeric_fields() if present(p))
INF = float("inf")
NASTY = {
    ".inf": INF,
    "-.inf": -INF,
    ".nan": float("nan"),
    ".NaN": float("nan"),
    "1e30": 1e30,
    "-1e30": -1e30,
    "1e-30": 1e-30,
    "-1": -1.0,
    "0": 0.0,
    "1e400": INF,
    "1" + "0" * 400: 1e400,
    "1.5": 1.5,
    "2.0": 2.0,
}


def test_the_corpus_covers_every_number_of_the_topology():
    assert len(FIELDS) >= 40
    assert all(f.check is not None for _, f in FIELDS), [p for p, f in FIELDS if f.check is None]


@pytest.fixture(scope="module")
def cube1_parsed_once():
    """``yamldoc.load`` remembering what it made of each text: the 300 examples below parse the same
    cube1.yaml (a pure-Python YAML parse, ~30 ms, most of an example's time) and their own --set value;
    each gets a fresh copy, so what the command does with it is as without."""
    from kernbench.topology import yamldoc

    real, seen = yamldoc.load, {}

    def load(text, source):
        if (text, source) not in seen:
            seen[text, source] = real(text, source)
        return copy.deepcopy(seen[text, source])

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(yamldoc, "load", load)
        yield


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(FIELDS), text=st.sampled_from(sorted(NASTY)))
def test_a_number_outside_its_range_is_refused_naming_its_path_and_its_override(capsys, cube1_parsed_once, field, text):
    path, f = field
    got = invoke(cli.main, ["topo", "show", "cube1", "--set", f"{path}={text}"], capsys, trace_memory=False)
    value = NASTY[text]
    finite = value == value and abs(value) != INF
    ok_type = f.kind is float or (finite and value.is_integer())
    if finite and ok_type and f.check(f.kind(value)) is None:
        if got.status != 0:  # a valid value may still break a rule between fields; then that rule is named
            assert_failed_cleanly(got, 2, r"^error: \S*cube1\.yaml: (\d+ problems\n  - )?\S+: ")  # the file, then the rule's key path
        return
    cause = re.escape(path) + r": (must be a finite number|must be [<>]=|expected integer|unreadable value)"
    assert_failed_cleanly(got, 2, cause + r".*\(from --set " + re.escape(f"{path}={text}") + r"\)", max_seconds=5)


@pytest.mark.parametrize("text", ["1000", "1e3", "1E3", "1.0e3", "1.0E+3", "+1e3", "1000.0", "1_000", "0x3E8", "0o1750", "10e2"])
def test_every_yaml_and_json_spelling_of_a_number_reads(text):
    spec = load_spec("cube1", [f"pe.attrs.cpu_overhead_ns={text}", f"pe.attrs.sched_queue_depth={text}"])
    assert spec["pe"]["attrs"]["cpu_overhead_ns"] == 1000.0
    assert spec["pe"]["attrs"]["sched_queue_depth"] == 1000 and isinstance(spec["pe"]["attrs"]["sched_queue_depth"], int)


SECTIONS = ["system", "sip", "sip.mesh", "cube", "cube.pes", "cube.hbm", "pe", "pe.attrs", "pe.attrs.pe_cost_model", "sip.ucie"]


@pytest.mark.parametrize("section", SECTIONS)
def test_null_cannot_empty_a_section(capsys, section):
    got = invoke(cli.main, ["topo", "show", "cube1", "--set", f"{section}=null"], capsys)
    assert_failed_cleanly(got, 2, re.escape(section) + r": expected a mapping, got null", max_seconds=5)


@pytest.mark.parametrize("section", ["cube.sram", "cube.m_cpu", "system.host"])
def test_null_leaves_out_an_optional_section(section):
    spec = load_spec("cube1", [f"{section}=null"])
    node = spec
    for part in section.split("."):
        node = node[part]
    assert node is None


KEY_LINES = [i for i, line in enumerate(CUBE1.read_text().splitlines()) if re.match(r"^\s*[a-z_]+:\s*[^\s#{\[]", line)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=st.sampled_from(KEY_LINES))
def test_a_duplicate_key_is_refused_with_both_lines(tmp_path, capsys, index):
    lines = CUBE1.read_text().splitlines()
    lines.insert(index + 1, lines[index])
    path = tmp_path / "dup.yaml"
    path.write_text("\n".join(lines) + "\n")
    key = lines[index].split(":")[0].strip()
    column = len(lines[index]) - len(lines[index].lstrip()) + 1
    got = invoke(cli.main, ["topo", "show", str(path)], capsys, trace_memory=False)  # (memory: below)
    assert_failed_cleanly(got, 2, rf"{key}: duplicate key \(line {index + 2}, column {column}; first at line {index + 1}\)", max_seconds=5)


NUMBER_LINES = [i for i, line in enumerate(CUBE1.read_text().splitlines()) if re.match(r"^\s*[a-z_]+:\s*-?[0-9.]+\s*(#.*)?$", line)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=st.sampled_from(NUMBER_LINES), bad=st.sampled_from(["oops", "[1, 2]", "{a: 1}", "true", "null", ".inf"]))
def test_a_wrong_value_in_a_file_is_reported_with_its_line_and_column(tmp_path, capsys, index, bad):
    lines = CUBE1.read_text().splitlines()
    key, _ = lines[index].split(":", 1)
    lines[index] = f"{key}: {bad}"
    path = tmp_path / "bad.yaml"
    path.write_text("\n".join(lines) + "\n")
    got = invoke(cli.main, ["topo", "show", str(path)], capsys, trace_memory=False)  # (memory: below)
    assert_failed_cleanly(got, 2, rf"\.?{key.strip()}: .*\(line {index + 1}, column {len(key) - len(key.lstrip()) + 1}\)", max_seconds=5)


@pytest.mark.parametrize("change", ["a duplicate key", "a wrong value"])
def test_a_file_problem_costs_bounded_memory(tmp_path, capsys, change):
    """The two tests above trace no memory (tracemalloc made each of their 60 examples 5× slower, 11-16 s
    a test); the allocation of such a file's error is the same whichever line it is: one, traced."""
    lines = CUBE1.read_text().splitlines()
    if change == "a duplicate key":
        lines.insert(KEY_LINES[0] + 1, lines[KEY_LINES[0]])
    else:
        key, _ = lines[NUMBER_LINES[0]].split(":", 1)
        lines[NUMBER_LINES[0]] = f"{key}: oops"
    path = tmp_path / "bad.yaml"
    path.write_text("\n".join(lines) + "\n")
    got = invoke(cli.main, ["topo", "show", str(path)], capsys)
    assert_failed_cleanly(got, 2, r"\(line \d+, column \d+", max_seconds=5, max_mib=20)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    overhead=st.floats(0, 1e3),
    bw=st.floats(1, 1e4),
    recip=st.floats(0, 1),
)
def test_json_output_is_strict_json_for_any_accepted_values(capsys, overhead, bw, recip):
    got = invoke(
        cli.main,
        [
            "run",
            "gemm-composite",
            "--json",
            "--set",
            f"pe.attrs.cpu_overhead_ns={overhead!r}",
            "--set",
            f"cube.hbm.channel_bw_gbps={bw!r}",
            "--set",
            f"pe.attrs.pe_cost_model.byte_cycles_recip={recip!r}",
        ],
        capsys,
        trace_memory=False,
    )
    assert got.status == 0, got.err

    def refuse(name):
        raise AssertionError(f"{name} is not JSON")

    doc = json.loads(got.out, parse_constant=refuse)
    assert doc["latency_ns"] > 0


@pytest.mark.parametrize("text", [".inf", ".nan", "1e30"])
def test_the_probe_refuses_an_absurd_topology_instead_of_passing_it(capsys, text):
    got = invoke(dma.main, ["--topology", "cube1", "--set", f"cube.links.0.prop_ns={text}"], capsys)
    assert_failed_cleanly(got, 2, r"cube\.links\[0\]\.prop_ns", max_seconds=5)
    assert "PASS" not in got.out


def test_every_problem_is_reported_at_once():
    with pytest.raises(TopologyError) as info:
        load_spec("cube1", ["pe.attrs.cpu_overhead_ns=.inf", "cube.hbm.channel_bw_gbps=-4", "flit_bytes=0"])
    assert len(info.value.problems) == 3
