"""--grid KEY=V1,V2,…: keys are kernel options, `topology` or topology key paths; values are typed and
checked like the option or the YAML value; a bad one is one line naming its flag, before anything runs."""

from __future__ import annotations

import pytest
from sweep_harness import GQA, sweep

from kernbench.errors import KernbenchError
from kernbench.kernels import registry
from kernbench.sweep.grid import MAX_POINTS, grid_points, leaf_paths, parse_axes, parse_axis, schema_node

GQA_SPEC = registry.get("gqa-decode")


def test_an_option_value_is_read_with_the_options_type_and_sets_its_flag():
    axis = parse_axis(GQA_SPEC, "context=512, 1024")
    assert axis.key == "context" and axis.values == (512, 1024)
    assert axis.args == (("--context", "512"), ("--context", "1024"))


@pytest.mark.parametrize("key", ["kv_heads", "kv-heads", "--kv-heads"])
def test_an_option_is_named_as_its_flag_or_its_name(key):
    assert parse_axis(GQA_SPEC, f"{key}=1,2").key == "kv_heads"


def test_a_topology_key_path_is_read_as_its_schema_field_and_becomes_a_set():
    axis = parse_axis(GQA_SPEC, "sip.ucie.bw_gbps=64,128")
    assert axis.values == (64.0, 128.0) and all(isinstance(v, float) for v in axis.values)
    assert axis.args == (("--set", "sip.ucie.bw_gbps=64"), ("--set", "sip.ucie.bw_gbps=128"))
    assert parse_axis(GQA_SPEC, "sip.mesh.wrap.x=true,false").values == (True, False)
    assert parse_axis(GQA_SPEC, "cube.links.0.prop_ns=1,2").key == "cube.links.0.prop_ns"


def test_topology_names_are_checked_and_become_the_topology_flag():
    axis = parse_axis(GQA_SPEC, "topology=cube1,sip2x2")
    assert axis.args == (("--topology", "cube1"), ("--topology", "sip2x2"))
    with pytest.raises(KernbenchError, match=r"--grid topology=cube2: unknown topology 'cube2'"):
        parse_axis(GQA_SPEC, "topology=cube1,cube2")


@pytest.mark.parametrize(
    "flag, message",
    [
        ("contex=512", r"unknown key 'contex' \(did you mean 'context'\?\)"),
        ("sip.ucie.bw=1", r"unknown key 'sip.ucie.bw' \(did you mean 'sip.ucie.bw_gbps'\?\)"),
        ("sip.ucie=1", r"sip.ucie is a section of the topology, not a value; sweep one of its keys, e.g. sip.ucie.bw_gbps"),
        ("context=512,lots", r"--grid context=lots: --context takes an integer"),
        ("context=0", r"--grid context=0: --context 0: must be in 1\.\."),
        ("variant=opt2,opt9", r"--grid variant=opt9: --variant 'opt9': choose one of primitive, opt3, opt2"),
        ("sip.ucie.bw_gbps=-1", r"--grid sip.ucie.bw_gbps=-1: must be >= 0\.001"),
        ("sip.ucie.bw_gbps=fast", r"--grid sip.ucie.bw_gbps=fast: expected number"),
        ("context=512,,1024", r"none empty"),
        ("context", r"expected KEY=V1,V2"),
        ("context=512,512", r"512 is listed twice"),
    ],
)
def test_a_bad_key_or_value_is_an_error_naming_the_flag(flag, message):
    with pytest.raises(KernbenchError, match=message):
        parse_axis(GQA_SPEC, flag)


def test_a_key_may_be_swept_once_and_not_also_set_by_another_flag():
    with pytest.raises(KernbenchError, match="context is already set by --grid context=1"):
        parse_axes(GQA_SPEC, ["context=1", "context=2"])
    with pytest.raises(KernbenchError, match="heads is already set by another flag"):
        parse_axes(GQA_SPEC, ["heads=8,16"], fixed=["heads"])


def test_points_are_the_product_first_axis_slowest_after_the_fixed_arguments():
    axes = parse_axes(GQA_SPEC, ["context=512,1024", "variant=opt3,opt2"])
    points = grid_points(axes, ["--topology", "cube1"])
    assert [p.index for p in points] == [0, 1, 2, 3]
    assert [dict(p.values) for p in points] == [
        {"context": 512, "variant": "opt3"},
        {"context": 512, "variant": "opt2"},
        {"context": 1024, "variant": "opt3"},
        {"context": 1024, "variant": "opt2"},
    ]
    assert points[1].argv == ("--topology", "cube1", "--context", "512", "--variant", "opt2")
    assert points[1].label() == "context=512, variant=opt2"


def test_a_grid_past_the_point_limit_is_refused_before_it_is_built():
    values = ",".join(str(v) for v in range(1, 1001))
    axes = parse_axes(GQA_SPEC, [f"context={values}", f"tile={values}"])
    with pytest.raises(KernbenchError, match=f"1000 × 1000 = 1,000,000 points; the limit is {MAX_POINTS:,}"):
        grid_points(axes, [])


def test_every_schema_leaf_path_resolves_to_a_field():
    paths = leaf_paths()
    assert "sip.ucie.bw_gbps" in paths and "pe.attrs.pe_cost_model.byte_cycles_recip" in paths
    for path in paths:
        assert schema_node(path.replace("NAME", "hub")) is not None, path


def test_the_cli_says_a_bad_grid_in_one_line_and_exits_2(capsys):
    status, out, err = sweep([*GQA, "--grid", "contex=512"], capsys)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: --grid contex=512: unknown key 'contex' (did you mean 'context'?)")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--grid", "context=512", "--context", "1024"], "context is already set by another flag"),
        (["--grid", "sip.ucie.bw_gbps=1", "--set", "sip.ucie.bw_gbps=2"], "sip.ucie.bw_gbps is already set by another flag"),
        (["--heads", "0", "--grid", "context=512"], "gqa-decode: --heads 0: must be in 1..4096"),
        ([], "give one or more --grid"),
        (["--grid", "context=512", "--out", "rows.txt"], "--out rows.txt: name a .csv or .json file"),
        (["--grid", "context=512", "--plot", "latency_ns:contxt"], "'contxt' is not a swept key (did you mean 'context'?)"),
        (["--grid", "context=512", "--plot", "latency_ns"], "expected METRIC:KEY"),
        (["--grid", "context=512", "--plot", "latency_ns:context", "--json"], "--plot draws on stdout, where --json prints"),
        (["--grid", "context=512", "--jobs", "2", "--scheduler", "tcp://127.0.0.1:1"], "--jobs and --scheduler: give one"),
        (["--grid", "context=512", "--jobs", "0"], "expected at least 1 worker process"),
    ],
)
def test_bad_sweep_flags_are_one_line_before_anything_runs(capsys, argv, message):
    status, out, err = sweep([*GQA, *argv], capsys)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and message in err, err
