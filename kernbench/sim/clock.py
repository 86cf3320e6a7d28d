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

The schedule (:class:`Environment`). A run's schedule is SimPy's order kept
as *instants*: a heap of the distinct times that have entries, and for each
time its entries by priority — those at ``NORMAL`` (most of them: SimPy's
own events, the PE's stages) in a FIFO, those before it (``URGENT``) and
after it (the re-plans and transfers' steps) each in a small heap of
``(priority, insertion, entry)``. Within one priority at one time, insertion
order is FIFO order, so popping the earliest instant's first non-empty class
is exactly SimPy's ``(time, priority, insertion)`` minimum — the same order,
entry for entry (tests/sim/test_clock.py checks it against SimPy's heap on
random mixes). Why: a GQA default re-timing pops 53,888 entries at only 132
distinct times, a ~900-entry heap whose tuple comparisons tie on the time at
every level; by instants, an entry at ``NORMAL`` is a deque append and
popleft, and the run's loop (``kernbench.runtime.loop.run_loop``) sets the
clock and checks the time limit once an instant, not once an entry.

What pushes an entry: SimPy's own ``schedule`` (which :class:`Environment`
overrides), :meth:`Environment.timeout` and :meth:`Environment.process`,
:func:`call_at` and :func:`fire`; nothing else touches the schedule. An
:class:`Action` is a bare entry, which ``step`` pops and runs like any event
(it needs only ``callbacks`` and ``_ok``; the run's loop calls an action's
function directly). On a plain ``simpy.Environment`` (tests, benchmarks)
:func:`call_at` and :func:`fire` push onto SimPy's own heap instead, in the same order. SimPy's public
``Environment.schedule`` and ``Timeout`` take a delay, not a time, and
``now + (t − now)`` is not always ``t`` in floating point: a step due at a
time another step computed could land a few ulps off it and out of order.
Measured (2026-12-02) on 60 random contended mixes with staggered starts:
scheduled through ``Environment.schedule``, transfers end at other times
in 7 of them and in one the fast mode is 9 ns off the oracle. (The shipped
kernels' default runs, fast and — GQA on a small shape — oracle, land every
step exactly either way: their times are short binary fractions.)

Beside the schedule, PE_CPU keeps its own clock while what it does is its own
and catches SimPy up before anything another actor orders by time
(:meth:`kernbench.pe.cpu.PeCpu.run`).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush
from types import MethodType
from typing import Any, ClassVar, TypeVarTuple

import simpy
from simpy.core import EmptySchedule, Infinity
from simpy.events import NORMAL, URGENT, EventPriority, Initialize, ProcessGenerator

__all__ = [
    "FINISH",
    "NORMAL",
    "REPLAN",
    "SEQ_SHIFT",
    "STEP",
    "STEP_BASE",
    "URGENT",
    "Action",
    "Environment",
    "Rewind",
    "call_at",
    "fire",
    "priority",
]

Ts = TypeVarTuple("Ts")

SEQ_SHIFT = 24  # sub-steps of one transfer: up to 2**24 (the oracle numbers them by flit)
STEP_BASE = 2  # priority(0): after SimPy's own priorities (URGENT, NORMAL)
STEP = 0  # a transfer's step (the fast mode's only kind)
FINISH = (1 << SEQ_SHIFT) - 1  # a transfer's completion: after its other steps at that instant


def priority(seq: int, sub: int = STEP) -> int:
    """Order of transfer ``seq``'s steps at one instant: by ``seq``, then ``sub`` (< 2**24)."""
    return STEP_BASE + (seq << SEQ_SHIFT) + sub


REPLAN = priority(0)  # before any transfer's step (transfers are numbered from 1)


def _run(action: Action) -> None:
    fn = action.fn
    if fn is not None:
        fn(*action.args)


_RUNNER = (_run,)  # every action's one callback


def _nothing() -> None:
    pass


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


Entry = Any  # an Event or an Action (what ``step`` reads of it: ``callbacks``, ``_ok``, ``_value``)
# one instant's entries: before NORMAL (a heap of (priority, insertion, entry); a Rewind at -inf), at NORMAL (FIFO), after it (a heap)
Instant = tuple[list[tuple[float, int, Entry]], deque[Entry], list[tuple[float, int, Entry]]]
_new = object.__new__  # (an event made without its __init__: Environment.timeout, Environment.process)


class Environment(simpy.Environment):
    """SimPy's environment, its schedule kept by instants (see the module doc): the same order.

    ``_times`` is a heap of the times that have entries and ``_at`` maps each to its
    :data:`Instant`; SimPy's own heap is gone (an entry pushed there would never run).
    The clock ``now`` is a plain attribute (SimPy's is a property: a Python call for each of
    the ~100k reads of a GQA default re-timing), written where the clock moves
    (:meth:`step`, ``kernbench.runtime.loop.run_loop``); ``_now`` is its alias.
    """

    now: float = 0  # (a class attribute: it hides SimPy's property, the instance's own value is read)

    def __init__(self, initial_time: float = 0) -> None:  # (an int, as SimPy's: the clock reads 0, not 0.0, until it moves)
        super().__init__(initial_time)
        del self._queue
        self._times: list[float] = []
        self._at: dict[float, Instant] = {}
        # SimPy binds its event factories to an environment of its own class only (BoundClass.bind_early)
        self.event = MethodType(simpy.Event, self)  # type: ignore[method-assign]
        self.all_of = MethodType(simpy.AllOf, self)  # type: ignore[method-assign]
        self.any_of = MethodType(simpy.AnyOf, self)  # type: ignore[method-assign]

    @property
    def _now(self) -> float:
        return self.now

    @_now.setter
    def _now(self, t: float) -> None:
        self.now = t

    def _instant(self, t: float) -> Instant:
        """A new instant ``t`` (there was none). One before now (an entry scheduled in the past,
        e.g. an ulp before it) is SimPy heap's next entry, the clock going back to it: a
        :class:`Rewind` first in now's instant stops its run there, so that the run's loop too
        takes the earlier instant next (``Environment.pop`` takes it as it is the earliest)."""
        inst: Instant = ([], deque(), [])
        self._at[t] = inst
        heappush(self._times, t)
        if t < self.now and (current := self._at.get(self.now)) is not None:
            heappush(current[0], (-math.inf, next(self._eid), Rewind()))
        return inst

    def schedule(self, event: simpy.Event, priority: EventPriority = NORMAL, delay: float = 0) -> None:
        """SimPy's: ``event`` at ``now + delay`` (the same float SimPy computes), in ``priority``'s place."""
        t = self.now + delay
        inst = self._at.get(t) or self._instant(t)
        if priority == NORMAL:
            inst[1].append(event)
        else:
            heappush(inst[2] if priority > NORMAL else inst[0], (priority, next(self._eid), event))

    def timeout(self, delay: float = 0, value: Any = None) -> simpy.Timeout:
        """SimPy's ``Timeout(self, delay, value)``, made in one call rather than three (Timeout.__init__, schedule)."""
        if delay < 0:
            raise ValueError(f"Negative delay {delay}")
        ev = _new(simpy.Timeout)
        ev.env = self
        ev.callbacks = []
        ev._value = value
        ev._delay = delay
        ev._ok = True
        t = self.now + delay
        (self._at.get(t) or self._instant(t))[1].append(ev)
        return ev

    def process(self, generator: ProcessGenerator) -> simpy.Process:
        """SimPy's ``Process(self, generator)``, made in one call rather than three (its and Initialize's __init__, schedule)."""
        if not hasattr(generator, "throw"):
            raise ValueError(f"{generator} is not a generator.")
        proc = _new(simpy.Process)
        proc.env = self
        proc.callbacks = []
        proc._generator = generator
        init = _new(Initialize)
        init.env = self
        init.callbacks = [proc._resume]
        init._value = None
        init._ok = True
        proc._target = init
        t = self.now
        inst = self._at.get(t) or self._instant(t)
        heappush(inst[0], (URGENT, next(self._eid), init))
        return proc

    def peek(self) -> float:
        return self._times[0] if self._times else Infinity

    def pop(self) -> tuple[float, Entry]:
        """Take the earliest entry: ``(its time, it)``; EmptySchedule when there is none."""
        times = self._times
        if not times:
            raise EmptySchedule()
        t = times[0]
        first, normal, later = self._at[t]
        entry = heappop(first)[2] if first else normal.popleft() if normal else heappop(later)[2]
        if not (first or normal or later):
            heappop(times)
            del self._at[t]
        return t, entry

    def step(self) -> None:
        """SimPy's ``step``, on this schedule."""
        self.now, event = self.pop()
        callbacks, event.callbacks = event.callbacks, None
        try:
            for callback in callbacks:
                callback(event)
        except simpy.core.StopSimulation:
            # as SimPy: the event's other callbacks run first when the simulation resumes
            event.callbacks = callbacks[callbacks.index(callback) + 1 :]
            self.schedule(event, EventPriority(-1))
            raise
        if not event._ok and not hasattr(event, "_defused"):
            exc = type(event._value)(*event._value.args)
            exc.__cause__ = event._value
            raise exc


class Rewind(Action):
    """An entry that does nothing; the run's loop stops an instant's run at it (see Environment._instant)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(_nothing, ())


def call_at(env: simpy.Environment, t: float, prio: int, fn: Callable[[*Ts], object], *args: *Ts) -> Action:
    """Run ``fn(*args)`` at time ``t``, in the order ``prio`` gives it at that instant (a ``t`` before now, as the
    oracle can compute one an ulp before it, runs next, the clock going back to it: as on SimPy's heap)."""
    a = _new(Action)  # (Action(fn, args) without its __init__ call: 60 ns of ~24k a GQA run)
    a.callbacks = _RUNNER
    a.fn = fn
    a.args = args
    try:  # (Environment.schedule, inlined; the attribute read rather than a type check: ~40k a GQA run)
        at: dict[float, Instant] = env._at  # type: ignore[attr-defined]
    except AttributeError:  # a plain SimPy environment: its own heap (typed as holding Events; an Action is one in what step() reads)
        heappush(env._queue, (t, prio, next(env._eid), a))  # type: ignore[misc]
        return a
    inst = at.get(t) or env._instant(t)  # type: ignore[attr-defined]
    if prio == NORMAL:
        inst[1].append(a)
    else:
        heappush(inst[2] if prio > NORMAL else inst[0], (prio, next(env._eid), a))
    return a


def fire(env: simpy.Environment, ev: simpy.Event, value: object = None) -> None:
    """``ev.succeed(value)``: scheduled as SimPy does (now, normal priority), without its
    check that ``ev`` was not triggered before — for the engine's own events, each fired
    once by the one stage that owns it (a succeed and a schedule call less, ~20k a GQA run)."""
    ev._ok = True
    ev._value = value
    try:  # (as in call_at)
        at: dict[float, Instant] = env._at  # type: ignore[attr-defined]
    except AttributeError:
        heappush(env._queue, (env._now, NORMAL, next(env._eid), ev))
        return
    t = env.now
    (at.get(t) or env._instant(t))[1].append(ev)  # type: ignore[attr-defined]
