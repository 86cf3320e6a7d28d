"""One clock, one order at an instant (kernbench/sim/clock.py)."""

from __future__ import annotations

import pytest
import simpy

from kernbench.sim.clock import NORMAL, REPLAN, URGENT, Environment, call_at, priority

# both schedules: SimPy's own heap (a plain environment) and the run's, by instants
ENVIRONMENTS = pytest.mark.parametrize("make", [simpy.Environment, Environment])


@ENVIRONMENTS
def test_an_action_runs_at_exactly_its_time_where_a_delay_from_now_would_not(make):
    # a time one step computed and a "now" another reached: SimPy's delay form lands an ulp off
    now, t = 60.6, 125.417049697
    assert now + (t - now) != t
    env = make()
    seen = []
    env.run(until=now)
    call_at(env, t, priority(1), lambda: seen.append(env.now))
    env.run()
    assert seen == [t]


@ENVIRONMENTS
def test_steps_at_one_instant_run_simpy_first_then_replans_then_transfers_in_seq_order(make):
    env = make()
    order = []
    for prio, name in [(priority(2), "seq 2"), (priority(1, 5), "seq 1 flit 5"), (REPLAN, "re-plan"), (priority(1), "seq 1")]:
        call_at(env, 3.0, prio, order.append, name)
    call_at(env, 3.0, NORMAL, order.append, "normal")
    call_at(env, 3.0, URGENT, order.append, "urgent")
    env.run()
    assert order == ["urgent", "normal", "re-plan", "seq 1", "seq 1 flit 5", "seq 2"]


@ENVIRONMENTS
def test_a_cancelled_action_does_not_run(make):
    env = make()
    ran = []
    a = call_at(env, 1.0, NORMAL, ran.append, 1)
    a.cancel()
    env.run()
    assert ran == [] and not a.pending


def test_the_schedule_by_instants_keeps_simpys_until_and_its_resumption():
    # run(until=) stops at an URGENT event; a callback after the stop is put back at priority -1,
    # before every other step at that instant, and runs when the run resumes: as on SimPy's heap
    def trace(env: simpy.Environment) -> list[tuple[float, str]]:
        seen: list[tuple[float, str]] = []
        call_at(env, 2.0, URGENT, lambda: seen.append((env.now, "urgent at 2")))
        call_at(env, 2.0, priority(1), lambda: seen.append((env.now, "transfer at 2")))
        env.timeout(3.0).callbacks.append(lambda _e: seen.append((env.now, "timeout at 3")))
        assert env.peek() == 2.0
        env.run(until=2.0)
        seen.append((env.now, "stopped"))
        env.run()
        return seen

    expected = trace(simpy.Environment())
    assert trace(Environment()) == expected
    assert expected == [(2.0, "urgent at 2"), (2.0, "stopped"), (2.0, "transfer at 2"), (3.0, "timeout at 3")]


def test_the_schedule_by_instants_is_the_only_one():
    env = Environment()
    assert not hasattr(env, "_queue")  # (an entry pushed onto SimPy's own heap would never run)
    assert env.peek() == simpy.core.Infinity and env.now == 0 and isinstance(env.now, int)
    env.timeout(1.5)
    assert env.peek() == 1.5
    env.run()
    assert env.now == 1.5 and env.peek() == simpy.core.Infinity


def test_its_timeouts_and_processes_are_simpys_with_simpys_checks_and_interrupts():
    def trace(env: simpy.Environment) -> list[tuple[float, str]]:
        seen: list[tuple[float, str]] = []

        def sleeper():  # type: ignore[no-untyped-def]
            try:
                yield env.timeout(5.0, value="slept")
            except simpy.Interrupt as exc:
                seen.append((env.now, f"interrupted: {exc.cause}"))
            got = yield env.timeout(1.0, value="woke")
            seen.append((env.now, got))
            return "done"

        def waker(p):  # type: ignore[no-untyped-def]
            yield env.timeout(2.0)
            p.interrupt("wake up")
            seen.append((env.now, f"{type(p.target).__name__} it waits for"))
            done = yield p
            seen.append((env.now, done))

        p = env.process(sleeper())
        env.process(waker(p))
        env.run()
        return seen

    expected = trace(simpy.Environment())
    assert trace(Environment()) == expected
    assert expected == [(2.0, "Timeout it waits for"), (2.0, "interrupted: wake up"), (3.0, "woke"), (3.0, "done")]
    env = Environment()
    with pytest.raises(ValueError, match="Negative delay -1"):
        env.timeout(-1)
    with pytest.raises(ValueError, match="is not a generator"):
        env.process(42)  # type: ignore[arg-type]
    assert type(env.timeout(1)) is simpy.Timeout and type(env.event()) is simpy.Event
