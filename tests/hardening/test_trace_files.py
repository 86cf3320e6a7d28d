"""§8: a damaged trace file is a TraceFormatError however it is damaged (the checksum recomputed or
not); the debugger refuses bad files and bad options before it starts and exits non-zero after a
failed run."""

from __future__ import annotations

import json
import re
import struct
import zlib

import pytest
from hardening_harness import assert_failed_cleanly, invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernbench.analysis.summary import summarize
from kernbench.errors import KernbenchError, TraceFormatError
from kernbench.events.store import EventStore
from kernbench.events.timeline import TimelineModel
from kernbench.events.tracefile import TraceMetadata, open_trace, save_trace
from kernbench_tui import cli

_FIXED = struct.Struct("<8sHHIQI")


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> bytes:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "events"))
    from randtrace import random_trace

    path = tmp_path_factory.mktemp("t") / "good.kbtrace"
    store = EventStore.from_events(random_trace(3, 400))
    save_trace(path, store, TraceMetadata(kernel="k", topology="cube1", variant="v", end_ns=store.end_ns, extra={"a": 1}))
    return path.read_bytes()


def with_crc(data: bytearray) -> bytes:
    """Recompute the checksum, so only the structure checks stand between the bytes and the store."""
    _, _, _, h_len, _, _ = _FIXED.unpack_from(data)
    crc = zlib.crc32(bytes(data[_FIXED.size + h_len :]), zlib.crc32(bytes(data[_FIXED.size : _FIXED.size + h_len])))
    struct.pack_into("<I", data, 24, crc)
    return bytes(data)


def opens_or_is_a_format_error(path) -> None:
    try:
        trace = open_trace(path)
    except TraceFormatError:
        return
    model = TimelineModel(trace.store)  # what opened must be usable: by the debugger, and by compare
    for pe in model.pes():
        model.pe_utilization(pe)
    model.events_around(trace.store.end_ns / 2, 5, 5)
    summarize(trace.store, "t", trace.metadata.end_ns or None, trace.metadata)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flips=st.lists(st.tuples(st.integers(_FIXED.size, 10**9), st.integers(0, 7)), min_size=1, max_size=4), crc=st.booleans())
def test_flipped_bits_are_a_format_error_or_a_usable_trace(tmp_path, good, flips, crc):
    data = bytearray(good)
    for pos, bit in flips:
        data[_FIXED.size + (pos - _FIXED.size) % (len(data) - _FIXED.size)] ^= 1 << bit
    path = tmp_path / "t.kbtrace"
    path.write_bytes(with_crc(data) if crc else bytes(data))
    opens_or_is_a_format_error(path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 10**9))
def test_a_cut_file_is_truncated(tmp_path, good, cut):
    path = tmp_path / "t.kbtrace"
    path.write_bytes(good[: cut % len(good)])
    with pytest.raises(TraceFormatError, match=r"truncated|not a kernbench trace"):
        open_trace(path)


HEADER_DAMAGE = {
    "metadata not a dict": lambda h: h.update(metadata=[1]),
    "unknown metadata key": lambda h: h["metadata"].update(evil=1),
    "end_ns a string": lambda h: h["metadata"].update(end_ns="x"),
    "kernel a number": lambda h: h["metadata"].update(kernel=3),
    "components not strings": lambda h: h.update(components=[1, 2]),
    "duplicate component": lambda h: h.update(components=h["components"][:1] * 2 + h["components"][2:]),
    "strings without the empty first": lambda h: h.update(strings=["x", *h["strings"][1:]]),
    "n_events negative": lambda h: h.update(n_events=-1),
    "n_events huge": lambda h: h.update(n_events=10**15),
    "n_events off by one": lambda h: h.update(n_events=h["n_events"] + 1),
    "n_events a bool": lambda h: h.update(n_events=True),
    "end_ns negative": lambda h: h["metadata"].update(end_ns=-5.0),
    "missing strings": lambda h: h.pop("strings"),
}


@pytest.mark.parametrize("damage", sorted(HEADER_DAMAGE))
def test_a_header_of_the_wrong_shape_is_corrupt_even_with_a_good_checksum(tmp_path, good, damage):
    _, version, flags, h_len, p_len, _ = _FIXED.unpack_from(good)
    header = json.loads(good[_FIXED.size : _FIXED.size + h_len])
    HEADER_DAMAGE[damage](header)
    new = json.dumps(header).encode()
    payload = good[_FIXED.size + h_len :]
    data = bytearray(_FIXED.pack(b"KBTRACE\x00", version, flags, len(new), p_len, 0) + new + payload)
    path = tmp_path / "t.kbtrace"
    path.write_bytes(with_crc(data))
    with pytest.raises(TraceFormatError, match="corrupt"):
        open_trace(path)


@pytest.mark.parametrize("content", [b"", b"KBTRACE\x00", b'{"traceEvents": []}' * 3, bytes(range(256)) * 8])
def test_the_debugger_refuses_a_bad_file_before_it_starts(tmp_path, capsys, content):
    path = tmp_path / "bad.kbtrace"
    path.write_bytes(content)
    launched = []
    got = invoke(lambda argv: cli.main(argv, launch=launched.append), ["open", str(path)], capsys)
    assert_failed_cleanly(got, 2, r"^error: .*bad\.kbtrace: (truncated|not a kernbench trace)", max_seconds=5)
    assert launched == []


@pytest.mark.parametrize(
    "options, cause",
    [
        (["--heads", "abc"], r"argument --heads: invalid int value: 'abc'"),
        (["--heads", "0"], r"--heads 0: must be in 1\.\.4096"),
        (["--variant", "fast"], r"--variant 'fast': choose one of primitive, opt3, opt2"),
        (["--topology", "nope"], r"unknown topology 'nope'"),
        (["--set", "flit_bytes=.inf"], r"flit_bytes: must be a finite number"),
        (["--trace", "/nonexistent/x.kbtrace"], r"folder /nonexistent does not exist"),
    ],
)
def test_the_debugger_checks_run_options_before_it_starts(capsys, options, cause):
    launched = []
    got = invoke(lambda argv: cli.main(argv, launch=launched.append), ["run", "gqa-decode", *options], capsys)
    assert_failed_cleanly(got, 2, cause, max_seconds=5)
    assert "usage:" not in got.err and launched == []


def test_a_run_that_fails_in_the_app_exits_2_with_its_message(capsys):
    import asyncio

    from kernbench_tui.app import KernbenchApp
    from kernbench_tui.sources import CallableSource

    def broken(bus):
        raise KernbenchError("kernel.py:12: index out of range")

    async def run_app():
        app = KernbenchApp(CallableSource(broken))
        async with app.run_test(size=(80, 24)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            await pilot.press("q")
        return app

    app = asyncio.run(run_app())
    with pytest.raises(KernbenchError, match=r"the run failed: kernel.py:12: index out of range"):
        cli.exit_status(app)
    got = invoke(lambda argv: cli.main(argv, launch=lambda source: cli.exit_status(app)), ["demo"], capsys)
    assert_failed_cleanly(got, 2, r"^error: the run failed: kernel\.py:12")


CAUSE_DAMAGE = {
    "all-equal seq": (lambda evs: [e._replace(seq=7) for e in evs], "event number (seq) 7 is given to more than one event"),
    "negative seq": (lambda evs: [e._replace(seq=-1 - i) for i, e in enumerate(evs)], "is negative"),
    "pred past every seq": (lambda evs: [*evs[:-1], evs[-1]._replace(pred=10**9)], "which is not an earlier event"),
    "pred below -1": (lambda evs: [*evs[:-1], evs[-1]._replace(pred=-5)], "which is not an earlier event"),
}


@pytest.mark.parametrize("damage", sorted(CAUSE_DAMAGE))
def test_a_trace_whose_causes_do_not_hold_together_is_refused_on_open_not_in_compare(tmp_path, capsys, damage):
    from kernbench.cli import main
    from kernbench.events.types import Event as Ev
    from kernbench.events.types import EventKind

    spoil, cause = CAUSE_DAMAGE[damage]
    events = [Ev(float(i), EventKind.DISPATCH, "sip0.cube0.pe0.cpu", float(i) + 1, i, "MathCmd", seq=i, pred=i - 1) for i in range(6)]
    path = tmp_path / "t.kbtrace"
    save_trace(path, EventStore.from_events(spoil(events)), TraceMetadata(kernel="k", end_ns=6.0))
    with pytest.raises(TraceFormatError, match=re.escape(cause)):
        open_trace(path)
    got = invoke(main, ["compare", str(path), str(path)], capsys)
    assert_failed_cleanly(got, 2, re.escape(cause), max_seconds=5)
