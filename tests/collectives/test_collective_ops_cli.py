"""`kernbench run allgather|reducescatter|alltoall`: checked against numpy, set beside the α–β
model, their options in --help, and clear errors for bad input."""

from __future__ import annotations

import json

import pytest

from kernbench.cli import main


def run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    "kernel, variant, exact",
    [("allgather", "ring", True), ("reducescatter", "ring", False), ("alltoall", "pairwise", True)],
)
def test_each_runs_checked_with_its_model_on_the_default_topology(capsys, kernel, variant, exact):
    code, out, _ = run(["run", kernel, "--payload", "96KiB", "--chunk", "16KiB", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["kernel"] == kernel and data["variant"] == variant and data["topology"] == "torus2x3" and data["pes"] == 6
    assert data["max_abs_err"] == 0 if exact else 0 < data["max_abs_err"] <= 36 * 2**-10  # p² · eps(float16)
    assert data["grid"] == "3x2" and data["model_ns"] > 0
    assert data["sim_over_model"] == pytest.approx(data["latency_ns"] / data["model_ns"], rel=1e-3)
    assert data["engine_busy_ns"]["ipcq"] > 0 and (data["engine_busy_ns"]["math"] > 0) == (kernel == "reducescatter")


def test_all_to_all_into_a_separate_output_and_in_float32_on_listed_pes(capsys):
    code, out, _ = run(
        [
            "run",
            "alltoall",
            "--topology",
            "sip2x2",
            "--pes",
            "0,8-9,31,5",
            "--payload",
            "20000",
            "--dtype",
            "float32",
            "--output",
            "separate",
            "--json",
        ],
        capsys,
    )
    assert code == 0
    data = json.loads(out)
    assert data["pes"] == 5 and data["variant"] == "pairwise, separate output" and data["max_abs_err"] == 0


def test_the_human_summary_names_the_formula(capsys):
    code, out, _ = run(["run", "alltoall", "--payload", "12KiB"], capsys)
    assert code == 0
    assert "alltoall (pairwise) on torus2x3 · 6 PE(s)" in out and "max |err| vs numpy 0" in out
    assert "T = Σ over rounds of max over pairs (m·α_pair + N/p·β)" in out


@pytest.mark.parametrize("kernel", ["allgather", "reducescatter", "alltoall"])
def test_help_documents_every_option(capsys, kernel):
    with pytest.raises(SystemExit) as info:
        main(["run", kernel, "--help"])
    out = capsys.readouterr().out
    assert info.value.code == 0
    for flag in ("--payload", "--pes", "--chunk", "--dtype", "--seed"):
        assert flag in out
    assert ("--output {inplace,separate}" in out) == (kernel == "alltoall")
    assert "--algo" not in out


@pytest.mark.parametrize(
    "kernel, args, message",
    [
        (
            "alltoall",
            ["--payload", "1MiB"],
            "524,288 float16 elements do not cut into 6 equal parts, one per PE; use a multiple of 12 B, e.g. --payload 1048572B",
        ),
        ("alltoall", ["--chunk", "1MiB"], "holds 2 chunks in TCM at once, 2 × 1MiB > 1MiB of kernel scratch; use --chunk 512KiB or less"),
        ("alltoall", ["--output", "both"], "--output 'both': choose one of inplace, separate"),
        (
            "reducescatter",
            ["--chunk", "1MiB"],
            "holds 3 chunks in TCM at once, 3 × 1MiB > 1MiB of kernel scratch; use --chunk 349524B or less",
        ),
        ("allgather", ["--chunk", "2MiB", "--payload", "4MiB"], "holds 1 chunk in TCM at once"),
        ("allgather", ["--payload", "3"], "not a whole number of float16 elements"),
        ("allgather", ["--pes", "3"], "an all-gather needs at least 2 PEs"),
        ("reducescatter", ["--chunk", "3"], "chunk_bytes 3 must be a positive multiple of the 2 B element"),
        ("reducescatter", ["--pes", "0,1,1"], "lists sip0.cube0.pe1 more than once"),
    ],
)
def test_bad_input_is_a_clear_error_not_a_traceback(capsys, kernel, args, message):
    code, out, err = run(["run", kernel, *args], capsys)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err and err.count("\n") == 1
