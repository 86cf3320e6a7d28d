"""``kernbench compare A B``: side by side, and what moved the latency."""

from __future__ import annotations

import json

import pytest
from schema_check import check

from kernbench.cli import main
from kernbench.record import problems

SMALL = "gqa-decode --topology cube1 --context 512 --heads 16 --kv-heads 2"


def compare_json(capsys, a, b):
    assert main(["compare", a, b, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_run_against_itself_moves_nothing(capsys):
    doc = compare_json(capsys, SMALL, SMALL)
    d = doc["delta"]
    assert d["latency_ns"] == 0.0 and d["commands"] == 0 and d["dispatch_cycles"] == 0.0
    assert all(v == 0.0 for v in d["attribution"]["by_cause"].values()) and all(
        v == 0.0 for v in d["attribution"]["by_component_kind"].values()
    )
    assert d["attribution"]["by_component"] == [] and all(v == 0.0 for v in d["engine_util_pct"].values())
    assert doc["a"] == doc["b"] and not problems(doc["a"])  # each side is a run record
    check(doc, "compare")  # the JSON Schema's compare: {schema, a, b, delta}, each side a run record


def test_the_deltas_are_b_minus_a_and_the_attribution_delta_sums_to_the_latency_delta(capsys):
    doc = compare_json(capsys, f"{SMALL} --variant opt3", f"{SMALL} --variant opt2")
    a, b, d = doc["a"], doc["b"], doc["delta"]
    assert d["latency_ns"] == pytest.approx(b["latency_ns"] - a["latency_ns"], abs=1e-6)
    assert d["commands"] == b["commands"] - a["commands"] < 0  # opt2 issues fewer, larger commands
    assert sum(d["attribution"]["by_cause"].values()) == pytest.approx(d["latency_ns"], abs=1e-5)
    assert sum(d["attribution"]["by_component_kind"].values()) == pytest.approx(d["latency_ns"], abs=1e-5)
    causes = set(a["attribution"]["by_cause"]) | set(b["attribution"]["by_cause"])
    for cause in causes:  # each cause's delta is B's time on it minus A's
        want = b["attribution"]["by_cause"].get(cause, 0.0) - a["attribution"]["by_cause"].get(cause, 0.0)
        assert d["attribution"]["by_cause"].get(cause, 0.0) == pytest.approx(want, abs=1e-5)
    for side in (a, b):
        assert sum(side["attribution"]["by_cause"].values()) == pytest.approx(side["latency_ns"], abs=1e-6)


def test_a_trace_file_compares_the_same_as_the_run_it_recorded(capsys, tmp_path):
    trace = tmp_path / "opt3.kbtrace"
    assert main(["run", *f"{SMALL} --variant opt3".split(), "--trace", str(trace)]) == 0
    capsys.readouterr()
    doc = compare_json(capsys, str(trace), f"{SMALL} --variant opt3")
    assert doc["delta"]["latency_ns"] == 0.0 and doc["delta"]["commands"] == 0
    assert all(v == 0.0 for v in doc["delta"]["attribution"]["by_cause"].values())


def test_text_shows_both_sides_and_the_changes(capsys):
    assert main(["compare", f"{SMALL} --variant opt3", f"{SMALL} --variant opt2"]) == 0
    out = capsys.readouterr().out
    for text in ("latency ns", "dispatch cycles", "util % gemm", "critical path by cause", "components that gained or lost"):
        assert text in out


@pytest.mark.parametrize(
    "a, b, message",
    [
        ("gemx", SMALL, "compare A: unknown kernel 'gemx'"),
        (SMALL, "missing.kbtrace", "compare B: missing.kbtrace: no such trace file"),
        (SMALL, f"{SMALL} --context -3", "compare B: "),
    ],
)
def test_a_bad_side_is_one_line_naming_the_side(capsys, a, b, message):
    assert main(["compare", a, b]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_difference_that_rounds_away_prints_without_a_minus_sign():
    # sums of the same parts in another order differ by ~1e-13 ns: that is 0, not -0.000
    from kernbench.commands.compare import _signed, _sub

    assert _sub({"propagation": 143.55}, {"propagation": 143.55 + 1e-13}, 3) == {"propagation": 0.0}
    assert str(_sub({"x": 1.0}, {"x": 1.0 + 1e-13}, 3)["x"]) == "0.0"
    assert _signed(-1e-13, 100.0) == "+0.000 (+0.0%)" and _signed(-4e-4, 100.0) == "+0.000 (+0.0%)"


def test_a_side_saves_its_trace_and_refuses_what_belongs_to_compare(capsys, tmp_path):
    saved = tmp_path / "a.kbtrace"
    doc = compare_json(capsys, f"{SMALL} --trace {saved}", SMALL)
    from kernbench.events.tracefile import open_trace

    assert round(open_trace(saved).metadata.end_ns, 6) == doc["a"]["latency_ns"]
    for flag in ("--json", "--explain"):
        assert main(["compare", f"{SMALL} {flag}", SMALL]) == 2
        assert f"compare A: {SMALL} {flag}: {flag} is not taken inside a side" in capsys.readouterr().err
    assert main(["compare", f"{SMALL} --trace {saved}", f"{SMALL} --trace {saved}"]) == 2
    assert "--trace" in capsys.readouterr().err


def test_the_text_is_the_same_whatever_the_hash_seed():
    """Causes that tie (+0.000) are listed by name, not in a set's hash order (identical inputs, identical output)."""
    import os
    import subprocess
    import sys

    argv = [sys.executable, "-m", "kernbench.cli", "compare", f"{SMALL} --variant opt3", f"{SMALL} --variant opt2"]
    outs = {
        subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": seed}, check=True).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outs) == 1
