"""One shape of output: run --json, sweep rows, compare sides and the probe share the run record's names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kernbench.cli import main
from kernbench.record import CONTEXT, NAMES, SCHEMA, flatten, markdown, problems, record
from kernbench_probes import dma

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["gqa-decode", "--topology", "cube1", "--heads", "16", "--kv-heads", "2", "--context", "512"]


def cli_json(capsys, argv):
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_docs_output_is_the_field_table():
    doc = (ROOT / "docs" / "output.md").read_text()
    table = re.search(r"<!-- generated: kernbench.record.markdown\(\) -->\n(.*?)<!-- end generated -->", doc, re.S).group(1)
    assert table == markdown(), "docs/output.md is stale: paste kernbench.record.markdown() between its markers"


def test_run_json_is_a_run_record_and_a_sweep_row_is_it_flattened(capsys, tmp_path):
    rec = cli_json(capsys, ["run", *SMALL, "--explain", "--json"])
    assert not problems(rec) and rec["schema"] == SCHEMA and list(rec)[: len(NAMES)] == list(NAMES)
    assert sum(rec["stall_ns_by_reason"].values()) == pytest.approx(rec["stall_ns"], abs=1e-5)
    (row,) = cli_json(capsys, ["sweep", *SMALL[:1], *SMALL[1:], "--grid", "variant=opt2", "--explain", "--no-cache", "--json"])
    assert {k: v for k, v in row.items() if k != "variant"} == flatten(rec)  # under the record's names
    assert not any(k in row for k in CONTEXT if k != "variant")


def test_compare_sides_are_run_records_from_a_run_and_from_a_trace_alike(capsys, tmp_path):
    trace = tmp_path / "a.kbtrace"
    run = cli_json(capsys, ["run", *SMALL, "--json", "--trace", str(trace)])
    doc = cli_json(capsys, ["compare", str(trace), " ".join(SMALL), "--json"])
    for side in (doc["a"], doc["b"]):
        assert not problems(side)
        assert {k: side[k] for k in NAMES if k != "attribution"} == {k: run[k] for k in NAMES if k != "attribution"}
    assert doc["a"]["side"] == str(trace) and doc["b"]["side"] == " ".join(SMALL)
    assert set(doc["delta"]) <= set(NAMES) | {"latency_pct"}


def test_the_probe_shares_the_records_names(capsys):
    assert dma.main(["--topology", "cube1", "--json", "--sizes", "32KiB"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["topology"] == "cube1" and doc["timing"] == "fast"
    assert all(set(row["latency_ns"]) == {"32KiB"} and row["latency_ns"]["32KiB"] > 0 for row in doc["rows"])


def test_a_kernel_figure_may_not_take_a_fields_name():
    base = dict(
        kernel="k", kernel_file=None, topology="t", timing="fast", variant="", params={}, latency_ns=1.0, pes=1, commands=1,
        dispatch_cycles=8.0, max_abs_err=None, stall_ns_by_reason={}, engine_busy_ns={"cpu": 1.0},
    )  # fmt: skip
    assert not problems(record(**base, figures={"cmds_per_tile": 2.0}))
    with pytest.raises(ValueError, match="name of a run-record field"):
        record(**base, figures={"latency_ns": 2.0})
    assert problems({**record(**base), "latency_ns": float("nan")}) == ["latency_ns is nan, not number"]
