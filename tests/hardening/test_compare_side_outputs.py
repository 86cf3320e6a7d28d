"""Round 2, §8: ``--trace`` or ``--perfetto`` inside a compare side is honoured or refused, never ignored.

``kernbench compare`` saves the side's events there (the file is that run's, as ``kernbench run``
would write it); ``kernbench-tui compare`` cannot save a side and refuses it by name before anything
runs, writing nothing. Either side, either flag; the existing file at the path stays as it was when
refused, and is replaced whole when honoured.
"""

from __future__ import annotations

import json

import pytest
from hardening_harness import assert_failed_cleanly, cpu_scale, invoke, snapshot_files

from kernbench import cli
from kernbench.events.tracefile import open_trace
from kernbench_tui import cli as tui_cli

SIDE = "gemm-primitive --m 64"
OUTPUTS = {"--trace": "side.kbtrace", "--perfetto": "side.json"}
CORPUS = [(flag, which) for flag in OUTPUTS for which in ("A", "B")]


def sides(folder, flag, which):
    inside = f"{SIDE} {flag} {folder / OUTPUTS[flag]}"
    return [inside, "gemm-composite"] if which == "A" else ["gemm-composite", inside]


@pytest.mark.parametrize("flag_a, flag_b", [("--trace", "--perfetto"), ("--perfetto", "--trace")])
def test_kernbench_compare_saves_each_sides_output(tmp_path, capsys, flag_a, flag_b):
    paths = {"a": tmp_path / f"a{OUTPUTS[flag_a][4:]}", "b": tmp_path / f"b{OUTPUTS[flag_b][4:]}"}
    for path in paths.values():
        path.write_bytes(b"an older file")
    a, b = f"{SIDE} {flag_a} {paths['a']}", f"gemm-composite {flag_b} {paths['b']}"
    got = invoke(cli.main, ["compare", a, b, "--json"], capsys, trace_memory=False)
    assert got.status == 0 and "Traceback" not in got.err, got.err
    assert got.cpu_seconds < 20 * cpu_scale()  # (CPU time: see hardening_harness)
    doc = json.loads(got.out)
    for which, flag in (("a", flag_a), ("b", flag_b)):
        if flag == "--trace":  # that side's run, as kernbench run would have saved it
            assert round(open_trace(paths[which]).metadata.end_ns, 6) == doc[which]["latency_ns"]
        else:
            assert json.loads(paths[which].read_text())["traceEvents"]


@pytest.mark.parametrize("flag, which", CORPUS)
def test_the_debuggers_compare_refuses_a_sides_output_by_name(tmp_path, capsys, flag, which):
    (tmp_path / OUTPUTS[flag]).write_bytes(b"an older file")
    before = (tmp_path, snapshot_files(tmp_path))
    launched: list[object] = []
    got = invoke(lambda argv: tui_cli.main(argv, launch=launched.append), ["compare", *sides(tmp_path, flag, which)], capsys)
    cause = rf"^error: compare {which}: .*{flag} is not taken inside a side"
    assert_failed_cleanly(got, 2, cause, before=before, max_seconds=10, max_mib=100)
    assert launched == [] and got.err.count("\n") == 1
