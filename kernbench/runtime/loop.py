"""The run's loop: SimPy's ``env.run()`` under the run limits (simulated time, wall time, Ctrl-C), with progress
ticks, and the collector held off while a machine is built, run and taken apart."""

from __future__ import annotations

import gc
import heapq
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import simpy

from kernbench.errors import Interrupted, KernbenchError, RunLimitError
from kernbench.events.bus import Recorder
from kernbench.interrupts import raise_pending
from kernbench.limits import RunLimits, WallTimeExceeded, wall_clock_watchdog
from kernbench.sim.clock import Action, Environment, Rewind


def run_within(env: Environment, limits: RunLimits, recorder: Recorder | None, tick: Callable[[], None] | None = None) -> None:
    """``env.run()`` under the run limits. A failure keeps what was recorded (``exc.recorded``);
    Ctrl-C/SIGTERM becomes :class:`Interrupted` with the simulated time reached."""
    try:
        with wall_clock_watchdog(limits):
            run_loop(env, limits.max_sim_ns, tick)
            raise_pending(env.now)  # (an interrupt Python dropped: see kernbench.interrupts)
    except KernbenchError as exc:
        kept(exc, recorder)
        raise
    except KeyboardInterrupt as exc:
        raise Interrupted(env.now, getattr(exc, "signum", 2)) from None
    except WallTimeExceeded:
        raise kept(
            RunLimitError(
                f"the run passed the wall-time limit of {limits.max_wall_s:g} s at t={env.now:,.3f} ns "
                "while the engine was busy (raise it with --max-wall-s or RunLimits)"
            ),
            recorder,
        ) from None


PROGRESS_EVERY_S = 0.2
_STEPS_PER_CLOCK_READ = 256


def run_loop(env: Environment, max_sim_ns: float | None, tick: Callable[[], None] | None) -> None:
    """``env.run()``'s own loop (SimPy's ``step()``, inlined, until the schedule is empty) that stops before
    an event past ``max_sim_ns`` — the simulated-time limit held on SimPy's clock itself, whether or not a PE
    is taking a command then — and calls ``tick()`` every PROGRESS_EVERY_S of wall time.

    It takes the schedule an instant at a time (:class:`~kernbench.sim.clock.Environment`): sets the clock
    and checks the limit once, then runs the instant's entries, those each pushes at that instant among
    them, in ``Environment.pop``'s order, until none is left. An entry runs as in ``Environment.step``: its
    callbacks, then a crash on a failed event no one defused. An :class:`~kernbench.sim.clock.Action` (half
    the entries of a run) has one callback, which only calls its function: it is called here directly."""
    times, at, clock = env._times, env._at, time.monotonic
    limit = math.inf if max_sim_ns is None else max_sim_ns
    due = clock() + PROGRESS_EVERY_S if tick is not None else math.inf
    pop, action, block = heapq.heappop, Action, range(_STEPS_PER_CLOCK_READ)
    left = _STEPS_PER_CLOCK_READ  # entries to run before the clock is read again
    rewind, back = Rewind, False
    event: Any  # an Event or an Action (a bare entry: kernbench.sim.clock)
    try:
        while times:
            t = times[0]
            if t > limit:
                _passed(env, limit)
            env.now = t
            first, normal, later = at[t]
            popleft = normal.popleft
            while True:
                for taken in block:  # noqa: B007 (read after the loop: how many ran)
                    if first:
                        event = pop(first)[2]
                        if type(event) is rewind:  # (an entry before now: run it and its instant first, as SimPy's heap would)
                            back = True
                            break
                    elif normal:
                        event = popleft()
                    elif later:
                        event = pop(later)[2]
                    else:
                        break
                    callbacks, event.callbacks = event.callbacks, None
                    if type(event) is action:
                        fn = event.fn
                        if fn is not None:
                            fn(*event.args)
                        continue
                    for callback in callbacks:
                        callback(event)
                    if not event._ok and not hasattr(event, "_defused"):
                        # as SimPy: a failed event no one waited for crashes the run, with a copy of its exception
                        exc = type(event._value)(*event._value.args)
                        exc.__cause__ = event._value
                        raise exc
                else:  # (a block of entries at one instant, and more may follow)
                    left = 0
                    taken = 0
                left -= taken  # (``taken``: the entries of the block, when the instant ran out)
                if left <= 0:
                    left = _STEPS_PER_CLOCK_READ
                    if clock() >= due:
                        assert tick is not None
                        tick()
                        due = clock() + PROGRESS_EVERY_S
                if back or not (first or normal or later):
                    break
            if back:  # (instant t goes on once the earlier ones have run)
                back = False
                continue
            del at[t]
            popped = pop(times)  # (t: an entry scheduled before it stopped its run: Rewind)
            assert popped == t, f"an entry was scheduled at {popped}, before now ({t})"
    except simpy.core.EmptySchedule:  # (_passed: the schedule held only events at infinity)
        pass


def _passed(env: Environment, limit: float) -> None:
    """The next event lies past the simulated-time limit (or there is none: the run has ended)."""
    t = env.peek()
    if t == math.inf:
        raise simpy.core.EmptySchedule()
    raise RunLimitError(
        f"the run's next event is at t={t:,.3f} ns, past the simulated-time limit of {limit:g} ns; "
        "the run was stopped (raise it with --max-sim-ns or RunLimits)"
    )


def kept(exc: KernbenchError, recorder: Recorder | None) -> KernbenchError:
    exc.recorded = recorder.events() if recorder is not None else None
    return exc


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cycle collection during a run, and none rescanning what was there before it.

    A run creates and drops millions of small objects; the engine's are freed
    by reference counting as they are dropped (it keeps no cycles: see
    :class:`kernbench.sim.clock.Action`), and a collection would rescan every
    live one — tensors, handles, the graph, the growing command logs — to find
    nothing (the default GQA run's collections found no garbage, and took 4 %
    of it). Objects alive before the run are frozen out of collections and
    then join the oldest generation; the collector is back as it was once the
    run ends. The finished machine is no cycle either (``machine._dismantle``): it is
    freed as the run returns, not by a collection that would scan everything
    the run made (a recorded GQA default re-timing spent 0.7 of its 2.8 s CPU
    in the two collections that found the previous machine; tests/runtime/
    test_run_garbage.py). What a finished run made and keeps (its result: the
    events, the op logs) joins the oldest generation as the objects from before
    it do, unscanned, where a young collection would scan it at once and again
    a generation later (a recorded GQA default's 149k events: 0.08 s). Only
    garbage cycles a kernel itself makes wait for a full collection.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    gc.freeze()
    try:
        yield
        gc.freeze()  # (the run ended: everything made since joins the frozen, then the oldest generation)
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()
