"""A transfer on one of a PE's capacity-one channels (DMA read or write, IPCQ), stage by stage.

What :meth:`Scheduler._on_channel <kernbench.pe.scheduler.Scheduler._on_channel>` queues: the
transfer starts once the command has arrived, its input handles are ready and the channel's
previous transfer is done; a DMA out of TCM first takes its turn on TCM's read port, a DMA into
TCM its turn on the write port as it lands (:mod:`kernbench.pe.tcm`).

It was a SimPy process; each stage now continues from the SimPy event it waits for (a callback),
in the same order the process resumed (as :mod:`kernbench.pe.composite`'s stages do): it starts as
an urgent action, as a process starts; a wait appends its continuation to the awaited event's
callbacks where the process appended its own; a pause is the same timeout. No process, no
``Initialize`` event, no generator resumes (~1k transfers and ~3.4k resumes a GQA re-timing); the
process's own completion event, which nothing waited for, is gone.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import simpy

from kernbench.pe.lane import Channel
from kernbench.sim.clock import URGENT, call_at, fire
from kernbench.sim.transit import Part

if TYPE_CHECKING:
    from kernbench.pe.scheduler import Scheduler
    from kernbench.sim.network import TransferResult


class ChannelRun:
    """One transfer queued on ``channel``; fires ``mine`` (with the time) when done."""

    __slots__ = (
        "cause",
        "channel",
        "corr",
        "label",
        "mine",
        "pending",
        "prev",
        "sched",
        "size",
        "t0",
        "tcm",
        "then",
        "traced",
        "transfer",
        "waits",
    )

    def __init__(
        self,
        sched: Scheduler,
        channel: Channel,
        t0: float,
        pending: list[simpy.Event],
        cause: tuple[float, int],
        waits: list[tuple[simpy.Event, int]],
        transfer: Callable[[], simpy.Event],
        label: str,
        corr: int,
        size: int,
        then: Callable[[int], None] | None,
        tcm: str,
    ) -> None:
        """``t0``: the later of the command's arrival and its inputs ready by now; ``pending``: the
        inputs still to fire (``cause``, ``waits``: what it waited for, recorded runs)."""
        self.sched = sched
        self.channel = channel
        self.t0 = t0
        self.pending = pending
        self.cause = cause
        self.waits = waits
        self.transfer = transfer
        self.label = label
        self.corr = corr
        self.size = size
        self.then = then
        self.tcm = tcm
        self.traced = sched.pe.bus.active
        self.prev, self.mine = channel.claim()
        env = sched.env
        call_at(env, env.now, URGENT, self._inputs, 0)  # (where env.process would start it)

    def _inputs(self, k: int, _e: simpy.Event | None = None) -> None:
        """Wait for the pending inputs from the ``k``-th on (each one's callbacks are None once it
        has fired), then for ``t0``."""
        pending = self.pending
        while k < len(pending):
            ev = pending[k]
            if ev.callbacks is not None:
                ev.callbacks.append(partial(self._inputs, k))
                return
            self.t0 = max(self.t0, ev._value)  # (fired_at(ev): the time it fired with)
            k += 1
        env = self.sched.env
        if self.t0 > env.now:
            env.timeout(self.t0 - env.now).callbacks.append(self._after_inputs)
            return
        self._after_inputs()

    def _after_inputs(self, _e: simpy.Event | None = None) -> None:
        """Its inputs are in: wait for the channel's previous transfer."""
        pred = self.sched.after_waits(self.cause, self.waits)[1] if self.traced else -1
        prev = self.prev
        if prev is not None and prev.callbacks is not None:
            prev.callbacks.append(partial(self._start, pred))
            return
        self._start(pred)

    def _start(self, pred: int, _e: simpy.Event | None = None) -> None:
        env = self.sched.env
        if env.now > self.t0:  # the channel's previous transfer held it
            pred = self.channel.last
        start = env.now
        if self.tcm == "out":
            pe = self.sched.pe
            go = pe.tcm_leaving(start, self.size, pred, self.corr)
            if go > start:
                front = (Part(start, go, pe.tcm_node, "tcm port"),)
                env.timeout(go - start).callbacks.append(partial(self._send, start, pred, front))
                return
        self._send(start, pred, ())

    def _send(self, start: float, pred: int, front: tuple[Part, ...], _e: simpy.Event | None = None) -> None:
        ev = self.transfer()
        if ev.callbacks is None:  # (done already: a process yielding it would go on at once)
            self._moved(start, pred, front, ev)
        else:
            ev.callbacks.append(partial(self._moved, start, pred, front))

    def _moved(self, start: float, pred: int, front: tuple[Part, ...], e: simpy.Event) -> None:
        env = self.sched.env
        result: TransferResult = e._value  # (the transfer's result: it has completed)
        parts = front + result.parts
        channel, traced = self.channel, self.traced
        if self.tcm == "in":
            pe = self.sched.pe
            landed = env.now
            begin, end = pe.tcm_write.landing(start, landed, self.size, landed)
            if end > landed:
                parts += (Part(landed, end, pe.tcm_node, "tcm port"),)
            # recorded now, ending when its last byte is in TCM: what a later access the port holds up waits for
            seq = channel.record(start, end, self.label, self.corr, self.size, pred, parts if traced else ())
            pe.tcm_write.hold(begin, end, seq)
            if end > landed:
                env.timeout(end - landed).callbacks.append(partial(self._done, seq))
                return
        else:
            seq = channel.record(start, env.now, self.label, self.corr, self.size, pred, parts if traced else ())
        self._done(seq)

    def _done(self, seq: int, _e: simpy.Event | None = None) -> None:
        sched = self.sched
        sched._done(self.corr, seq)
        if self.then is not None:
            self.then(seq)
        fire(sched.env, self.mine, sched.env.now)
