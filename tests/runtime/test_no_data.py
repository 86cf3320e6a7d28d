"""Runtime(data=False) / --no-data: the same commands and latency with no payload held."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest

from kernbench import cli
from kernbench.commands.run import prepare
from kernbench.handles import NoDataError
from kernbench.kernels import registry
from kernbench.runtime.api import Runtime

SHIPPED = [
    ["gqa-decode", "--topology", "cube1", "--kv-heads", "2", "--heads", "16", "--context", "2048"],
    [
        "gqa-decode",
        "--topology",
        "cube1",
        "--kv-heads",
        "2",
        "--heads",
        "16",
        "--context",
        "1024",
        "--layout",
        "naive",
        "--variant",
        "opt3",
    ],
    ["gemm-composite"],
    ["gemm-primitive"],
    ["allreduce"],
    ["alltoall"],
    ["allgather"],
    ["reducescatter"],
]


def _run(argv: list[str]):
    rt = prepare(argv[0], argv[1:])[2]
    return rt, rt.run(record=True)


@pytest.mark.parametrize("argv", SHIPPED, ids=lambda a: " ".join(a))
def test_a_shipped_kernel_runs_the_same_event_stream_without_data(argv):
    rt, held = _run(argv)
    rt_none, none = _run([*argv, "--no-data"])
    assert rt.holds_data and not rt_none.holds_data
    assert none.latency_ns == held.latency_ns
    assert none.events == held.events  # every event, in order: the same commands, the same timing


def test_a_tensor_without_data_is_placed_as_one_with_data_and_its_values_are_zeros():
    with_data, without = Runtime("cube1"), Runtime("cube1", data=False)
    a = with_data.deploy(np.ones((64, 32), np.float32), pe=1)
    b = without.deploy(np.ones((64, 32), np.float32), pe=1)
    c, d = with_data.empty((3, 5), pe=1), without.empty((3, 5), pe=1)
    assert (a.memory, a.offset, a.shape, a.dtype) == (b.memory, b.offset, b.shape, b.dtype)
    assert (c.memory, c.offset, c.shape, c.dtype) == (d.memory, d.offset, d.shape, d.dtype)
    assert a.dtype == np.float16  # float arrays become float16 in both
    p, q = a[8:16, 4:12], b[8:16, 4:12]
    assert (p.region.starts, p.region.run_bytes, p.offset) == (q.region.starts, q.region.run_bytes, q.offset)
    assert not q.read().any() and q.read().shape == (8, 8)
    q.write(np.ones((8, 8)))  # discarded
    assert not q.read().any()
    with pytest.raises(NoDataError, match=r"holds no data.*--no-data"):
        without.read(b)


def test_a_tensor_without_data_costs_no_memory_of_its_size():
    rt = Runtime("cube1", data=False)
    tracemalloc.start()
    try:
        t = rt.empty((2**15, 2**14), np.float16)  # 512 MiB were it held
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert t.nbytes == 2**30 and peak < 2**20


def test_the_kv_limit_holds_only_for_a_run_holding_data(capsys):
    spec = registry.get("gqa-decode")
    big = dict(spec.defaults(), context=2**20)
    spec.validate(big, 256)  # the rule before the runtime exists lets it through …
    code = cli.main(["run", "gqa-decode", "--context", str(2**20)])
    assert code == 2 and "at most 67,108,864" in capsys.readouterr().err  # … the set-up of a data run refuses it


def test_the_run_record_says_no_data_was_held_and_no_check_ran(capsys):
    argv = ["run", "gqa-decode", "--topology", "cube1", "--kv-heads", "2", "--heads", "16", "--context", "512", "--json"]
    assert cli.main(argv) == 0
    held = json.loads(capsys.readouterr().out)
    assert cli.main([*argv, "--no-data"]) == 0
    none = json.loads(capsys.readouterr().out)
    assert held["data"] == "held" and held["max_abs_err"] is not None and held["max_abs_err"] < 4e-3
    assert none["data"] == "none" and none["max_abs_err"] is None
    assert none["latency_ns"] == held["latency_ns"] and none["commands"] == held["commands"]
    assert cli.main([*argv[:-1], "--no-data"]) == 0
    assert "--no-data: no values held, the reference check is skipped" in capsys.readouterr().out


def test_a_trace_of_a_run_without_data_reads_back_as_a_record_saying_so(tmp_path, capsys):
    from kernbench.analysis.summary import summarize
    from kernbench.events.tracefile import open_trace

    path = tmp_path / "run.kbtrace"
    argv = ["run", "gqa-decode", "--topology", "cube1", "--kv-heads", "2", "--heads", "16", "--context", "256"]
    assert cli.main([*argv, "--no-data", "--trace", str(path)]) == 0
    capsys.readouterr()
    trace = open_trace(path)
    rec = summarize(trace.store, "run", trace.metadata.end_ns or None, trace.metadata).as_json()
    assert rec["data"] == "none" and rec["max_abs_err"] is None
