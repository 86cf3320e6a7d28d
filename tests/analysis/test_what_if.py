"""What-if re-timing: the recorded commands re-timed under changed parameters or scaled work,
exactly; time-dependent kernels refused; speedups found by re-timing."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import shipped

from kernbench.analysis.whatif import parse_what_ifs, retime, speedups
from kernbench.cli import main
from kernbench.commands.run import prepare
from kernbench.errors import RetimeError
from kernbench.kernels import registry
from kernbench.pe.scale import WorkScale
from kernbench.runtime.api import Runtime

#: three parameters every shipped kernel's time depends on: PE_MATH's rate, TCM bandwidth, dispatch cost
PARAMS = ("pe.attrs.math_elems_per_cycle=16", "pe.attrs.tcm_bw_gbps=1024", "pe.attrs.pe_cost_model.byte_cycles_recip=0.25")


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(f"kern_{abs(hash(str(path)))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", sorted(registry.kernels()))
def test_a_parameter_what_if_is_exactly_a_full_run_with_set(name):
    _spec, _ns, rt, _prep, _params = prepare(name, shipped.argv(name))
    base = rt.run()
    for change in PARAMS:
        what = parse_what_ifs([change], base)
        got = retime(rt, base, what, record=False).result.latency_ns
        _s, _n, rt2, _p2, _pa2 = prepare(name, [*shipped.argv(name), "--set", change])
        assert got == rt2.run().latency_ns, (name, change)  # exactly: no tolerance


def test_the_three_parameters_each_move_some_kernels_latency():
    # (so the exactness test above is not comparing runs the change left alone)
    _spec, _ns, rt, _prep, _params = prepare("gemm-primitive", [])
    base = rt.run()
    moved = [rt.replay(base, overrides=[c]).latency_ns != base.latency_ns for c in PARAMS]
    assert all(moved)


@pytest.fixture
def cycles_kernel(tmp_path):
    path = tmp_path / "cyc.py"
    path.write_text("import kernbench.tl as tl\n\n\ndef k():\n    tl.cycles(1000)\n    tl.cycles(500)\n")
    mod = _module(path)
    rt = Runtime("cube1")
    rt.launch(mod.k, pes=[0])
    return rt, rt.run(record=True), path


def test_scaling_a_line_scales_its_work_by_hand(cycles_kernel):
    rt, base, path = cycles_kernel
    clock = rt.graph.node("sip0.cube0.pe0.cpu").attrs["clock_freq_ghz"]
    assert base.latency_ns == pytest.approx(1500 / clock)
    half = retime(rt, base, parse_what_ifs(["line:5*0.5"], base))
    assert half.result.latency_ns == pytest.approx((500 + 500) / clock)
    both = retime(rt, base, parse_what_ifs([f"line:{path.name}:5*0", "line:6*2"], base))
    assert both.result.latency_ns == pytest.approx(1000 / clock)
    same = retime(rt, base, parse_what_ifs(["line:5*1"], base))
    assert same.result.latency_ns == base.latency_ns


KERNEL = """\
import kernbench.tl as tl


def step(a, out):
    x = tl.load(a)
    y = tl.exp(x)
    z = tl.dot(y, y)
    tl.store(out, z)


def k(a, out):
    for _ in range(2):
        step(a, out)
"""


@pytest.fixture
def mixed(tmp_path):
    path = tmp_path / "mixed.py"
    path.write_text(KERNEL)
    mod = _module(path)
    rt = Runtime("cube1")
    a = rt.deploy(np.ones((64, 64), np.float32))
    out = rt.empty((64, 64), np.float32)
    rt.launch(mod.k, pes=[0])
    rt._launches[-1] = type(rt._launches[-1])(mod.k, rt._launches[-1].pes, (a, out), {})
    return rt, rt.run(record=True), path


def test_scaling_less_work_never_makes_the_run_slower(mixed):
    rt, base, _path = mixed
    lat = [retime(rt, base, parse_what_ifs([f"line:6*{f}"], base), record=False).result.latency_ns for f in (0, 0.25, 0.5, 1, 2)]
    assert lat == sorted(lat) and lat[0] < lat[-1] and lat[3] == base.latency_ns


def test_an_engine_scaled_to_zero_has_no_busy_time_left(mixed):
    rt, base, _path = mixed
    assert sum(b["gemm"] for b in base.engine_busy_ns.values()) > 0
    new = retime(rt, base, parse_what_ifs(["engine:PE_GEMM*0"], base)).result
    assert sum(b["gemm"] for b in new.engine_busy_ns.values()) == 0
    assert new.latency_ns < base.latency_ns
    half = retime(rt, base, parse_what_ifs(["engine:gemm*0.5"], base)).result
    assert sum(b["gemm"] for b in half.engine_busy_ns.values()) == pytest.approx(0.5 * sum(b["gemm"] for b in base.engine_busy_ns.values()))


def test_a_caller_line_scales_the_commands_its_helper_issued(mixed):
    rt, base, _path = mixed
    # line 13 (step(a, out)) issued every command through step: scaling it scales them all, like scaling each of step's lines
    via_call = retime(rt, base, parse_what_ifs(["line:13*0.5"], base), record=False).result.latency_ns
    each = retime(rt, base, parse_what_ifs([f"line:{n}*0.5" for n in (5, 6, 7, 8)], base), record=False).result.latency_ns
    assert via_call == each < base.latency_ns


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("line:99*0.5", "no command came from 99"),
        ("line:6*fast", "is not a number"),
        ("line:6*-1", "finite number >= 0"),
        ("engine:PE_DMA*0.5", "timed by the network"),
        ("engine:PE_WARP*0.5", "no engine 'PE_WARP'"),
        ("line:x*0.5", "N a line number"),
        ("nonsense", "give KEY.PATH=VALUE"),
    ],
)
def test_a_malformed_what_if_says_what_is_wrong(mixed, change, message):
    _rt, base, _path = mixed
    with pytest.raises(RetimeError, match=message):
        parse_what_ifs([change], base)


def test_a_line_number_in_two_files_must_name_its_file(tmp_path, monkeypatch):
    (tmp_path / "helper_mod.py").write_text("import kernbench.tl as tl\n\n\n\ndef h(a):\n    return tl.load(a)\n")
    path = tmp_path / "two.py"
    path.write_text("import kernbench.tl as tl\nimport helper_mod\n\n\ndef k(a):\n    tl.load(a)\n    helper_mod.h(a)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = _module(path)
    rt = Runtime("cube1")
    rt.launch(mod.k, pes=[0], args=(rt.deploy(np.ones((8, 8), np.float32)),))
    base = rt.run()
    with pytest.raises(RetimeError, match=r"line 6 of several files issued commands .*say which, line:FILE.py:6\*F"):
        parse_what_ifs(["line:6*0"], base)  # a load on line 6 of each file
    assert parse_what_ifs(["line:helper_mod.py:6*0"], base).lines == {f"{tmp_path / 'helper_mod.py'}:6": 0.0}
    assert parse_what_ifs(["line:two.py:6*0"], base).lines == {f"{path}:6": 0.0}


def test_a_kernel_that_read_simulated_time_is_refused_naming_the_line(tmp_path):
    path = tmp_path / "poll.py"
    path.write_text(
        "import kernbench.tl as tl\nfrom kernbench.tl.context import current\n\n\ndef k(a):\n"
        "    x = tl.load(a)\n    if current().scratch_used > 0:\n        tl.cycles(10)\n"
    )
    mod = _module(path)
    rt = Runtime("cube1")
    rt.launch(mod.k, pes=[0], args=(rt.deploy(np.ones((8, 8), np.float32)),))
    base = rt.run()
    with pytest.raises(RetimeError, match=rf"read simulated time at {path}:7 in k \(if current\(\)\.scratch_used > 0:\).*--set"):
        rt.replay(base)


def test_speedups_top_line_gain_is_what_the_what_if_gives(mixed):
    rt, base, _path = mixed
    a = base.explain()
    rows = speedups(rt, base, a, top=3)
    assert rows and rows[0].path_ns == max(lc.ns for lc in a.lines())
    top = rows[0]
    line = top.key.rpartition(":")[2]
    for f, gain in ((0, top.gain_zero_ns), (0.5, top.gain_half_ns)):
        new = retime(rt, base, parse_what_ifs([f"line:{line}*{f}"], base), record=False).result.latency_ns
        assert base.latency_ns - new == gain
    assert all(r.gain_zero_ns >= r.gain_half_ns >= 0 for r in rows)


SMALL_GQA = ["gqa-decode", "--topology", "cube1", "--context", "512", "--heads", "16", "--kv-heads", "2"]


def test_cli_what_if_reports_the_new_latency_and_deltas(capsys):
    assert main(["run", *SMALL_GQA, "--set", "pe.attrs.math_elems_per_cycle=16", "--json"]) == 0
    full = json.loads(capsys.readouterr().out)["latency_ns"]
    assert main(["run", *SMALL_GQA, "--what-if", "pe.attrs.math_elems_per_cycle=16", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    w = doc["what_if"]
    assert w["latency_ns"] == full and w["before_ns"] == doc["latency_ns"]
    assert w["delta_ns"] == pytest.approx(full - doc["latency_ns"], abs=1e-6)
    assert sum(v["after"] for v in w["by_cause"].values()) == pytest.approx(full, abs=1e-6)
    assert sum(v["before"] for v in w["by_cause"].values()) == pytest.approx(doc["latency_ns"], abs=1e-6)
    assert doc["attribution"] is None  # not asked for
    assert main(["run", *SMALL_GQA, "--what-if", "pe.attrs.math_elems_per_cycle=16", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == doc  # the same, run after run (no wall time in it)


def test_cli_speedups_table_and_records(capsys):
    assert main(["run", *SMALL_GQA, "--explain", "--speedups", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = doc["speedups"]["lines"]
    assert 1 <= len(rows) <= 5
    assert [r["path_ns"] for r in rows] == [r["ns"] for r in doc["attribution"]["by_line"][: len(rows)]]
    top = rows[0]
    assert main(["run", *SMALL_GQA, "--what-if", f"line:{top['key']}*0", "--json"]) == 0
    w = json.loads(capsys.readouterr().out)["what_if"]
    assert -w["delta_ns"] == pytest.approx(top["gain_if_zero_ns"], abs=1e-6)
    assert main(["run", *SMALL_GQA, "--explain", "--speedups"]) == 0
    out = capsys.readouterr().out
    assert "speedups: the run's gain" in out and top["name"] in out


def test_cli_what_if_with_a_bad_parameter_fails_before_the_run(capsys):
    assert main(["run", *SMALL_GQA, "--what-if", "pe.attrs.no_such_knob=3"]) == 2
    assert "no_such_knob" in capsys.readouterr().err


def test_a_work_scale_with_nothing_to_scale_is_inactive():
    assert not WorkScale().active and WorkScale({"f.py:3": 0.5}).active


def test_every_engine_lane_of_a_pe_has_an_engine_kind_to_scale():
    # a lane added to the PE needs its kind in pe/scale.py's LANE_ENGINES, or engine:KIND would not reach it
    import simpy

    from kernbench.events.bus import Bus
    from kernbench.pe.lane import Lane
    from kernbench.pe.processing_element import IpcqFabric, ProcessingElement
    from kernbench.pe.scale import LANE_ENGINES
    from kernbench.sim.network import Network

    graph = Runtime("cube1").graph
    env, bus = simpy.Environment(), Bus()
    pe = ProcessingElement(env, graph, Network(env, graph, bus, "fast"), bus, IpcqFabric(), "sip0.cube0.pe0", 0)
    lanes = [v for v in vars(pe).values() if isinstance(v, Lane)]
    assert lanes and all(lane.component[len("sip0.cube0.pe0") + 1 :] in LANE_ENGINES for lane in lanes)


@pytest.mark.parametrize(
    ("engine", "lane"),
    [("PE_FETCH_STORE", "fetch"), ("PE_FETCH_STORE", "store"), ("PE_SCHEDULER", "sched"), ("PE_MATH", "math"), ("PE_CPU", "cpu")],
)
def test_each_engine_scaled_to_zero_has_no_busy_time_left(mixed, engine, lane):
    rt, base, _path = mixed
    assert sum(b[lane] for b in base.engine_busy_ns.values()) > 0
    new = retime(rt, base, parse_what_ifs([f"engine:{engine}*0"], base), record=False).result
    assert sum(b[lane] for b in new.engine_busy_ns.values()) == 0 and new.latency_ns < base.latency_ns
