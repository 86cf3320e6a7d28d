"""--plot METRIC:KEY: one line per value of the other swept keys, each with its own marker, legend below."""

from __future__ import annotations

import pytest
from sweep_harness import GEMM, sweep

from kernbench.errors import KernbenchError
from kernbench.sweep.plot import MARKERS, render, series

TABLE = [
    {"context": c, "variant": v, "latency_ns": float(c // 100 + (7 if v == "opt3" else 0))}
    for c in (512, 1024, 2048, 4096)
    for v in ("opt3", "opt2")
]


def test_one_line_per_value_of_the_other_keys_in_grid_order():
    lines = series(TABLE, "latency_ns", "context", ["context", "variant"])
    assert list(lines) == ["variant=opt3", "variant=opt2"]
    assert lines["variant=opt2"] == [(512, 5.0), (1024, 10.0), (2048, 20.0), (4096, 40.0)]


def test_failed_points_are_left_out_and_a_missing_metric_is_named():
    table = [*TABLE, {"context": 8192, "variant": "opt2", "latency_ns": None, "error": "rejected"}]
    assert len(series(table, "latency_ns", "context", ["context", "variant"])["variant=opt2"]) == 4
    with pytest.raises(KernbenchError, match="no point has a metric 'latency'; numeric ones: latency_ns"):
        series(TABLE, "latency", "context", ["context", "variant"])


def test_the_plot_has_a_title_ticks_at_the_swept_values_and_a_legend():
    text = render(TABLE, "latency_ns", "context", ["context", "variant"], width=60, height=14)
    lines = text.splitlines()
    assert "latency_ns by context" in lines[0]
    assert lines[-1] == f"{MARKERS[0]} variant=opt3   {MARKERS[1]} variant=opt2"
    assert "context (log scale)" in lines[-2]  # 512 … 4096 spans 8×
    ticks = lines[-3].split()
    assert ticks == ["512", "1024", "2048", "4096"]
    assert "\x1b[" not in text and len(lines) == 14 + 1
    assert MARKERS[0] in text and MARKERS[1] in text


def test_a_key_that_is_not_a_number_is_a_row_of_categories():
    text = render(TABLE, "latency_ns", "variant", ["context", "variant"], width=60, height=14)
    assert text.splitlines()[-3].split() == ["opt3", "opt2"]
    assert text.splitlines()[-1].startswith(f"{MARKERS[0]} context=512")


def test_the_plot_is_the_same_every_time():
    assert render(TABLE, "latency_ns", "context", ["context", "variant"]) == render(TABLE, "latency_ns", "context", ["context", "variant"])


def test_the_cli_prints_the_plot_after_the_table(capsys):
    status, out, _ = sweep([*GEMM, "--grid", "k=128,256,512", "--grid", "pes=1,4", "--plot", "latency_ns:k", "--jobs", "1"], capsys)
    assert status == 0
    assert "latency_ns by k" in out and out.rstrip().endswith(f"{MARKERS[0]} pes=1   {MARKERS[1]} pes=4")
    assert out.index("latency ns") < out.index("latency_ns by k")


def test_an_unknown_metric_is_named_after_the_rows_are_kept(capsys, tmp_path):
    out = tmp_path / "rows.csv"
    status, stdout, err = sweep([*GEMM, "--grid", "k=128", "--plot", "latncy_ns:k", "--jobs", "1", "--out", str(out)], capsys)
    assert status == 2 and out.exists() and "gemm-primitive · 1 point(s)" in stdout
    assert err.startswith("error: --plot latncy_ns:k: no point has a metric 'latncy_ns'; numeric ones: latency_ns, pes, commands,")
