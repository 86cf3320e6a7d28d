"""One record: run --json, sweep records, compare sides and RunResult.run_record share the run record's
names, and every one of them is valid against the JSON Schema in docs/run-record.schema.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from schema_check import check

from kernbench import Runtime, tl
from kernbench.cli import main
from kernbench.record import CONTEXT, NAMES, SCHEMA, SCHEMA_FILE, flatten, json_schema_text, markdown, problems, record, without_lists
from kernbench.topology.digest import topology_digest
from kernbench.topology.spec import load_spec
from kernbench_probes import dma

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["gqa-decode", "--topology", "cube1", "--heads", "16", "--kv-heads", "2", "--context", "512"]
SET = ["--set", "pe.attrs.pe_cost_model.byte_cycles_recip=0.125", "--set", "sip.ucie.bw_gbps=1024"]


def cli_json(capsys, argv):
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_docs_output_is_the_field_table():
    doc = (ROOT / "docs" / "output.md").read_text()
    table = re.search(r"<!-- generated: kernbench.record.markdown\(\) -->\n(.*?)<!-- end generated -->", doc, re.S).group(1)
    assert table == markdown(), "docs/output.md is stale: paste kernbench.record.markdown() between its markers"


def test_the_schema_file_is_the_one_the_fields_make():
    assert (ROOT / SCHEMA_FILE).read_text() == json_schema_text(), (
        "docs/run-record.schema.json is stale: python -c 'from kernbench.record import json_schema_text as t; print(t(), end=\"\")'"
    )


def test_run_json_keeps_the_set_overrides_and_the_resolved_topologys_digest(capsys):
    rec = cli_json(capsys, ["run", *SMALL, *SET, "--json"])
    check(rec)
    assert not problems(rec) and rec["schema"] == SCHEMA and list(rec)[: len(NAMES)] == list(NAMES)
    assert rec["overrides"] == {"pe.attrs.pe_cost_model.byte_cycles_recip": 0.125, "sip.ucie.bw_gbps": 1024}
    resolved = load_spec("cube1", [SET[1], SET[3]])
    assert rec["topology_digest"] == topology_digest(resolved) != topology_digest(load_spec("cube1"))
    plain = cli_json(capsys, ["run", *SMALL, "--json"])
    assert plain["overrides"] == {} and plain["topology_digest"] == topology_digest(load_spec("cube1"))
    assert plain["latency_ns"] != rec["latency_ns"]  # (the overrides reached the model)


def test_the_digest_names_the_hardware_not_the_file(tmp_path, capsys):
    capsys.readouterr()
    assert main(["topo", "show", "cube1", "--yaml", *SET]) == 0
    saved = tmp_path / "saved.yaml"
    saved.write_text(capsys.readouterr().out)
    resolved = load_spec("cube1", [SET[1], SET[3]])
    assert load_spec(saved)["name"] != resolved["name"]  # cube1+set
    assert topology_digest(load_spec(saved)) == topology_digest(resolved)
    assert topology_digest(load_spec("cube1", ["sip.ucie.bw_gbps=512"])) == topology_digest(load_spec("cube1"))  # the file's value
    assert re.fullmatch(r"[0-9a-f]{64}", topology_digest(resolved))
    assert main(["topo", "show", "cube1", "--json", *SET]) == 0  # topo show says it, for a record to be checked against
    assert json.loads(capsys.readouterr().out)["topology_digest"] == topology_digest(resolved)


def test_a_sweep_record_is_the_run_record_with_its_point(capsys):
    rec = cli_json(capsys, ["run", *SMALL, *SET, "--explain", "--json"])
    (row,) = cli_json(capsys, ["sweep", *SMALL, *SET, "--grid", "variant=opt2", "--explain", "--no-cache", "--json"])
    check(row, "sweep_row")
    assert row["point"] == {"variant": "opt2"}
    assert {k: v for k, v in row.items() if k != "point"} == without_lists(rec)  # the same names and values, lists left out
    assert list(row)[: len(NAMES)] == list(NAMES)


def test_a_failed_sweep_point_is_a_valid_row_naming_its_error(capsys):
    capsys.readouterr()
    assert main(["sweep", "gqa-decode", "--topology", "cube1", "--heads", "12", "--context", "512", "--grid", "kv_heads=5", "--json"]) == 2
    (row,) = json.loads(capsys.readouterr().out)
    check(row, "sweep_row")
    assert row["point"] == {"kv_heads": 5} and "multiple of --kv-heads 5" in row["error"]
    with pytest.raises(AssertionError, match="not a sweep_row"):
        check({**row, "latency_ns": 1.0}, "sweep_row")  # a failure holds no measurement


def test_compare_sides_are_run_records_from_a_run_and_from_a_trace_alike(capsys, tmp_path):
    trace = tmp_path / "a.kbtrace"
    run = cli_json(capsys, ["run", *SMALL, *SET, "--json", "--trace", str(trace)])
    doc = cli_json(capsys, ["compare", str(trace), " ".join([*SMALL, *SET]), "--json"])
    check(doc, "compare")
    for side in (doc["a"], doc["b"]):
        check(side, "compare_side")
        assert not problems(side)
        assert {k: v for k, v in side.items() if k not in ("attribution", "side")} == {k: v for k, v in run.items() if k != "attribution"}
    assert doc["a"]["side"] == str(trace) and doc["b"]["side"] == " ".join([*SMALL, *SET])
    assert set(doc["delta"]) <= set(NAMES) | {"latency_pct"}


def test_a_script_gets_the_same_record_from_its_result():
    def scale(x, out):
        tl.store(out, tl.mul(tl.load(x), tl.load(x)))

    rt = Runtime("cube1")
    x = rt.deploy(np.ones((8, 64)), pe=0)
    out = rt.empty((8, 64), pe=0)
    rt.launch(scale, pes=[0], args=(x, out))
    result = rt.run()
    rec = result.run_record()
    check(rec)
    assert rec["kernel"] == "scale" and rec["overrides"] == {} and rec["topology_digest"] == topology_digest(load_spec("cube1"))
    assert rec["engine_busy_ns"] == {e: round(sum(b[e] for b in result.engine_busy_ns.values()), 6) for e in rec["engine_busy_ns"]}
    assert rec["commands"] == result.total_commands and rec["pes"] == len(result.pes) == 1


def test_the_probe_shares_the_records_names(capsys):
    assert dma.main(["--topology", "cube1", "--json", "--sizes", "32KiB"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["topology"] == "cube1" and doc["timing"] == "fast"
    assert all(set(row["latency_ns"]) == {"32KiB"} and row["latency_ns"]["32KiB"] > 0 for row in doc["rows"])


def test_a_kernel_figure_may_not_take_a_fields_name():
    base = dict(
        kernel="k", kernel_file=None, topology="t", timing="fast", variant="", params={}, overrides={}, topology_digest=None,
        latency_ns=1.0, pes=1, commands=1, dispatch_cycles=8.0, max_abs_err=None, stall_ns_by_reason={}, engine_busy_ns={"cpu": 1.0},
    )  # fmt: skip
    assert not problems(record(**base, figures={"cmds_per_tile": 2.0}))
    with pytest.raises(ValueError, match="name of a run-record field"):
        record(**base, figures={"latency_ns": 2.0})
    assert problems({**record(**base), "latency_ns": float("nan")}) == ["latency_ns is nan, not number"]
    with pytest.raises(AssertionError, match="figure"):
        check({**record(**base), "figure": {"nested": 1}})  # a kernel's figure is a number or text
    assert set(CONTEXT) <= set(NAMES) and not set(CONTEXT) & set(flatten(record(**base)))
