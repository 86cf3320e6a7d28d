"""`kernbench run allreduce`: the usual options, and clear errors for bad input."""

from __future__ import annotations

import json

import pytest

from kernbench.cli import main


def run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_run_allreduce_reports_latency_numerics_and_the_model(capsys):
    code, out, _ = run(["run", "allreduce", "--algo", "2d", "--payload", "64KiB", "--chunk", "16KiB"], capsys)
    assert code == 0
    assert "allreduce (2d) on torus2x3 · 6 PE(s)" in out
    assert "grid               3x2" in out and "model_ns" in out and "sim_over_model" in out
    assert "IPCQ" in out


def test_run_allreduce_json_on_another_topology_with_listed_pes(capsys):
    code, out, _ = run(
        ["run", "allreduce", "--topology", "sip2x2", "--pes", "0,8-9,31", "--algo", "tree", "--payload", "10000", "--json"],
        capsys,
    )
    assert code == 0
    data = json.loads(out)
    assert data["topology"] == "sip2x2" and data["pes"] == 4 and data["variant"] == "tree"
    assert data["grid"] == "2x2" and data["payload"] == "10000B"
    assert data["max_abs_err"] <= 0.02 and data["latency_ns"] > 0
    assert data["model_ns"] > 0 and data["sim_over_model"] == pytest.approx(data["latency_ns"] / data["model_ns"], rel=1e-3)


def test_run_allreduce_saves_a_trace(tmp_path, capsys):
    trace = tmp_path / "ar.kbtrace"
    code, _, _ = run(["run", "allreduce", "--payload", "8KiB", "--trace", str(trace)], capsys)
    assert code == 0 and trace.stat().st_size > 0


def test_one_sip_of_the_paper_is_a_4x4_grid(capsys):
    code, out, _ = run(["run", "allreduce", "--topology", "paper_torus", "--pes", "sip1", "--payload", "4KiB", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["pes"] == 16 and data["grid"] == "4x4"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--payload", "0"], "--payload '0': must be more than 0 bytes"),
        (["--payload", "1.5MiB"], "--payload '1.5MiB': write a whole count"),
        (["--payload", "3"], "not a whole number of float16 elements"),
        (["--chunk", "3"], "chunk_bytes 3 must be a positive multiple of the 2 B element"),
        (["--chunk", "1MiB", "--algo", "tree"], "holds 4 chunks in TCM at once"),
        (["--pes", "sip0.cube9.pe0"], "unknown PE 'sip0.cube9.pe0'"),
        (["--pes", "0,1,1"], "lists sip0.cube0.pe1 more than once"),
        (["--pes", "3"], "needs at least 2 PEs"),
        (["--pes", "0-99"], "PE index 48 out of range 0..47"),
        (["--pes", "sip2"], "has SIPs sip0 … sip0"),
        (["--algo", "2d", "--grid", "4x2"], "4 × 2 = 8 places for 6 PEs"),
        (["--grid", "3x2"], "--grid does nothing with --algo ring (it is used only with --algo 2d)"),
        (["--algo", "2d", "--grid", "three"], "write ROWSxCOLS"),
    ],
)
def test_bad_input_is_a_clear_error_not_a_traceback(capsys, args, message):
    code, out, err = run(["run", "allreduce", *args], capsys)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err


def test_unknown_algorithm_is_a_usage_error_naming_the_choices(capsys):
    code, out, err = run(["run", "allreduce", "--algo", "butterfly"], capsys)
    assert code == 2 and out == ""
    assert "--algo 'butterfly': choose one of ring, 2d, tree" in err and err.count("\n") == 1


def test_the_kernel_is_listed(capsys):
    code, out, _ = run(["run", "--list"], capsys)
    assert code == 0 and "allreduce\tall-reduce over PEs" in out
