"""Every command knows the source line that issued it; the critical path by line and by function."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import shipped

from kernbench.analysis.lines import NO_LINE, by_source
from kernbench.cli import main
from kernbench.events.perfetto import SOURCE_THREAD, perfetto_trace
from kernbench.events.source import Frame, innermost, parse_site, site_text
from kernbench.events.tracefile import open_trace
from kernbench.events.types import EventKind
from kernbench.runtime.api import Runtime
from kernbench.tl.sites import is_user_file

KERNEL = """\
import numpy as np

import kernbench.tl as tl
from kernbench import kernel


def scaled_exp(x):
    y = tl.exp(x)
    return tl.scale(y, 0.5)


def body(a, out, n):
    for _ in range(n):
        x = tl.load(a)
        y = scaled_exp(x)
        tl.store(out, y)


def vec(a, out):
    body(a, out, 3)


@kernel()
def helpers(rt):
    a = rt.deploy(np.ones((64, 64), np.float32))
    out = rt.empty((64, 64), np.float32)
    rt.launch(vec, pes=[0, 1], args=(a, out))
"""


def line_of(text: str, path: Path) -> int:
    """The 1-based number of the line of ``path`` holding ``text``."""
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.fixture
def kfile(tmp_path):
    path = tmp_path / "kern.py"
    path.write_text(KERNEL)
    return path


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(f"kern_{abs(hash(str(path)))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def run(kfile):
    mod = _module(kfile)
    rt = Runtime("cube1")
    a = rt.deploy(np.ones((64, 64), np.float32))
    out = rt.empty((64, 64), np.float32)
    rt.launch(mod.vec, pes=[0, 1], args=(a, out))
    return rt, rt.run(record=True)


def test_a_site_string_reads_back_as_its_frames():
    frames = (Frame("C:/k/kern.py", 8, "scaled_exp"), Frame("/t/kern.py", 15, "body"))
    assert parse_site(site_text(frames)) == frames
    assert innermost("") is None and parse_site("") == ()


def test_kernbench_machinery_is_not_user_code_but_shipped_kernels_and_kernel_files_are(kfile):
    import kernbench.kernels.gemm as gemm
    import kernbench.tl as tl

    assert not is_user_file(tl.__file__) and not is_user_file(np.__file__) and not is_user_file(os.__file__)
    assert is_user_file(gemm.__file__) and is_user_file(str(kfile))


def test_every_command_names_the_users_line_and_the_calls_through_helpers(run, kfile):
    _rt, result = run
    dispatches = [e for e in result.events if e.kind == EventKind.DISPATCH]
    assert dispatches and all(e.src for e in dispatches)
    exp, scale, load, store = (line_of(t, kfile) for t in ("tl.exp(x)", "tl.scale(y", "tl.load(a)", "tl.store(out"))
    call_helper, call_body = line_of("y = scaled_exp(x)", kfile), line_of("body(a, out, 3)", kfile)
    by_label = {}
    for e in dispatches:
        by_label.setdefault(e.label, set()).add(e.src)
    f = str(kfile)
    # a tl call inside a helper: its own line first, then each call that led there, out to the kernel function
    assert {s for s in by_label["MathCmd"]} == {
        f"{f}:{exp}:scaled_exp < {f}:{call_helper}:body < {f}:{call_body}:vec",
        f"{f}:{scale}:scaled_exp < {f}:{call_helper}:body < {f}:{call_body}:vec",
    }
    assert by_label["DmaReadCmd"] == {f"{f}:{load}:body < {f}:{call_body}:vec"}
    assert by_label["DmaWriteCmd"] == {f"{f}:{store}:body < {f}:{call_body}:vec"}
    # each PE issued each line's command three times (the loop)
    assert sum(1 for e in dispatches if e.label == "DmaReadCmd") == 2 * 3


def test_a_replay_keeps_each_commands_line(run):
    rt, result = run
    again = rt.replay(result, record=True)
    srcs = [(e.corr_id, e.src) for e in result.events if e.kind == EventKind.DISPATCH]
    assert srcs == [(e.corr_id, e.src) for e in again.events if e.kind == EventKind.DISPATCH]


def test_tl_cycles_carries_its_line(tmp_path):
    path = tmp_path / "cyc.py"
    path.write_text("import kernbench.tl as tl\n\n\ndef k():\n    tl.cycles(100)\n    tl.cycles(50)\n")
    mod = _module(path)
    rt = Runtime("cube1")
    rt.launch(mod.k, pes=[0])
    r = rt.run(record=True)
    work = [e for e in r.events if e.kind == EventKind.CPU_WORK]
    assert [innermost(e.src).line for e in work] == [5, 6]


def test_lines_survive_a_trace_file_and_show_in_perfetto(run, tmp_path, kfile):
    _rt, result = run
    result.save_trace(tmp_path / "r.kbtrace")
    store = open_trace(tmp_path / "r.kbtrace").store
    assert store.events() == result.store().events()
    trace = perfetto_trace(store)
    evs = trace["traceEvents"]
    threads = {(e["pid"], e["tid"]) for e in evs if e["ph"] == "M" and e["name"] == "thread_name" and e["args"]["name"] == SOURCE_THREAD}
    assert len(threads) == 2  # one per PE
    slices = [e for e in evs if e["ph"] == "X" and e["cat"] == "source"]
    n_dispatch = sum(1 for e in result.events if e.kind == EventKind.DISPATCH)
    assert len(slices) == n_dispatch
    assert {s["name"] for s in slices} == {
        f"kern.py:{line_of(t, kfile)}" for t in ("tl.exp(x)", "tl.scale(y", "tl.load(a)", "tl.store(out")
    }
    for track in threads:  # a PE's source slices never overlap
        spans = sorted((s["ts"], s["ts"] + s["dur"]) for s in slices if (s["pid"], s["tid"]) == track)
        assert all(a[1] <= b[0] + 1e-9 for a, b in itertools.pairwise(spans))
    dispatch = next(e for e in evs if e["ph"] == "X" and e["cat"] == "dispatch" and e["name"] == "DmaReadCmd")
    assert dispatch["args"]["src"] == f"{kfile}:{line_of('tl.load(a)', kfile)} in body"
    assert dispatch["args"]["stack"].endswith(f"{kfile}:{line_of('body(a, out, 3)', kfile)} in vec")


def test_lines_tile_the_latency_and_each_holds_its_causes(run, kfile):
    _rt, result = run
    a = result.explain(by="line")
    lines = a.lines("line")
    assert sum(lc.ns for lc in lines) == pytest.approx(result.latency_ns, abs=1e-6)
    assert {lc.file for lc in lines} == {str(kfile)} and NO_LINE not in {lc.key for lc in lines}
    for lc in lines:
        assert sum(lc.causes.values()) == pytest.approx(lc.ns, abs=1e-9)
    # the same nanoseconds by cause, summed over lines, are the attribution's by cause
    for cause, ns in a.by_cause.items():
        assert sum(lc.causes.get(cause, 0.0) for lc in lines) == pytest.approx(ns, abs=1e-6)
    funcs = a.lines("function")
    assert {lc.function for lc in funcs} <= {"scaled_exp", "body", "vec"}
    assert sum(lc.ns for lc in funcs) == pytest.approx(result.latency_ns, abs=1e-6)
    by_fn = {lc.function: lc.ns for lc in funcs}
    for fn in by_fn:
        assert by_fn[fn] == pytest.approx(sum(lc.ns for lc in lines if lc.function == fn), abs=1e-9)
    top = lines[0]
    assert top.name == f"kern.py:{top.line}" and top.text == kfile.read_text().splitlines()[top.line - 1].strip()


def test_a_path_without_sites_counts_under_no_line(run):

    from kernbench.analysis.critical import attribute

    _rt, result = run
    a = attribute([e._replace(src="") for e in result.events], result.latency_ns)
    rows = by_source(a)
    assert [lc.key for lc in rows] == [NO_LINE] and rows[0].ns == pytest.approx(result.latency_ns, abs=1e-6)


def test_explain_by_line_json_names_the_files_lines_and_sums_to_the_latency(kfile, capsys, monkeypatch):
    monkeypatch.chdir(kfile.parent)
    assert main(["run", "kern.py", "--explain", "--by", "line", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = doc["attribution"]["by_line"]
    assert sum(r["ns"] for r in rows) == pytest.approx(doc["latency_ns"], abs=1e-6)
    assert all(r["file"] == str(kfile.resolve()) for r in rows)
    assert {r["text"] for r in rows} == {"y = tl.exp(x)", "return tl.scale(y, 0.5)", "x = tl.load(a)", "tl.store(out, y)"}
    assert all(r["name"] == f"kern.py:{r['line']}" and sum(r["causes"].values()) == pytest.approx(r["ns"], abs=1e-6) for r in rows)
    assert sum(r["share"] for r in rows) == pytest.approx(1.0, abs=1e-6)
    fns = doc["attribution"]["by_function"]
    assert {r["function"] for r in fns} == {"scaled_exp", "body"}


def test_explain_by_line_text_reads_like_a_profile(kfile, capsys, monkeypatch):
    monkeypatch.chdir(kfile.parent)
    assert main(["run", "kern.py", "--explain", "--by", "line"]) == 0
    out = capsys.readouterr().out
    assert "by source line (4 lines; they sum to the latency)" in out
    assert f"kern.py:{line_of('tl.exp(x)', kfile)}" in out and "y = tl.exp(x)" in out
    assert main(["run", "kern.py", "--explain", "--by", "function"]) == 0
    assert "kern.py:scaled_exp" in capsys.readouterr().out


@pytest.mark.parametrize("flags", [["--by", "line"], ["--speedups"]])
def test_explain_options_without_explain_are_refused(kfile, capsys, monkeypatch, flags):
    monkeypatch.chdir(kfile.parent)
    assert main(["run", "kern.py", *flags]) == 2
    assert "add --explain" in capsys.readouterr().err


def test_result_explain_by_an_unknown_name_is_refused(run):
    with pytest.raises(ValueError, match="by is one of cause, line, function"):
        run[1].explain(by="file")


def test_source_capture_adds_no_frames_of_its_own_when_nothing_is_user_code():
    # a kernel defined in kernbench's own machinery would have no user frame: its commands carry ""
    from kernbench.tl.sites import site_of

    assert site_of(sys._getframe()) != ""  # this test file is user code
    assert site_of(None) == ""


SMALL_GQA = "gqa-decode --topology cube1 --heads 16 --kv-heads 2"


def test_compare_gives_per_line_deltas_when_both_sides_run_the_same_file(capsys):
    assert main(["compare", f"{SMALL_GQA} --context 512", f"{SMALL_GQA} --context 1024", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = doc["delta"]["attribution"]["by_line"]
    assert sum(r["a_ns"] for r in rows) == pytest.approx(doc["a"]["latency_ns"], abs=1e-5)
    assert sum(r["b_ns"] for r in rows) == pytest.approx(doc["b"]["latency_ns"], abs=1e-5)
    assert all(r["ns"] == pytest.approx(r["b_ns"] - r["a_ns"], abs=1e-6) for r in rows)
    assert [abs(r["ns"]) for r in rows] == sorted((abs(r["ns"]) for r in rows), reverse=True)
    assert rows[0]["name"].startswith("gqa_decode.py:") and rows[0]["ns"] > 0  # a longer context: the KV loop's line grew
    assert main(["compare", f"{SMALL_GQA} --context 512", f"{SMALL_GQA} --context 1024"]) == 0
    assert "critical path by source line (the same file on both sides" in capsys.readouterr().out


def test_compare_of_two_files_has_no_per_line_delta(capsys):
    assert main(["compare", f"{SMALL_GQA} --context 512", "gemm-primitive", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["delta"]["attribution"]["by_line"] is None
    assert main(["compare", f"{SMALL_GQA} --context 512", "gemm-primitive"]) == 0
    assert "no per-line delta: the sides do not run the same kernel file(s)" in capsys.readouterr().out


@pytest.mark.parametrize("flag", [["--what-if", "pe.attrs.tcm_bw_gbps=1024"], ["--speedups"], ["--by", "line"]])
def test_a_compare_side_refuses_the_analyses_it_would_not_do(capsys, flag):
    assert main(["compare", f"{SMALL_GQA} --context 512 {' '.join(flag)}", "gemm-primitive"]) == 2
    err = capsys.readouterr().err
    assert f"{flag[0]} is not taken inside a side" in err


def _shipped() -> list[str]:
    from kernbench.kernels import registry

    return sorted(registry.kernels())


@pytest.mark.parametrize("name", _shipped())
def test_every_shipped_kernels_path_is_all_on_its_own_lines(name):
    from kernbench.commands.run import prepare

    _spec, _ns, rt, _prep, _params = prepare(name, shipped.argv(name))
    result = rt.run(record=True)
    lines = result.explain().lines("line")
    assert sum(lc.ns for lc in lines) == pytest.approx(result.latency_ns, abs=1e-6)
    assert NO_LINE not in {lc.key for lc in lines}  # every segment's command names its line
    assert all(
        lc.file.endswith(".py")
        and ("kernbench/kernels/" in lc.file.replace(os.sep, "/") or "kernbench/layers/" in lc.file.replace(os.sep, "/"))
        for lc in lines
    )
