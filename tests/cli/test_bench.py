"""``kernbench bench``: the shipped goldens match, --check fails loudly on a diff, --regen rewrites."""

from __future__ import annotations

import json

import pytest

from kernbench.cli import main
from kernbench.commands import bench


def test_shipped_goldens_match_exactly(capsys):
    assert main(["bench", "--check"]) == 0
    out = capsys.readouterr().out
    assert "all" in out and "match" in out
    names = set(bench.load_goldens(bench.GOLDENS))
    assert {"gemm-primitive", "gemm-composite", "gqa-decode/primitive", "gqa-decode/opt3", "gqa-decode/opt2"} <= names
    assert any(n.startswith("probe-dma/local/") for n in names)


@pytest.fixture
def fake_benches(monkeypatch):
    values = {"a": 1.5, "b": 2.25}
    monkeypatch.setattr(bench, "BENCHES", (lambda mode="fast": dict(values),))
    monkeypatch.setattr(bench, "plugin_benches", lambda: [])
    return values


def test_regen_writes_then_check_passes(tmp_path, capsys, fake_benches):
    g = tmp_path / "goldens.json"
    assert main(["bench", "--regen", "--goldens", str(g)]) == 0
    out = capsys.readouterr().out
    assert "+ a: 1.5 ns (new" in out
    assert json.loads(g.read_text()) == {"format": 1, "latency_ns": {"a": 1.5, "b": 2.25}}
    assert main(["bench", "--check", "--goldens", str(g)]) == 0
    # nothing moved on a second regen
    assert main(["bench", "--regen", "--goldens", str(g)]) == 0
    assert "nothing moved" in capsys.readouterr().out


def test_check_exits_1_with_a_clear_diff(tmp_path, capsys, fake_benches):
    g = tmp_path / "goldens.json"
    bench.save_goldens(g, {"a": 1.5, "b": 2.0, "gone": 3.0})
    fake_benches["new"] = 4.0
    assert main(["bench", "--check", "--goldens", str(g)]) == 1
    err = capsys.readouterr().err
    assert "~ b: golden 2.0 ns -> now 2.25 ns (+12.5000%)" in err
    assert "- gone: golden 3.0 ns" in err
    assert "+ new: 4.0 ns" in err
    assert "a:" not in err  # exact matches are not listed
    # without --check the diff is shown but the status is 0
    assert main(["bench", "--goldens", str(g)]) == 0


def test_check_without_goldens_is_a_clear_error(tmp_path, capsys, fake_benches):
    assert main(["bench", "--check", "--goldens", str(tmp_path / "none.json")]) == 2
    assert "run `kernbench bench --regen`" in capsys.readouterr().err


def test_bad_goldens_file_is_a_clear_error(tmp_path, capsys, fake_benches):
    g = tmp_path / "goldens.json"
    g.write_text("{not json")
    assert main(["bench", "--check", "--goldens", str(g)]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_the_probe_cases_arrive_through_the_entry_point_not_an_import():
    names = set()
    for fn in bench.plugin_benches():
        names.update(fn())
    assert "probe-dma/local/32KiB" in names
    assert "kernbench_probes" not in bench.__dict__


def test_timing_option_reaches_every_bench_and_oracle_matches_within_its_tolerance(monkeypatch):
    """`kernbench bench --timing oracle` runs each bench flit by flit; its latencies
    match the (fast-mode) goldens within ORACLE_TOLERANCE_NS."""
    seen = []

    def fake(mode="fast"):
        seen.append(mode)
        return {"x": 10.0 + (1e-9 if mode == "oracle" else 0.0)}

    monkeypatch.setattr(bench, "BENCHES", (fake,))
    monkeypatch.setattr(bench, "plugin_benches", lambda: [])
    now = bench.run_benches("oracle")
    assert seen == ["oracle"]
    assert bench.diff({"x": 10.0}, now, bench.ORACLE_TOLERANCE_NS) == []
    assert bench.diff({"x": 10.0}, now) != []  # fast mode compares to the bit
