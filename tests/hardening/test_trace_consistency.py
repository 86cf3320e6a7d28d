"""Round 2, §6: a trace that opens holds what a recorded run always holds, so what reads it works.

A trace with a good checksum could still name an event that is not there as a cause (``pred``),
give every event the same ``seq``, or end at −5 ns: it opened, then ``compare`` died in the
critical path (IndexError) or reported a −5 ns latency. Now ``open_trace`` checks times (from 0,
no span ending before it starts, nothing after the run's end), distinct ``seq``, each ``pred`` an
earlier event, and names without control characters; a trace that passes is one ``compare`` and
the explanation read without an error.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hardening_harness import assert_failed_cleanly, invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernbench import cli
from kernbench.errors import TraceFormatError
from kernbench.events.store import EventStore
from kernbench.events.tracefile import open_trace, trace_bytes


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A real run's trace (gemm-composite): its columns, string tables and metadata."""
    path = tmp_path_factory.mktemp("rec") / "run.kbtrace"
    assert cli.main(["run", "gemm-composite", "--trace", str(path)]) == 0
    trace = open_trace(path)
    return trace.store.columns(), trace.store.components, trace.store.strings, trace.metadata


def write(path, recorded, mutate=lambda cols: None, **meta):
    cols, components, strings, metadata = recorded
    cols = {k: np.array(v) for k, v in cols.items()}
    mutate(cols)
    store = EventStore.from_columns(cols, components, strings)  # (sorts; checks indexes, not causes)
    path.write_bytes(trace_bytes(store, dataclasses.replace(metadata, **meta)))
    return path


#: the fuzz campaign's cases, each with the cause the error names
CASES = {
    "pred out of range": (lambda c: c["pred"].__setitem__(c["pred"] >= 0, 10**6), {}, r"names event #1000000 as its cause"),
    "all seq equal": (lambda c: c["seq"].__setitem__(slice(None), 7), {}, r"seq\) 7 is given to more than one event"),
    "negative end_ns": (lambda c: None, {"end_ns": -5.0}, r"end_ns -5.0 is not a time of the run"),
    "a span ending at -5 ns": (lambda c: c["end_ns"].__setitem__(-1, -5.0), {}, r"ends at -5.0 ns, before it starts"),
    "an event before 0": (lambda c: c["t_ns"].__setitem__(0, -1.0), {}, r"t=-1.0 ns, before the run began"),
    "a cause that is itself": (
        lambda c: c["pred"].__setitem__(c["pred"] >= 0, c["seq"][c["pred"] >= 0]),
        {},
        r"names event #\d+ as its cause",
    ),
    "a cause published later": (lambda c: c["pred"].__setitem__(0, c["seq"].max()), {}, r"not an earlier event"),
    "an end before the last event": (lambda c: None, {"end_ns": 1.0}, r"the run ends at 1.0 ns .* an event ends later"),
    "an escape in the kernel's name": (lambda c: None, {"kernel": "k\x1b]0;x\x07"}, r"control character: 'k\\x1b\]0;x\\x07'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_inconsistent_trace_is_refused_on_open_naming_what_is_wrong(tmp_path, capsys, recorded, case):
    mutate, meta, cause = CASES[case]
    path = write(tmp_path / "t.kbtrace", recorded, mutate, **meta)
    with pytest.raises(TraceFormatError, match=cause):
        open_trace(path)
    got = invoke(cli.main, ["compare", str(path), str(path)], capsys)
    assert_failed_cleanly(got, 2, r"^error: compare A: .*" + cause, max_seconds=5, max_mib=100)  # (one line, bounded)
    assert got.err.count("\n") == 1, got.err


def test_seq_numbers_far_apart_cost_what_the_trace_does(tmp_path, capsys, recorded):
    """A consistent trace whose seq start at 2^60 (a dense seq → row table would not fit)."""

    def shift(c):
        c["seq"] += 2**60
        c["pred"] = np.where(c["pred"] >= 0, c["pred"] + 2**60, -1)

    path = write(tmp_path / "t.kbtrace", recorded, shift)
    got = invoke(cli.main, ["compare", str(path), str(path), "--json"], capsys)
    assert got.status == 0, got.err
    assert json.loads(got.out)["a"]["latency_ns"] == recorded[3].end_ns
    assert got.peak_mib < 50


FIELDS = ("pred", "seq", "t_ns", "end_ns")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edits=st.lists(
        st.tuples(st.sampled_from(FIELDS), st.integers(0, 10**6), st.sampled_from(["-5", "-1", "0", "self", "other", "n", "huge", "half"])),
        min_size=1,
        max_size=3,
    ),
    end=st.sampled_from([None, -5.0, 0.0, 1.0, 1e300]),
)
def test_a_trace_that_opens_is_one_compare_reads(tmp_path, capsys, recorded, edits, end):
    def mutate(c):
        n = len(c["seq"])
        for name, at, how in edits:
            i, col = at % n, c[name]
            value = {
                "-5": -5,
                "-1": -1,
                "0": 0,
                "self": c["seq"][i],
                "other": c["seq"][(i * 7 + 3) % n],
                "n": n,
                "huge": 2**62,
                "half": col[i] / 2,
            }[how]
            col[i] = value

    path = write(tmp_path / "t.kbtrace", recorded, mutate, **({} if end is None else {"end_ns": end}))
    try:
        open_trace(path)
    except TraceFormatError:
        return
    got = invoke(cli.main, ["compare", str(path), str(path), "--json"], capsys, trace_memory=False)
    assert got.status == 0 and "Traceback" not in got.err, got.err[-2000:]
    a = json.loads(got.out)["a"]
    assert a["latency_ns"] >= 0
