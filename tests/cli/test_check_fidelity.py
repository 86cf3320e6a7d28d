"""``--check-fidelity`` on compare and sweep: every run again at every level of the model,
the per-level latencies, and whether the verdict (compare's winner, the sweep's best point)
holds (``kernbench/commands/fidelity_check.py``, ``docs/fidelity.md``)."""

from __future__ import annotations

import json

import pytest
from schema_check import check as validate

from kernbench.cli import main
from kernbench.commands import fidelity_check as fc

F4 = "gemm-tiled --topology cube1 --form {form} --m 96 --n 64 --k 2048 --tile-m 96 --tile-n 64 --tile-k 128 --pes 1"


def out_json(capsys, argv):
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_compare_reruns_both_sides_at_every_level_and_says_whether_the_winner_holds(capsys):
    a, b = F4.format(form="composite"), F4.format(form="primitive")
    rec = out_json(capsys, ["compare", a, b, "--json", "--check-fidelity"])
    validate(rec, "compare")
    check = rec["fidelity_check"]
    assert [lv["fidelity"] for lv in check["levels"]] == ["paper", "credit", "full"]
    paper = check["levels"][0]
    assert paper["a_latency_ns"] == rec["a"]["latency_ns"] and paper["b_latency_ns"] == rec["b"]["latency_ns"]
    for lv in check["levels"]:  # each level's latencies are that level's run
        one = out_json(capsys, ["run", *a.split(), "--json", "--fidelity", lv["fidelity"]])
        assert lv["a_latency_ns"] == one["latency_ns"]
        assert lv["winner"] == ("A" if lv["a_latency_ns"] < lv["b_latency_ns"] else "B")
    assert check["holds"] == (len({lv["winner"] for lv in check["levels"]}) == 1)


def test_compare_prints_the_per_level_table_and_the_verdict(capsys):
    capsys.readouterr()
    assert main(["compare", F4.format(form="composite"), F4.format(form="primitive"), "--check-fidelity"]) == 0
    out = capsys.readouterr().out
    assert "fidelity check (--check-fidelity)" in out
    assert "A wins at every level: the verdict holds" in out


def test_a_trace_side_is_made_again_from_its_metadata_at_every_level(tmp_path, capsys):
    a, b = F4.format(form="composite"), F4.format(form="primitive")
    trace = tmp_path / "a.kbtrace"
    assert main(["run", *a.split(), "--trace", str(trace)]) == 0
    from_runs = out_json(capsys, ["compare", a, b, "--json", "--check-fidelity"])["fidelity_check"]
    from_trace = out_json(capsys, ["compare", str(trace), b, "--json", "--check-fidelity"])["fidelity_check"]
    assert from_trace == from_runs


def test_a_trace_side_whose_run_comes_out_otherwise_now_is_refused(tmp_path, capsys):
    from kernbench.events.tracefile import open_trace, save_trace

    trace = tmp_path / "a.kbtrace"
    assert main(["run", "gemm-primitive", "--trace", str(trace)]) == 0
    saved = open_trace(trace)
    save_trace(trace, saved.store, saved.metadata.__class__(**{**saved.metadata.__dict__, "end_ns": saved.metadata.end_ns + 1.0}))
    capsys.readouterr()
    assert main(["compare", str(trace), "gemm-primitive", "--check-fidelity"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: compare A: made again at paper fidelity, {trace} takes ") and "not the trace's" in err
    assert err.count("\n") == 1


def test_a_trace_side_that_does_not_say_how_it_was_run_is_refused_saying_so(tmp_path, capsys):
    from kernbench.events.tracefile import open_trace, save_trace

    trace = tmp_path / "a.kbtrace"
    assert main(["run", "gemm-primitive", "--trace", str(trace)]) == 0
    save_trace(trace, open_trace(trace).store)  # (no metadata: as a trace saved from Python)
    capsys.readouterr()
    assert main(["compare", str(trace), "gemm-primitive", "--check-fidelity"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: compare A: --check-fidelity reruns each side, and {trace} cannot be run again: its metadata")
    assert err.count("\n") == 1


def test_a_changing_winner_is_said_to_not_hold():
    levels = [fc.LevelCompare("paper", 10.0, 12.0), fc.LevelCompare("credit", 10.0, 12.0), fc.LevelCompare("full", 13.0, 12.0)]
    holds, said = fc.compare_verdict(levels)
    assert not holds and "A at paper, A at credit, B at full" in said


def test_sweep_gives_every_row_its_per_level_latencies_and_marks_the_best(capsys, tmp_path):
    fixed = F4.format(form="composite").replace(" --tile-m 96", "").split()[1:]
    argv = ["sweep", *fixed, "--grid", "tile_m=48,96", "--check-fidelity", "--jobs", "1"]
    argv += ["--cache-dir", str(tmp_path)]
    rows = out_json(capsys, ["sweep", "gemm-tiled", *argv[1:], "--json"])
    assert len(rows) == 2
    for row in rows:
        validate(row, "sweep_row")
        assert row["fidelity_check"]["latency_ns"]["paper"] == row["latency_ns"]
        assert set(row["fidelity_check"]["latency_ns"]) == {"paper", "credit", "full"}
    for level in ("paper", "credit", "full"):
        best = min(rows, key=lambda r: r["fidelity_check"]["latency_ns"][level])
        assert level in best["fidelity_check"]["best_at"] and all(
            level not in r["fidelity_check"]["best_at"] for r in rows if r is not best
        )
    capsys.readouterr()
    assert main(["sweep", "gemm-tiled", *argv[1:]]) == 0
    out = capsys.readouterr().out
    assert "the best point (tile_m=96) is the same at every level: the verdict holds" in out


@pytest.mark.parametrize(
    "best, holds",
    [({"paper": 1, "credit": 1, "full": 1}, True), ({"paper": 1, "credit": 1, "full": 0}, False)],
)
def test_the_sweep_verdict(best, holds):
    assert fc.sweep_verdict(best, ["x=1", "x=2"])[0] is holds
