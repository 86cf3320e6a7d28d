"""PE_SCHEDULER and the engines behind it.

A command reaches the scheduler after PE_CPU has paid its dispatch cost.
The scheduler spends its node overhead, then:

* single-op compute (GEMM, MATH, COPY): FETCH operands from TCM →
  engine → STORE the result, each an in-order lane reservation, starting
  when the operands are ready;
* DMA read/write: a transfer over the graph on the PE's read or write
  channel (capacity one each, ADR-0062);
* IPCQ send/recv: a message over the NoC to another PE's PE_IPCQ;
* a :class:`CompositeCmd`: a feeder that, step by step, reads the piece of
  every ``tl.ref`` operand the step consumes (DMA_READ), FETCHes, runs each
  OpSpec on its engine, STOREs and writes the HBM results final after the
  step (DMA_WRITE; a GEMM's C after the last) — steps stream through the
  engines with no redispatch, two buffers deep
  (:mod:`kernbench.pe.composite`, :mod:`kernbench.pe.steps`), and
  composites that share a handle (operand, out or ``rw_handles``) run in
  program order.

Readiness of every handle is tracked per PE: a float time, or a SimPy
event whose value is that time once it fires.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import simpy
from simpy.events import ProcessGenerator

from kernbench.handles import HandleRef
from kernbench.pe.commands import (
    CompositeCmd,
    CopyCmd,
    DmaReadCmd,
    DmaWriteCmd,
    GatherCmd,
    GemmCmd,
    IpcqRecvCmd,
    IpcqSendCmd,
    MathCmd,
    MathPairCmd,
    PeCommand,
    ScatterCmd,
)
from kernbench.pe.composite import CompositeRun
from kernbench.pe.lane import ENGINE_BUSY, Channel, Lane, all_fired, fired_at
from kernbench.pe.onchannel import ChannelRun
from kernbench.pe.opkinds import op_kind
from kernbench.sim.clock import fire
from kernbench.sim.region import Region

if TYPE_CHECKING:
    from kernbench.pe.processing_element import ProcessingElement

Ready = float | simpy.Event
Refs = Sequence[HandleRef | None]  # a command's input handles (None: an absent one)


def _itemsize(r: HandleRef) -> int:
    """Bytes per element of a handle (its dtype's: what sets PE_GEMM's rate)."""
    return r.nbytes // max(1, math.prod(r.shape))


def ready_time(r: Ready) -> float | None:
    """The time a handle is ready, or None while its event is still pending."""
    if isinstance(r, simpy.Event):
        return fired_at(r) if r.callbacks is None else None
    return r


class Scheduler:
    """Accepts dispatched commands and reserves the engines each one uses.

    In recorded runs every reservation carries its cause (``pred``): a time
    is always paired with the seq of the span that ends at it (``-1`` when
    none does, e.g. time 0), and handle readiness keeps the seq of the span
    that produced it in ``pe.ready_seq``.
    """

    def __init__(self, pe: ProcessingElement):
        self.pe = pe
        self.env = pe.env
        self.dispatch_seq = -1  # the DISPATCH span of the command being submitted

    def submit(self, cmd: PeCommand, corr_id: int, t_ns: float, dispatch: int = -1) -> Ready:
        """Accept a command dispatched at ``t_ns`` (>= now; ``dispatch``: its DISPATCH span); returns when it will be complete."""
        pe = self.pe
        sched = pe.sched
        if sched.scale is None:  # (Lane.reserve, in line: no scale)
            free, service = sched.free_ns, pe.sched_overhead_ns
            start = t_ns if t_ns > free else free
            arrive = start + service
            sched.free_ns = arrive
            sched.busy_ns += service
            sched.count += 1
            if sched.bus.active:  # (its label: cmd.name, without its call)
                seq = dispatch if t_ns >= free else sched.last
                if service > 0:
                    seq = sched.bus.emit(start, ENGINE_BUSY, sched.component, arrive, corr_id, type(cmd).__name__, 0.0, "", seq)
                sched.last = seq
        else:
            _, arrive = sched.reserve(t_ns, pe.sched_overhead_ns, type(cmd).__name__, corr_id, 0.0, dispatch)
        self.dispatch_seq = dispatch
        if type(cmd) is CompositeCmd:  # (_composite, in line)
            return CompositeRun(self, cmd, arrive, corr_id).done
        return _HANDLERS[type(cmd)](self, cmd, arrive, corr_id)

    def _done(self, corr: int, seq: int) -> None:
        """Command ``corr`` completes with the span ``seq`` (what a queue-full stall waits for)."""
        if self.pe.bus.active:
            self.pe.done_seq[corr] = seq

    # --- readiness --------------------------------------------------------

    def inputs(self, refs: Iterable[HandleRef | None]) -> tuple[float, list[simpy.Event]]:
        """When the TCM handles among ``refs`` are ready: (latest known time, events still pending, each once)."""
        return self.ready_of([r.id for r in refs if r is not None and r.space == "tcm"])

    def ready_of(self, ids: Iterable[int]) -> tuple[float, list[simpy.Event]]:
        """When the TCM handles ``ids`` are ready: (latest known time, events still pending, each once)."""
        t = 0.0
        pending: list[simpy.Event] = []
        ready, event = self.pe.ready, simpy.Event
        for rid in ids:
            v = ready.get(rid, 0.0)
            if isinstance(v, event):
                if v.callbacks is not None:  # (not processed yet: ``processed``, without its call)
                    # each event once: handles produced by one command share its event, and
                    # waiting for it once is the same wait (an AllOf fires at its last copy)
                    if v not in pending:
                        pending.append(v)
                    continue
                v = v._value  # (fired_at(v), in line: the time it fired with)
            if v > t:
                t = v
        return t, pending

    def cause(self, refs: Iterable[HandleRef | None], arrive: float) -> tuple[float, int]:
        """``(time, span)`` of the later of the command's arrival (its scheduler span) and its
        inputs ready by now (recorded runs: what a stage starting then waited for)."""
        pe = self.pe
        t, seq = arrive, pe.sched.last
        ready, ready_seq = pe.ready, pe.ready_seq
        for r in refs:
            if r is None or r.space != "tcm":
                continue
            v = ready.get(r.id, 0.0)
            if isinstance(v, simpy.Event):  # (ready_time(v), in line)
                if v.callbacks is not None:  # (not ready yet)
                    continue
                v = v._value
            if v > t:
                t, seq = v, ready_seq.get(r.id, -1)
        return t, seq

    def waits(self, refs: Iterable[HandleRef | None]) -> list[tuple[simpy.Event, int]]:
        """The pending inputs among ``refs``: (their readiness event, handle id)."""
        ready = self.pe.ready
        out: list[tuple[simpy.Event, int]] = []
        for r in refs:
            if r is None or r.space != "tcm":
                continue
            v = ready.get(r.id, 0.0)
            if isinstance(v, simpy.Event) and v.callbacks is not None:
                out.append((v, r.id))
        return out

    def after_waits(self, cause: tuple[float, int], waits: list[tuple[simpy.Event, int]]) -> tuple[float, int]:
        """``cause`` or the last of ``waits`` to fire, whichever is later (call once they all have)."""
        t, seq = cause
        ready_seq = self.pe.ready_seq
        for ev, rid in waits:
            v = ev._value  # (fired_at(ev), in line: ~13k a recorded GQA re-timing)
            if v >= t:
                t, seq = v, ready_seq.get(rid, -1)
        return t, seq

    def _after_inputs(
        self,
        refs: Refs,
        arrive: float,
        corr: int,
        outs: Sequence[HandleRef],
        body: Callable[..., tuple[float, int]],
        args: tuple[Any, ...] = (),
        ids: tuple[int, ...] | None = None,
    ) -> Ready:
        """Run ``body(earliest, pred, *args) -> (end, span)`` once inputs are ready; mark ``outs`` ready at
        end (``ids``: the TCM ones among ``refs`` by id, when the command keeps them). ``args`` rather than
        a closure over them: the stages run without a lambda's call in between (~3k a GQA re-timing)."""
        pe = self.pe
        traced = pe.bus.active
        t_in, pending = self.inputs(refs) if ids is None else self.ready_of(ids)
        cause = self.cause(refs, arrive) if traced else (0.0, -1)
        if not pending:
            end, seq = body(arrive if arrive > t_in else t_in, cause[1], *args)
            ready = pe.ready
            for o in outs:
                ready[o.id] = end
            if pe.bus.active:  # (_produced and _done, in line)
                ready_seq = pe.ready_seq
                for o in outs:
                    ready_seq[o.id] = seq
                pe.done_seq[corr] = seq
            return end
        waits = self.waits(refs) if traced else []
        done = self.env.event()
        for o in outs:
            pe.ready[o.id] = done
        pe.async_stages += 1

        def wait_then_run() -> ProcessGenerator:
            yield all_fired(self.env, pending)
            t_in2, _ = self.inputs(refs)
            pred = self.after_waits(cause, waits)[1] if traced else -1
            end, seq = body(max(arrive, t_in2, self.env.now), pred, *args)
            pe.async_stages -= 1
            self._produced(outs, seq)  # (their readiness stays the event ``done``)
            self._done(corr, seq)
            if end > self.env.now:
                yield self.env.timeout(end - self.env.now)
            fire(self.env, done, end)

        self.env.process(wait_then_run())
        return done

    def _produced(self, outs: Iterable[HandleRef], seq: int) -> None:
        """``outs`` are produced by the span ``seq``."""
        pe = self.pe
        if pe.bus.active:
            for o in outs:
                pe.ready_seq[o.id] = seq

    # --- single-op compute ------------------------------------------------

    def _stages(
        self, earliest: float, pred: int, in_bytes: int, lane: Lane, service_ns: float, out_bytes: int, label: str, corr: int
    ) -> tuple[float, int]:
        pe = self.pe
        now = self.env.now
        traced = pe.bus.active  # (the FETCH and STORE labels name spans: made only when there are any)
        t = pe.tcm_read.with_lane(pe.fetch, earliest, in_bytes, f"fetch {label}" if traced else label, corr, pred, now)
        if lane.scale is None and not lane.bus.active:  # (Lane.reserve's arithmetic, in line: no span, no scale)
            free = lane.free_ns
            t = (t if t > free else free) + service_ns
            lane.free_ns = t
            lane.busy_ns += service_ns
            lane.count += 1
        else:
            _, t = lane.reserve(t, service_ns, label, corr, 0.0, pe.fetch.last)
        t = pe.tcm_write.with_lane(pe.store, t, out_bytes, f"store {label}" if traced else label, corr, lane.last, now)
        return t, pe.store.last

    def _gemm(self, cmd: GemmCmd, arrive: float, corr: int) -> Ready:
        pe = self.pe
        service = pe.gemm_ns(cmd.m, cmd.n, cmd.k, _itemsize(cmd.a), _itemsize(cmd.b))
        in_bytes = cmd.a.nbytes + cmd.b.nbytes
        return self._after_inputs(
            (cmd.a, cmd.b),
            arrive,
            corr,
            (cmd.out,),
            self._stages,
            (in_bytes, pe.gemm, service, cmd.out.nbytes, "gemm", corr),
        )

    def _math(self, cmd: MathCmd, arrive: float, corr: int) -> Ready:
        pe = self.pe
        kept: tuple[object, float] | None = cmd.__dict__.get("_math_service")  # (_math_service's common case, in line)
        service = kept[1] if kept is not None and kept[0] is pe.timing else _math_service(pe, cmd)
        in_bytes = cmd.in_bytes
        return self._after_inputs(
            cmd.inputs,
            arrive,
            corr,
            (cmd.out,),
            self._stages,
            (in_bytes, pe.math, service, cmd.out.nbytes, cmd.op, corr),
            cmd.tcm_input_ids,
        )

    def _copy(self, cmd: CopyCmd, arrive: float, corr: int) -> Ready:
        pe = self.pe

        def body(t: float, pred: int) -> tuple[float, int]:
            now = self.env.now
            t = pe.tcm_read.with_lane(pe.fetch, t, cmd.size_bytes, "copy", corr, pred, now)
            t = pe.tcm_write.with_lane(pe.store, t, cmd.size_bytes, "copy", corr, pe.fetch.last, now)
            return t, pe.store.last

        return self._after_inputs((cmd.src,), arrive, corr, (cmd.dst,), body)

    def _math_pair(self, cmd: MathPairCmd, arrive: float, corr: int) -> Ready:
        """A PE_MATH op with two results (top-k): one pass, both stored, both ready at its end."""
        pe = self.pe
        assert cmd.out2 is not None
        outs = (cmd.out, cmd.out2)
        service = pe.math_ns(cmd.work)
        in_bytes = cmd.in_bytes
        out_bytes = cmd.out.nbytes + cmd.out2.nbytes
        return self._after_inputs(
            cmd.inputs,
            arrive,
            corr,
            outs,
            self._stages,
            (in_bytes, pe.math, service, out_bytes, cmd.op, corr),
        )

    # --- DMA --------------------------------------------------------------
    # (a transfer and what follows it are partials of the network's and the PE's own methods, not
    # lambdas: no Python frame of their own, ~2k a GQA re-timing; a command's fields are frozen)

    def _on_channel(
        self,
        channel: Channel,
        inputs: Refs,
        arrive: float,
        transfer: Callable[[], simpy.Event],
        label: str,
        corr: int,
        size: int,
        then: Callable[[int], None] | None = None,
        tcm: str = "",
    ) -> simpy.Event:
        """Queue a transfer on a capacity-one channel (DMA read/write, IPCQ).

        It starts once the command has arrived, its input handles are ready
        and the channel's previous transfer is done; ``then(seq)`` runs when
        it completes (``seq``: its span). ``tcm``: ``"in"`` (a DMA into TCM)
        or ``"out"`` (out of it) takes its turn on the TCM port
        (:mod:`kernbench.pe.tcm`). Returns the completion event (its value:
        the time).
        """
        traced = self.pe.bus.active
        t_in, pending = self.inputs(inputs)
        cause = self.cause(inputs, arrive) if traced else (0.0, -1)
        waits = self.waits(inputs) if traced else []
        run = ChannelRun(self, channel, max(arrive, t_in), pending, cause, waits, transfer, label, corr, size, then, tcm)
        return run.mine

    def _dma_read(self, cmd: DmaReadCmd, arrive: float, corr: int) -> Ready:
        pe = self.pe
        done = self._on_channel(
            pe.rd,
            (),
            arrive,
            partial(pe.network.read, pe.dma_node, cmd.src.memory, region=cmd.src.region, corr_id=corr),
            "dma_read",
            corr,
            cmd.size_bytes,
            then=partial(pe.load_landed, cmd.dst, corr, cmd.size_bytes),
            tcm="in",
        )
        pe.ready[cmd.dst.id] = done
        pe.load_corr[cmd.dst.id] = corr
        return done

    def _dma_write(self, cmd: DmaWriteCmd, arrive: float, corr: int) -> Ready:
        pe = self.pe
        return self._on_channel(
            pe.wr,
            (cmd.src,),
            arrive,
            partial(pe.network.write, pe.dma_node, cmd.dst.memory, region=cmd.dst.region, corr_id=corr),
            "dma_write",
            corr,
            cmd.size_bytes,
            tcm="out",
        )

    def _rows(self, cmd: GatherCmd | ScatterCmd, arrive: float, corr: int, inputs: Refs, landed: HandleRef | None) -> simpy.Event:
        """One DMA per row of a gather (read channel; ``landed``: its result) or a scatter (write
        channel), in index order: each starts once ``inputs`` are ready and the channel's previous
        transfer is done."""
        pe = self.pe
        if landed is not None:
            memory, channel, label, move, tcm = cmd.src.memory, pe.rd, "gather", pe.network.read, "in"
        else:
            memory, channel, label, move, tcm = cmd.dst.memory, pe.wr, "scatter", pe.network.write, "out"
        last = len(cmd.rows) - 1
        done: simpy.Event | None = None
        for i, row in enumerate(cmd.rows):

            def transfer(row: Region = row) -> simpy.Event:
                return move(pe.dma_node, memory, region=row, corr_id=corr)

            def then(seq: int) -> None:
                assert landed is not None
                pe.load_landed(landed, corr, cmd.size_bytes, seq)

            done = self._on_channel(
                channel, inputs, arrive, transfer, label, corr, row.nbytes, then if landed and i == last else None, tcm=tcm
            )
        assert done is not None  # (a gather or scatter names at least one row)
        return done

    def _gather(self, cmd: GatherCmd, arrive: float, corr: int) -> Ready:
        done = self._rows(cmd, arrive, corr, (cmd.index,), cmd.dst)
        self.pe.ready[cmd.dst.id] = done
        self.pe.load_corr[cmd.dst.id] = corr
        return done

    def _scatter(self, cmd: ScatterCmd, arrive: float, corr: int) -> Ready:
        return self._rows(cmd, arrive, corr, (cmd.src, cmd.index), None)

    # --- IPCQ -------------------------------------------------------------

    def _ipcq_send(self, cmd: IpcqSendCmd, arrive: float, corr: int) -> Ready:
        pe = self.pe
        dst = pe.fabric.pe_of_program(pe.launch_id, cmd.dst_pe)
        return self._on_channel(
            pe.ipcq,
            (cmd.src,),
            arrive,
            partial(pe.network.send, pe.ipcq_node, dst.ipcq_node, cmd.size_bytes, corr_id=corr),
            f"send to {cmd.dst_pe}",
            corr,
            cmd.size_bytes,
            then=partial(pe.fabric.deliver, pe.launch_id, pe.program_id, cmd.dst_pe, cmd.payload),
        )

    def _ipcq_recv(self, cmd: IpcqRecvCmd, arrive: float, corr: int) -> Ready:
        pe = self.pe
        landed = self.env.event()
        pe.ready[cmd.dst.id] = landed
        # posted now (PE_CPU synced to its dispatch end): a message already here lands at once
        pe.fabric.post(pe.launch_id, cmd.src_pe, pe.program_id, landed, cmd.dst, self.dispatch_seq)
        self._done(corr, pe.sched.last)
        return arrive

    # --- composites -------------------------------------------------------

    def _composite(self, cmd: CompositeCmd, arrive: float, corr: int) -> Ready:
        return CompositeRun(self, cmd, arrive, corr).done


def _math_service(pe: ProcessingElement, cmd: MathCmd) -> float:
    """PE_MATH's time for a math command: from the command and the PE's engine timing alone, so
    kept on the command with the timing it was worked out for (one object per set of engine
    parameters: :attr:`ProcessingElement.timing`); worked out again under another."""
    kept: tuple[object, float] | None = cmd.__dict__.get("_math_service")
    if kept is not None and kept[0] is pe.timing:
        return kept[1]
    k = op_kind(cmd.op)
    service = pe.math_ns(cmd.work * k.passes, k.rate)
    cmd.__dict__["_math_service"] = (pe.timing, service)
    return service


# each handler takes the command type it is keyed by (submit dispatches on type(cmd)); unbound, so that
# a scheduler holds no bound method of itself (a cycle only the collector would free)
_HANDLERS: dict[type[PeCommand], Callable[[Scheduler, Any, float, int], Ready]] = {
    GemmCmd: Scheduler._gemm,
    MathCmd: Scheduler._math,
    CopyCmd: Scheduler._copy,
    DmaReadCmd: Scheduler._dma_read,
    DmaWriteCmd: Scheduler._dma_write,
    IpcqSendCmd: Scheduler._ipcq_send,
    IpcqRecvCmd: Scheduler._ipcq_recv,
    CompositeCmd: Scheduler._composite,
    MathPairCmd: Scheduler._math_pair,
    GatherCmd: Scheduler._gather,
    ScatterCmd: Scheduler._scatter,
}
