"""Run ``kernbench sweep`` in this process and read what it printed and wrote."""

from __future__ import annotations

import json

from kernbench import cli
from kernbench.sweep.table import flat_rows

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
    """The rows ``--out FILE.json`` writes, read as the table's flat rows (``--grid`` keys, then the record
    flattened), with the run's status and stderr; each record is checked against the JSON Schema first."""
    from schema_check import check

    out = tmp_path / name
    status, _, err = sweep([*argv, "--out", str(out)], capsys)
    if not out.exists():
        return status, None, err
    records = json.loads(out.read_text())
    for rec in records:
        check(rec, "sweep_row")
    return status, flat_rows(records), err
