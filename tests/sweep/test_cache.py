"""The result cache: a re-run simulates only new points; the key is everything a result depends on;
a damaged entry is recomputed, never trusted or fatal."""

from __future__ import annotations

import pytest
from sweep_harness import GEMM, sweep, sweep_json

from kernbench.commands import sweep as sweep_command
from kernbench.kernels import registry
from kernbench.sweep import cache as result_cache
from kernbench.topology.spec import load_spec

GRID = [*GEMM, "--grid", "k=128,256,512", "--jobs", "1"]


def no_simulation(task):
    raise AssertionError(f"point {task.index} was simulated, not read from the cache")


def test_a_cache_hit_skips_simulation_and_gives_the_same_rows(capsys, tmp_path, own_cache, monkeypatch):
    first_status, first, _ = sweep_json(GRID, capsys, tmp_path, "first.json")
    assert first_status == 0 and len(list(own_cache.rglob("*.json"))) == 3
    monkeypatch.setattr(sweep_command, "simulate_point", no_simulation)
    status, again, _ = sweep_json(GRID, capsys, tmp_path, "again.json")  # (no_simulation fails a point that is simulated)
    assert status == 0 and again == first


def test_only_new_points_are_simulated(capsys, tmp_path, monkeypatch):
    sweep_json(GRID, capsys, tmp_path)
    ran = []
    real = sweep_command.simulate_point
    monkeypatch.setattr(sweep_command, "simulate_point", lambda task: ran.append(task.argv[task.argv.index("--k") + 1]) or real(task))
    status, rows, _ = sweep_json([*GEMM, "--grid", "k=256,1024", "--jobs", "1"], capsys, tmp_path, "more.json")
    assert status == 0 and ran == ["1024"] and [r["k"] for r in rows] == [256, 1024]


def test_no_cache_neither_reads_nor_writes(capsys, tmp_path, own_cache):
    sweep([*GRID, "--no-cache"], capsys)
    assert not own_cache.exists() or not any(own_cache.rglob("*.json"))


def test_cache_dir_puts_it_elsewhere_and_xdg_cache_home_is_the_default(tmp_path, own_cache, capsys):
    sweep([*GEMM, "--grid", "k=128", "--cache-dir", str(tmp_path / "mine")], capsys)
    assert len(list((tmp_path / "mine").rglob("*.json"))) == 1 and not own_cache.exists()
    assert result_cache.default_dir() == own_cache


def test_a_damaged_entry_is_recomputed_rewritten_and_named_in_a_warning(capsys, tmp_path, own_cache):
    _, first, _ = sweep_json(GRID, capsys, tmp_path, "first.json")
    entries = sorted(own_cache.rglob("*.json"))
    entries[0].write_text("{not json")
    entries[1].write_text('{"format": 1, "key": "someone else", "metrics": {"latency_ns": 1}}')
    entries[2].write_bytes(b"\xff\xfe")
    status, again, err = sweep_json(GRID, capsys, tmp_path, "again.json")
    assert status == 0 and again == first
    lines = err.splitlines()
    assert len(lines) == 3 and all(
        sum(line.startswith(f"warning: sweep cache entry {e} ignored: ") for line in lines) == 1 for e in entries
    )
    reread = result_cache.ResultCache(own_cache)
    assert all(reread.get(e.stem) is not None for e in entries) and reread.rejected == []


def test_failed_points_are_not_cached(capsys, tmp_path, own_cache):
    status, _, _ = sweep_json([*GEMM, "--grid", "k=128,512", "--max-commands-per-pe", "5", "--jobs", "1"], capsys, tmp_path)
    assert status == 2 and len(list(own_cache.rglob("*.json"))) == 1


def test_an_unwritable_cache_is_a_warning_not_a_failure(capsys, tmp_path, monkeypatch):
    def refuse(path, text, **_how):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(result_cache, "write_text_atomic", refuse)
    status, out, err = sweep([*GEMM, "--grid", "k=128"], capsys)
    assert status == 0 and "gemm-primitive · 1 point(s)" in out
    assert err.startswith("warning: results not cached:") and err.count("\n") == 1


def key(kernel="gemm-primitive", options=None, topology=("cube1", ()), timing="fast"):
    spec = registry.get(kernel)
    return result_cache.point_key(kernel, dict(spec.defaults(), **(options or {})), load_spec(topology[0], list(topology[1])), timing)


def test_the_key_changes_with_anything_a_result_depends_on(monkeypatch):
    base = key()
    assert key(options={"k": 1024}) != base
    assert key(topology=("cube1", ("cube.hbm.channel_bw_gbps=16",))) != base
    assert key(topology=("sip2x2", ())) != base
    assert key(timing="oracle") != base
    assert key(kernel="gemm-composite") != key(kernel="gemm-primitive", options={})
    monkeypatch.setattr(result_cache, "__version__", "9.9.9")
    assert key() != base


def test_the_key_is_the_same_for_the_same_resolved_inputs():
    spec = registry.get("gemm-primitive")
    assert key(options={"tile_k": spec.defaults()["tile_k"]}) == key()  # a default given explicitly
    same_value = ("cube1", ("cube.hbm.channel_bw_gbps=32",))  # cube1's own value, set again
    assert load_spec("cube1")["cube"]["hbm"]["channel_bw_gbps"] == 32
    assert key(topology=same_value) == key()


@pytest.mark.parametrize("xdg", ["", "relative/path"])
def test_a_missing_or_relative_xdg_cache_home_falls_back_to_home(monkeypatch, xdg, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert result_cache.default_dir() == tmp_path / ".cache" / "kernbench" / "sweep"


def test_the_timing_mode_is_passed_on_and_cached_apart(capsys, tmp_path, own_cache):
    _, fast, _ = sweep_json([*GEMM, "--grid", "k=128", "--jobs", "1"], capsys, tmp_path, "fast.json")
    status, oracle, _ = sweep_json([*GEMM, "--grid", "k=128", "--jobs", "1", "--timing", "oracle"], capsys, tmp_path, "oracle.json")
    assert status == 0 and len(list(own_cache.rglob("*.json"))) == 2
    assert abs(oracle[0]["latency_ns"] - fast[0]["latency_ns"]) <= 0.002 * fast[0]["latency_ns"]


def test_an_entry_is_the_points_record_nested_at_most_max_depth_deep(tmp_path):
    from kernbench.sweep.cache import MAX_DEPTH, ResultCache

    cache, key = ResultCache(tmp_path / "c"), "ab" + "0" * 62
    rec = {"latency_ns": 1.5, "params": {"k": 128}, "attribution": {"by_cause": {"dispatch": 1.5}}}
    cache.put(key, rec)
    assert cache.get(key) == rec and not cache.rejected
    deep: dict = {"x": 1}
    for level in range(MAX_DEPTH - 1):
        deep = {f"d{level}": deep}
    cache.put(key, {"attribution": deep})
    assert cache.get(key) is None and cache.rejected[-1][1].endswith(f"nested more than {MAX_DEPTH} deep")
    cache.put(key, {"attribution": {"path": [1, 2]}})  # a record's lists are left out before it is cached
    assert cache.get(key) is None and "attribution.path': a list, not a number or text" in cache.rejected[-1][1]
    cache.put(key, {"latency_ns": {"ns": 1.0}})  # a number field, or a kernel's figure, holds no mapping
    assert cache.get(key) is None and cache.rejected[-1][1] == "metric 'latency_ns': a dict, not a number or text"
