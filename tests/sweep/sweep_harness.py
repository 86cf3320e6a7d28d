"""Run ``kernbench sweep`` in this process and read what it printed and wrote."""

from __future__ import annotations

import json

from kernbench import cli

#: Small, fast points: a 4-PE GEMM takes ~50 ms to simulate, a one-CUBE GQA decode ~0.1–0.3 s.
GEMM = ["sweep", "gemm-primitive", "--m", "64", "--n", "64"]
GQA = ["sweep", "gqa-decode", "--topology", "cube1", "--heads", "16", "--kv-heads", "2"]


def sweep(argv, capsys):
    """``kernbench ARGV`` in this process: (status, stdout, stderr)."""
    capsys.readouterr()
    status = cli.main(list(argv))
    got = capsys.readouterr()
    return status, got.out, got.err


def sweep_json(argv, capsys, tmp_path, name="rows.json"):
    """The rows ``--out`` writes, with the run's status and stderr."""
    out = tmp_path / name
    status, _, err = sweep([*argv, "--out", str(out)], capsys)
    return status, (json.loads(out.read_text()) if out.exists() else None), err
