"""Cheap timed callbacks on a SimPy environment's own event queue.

The engine schedules many small steps (a transfer's head reaching the next
FIFO, a re-plan, a completion). A SimPy ``Timeout`` plus a process resume
costs several microseconds; an :class:`Action` is a bare entry in the same
heap that SimPy's ``step()`` pops and runs like any event (it only needs
``callbacks`` and ``_ok``), so actions and SimPy processes share one clock
and one deterministic order: ``(time, priority, insertion)``.

Priorities: SimPy's own events use 0 (urgent) and 1 (normal) and run first
at equal times; actions use :func:`priority` of a transfer's sequence number
so that, at one instant, lower-numbered transfers' steps run first — the
tie-break every FIFO in the model uses.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush
from typing import Any, TypeVarTuple

import simpy

Ts = TypeVarTuple("Ts")


def _run(action: Action) -> None:
    fn = action.fn
    if fn is not None:
        fn(*action.args)


class Action:
    """A callback at a time; :meth:`cancel` before it runs to drop it.

    It holds no reference to itself (a module-level runner is its one
    callback), so a spent action is freed at once, without the cycle
    collector.
    """

    __slots__ = ("_ok", "_value", "args", "callbacks", "fn")

    def __init__(self, fn: Callable[..., object], args: tuple[Any, ...]) -> None:
        self.callbacks: list[Callable[[Action], None]] | None = [_run]
        self._ok = True
        self._value = None
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


def priority(seq: int, sub: int = 0) -> int:
    """Order of actions at one instant: by transfer ``seq``, then ``sub`` (< 16)."""
    return 2 + (seq << 4) + sub


def call_at(env: simpy.Environment, t: float, prio: int, fn: Callable[[*Ts], object], *args: *Ts) -> Action:
    """Run ``fn(*args)`` at time ``t`` (>= now)."""
    a = Action(fn, args)
    # SimPy's own heap (see the module doc): typed as holding Events, and an Action is
    # one only in what step() reads (callbacks, _ok, _value)
    heappush(env._queue, (t, prio, next(env._eid), a))  # type: ignore[misc]
    return a
