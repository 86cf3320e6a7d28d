"""``kernbench run … --explain``: the attribution printed, and in JSON."""

from __future__ import annotations

import itertools
import json

import pytest

from kernbench.cli import main

SMALL_GQA = ["gqa-decode", "--topology", "cube1", "--context", "512", "--heads", "16", "--kv-heads", "2"]


def test_json_attribution_sums_to_the_latency(capsys):
    assert main(["run", *SMALL_GQA, "--explain", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    a = doc["attribution"]
    assert set(a) == {"by_cause", "by_component_kind", "top", "by_line", "by_function", "path"}
    assert sum(a["by_cause"].values()) == pytest.approx(doc["latency_ns"], abs=1e-6)
    assert sum(a["by_component_kind"].values()) == pytest.approx(doc["latency_ns"], abs=1e-6)
    assert len(a["top"]) == 10 and a["top"] == sorted(a["top"], key=lambda t: -t["ns"])
    path = a["path"]
    assert path[0]["start_ns"] == 0.0 and path[-1]["end_ns"] == pytest.approx(doc["latency_ns"], abs=1e-6)
    assert all({"start_ns", "end_ns", "component", "cause"} <= set(s) for s in path)
    assert all(b["start_ns"] == pytest.approx(a_["end_ns"], abs=1e-6) for a_, b in itertools.pairwise(path))


def test_text_names_the_causes_the_top_components_and_the_path(capsys):
    assert main(["run", *SMALL_GQA, "--explain"]) == 0
    out = capsys.readouterr().out
    for heading in ("the critical path", "by cause", "by component kind", "top 10 components on the path", "the path ("):
        assert heading in out
    assert "dispatch" in out and "hbm channel drain" in out and "[recv wait]" in out


def test_without_explain_there_is_no_attribution(capsys):
    assert main(["run", *SMALL_GQA, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["attribution"] is None
