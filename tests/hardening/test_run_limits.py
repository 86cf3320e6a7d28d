"""§5: a runaway kernel stops at a limit the user can set, with an error naming the PE and the kernel
line, in bounded time and memory, keeping what was recorded (and never the requested outputs)."""

from __future__ import annotations

import json
import re
import threading
import time

import numpy as np
import pytest
from hardening_harness import HANG_BOUND_S, assert_failed_cleanly, invoke, snapshot_files
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernbench import Runtime, cli, tl
from kernbench.errors import KernbenchError, RunLimitError
from kernbench.events.tracefile import open_trace
from kernbench.limits import WATCHDOG_REPEAT_S, RunLimits, WallTimeExceeded, wall_clock_watchdog


def spin_cycles():
    while True:
        tl.cycles(1)


def spin_python():
    while True:
        pass


def spin_swallowing():
    while True:
        try:
            while True:
                pass
        except Exception:  # a kernel that swallows errors is still stopped
            pass


def spin_catching_everything():
    while True:
        try:
            while True:
                pass
        except BaseException:  # even the wall-time stop: it must not be able to keep the run going
            pass


def catch_once_and_return():
    try:
        while True:
            pass
    except BaseException:  # it swallowed the stop and ends as if it had finished: the run must not
        return


def catch_while_sleeping():
    while True:
        try:
            time.sleep(0.01)  # (in C when the stop comes, most of the time)
        except BaseException:
            pass


def spin_loads(x):
    while True:
        t = tl.load(x)
        tl.cycles(1)
        del t


def far_future():
    while True:
        tl.cycles(1e9)


RUNAWAYS = {
    "tl.cycles forever": (spin_cycles, RunLimits(max_commands_per_pe=20_000), r"issued 20,000 commands, the limit per PE", "tl.cycles(1)"),
    "pure Python forever": (spin_python, RunLimits(max_wall_s=0.5), r"ran past the wall-time limit of 0.5 s", "in spin_python"),
    "swallows exceptions": (spin_swallowing, RunLimits(max_wall_s=0.5), r"wall-time limit of 0.5 s", "in spin_swallowing"),
    "catches BaseException": (
        spin_catching_everything,
        RunLimits(max_wall_s=0.5),
        r"wall-time limit of 0.5 s",
        "in spin_catching_everything",
    ),
    "catches BaseException once and returns": (
        catch_once_and_return,
        RunLimits(max_wall_s=0.5),
        r"wall-time limit of 0.5 s",
        "in catch_once_and_return",
    ),
    "catches BaseException while sleeping": (
        catch_while_sleeping,
        RunLimits(max_wall_s=0.5),
        r"wall-time limit of 0.5 s",
        "in catch_while_sleeping",
    ),
    "loads forever": (spin_loads, RunLimits(max_commands_per_pe=3_000), r"issued 3,000 commands", "t = tl.load(x)"),
    "simulated time": (far_future, RunLimits(max_sim_ns=1e12), r"past the simulated-time limit of 1e\+12 ns", "tl.cycles(1e9)"),
}


@pytest.mark.parametrize("case", sorted(RUNAWAYS))
@pytest.mark.parametrize("pes", [[0], [0, 5]])
def test_a_runaway_kernel_stops_naming_the_pe_and_its_line(case, pes):
    kernel, limits, cause, line = RUNAWAYS[case]
    rt = Runtime("cube1")
    args = (rt.deploy(np.ones((16, 16)), pe=0),) if kernel is spin_loads else ()
    rt.launch(kernel, pes=pes, args=args)
    with pytest.raises(RunLimitError) as info:  # (a runaway that is not stopped hangs the test: the failure shows)
        rt.run(record=True, limits=limits)
    msg = str(info.value)
    assert re.search(cause, msg), msg
    assert re.search(r"sip0\.cube0\.pe\d \(program \d\)", msg), msg
    assert "test_run_limits.py:" in msg and line in msg, msg
    recorded = info.value.recorded  # the events recorded before the stop are kept
    assert recorded is not None and (len(recorded) > 0 or "wall-time" in cause)


WALL_RUNAWAYS = sorted(case for case, (_k, limits, _c, _l) in RUNAWAYS.items() if "wall-time" in _c)


@pytest.mark.parametrize("case", WALL_RUNAWAYS)
def test_the_wall_time_limit_stops_a_runaway_off_the_main_thread_too(case):
    """Where no SIGALRM can be had (a Dask worker's thread, a script's, the debugger's CallableSource): a
    kernel in a pure-Python loop ran on forever there, caught exceptions or not."""
    kernel, _limits, cause, line = RUNAWAYS[case]
    rt = Runtime("cube1")
    rt.launch(kernel, pes=[0])
    got: list[BaseException | str] = []

    def run() -> None:
        try:
            rt.run(limits=RunLimits(max_wall_s=0.3))
            got.append("the run finished")
        except BaseException as exc:
            got.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG_BOUND_S)  # (a bound on a hang: the stop itself comes 0.3 s in, however busy the machine)
    assert got, f"still running {HANG_BOUND_S} s into a 0.3 s limit"
    assert isinstance(got[0], RunLimitError), got[0]
    assert re.search(cause.replace("0.5", "0.3"), str(got[0])) and line in str(got[0]), got[0]


def test_off_the_main_thread_the_watchdog_stops_only_inside_its_block():
    """Blocks ending just before, at and just after the limit: the stop surfaces inside the block or
    not at all — never in the caller's code after it, and no more are sent once the block is left."""
    surfaced_after: list[int] = []

    def busy(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pass

    def blocks() -> None:
        for i in range(20):
            try:
                with wall_clock_watchdog(RunLimits(max_wall_s=0.02)):
                    busy(0.02 + (i - 10) * 0.0003)  # ending within 3 ms of the limit, either side
            except WallTimeExceeded:
                pass
            try:
                busy(0.01)
            except WallTimeExceeded:
                surfaced_after.append(i)
        try:
            busy(2 * WATCHDOG_REPEAT_S)  # a watchdog still sending would be heard here
        except WallTimeExceeded:
            surfaced_after.append(-1)

    thread = threading.Thread(target=blocks, daemon=True)
    thread.start()
    thread.join(20)
    assert not thread.is_alive() and surfaced_after == [], surfaced_after


def test_where_a_stop_landed_is_kept_without_the_frames_locals(monkeypatch):
    """Under 4 busy loops the test above once saw the stop surface after its block: the watchdog kept the
    frame it interrupted (for the kernel's line), and a frame holds its locals — when the stop landed in
    the block's exit (contextlib's ``__exit__``, before the generator's ``finally``), that kept the context
    manager alive, its ``finally`` never ran, and its watchdog went on sending. Now only code and line
    numbers are kept: a local of the interrupted frame is freed once its owner drops it."""
    import gc
    import weakref

    from kernbench import limits
    from kernbench.pe.cpu import kernel_frame_location

    monkeypatch.setattr(limits, "WATCHDOG_REPEAT_S", HANG_BOUND_S)  # one stop only, while this looks

    class Token:
        pass

    def spin(token: Token) -> None:
        while True:
            pass

    with wall_clock_watchdog(RunLimits(max_wall_s=0.05)):
        token = Token()
        ref = weakref.ref(token)
        try:
            spin(token)
        except WallTimeExceeded:
            pass
        where = limits.alarm_frame()
        del token
        gc.collect()
        assert ref() is None, "the interrupted frame's locals are still held"
        assert where.f_code is spin.__code__ and spin.__code__.co_firstlineno < where.f_lineno
        assert kernel_frame_location(where, __file__).startswith(f"\n  at {__file__}:{where.f_lineno} in spin\n    while True:")
    assert limits.alarm_frame() is None


def test_a_thread_started_while_the_watchdog_sends_gets_no_stop_and_starts(monkeypatch):
    """On CPython 3.11 a thread being started carries its starter's id until it runs: a stop sent then
    landed in the new thread, which died before it began ("Exception ignored in thread started by"), and
    ``Thread.start()`` in the watched code waited for it forever — the watchdog could not stop that wait.
    Seen with user code starting threads and with a watchdog's own thread started under another's. Here a
    stop every 2 ms (the limit 1 ms) while a thread is started and joined again and again for 1 s: every
    stop lands in the watched thread (caught there), every thread starts, nothing is left waiting."""
    import sys

    from kernbench import limits

    monkeypatch.setattr(limits, "WATCHDOG_REPEAT_S", 0.002)
    lost: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: lost.append(u.exc_type))
    counts = {"started": 0, "ran": 0, "stops": 0}

    def ran() -> None:
        counts["ran"] += 1

    def starts() -> None:
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            try:  # (a limit of 1 ms can pass while the watchdog's own thread starts, on a loaded machine: again)
                with wall_clock_watchdog(RunLimits(max_wall_s=0.001)):
                    while time.monotonic() < end:
                        try:
                            t = threading.Thread(target=ran)
                            t.start()
                            counts["started"] += 1
                            t.join()
                        except WallTimeExceeded:
                            counts["stops"] += 1
            except WallTimeExceeded:
                counts["stops"] += 1

    thread = threading.Thread(target=starts, daemon=True)
    thread.start()
    thread.join(HANG_BOUND_S)
    assert not thread.is_alive(), f"Thread.start() still waiting: {counts}"
    assert lost == [] and counts["stops"] > 0 and counts["started"] > 0, (lost, counts)
    assert counts["ran"] >= counts["started"]  # (each thread said started has run)


def test_the_default_limits_stop_a_runaway_in_bounded_memory():
    import tracemalloc

    rt = Runtime("cube1")
    rt.launch(spin_cycles, pes=[0])
    tracemalloc.start()
    with pytest.raises(RunLimitError, match="issued 100,000 commands"):
        rt.run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 150 * 2**20


@pytest.mark.parametrize(
    "bad", [dict(max_commands_per_pe=0), dict(max_sim_ns=-1.0), dict(max_wall_s=float("nan")), dict(max_sim_ns=float("inf"))]
)
def test_a_limit_must_be_positive_and_finite(bad):
    with pytest.raises(KernbenchError, match="must be a positive finite number or None"):
        RunLimits(**bad)


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "run.kbtrace").write_bytes(b"an older trace")
    (tmp_path / "run.json").write_bytes(b'{"old": true}')
    return tmp_path


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limit=st.integers(1, 60), kernel=st.sampled_from(["gemm-primitive", "gemm-composite"]))
def test_the_command_limit_from_the_cli_stops_cleanly_and_keeps_the_recorded_events(folder, capsys, limit, kernel):
    for p in folder.glob("*.partial.*"):
        p.unlink()
    before = (folder, snapshot_files(folder))
    argv = [
        "run",
        kernel,
        "--max-commands-per-pe",
        str(limit),
        "--trace",
        str(folder / "run.kbtrace"),
        "--perfetto",
        str(folder / "run.json"),
    ]
    got = invoke(cli.main, argv, capsys)
    if got.status == 0:  # the kernel needed no more commands than that
        assert (folder / "run.kbtrace").read_bytes() != b"an older trace"
        return
    assert_failed_cleanly(
        got, 2, rf"issued {limit:,} commands, the limit per PE.*--max-commands-per-pe.*\.partial\.kbtrace", before=before, max_seconds=10
    )
    partial = open_trace(folder / "run.partial.kbtrace")
    assert len(partial.store) > 0 and partial.metadata.extra["partial"] is True
    assert json.loads((folder / "run.partial.json").read_text())["traceEvents"]


@pytest.mark.parametrize(
    "flag, value",
    [
        ("--max-commands-per-pe", "-1"),
        ("--max-sim-ns", "inf"),
        ("--max-wall-s", "nan"),
        ("--max-commands-per-pe", "1.5"),
        ("--max-wall-s", "soon"),
    ],
)
def test_a_bad_limit_option_is_one_line(capsys, flag, value):
    got = invoke(cli.main, ["run", "gemm-composite", flag, value], capsys)
    assert_failed_cleanly(got, 2, rf"argument {flag}: expected a", max_seconds=3)


def test_a_limit_of_zero_means_none(capsys):
    got = invoke(
        cli.main, ["run", "gemm-composite", "--max-wall-s", "0", "--max-sim-ns", "0", "--max-commands-per-pe", "0", "--json"], capsys
    )
    assert got.status == 0 and json.loads(got.out)["latency_ns"] > 0


@settings(max_examples=25, deadline=None)
@given(kernel=st.sampled_from(["gemm-composite", "gemm-primitive", "gemm-tiled"]), share=st.floats(0.0, 1.5))
def test_the_simulated_time_limit_holds_on_the_clock_not_only_when_a_pe_takes_a_command(kernel, share):
    """A composite's engines run for µs after its one command: the limit stops them too (gemm-composite
    --max-sim-ns 1 once ran to 1,477 ns and exited 0); at or above the latency nothing changes."""
    from kernbench.commands.run import limits_of, prepare

    _spec, ns, rt, _prepared, _params = prepare(kernel, [])
    latency = rt.run(limits=limits_of(ns)).latency_ns
    limit = max(0.001, share * latency)
    _spec, ns, rt, _prepared, _params = prepare(kernel, ["--max-sim-ns", repr(limit)])
    if limit >= latency:
        assert rt.run(limits=limits_of(ns)).latency_ns == latency
        return
    with pytest.raises(RunLimitError, match=r"past the simulated-time limit of .* ns"):
        rt.run(limits=limits_of(ns))


def test_after_a_wall_stopped_kernel_its_thread_still_raises_recursion_error():
    """The stop leaves the kernel's greenlet for good from inside the exception's creation; on CPython 3.11
    that left the thread's recursion headroom raised, and the thread's next runaway recursion (a json file
    nested too deep, in the same test session) killed the interpreter with a fatal error instead of raising
    RecursionError (a pytest worker crashed this way). Run in a child: the failure is the process dying."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import json
        from kernbench.errors import RunLimitError
        from kernbench.limits import RunLimits
        from kernbench.runtime.api import Runtime

        def spin_catching_everything():
            while True:
                try:
                    while True:
                        pass
                except BaseException:
                    pass

        rt = Runtime("cube1")
        rt.launch(spin_catching_everything, pes=[0])
        try:
            rt.run(limits=RunLimits(max_wall_s=0.3))
        except RunLimitError:
            print("stopped")

        def deep(n):
            return deep(n + 1)

        for attempt in (lambda: deep(0), lambda: json.loads("[" * 200_000)):
            try:
                attempt()
            except RecursionError:
                print("RecursionError")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-1500:]
    assert done.stdout.split() == ["stopped", "RecursionError", "RecursionError"]
