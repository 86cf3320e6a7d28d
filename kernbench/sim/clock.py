"""When steps run: one clock, and one order among the steps due at the same instant.

Contract. Everything that happens — SimPy's own events, the PE's stages, a
transfer's steps in either timing mode — is an entry in SimPy's one event
heap, taken in order of ``(time, priority, insertion)``. This module decides
the priorities, for the whole simulator:

======================  ==========================================================
``URGENT``, ``NORMAL``  SimPy's own (a process starting; an event or a timeout
                        firing). A PE stage that :func:`call_at` schedules uses
                        them as the process it stands for would.
``REPLAN``              a FIFO re-planning from an instant (fast mode): before any
                        transfer's step at that instant.
``priority(seq, sub)``  a transfer's steps: the lower ``seq`` (the order transfers
                        started) first, then ``sub``: a step (``STEP``) or, in the
                        oracle, flit ``k``'s step (``k``); the transfer's completion
                        (``FINISH``) after all of them.
======================  ==========================================================

So at one instant SimPy's events and the PE's stages come first, then the
FIFOs' re-plans, then each transfer's steps in the order the transfers
started — the tie-break every FIFO in the model uses (``docs/timing.md``).

:func:`call_at` is the one place that pushes onto SimPy's heap: an
:class:`Action` is a bare entry there, which ``Environment.step`` pops and runs
like any event (it needs only ``callbacks`` and ``_ok``; a run's own loop,
``kernbench.runtime.api._run_loop``, steps the heap as ``step`` does and calls an
action's function directly). SimPy's public
``Environment.schedule`` and ``Timeout`` take a delay, not a time, and
``now + (t − now)`` is not always ``t`` in floating point: a step due at a
time another step computed could land a few ulps off it and out of order.
Measured (2026-12-02) on 60 random contended mixes with staggered starts:
scheduled through ``Environment.schedule``, transfers end at other times
in 7 of them and in one the fast mode is 9 ns off the oracle. (The shipped
kernels' default runs, fast and — GQA on a small shape — oracle, land every
step exactly either way: their times are short binary fractions.) Not for
speed: a chained ``call_at`` costs about what a ``Timeout`` with a callback
does (2.3 µs a step on the shared machine, 2026-12-01).

Beside the heap, PE_CPU keeps its own clock while what it does is its own
and catches SimPy up before anything another actor orders by time
(:meth:`kernbench.pe.cpu.PeCpu.run`).
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush
from typing import Any, ClassVar, TypeVarTuple

import simpy
from simpy.events import NORMAL, URGENT

__all__ = ["FINISH", "NORMAL", "REPLAN", "STEP", "URGENT", "Action", "call_at", "fire", "priority"]

Ts = TypeVarTuple("Ts")

_SEQ_SHIFT = 24  # sub-steps of one transfer: up to 2**24 (the oracle numbers them by flit)
STEP = 0  # a transfer's step (the fast mode's only kind)
FINISH = (1 << _SEQ_SHIFT) - 1  # a transfer's completion: after its other steps at that instant


def priority(seq: int, sub: int = STEP) -> int:
    """Order of transfer ``seq``'s steps at one instant: by ``seq``, then ``sub`` (< 2**24)."""
    return 2 + (seq << _SEQ_SHIFT) + sub


REPLAN = priority(0)  # before any transfer's step (transfers are numbered from 1)


def _run(action: Action) -> None:
    fn = action.fn
    if fn is not None:
        fn(*action.args)


_RUNNER = (_run,)  # every action's one callback


class Action:
    """A callback at a time; :meth:`cancel` before it runs to drop it.

    It holds no reference to itself (a module-level runner is its one
    callback), so a spent action is freed at once, without the cycle
    collector.
    """

    __slots__ = ("args", "callbacks", "fn")

    # what SimPy's step reads of an event, the same for every action: it succeeded, with no value
    _ok: ClassVar[bool] = True
    _value: ClassVar[None] = None

    def __init__(self, fn: Callable[..., object], args: tuple[Any, ...]) -> None:
        self.callbacks: tuple[Callable[[Action], None], ...] | None = _RUNNER  # (one shared tuple: nothing adds to it)
        # any callback and its arguments: call_at checks them against each other,
        # and the owner of the action knows what it scheduled (``args[0]`` is often the time)
        self.fn: Callable[..., object] | None = fn
        self.args: tuple[Any, ...] = args

    def cancel(self) -> None:
        self.fn = None
        self.args = ()

    @property
    def pending(self) -> bool:
        return self.fn is not None and self.callbacks is not None


def call_at(env: simpy.Environment, t: float, prio: int, fn: Callable[[*Ts], object], *args: *Ts) -> Action:
    """Run ``fn(*args)`` at time ``t`` (>= now), in the order ``prio`` gives it at that instant."""
    a = Action(fn, args)
    # SimPy's own heap (see the module doc): typed as holding Events, and an Action is
    # one only in what step() reads (callbacks, _ok, _value)
    heappush(env._queue, (t, prio, next(env._eid), a))  # type: ignore[misc]
    return a


def fire(env: simpy.Environment, ev: simpy.Event, value: object = None) -> None:
    """``ev.succeed(value)``: scheduled as SimPy does (now, normal priority), without its
    check that ``ev`` was not triggered before — for the engine's own events, each fired
    once by the one stage that owns it (a succeed and a schedule call less, ~20k a GQA run)."""
    ev._ok = True
    ev._value = value
    heappush(env._queue, (env._now, NORMAL, next(env._eid), ev))
