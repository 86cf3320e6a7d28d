"""The run's own loop steps its schedule (kernbench.sim.clock.Environment) in the order SimPy's
heap and ``Environment.step`` would (kernbench/runtime/loop.py ``run_loop``), and a stage's wait on several inputs fires where ``simpy.AllOf`` would
(kernbench/pe/lane.py ``all_fired``): both keep every step in its place in the schedule."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
import simpy

from kernbench.pe.lane import all_fired
from kernbench.runtime.loop import run_loop
from kernbench.sim.clock import NORMAL, REPLAN, URGENT, Environment, call_at, priority


def _mix(env: simpy.Environment, seed: int) -> list[tuple[float, str]]:
    """A seeded mix of actions, timeouts, processes and events, some at one instant; what ran, in order."""
    rng = random.Random(seed)
    seen: list[tuple[float, str]] = []

    def note(name: str) -> Callable[..., None]:
        return lambda *_: seen.append((env.now, name))

    def proc(k: int):  # type: ignore[no-untyped-def]
        for j in range(3):
            yield env.timeout(rng.choice([0.0, 0.5, 1.0]))
            seen.append((env.now, f"proc {k} step {j}"))

    def chain(name: str, depth: int) -> None:  # (steps scheduling steps, at that instant and later)
        seen.append((env.now, name))
        for j in range(rng.randint(0, 2) if depth < 3 else 0):
            t = env.now + rng.choice([0.0, 0.0, 0.5])
            call_at(env, t, rng.choice([URGENT, NORMAL, REPLAN, priority(j + 1), priority(1, 7)]), chain, f"{name}.{j}", depth + 1)

    for k in range(50):
        t = float(rng.randint(0, 6))
        match k % 5:
            case 0:
                call_at(env, t, rng.choice([URGENT, NORMAL]), note(f"action {k}"))
            case 4:
                call_at(env, t, rng.choice([NORMAL, REPLAN, priority(k)]), chain, f"chain {k}", 0)
            case 1:
                env.timeout(t).callbacks.append(note(f"timeout {k}"))
            case 2:
                env.process(proc(k))
            case _:
                ev = env.event()
                ev.callbacks.append(note(f"event {k}"))
                call_at(env, t, NORMAL, ev.succeed)
    return seen


@pytest.mark.parametrize("seed", range(5))
def test_the_run_loop_runs_every_step_in_simpys_order(seed):
    simpys, ours, stepped = simpy.Environment(), Environment(), Environment()
    expected, got, got_stepped = _mix(simpys, seed), _mix(ours, seed), _mix(stepped, seed)
    simpys.run()
    run_loop(ours, None, None)
    stepped.run()  # (Environment.step, SimPy's run)
    assert got == expected and got_stepped == expected and len(got) > 60
    assert ours.now == simpys.now == stepped.now
    assert len({t for t, _ in got}) < len(got) / 4  # (many steps at each instant: what the order is about)


def test_the_run_loop_crashes_on_a_failed_event_no_one_waited_for_as_simpy_does():
    env = Environment()
    env.event().fail(ValueError("lost"))
    with pytest.raises(ValueError, match="lost"):
        run_loop(env, None, None)


def _wait_order(wait: Callable[[simpy.Environment, list[simpy.Event]], simpy.Event]) -> list[tuple[float, str]]:
    """Inputs firing at 1 and 2 (one of them already processed by the wait), rival steps at the
    instant the wait is met, the wait itself: what ran, in order."""
    env = simpy.Environment()
    seen: list[tuple[float, str]] = []
    a, b, early = env.event(), env.event(), env.event()
    early.succeed()
    env.run()  # (processed before the wait starts)
    call_at(env, 1.0, NORMAL, a.succeed, 1.0)
    call_at(env, 2.0, NORMAL, b.succeed, 2.0)
    call_at(env, 2.0, NORMAL, lambda: seen.append((env.now, "rival")))
    # a step the last input schedules as it is processed, before the wait hears of it
    b.callbacks.append(lambda _e: call_at(env, env.now, NORMAL, lambda: seen.append((env.now, "scheduled by the input"))))
    w = wait(env, [early, a, b])
    w.callbacks.append(lambda _e: seen.append((env.now, "inputs ready")))
    call_at(env, 2.0, NORMAL, lambda: seen.append((env.now, "after")))
    env.run()
    return seen


def test_waiting_on_several_inputs_fires_where_simpy_allof_would():
    expected = _wait_order(lambda env, evs: simpy.AllOf(env, evs))
    assert _wait_order(all_fired) == expected
    assert [name for _t, name in expected] == ["rival", "after", "scheduled by the input", "inputs ready"]


def test_waiting_on_inputs_all_fired_already_or_none_fires_at_once():
    env = simpy.Environment()
    done = env.event()
    done.succeed()
    env.run()
    for inputs in ([done], []):
        w = all_fired(env, inputs)
        assert w.triggered and not w.processed


def test_a_failed_input_fails_the_wait_as_allof_does():
    env = simpy.Environment()
    a, b = env.event(), env.event()
    w = all_fired(env, [a, b])
    caught = []

    def waiter():  # type: ignore[no-untyped-def]
        try:
            yield w
        except KeyError as exc:
            caught.append(exc)

    env.process(waiter())
    a.fail(KeyError("gone"))
    env.run()
    assert len(caught) == 1 and not b.triggered


def _back_in_time(env: simpy.Environment) -> list[tuple[float, str]]:
    """Steps scheduling steps an ulp before now (as a transfer's time computed by another path can
    land), and those scheduling more at that time, between it and now, and at now: what ran, in order."""
    seen: list[tuple[float, str]] = []
    t = 2120.7065000000002
    before = 2120.7065  # (one ulp before t)

    def note(name: str) -> Callable[..., None]:
        return lambda *_: seen.append((env.now, name))

    def earlier() -> None:
        seen.append((env.now, "an ulp before now"))
        call_at(env, env.now, priority(3), note("at that time, later"))
        call_at(env, env.now, URGENT, note("at that time, urgent"))
        call_at(env, t, NORMAL, note("back at now"))

    def at_t(k: int) -> Callable[[], None]:
        def step() -> None:
            seen.append((env.now, f"step {k} at now"))
            if k == 1:
                call_at(env, before, NORMAL, earlier)
                call_at(env, before, priority(1), note("an ulp before now, a transfer"))

        return step

    for k in range(4):
        call_at(env, t, NORMAL if k < 3 else priority(2), at_t(k))
    call_at(env, t + 1.0, NORMAL, note("later"))
    return seen


def test_a_step_scheduled_before_now_runs_next_as_on_simpys_heap():
    simpys, ours, stepped = simpy.Environment(), Environment(), Environment()
    expected, got, got_stepped = _back_in_time(simpys), _back_in_time(ours), _back_in_time(stepped)
    simpys.run()
    run_loop(ours, None, None)
    stepped.run()
    assert got == expected and got_stepped == expected
    assert [name for _t, name in expected][:6] == [
        "step 0 at now",
        "step 1 at now",
        "an ulp before now",
        "at that time, urgent",
        "an ulp before now, a transfer",
        "at that time, later",
    ]
    assert ours.now == simpys.now
