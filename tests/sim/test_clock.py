"""One clock, one order at an instant (kernbench/sim/clock.py)."""

from __future__ import annotations

import simpy

from kernbench.sim.clock import NORMAL, REPLAN, URGENT, call_at, priority


def test_an_action_runs_at_exactly_its_time_where_a_delay_from_now_would_not():
    # a time one step computed and a "now" another reached: SimPy's delay form lands an ulp off
    now, t = 60.6, 125.417049697
    assert now + (t - now) != t
    env = simpy.Environment()
    seen = []
    env.run(until=now)
    call_at(env, t, priority(1), lambda: seen.append(env.now))
    env.run()
    assert seen == [t]


def test_steps_at_one_instant_run_simpy_first_then_replans_then_transfers_in_seq_order():
    env = simpy.Environment()
    order = []
    for prio, name in [(priority(2), "seq 2"), (priority(1, 5), "seq 1 flit 5"), (REPLAN, "re-plan"), (priority(1), "seq 1")]:
        call_at(env, 3.0, prio, order.append, name)
    call_at(env, 3.0, NORMAL, order.append, "normal")
    call_at(env, 3.0, URGENT, order.append, "urgent")
    env.run()
    assert order == ["urgent", "normal", "re-plan", "seq 1", "seq 1 flit 5", "seq 2"]


def test_a_cancelled_action_does_not_run():
    env = simpy.Environment()
    ran = []
    a = call_at(env, 1.0, NORMAL, ran.append, 1)
    a.cancel()
    env.run()
    assert ran == [] and not a.pending
