"""`kernbench sweep`: one row per point in grid order, the same whatever runs the points, each point
what `kernbench run` gives for it; a point the kernel rejects is reported without losing the others."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

from schema_check import check
from sweep_harness import GEMM, GQA, sweep, sweep_json

from kernbench import cli

GRID = ["--grid", "k=128,256", "--grid", "pes=1,2,4"]

CAUSE, KIND = "attribution.by_cause.", "attribution.by_component_kind."


def test_rows_are_identical_for_one_and_three_worker_processes(capsys, tmp_path):
    s1, one, _ = sweep_json([*GEMM, *GRID, "--jobs", "1", "--no-cache"], capsys, tmp_path, "one.json")
    s3, three, _ = sweep_json([*GEMM, *GRID, "--jobs", "3", "--no-cache"], capsys, tmp_path, "three.json")
    assert s1 == s3 == 0
    assert one == three
    assert [(r["k"], r["pes"]) for r in one] == [(128, 1), (128, 2), (128, 4), (256, 1), (256, 2), (256, 4)]
    assert [r["pes_resolved"] for r in one] == [1, 2, 4] * 2  # the record's pes, beside the swept one
    assert (tmp_path / "one.json").read_bytes() == (tmp_path / "three.json").read_bytes()


def test_a_row_has_the_swept_keys_and_what_kernbench_run_reports(capsys, tmp_path):
    _, rows, _ = sweep_json([*GQA, "--grid", "variant=opt2", "--grid", "context=512"], capsys, tmp_path)
    cli.main(["run", "gqa-decode", "--topology", "cube1", "--heads", "16", "--kv-heads", "2", "--context", "512", "--json"])
    run = json.loads(capsys.readouterr().out)
    (row,) = rows
    assert list(row)[:3] == ["variant", "context", "latency_ns"]
    for key in ("latency_ns", "commands", "dispatch_cycles", "pes", "max_abs_err", "cmds_per_tile", "tiles"):
        assert row[key] == run[key], key
    assert row["pes_per_head"] == run["pes_per_head"]  # named like an option not swept: the record's name
    for engine, pct in run["engine_util_pct"].items():
        assert row[f"engine_util_pct.{engine}"] == pct and row[f"engine_busy_ns.{engine}"] == run["engine_busy_ns"][engine]
    assert row["stall_ns"] >= 0


def test_a_rejected_point_is_an_error_row_and_the_others_are_kept(capsys, tmp_path):
    base = ["sweep", "gqa-decode", "--topology", "cube1", "--heads", "12"]
    status, rows, err = sweep_json([*base, "--grid", "kv_heads=2,5,4", "--grid", "context=512"], capsys, tmp_path)
    assert status == 2
    assert [r["kv_heads"] for r in rows] == [2, 5, 4]
    assert rows[1]["latency_ns"] is None and "--heads 12 must be a multiple of --kv-heads 5" in rows[1]["error"]
    assert rows[0]["latency_ns"] > 0 and rows[2]["latency_ns"] > 0 and "error" not in rows[0]
    assert err == "error: point 1 (kv_heads=5, context=512): gqa-decode: --heads 12 must be a multiple of --kv-heads 5\n"


def test_a_failing_run_is_an_error_row_too(capsys, tmp_path):
    status, rows, err = sweep_json([*GEMM, "--grid", "k=128,512", "--max-commands-per-pe", "5"], capsys, tmp_path)
    assert status == 2
    assert rows[0]["latency_ns"] > 0 and rows[1]["latency_ns"] is None
    assert "issued 5 commands, the limit per PE" in rows[1]["error"] and err.startswith("error: point 1 (k=512): ")


def test_csv_has_one_header_and_one_line_per_point(capsys, tmp_path):
    status, _, _ = sweep([*GEMM, *GRID, "--out", str(tmp_path / "rows.csv")], capsys)
    assert status == 0
    with open(tmp_path / "rows.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert len(table) == 6 and list(table[0])[:3] == ["k", "pes", "latency_ns"]
    assert float(table[0]["latency_ns"]) > 0


def test_the_terminal_table_and_json_on_stdout(capsys):
    status, out, _ = sweep([*GEMM, "--grid", "k=128,256"], capsys)
    assert status == 0
    assert out.splitlines()[0].startswith("gemm-primitive · 2 point(s)")
    assert "latency ns" in out and "dispatch cycles" in out
    status, out, _ = sweep([*GEMM, "--grid", "k=128,256", "--json"], capsys)
    records = json.loads(out)  # run records, as `kernbench run --json` prints them, each with its point
    for rec in records:
        check(rec, "sweep_row")
    assert [r["point"] for r in records] == [{"k": 128}, {"k": 256}] and all(r["latency_ns"] > 0 for r in records)
    assert [r["params"]["k"] for r in records] == [128, 256] and records[0]["kernel"] == "gemm-primitive"


def test_a_topology_value_and_the_topology_itself_can_be_swept(capsys, tmp_path):
    _, rows, _ = sweep_json(["sweep", "allreduce", "--payload", "64KiB", "--grid", "sip.ucie.bw_gbps=16,512"], capsys, tmp_path)
    assert rows[0]["latency_ns"] > rows[1]["latency_ns"]  # a slower UCIe link makes the all-reduce slower
    _, rows, _ = sweep_json([*GEMM, "--grid", "topology=cube1,sip2x2"], capsys, tmp_path, "topologies.json")
    assert [r["topology"] for r in rows] == ["cube1", "sip2x2"] and all(r["latency_ns"] > 0 for r in rows)


def test_a_kernel_option_that_shares_a_sweep_flag_is_set_with_a_one_value_grid(capsys, tmp_path):
    _, rows, _ = sweep_json(["sweep", "allreduce", "--payload", "64KiB", "--algo", "2d", "--grid", "grid=3x2,2x3"], capsys, tmp_path)
    assert [r["grid_resolved"] for r in rows] == ["3x2", "2x3"]


def test_piped_stderr_gets_no_progress(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "kernbench.cli", *GEMM, "--grid", "k=128,256", "--jobs", "1"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    assert done.returncode == 0 and done.stderr == ""
    assert "gemm-primitive · 2 point(s)" in done.stdout


def test_explain_adds_the_attribution_totals_that_run_explain_reports(capsys, tmp_path):
    status, rows, _ = sweep_json(
        [*GQA, "--grid", "variant=opt2,opt3", "--grid", "context=512", "--explain", "--no-cache"], capsys, tmp_path
    )
    assert status == 0
    cli.main(
        [
            "run",
            "gqa-decode",
            "--topology",
            "cube1",
            "--heads",
            "16",
            "--kv-heads",
            "2",
            "--context",
            "512",
            "--variant",
            "opt3",
            "--explain",
            "--json",
        ]
    )
    run = json.loads(capsys.readouterr().out)["attribution"]
    row = rows[1]
    for cause, ns in run["by_cause"].items():
        assert row[f"attribution.by_cause.{cause}"] == round(ns, 6)
    for row in rows:  # each group adds up to the latency; a cause one point never met is 0 there, not empty
        causes = {k for k in row if k.startswith(CAUSE)}
        kinds = {k for k in row if k.startswith(KIND)}
        assert abs(sum(row[k] for k in causes) - row["latency_ns"]) < 1e-5
        assert abs(sum(row[k] for k in kinds) - row["latency_ns"]) < 1e-5
    assert {k for k in rows[0] if k.startswith((CAUSE, KIND))} == {k for k in rows[1] if k.startswith((CAUSE, KIND))}


def test_rows_without_explain_have_no_attribution_columns_and_are_cached_apart(capsys, tmp_path):
    cache = ["--cache-dir", str(tmp_path / "cache")]
    _, plain, _ = sweep_json([*GEMM, "--grid", "k=128", *cache], capsys, tmp_path, "plain.json")
    _, explained, _ = sweep_json([*GEMM, "--grid", "k=128", "--explain", *cache], capsys, tmp_path, "explained.json")
    assert not any(k.startswith(CAUSE) for k in plain[0])
    assert any(k.startswith(CAUSE) for k in explained[0])  # not the cached plain row
    assert {k: v for k, v in explained[0].items() if not k.startswith((CAUSE, KIND))} == plain[0]
