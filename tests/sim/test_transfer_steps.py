"""How many steps a transfer costs the clock, and in which order its completion is told.

A fast-mode read on an idle network is two entries on SimPy's heap: its request's
arrival at the memory and its completion. The completion succeeds the transfer's
event in the same step (``Network.finish``): its callbacks run then, as they would
if the event were scheduled, since it would be the next entry popped — after
SimPy's own events due at that instant, before the next transfer's step.
"""

from __future__ import annotations

import math

import simpy

from kernbench.sim.network import Network
from kernbench.topology.compile import load_topology

GRAPH = load_topology("cube1")


def _steps(env: simpy.Environment) -> int:
    n = 0
    while env.peek() < math.inf:
        env.step()
        n += 1
    return n


def test_a_read_on_an_idle_network_is_two_steps_and_its_event_is_processed_in_the_last():
    env = simpy.Environment()
    net = Network(env, GRAPH)
    done = net.read("sip0.cube0.pe0.dma", "sip0.cube0.hbm.slice0", 0, 4096)
    assert _steps(env) == 2  # the request at the memory, the completion (no third entry for the event)
    assert done.processed and done.value.end_ns == env.now > 0.0


def test_completions_at_one_instant_are_told_after_simpys_events_and_in_transfer_order():
    env = simpy.Environment()
    net = Network(env, GRAPH)
    told: list[str] = []
    # two reads alike on routes of their own, started together: they end at the same instant
    first = net.read("sip0.cube0.pe0.dma", "sip0.cube0.hbm.slice0", 0, 4096)
    second = net.read("sip0.cube0.pe1.dma", "sip0.cube0.hbm.slice1", 0, 4096)
    first.callbacks.append(lambda e: told.append("first"))
    second.callbacks.append(lambda e: told.append("second"))
    lone = Network(simpy.Environment(), GRAPH)
    probe = lone.read("sip0.cube0.pe0.dma", "sip0.cube0.hbm.slice0", 0, 4096)
    _steps(lone.env)
    end = probe.value.end_ns
    timer = env.timeout(end)  # a SimPy event due at that instant too
    timer.callbacks.append(lambda e: told.append("timer"))
    env.run()
    assert first.value.end_ns == second.value.end_ns == end
    assert told == ["timer", "first", "second"]


def test_a_process_waiting_on_a_transfer_resumes_at_its_end():
    env = simpy.Environment()
    net = Network(env, GRAPH)
    seen: list[float] = []

    def waiter():
        result = yield net.write("sip0.cube0.pe0.dma", "sip0.cube0.hbm.slice0", 0, 2048)
        seen.append(env.now)
        seen.append(result.end_ns)

    env.process(waiter())
    env.run()
    assert seen[0] == seen[1] > 0.0
