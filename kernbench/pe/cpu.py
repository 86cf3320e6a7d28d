"""PE_CPU: runs the kernel (live) or its command log (replay), paying dispatch.

Per command PE_CPU spends ``dispatch_cycles(cmd)`` (ADR-0064, converted by
the PE clock) plus its node overhead, then hands the command to
PE_SCHEDULER. It stalls — and says why — when the scheduler queue is full,
when an operand's lazy load has not landed (auto-wait, ADR-0062), or on a
receive. Both paths share this one loop; only where the next request comes
from differs, so their dispatch accounting is the same by construction.
"""

from __future__ import annotations

import functools
import linecache
import math
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import simpy
from simpy.events import ProcessGenerator

from kernbench.errors import CompositeCapError, KernelError, RunLimitError
from kernbench.events.types import EventKind, StallReason
from kernbench.handles import HandleRef
from kernbench.interrupts import PENDING, raise_pending
from kernbench.limits import RunLimits, WallTimeExceeded
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
    PeCpuOverheadCmd,
    ScatterCmd,
)
from kernbench.pe.cost import DispatchCostModel
from kernbench.pe.processing_element import ProcessingElement
from kernbench.pe.requests import Issue, Request, Sync, Wait
from kernbench.pe.scheduler import Ready, ready_time
from kernbench.raised import described, theirs

# One command of a PE's op log (RunResult.op_logs): t_ns, op, cmd, logical_bytes,
# dispatch_cycles (and a composite's ops); JSON-ready values of those types.
OpLogEntry = dict[str, Any]

OP_LOG_KIND = {
    DmaReadCmd: "memory/dma_read",
    DmaWriteCmd: "memory/dma_write",
    GemmCmd: "compute/gemm",
    MathCmd: "compute/math",
    CopyCmd: "compute/copy",
    CompositeCmd: "composite",
    IpcqSendCmd: "ipcq/send",
    IpcqRecvCmd: "ipcq/recv",
    PeCpuOverheadCmd: "cpu/cycles",
    MathPairCmd: "compute/math",
    GatherCmd: "memory/gather",
    ScatterCmd: "memory/scatter",
}


@functools.cache
def _math_log_op(op: str) -> str:
    """A math command's op-log kind: the op named."""
    return f"compute/math.{op}"


@dataclass(frozen=True, slots=True)
class Dispatched:
    """What PE_CPU charges for a command and logs of it, from the command and the cost model
    alone: worked out once per command and model and kept on the command (a re-timing
    submits the same commands again; a model is one object per set of knobs)."""

    cost: DispatchCostModel
    cycles: float
    ns: float  # the cycles at the PE's clock
    over_cap: bool  # a composite over the descriptor cap (ADR-0064 D7): dispatching it raises
    op: str  # its op-log kind
    name: str
    logical_bytes: int
    ops: tuple[str, ...] | None  # a composite's op kinds


def dispatched(cmd: PeCommand, cost: DispatchCostModel) -> Dispatched:
    """``cmd``'s :class:`Dispatched` under ``cost`` (kept on the command, as its cached properties are)."""
    kept: Dispatched | None = cmd.__dict__.get("_dispatched")
    if kept is not None and kept.cost is cost:
        return kept
    cycles = cost.dispatch_cycles(cmd)
    composite = isinstance(cmd, CompositeCmd)
    d = Dispatched(
        cost,
        cycles,
        cost.cycles_to_ns(cycles),
        composite and cmd.logical_bytes > cost.max_composite_logical_bytes,
        _math_log_op(cmd.op) if isinstance(cmd, MathCmd) else OP_LOG_KIND[type(cmd)],
        cmd.name,
        cmd.logical_bytes,
        tuple([op.kind for op in cmd.ops]) if isinstance(cmd, CompositeCmd) else None,
    )
    cmd.__dict__["_dispatched"] = d
    return d


# (module constants: an enum member's lookup is a class attribute's)
DISPATCH, LOAD_ISSUE, LOAD_WAIT, STALL = EventKind.DISPATCH, EventKind.LOAD_ISSUE, EventKind.LOAD_WAIT, EventKind.STALL

# Commands whose submission another actor orders by time: a receive matches
# messages as they land, so PE_CPU's clock must not be ahead of SimPy's.
SYNC_BEFORE_SUBMIT = frozenset({IpcqRecvCmd})


class PeCpu:
    def __init__(
        self,
        pe: ProcessingElement,
        requests: Callable[[Any], Request | None],
        describe_error: Callable[[BaseException], str] | None = None,
        limits: RunLimits | None = None,
        locate: Callable[[], str] | None = None,
    ):
        """``requests(response) -> request | None``: the next request, given the last response;
        ``locate()`` says where the kernel is now (its file:line), for limit errors."""
        self.pe = pe
        self.env = pe.env
        self.next_request = requests
        self.describe_error = describe_error or (lambda exc: "")
        self.limits = limits or RunLimits()
        self.locate = locate or (lambda: "")
        self.scale = pe.scale  # what-if re-timing (kernbench.pe.scale); NO_SCALE otherwise
        self.scaled = self.scale.active
        self.deadline = self.limits.deadline()
        # the limits as bounds every request is held to at once (None: no bound)
        self._max_issued = math.inf if self.limits.max_commands_per_pe is None else self.limits.max_commands_per_pe
        self._max_t = math.inf if self.limits.max_sim_ns is None else self.limits.max_sim_ns
        self.issued = 0  # every command the kernel issued, tl.cycles included
        self._dispatched: list[tuple[float, Dispatched]] = []  # (SimPy's time, the record) per command: its op log
        self.dispatch_cycles = 0.0
        self.commands = 0
        self.waiting_on: str | None = None
        self.finished = False
        self._outstanding: deque[tuple[Ready, int]] = deque()  # (completion, corr) of commands not yet known complete, oldest first
        self.lane = f"{pe.pe_id}.cpu"
        self.last = -1  # seq of its latest span (recorded runs): what its next span follows

    def run(self) -> ProcessGenerator:
        """The PE_CPU loop: take the kernel's next request and serve it.

        PE_CPU keeps its own clock ``self.t`` and runs ahead of SimPy's while
        what it touches is its own (dispatch, PE-local engine lanes, in
        program order). It hands its clock over — catches SimPy up with
        :meth:`_catch_up` — before anything another actor orders by time: a
        wait, a receive, or a lane an asynchronous stage of this PE may also
        reserve."""
        env, pe = self.env, self.pe
        self.t = env.now
        next_request, outstanding, submit = self.next_request, self._outstanding, pe.scheduler.submit
        max_issued, max_t, deadline, monotonic = self._max_issued, self._max_t, self.deadline, time.monotonic
        while True:
            try:
                req = next_request(None)  # (no response yet: every request's is None)
            except BaseException as exc:
                self._request_failed(exc)  # (raises the error it is, with the kernel's line)
                raise  # (not the kernel's: as it came)
            if req is None:
                break
            if self.issued >= max_issued or self.t > max_t or monotonic() > deadline or PENDING:
                self._check_limits()  # (one of them is past: raises, naming which)
            kind = type(req)  # (the three request records are final: their type is the kind)
            if kind is Issue:
                self.issued += 1
                cmd = req.cmd  # type: ignore[union-attr]
                if type(cmd) is PeCpuOverheadCmd:
                    self._spend(cmd, req.src)  # type: ignore[union-attr]
                    continue
                # A command, in line (a generator of its own cost a call each, a resume per wait): D7, room, dispatch, submit.
                src, cost = req.src, pe.cost  # type: ignore[union-attr]
                d: Dispatched | None = cmd.__dict__.get("_dispatched")  # (dispatched(cmd, cost)'s common case, in line)
                if d is None or d.cost is not cost:
                    d = dispatched(cmd, cost)
                if d.over_cap:
                    cost.check_composite(cmd)  # type: ignore[arg-type]  # (D7 again for replay with other knobs: raises)
                if len(outstanding) >= pe.queue_depth and self._queue_full():  # (_queue_full's own first test, in line)
                    yield from self._queue_space()
                dur = d.ns + pe.cpu_overhead_ns
                corr = pe.network.new_corr_id()
                if self.scaled:
                    dur *= self.scale.of_command(corr, src)
                t = self.t
                if pe.bus.active:  # its DISPATCH span (~9k a recorded GQA re-timing: the emit in line, by position)
                    self.last = pe.bus.emit(t, DISPATCH, self.lane, t + dur, corr, d.name, d.cycles, str(d.logical_bytes), self.last, src)
                self._dispatched.append((env.now, d))
                self.dispatch_cycles += d.cycles
                self.commands += 1
                pe.cpu_busy_ns += dur
                self.t = t = t + dur
                if (pe.async_stages or type(cmd) in SYNC_BEFORE_SUBMIT) and t > env.now:
                    yield env.timeout(t - env.now)  # (_catch_up, inlined)
                if pe.bus.active and isinstance(cmd, (DmaReadCmd, GatherCmd)):
                    pe.bus.emit(t, LOAD_ISSUE, self.lane, -1.0, corr, cmd.dst.name, cmd.size_bytes)
                outstanding.append((submit(cmd, corr, t, self.last), corr))
            elif kind is Wait:
                yield from self._wait(req.ref, req.reason)  # type: ignore[union-attr]
            elif kind is Sync:
                yield from self._catch_up()
            else:
                raise TypeError(f"unknown PE_CPU request {req!r}")
        yield from self._finish()

    def _request_failed(self, exc: BaseException) -> None:
        """Asking the kernel for its next request raised ``exc``: raise the error that makes
        (its errors become ours, with its line); returns when ``exc`` is not the kernel's."""
        if isinstance(exc, WallTimeExceeded):
            # raised through the kernel's frames, or in here when the watchdog left the kernel suspended
            where = self.describe_error(exc) or self.locate()
            raise self._limit_error(
                f"ran past the wall-time limit of {self.limits.max_wall_s:g} s", "--max-wall-s", lambda _exc: where
            ) from None
        if isinstance(exc, CompositeCapError):
            raise CompositeCapError(f"{self.pe.pe_id}: {exc}{self.describe_error(exc)}") from None
        if theirs(exc):  # the kernel's own error (sys.exit() too), with its line
            raise self._kernel_error(exc) from None

    def _spend(self, cmd: PeCpuOverheadCmd, src: str = "") -> None:
        """``tl.cycles``: explicit CPU work, no dispatch formula (ADR-0064 D5); ``src``: the line that asked for it."""
        pe = self.pe
        d = dispatched(cmd, pe.cost)
        dur = d.ns * self.scale.of_cpu_work(src)
        if pe.bus.active:
            self.last = pe.bus.emit(
                self.t, EventKind.CPU_WORK, self.lane, end_ns=self.t + dur, label="tl.cycles", value=cmd.cycles, pred=self.last, src=src
            )
        self._dispatched.append((self.env.now, d))
        pe.cpu_busy_ns += dur
        self.t += dur

    def _queue_full(self) -> bool:
        """Is the scheduler queue full (stall for its oldest)? Retires the commands done by now
        first — only when it holds ``queue_depth`` of them: a command done by now is done by
        any later time, so retiring it later retires the same ones before anything reads them."""
        q = self._outstanding
        if len(q) < self.pe.queue_depth:
            return False
        t = self.t
        while q:
            done = q[0][0]
            if isinstance(done, simpy.Event):  # (ready_time, inlined: this runs once a command)
                if done.callbacks is not None:
                    break
                done = done._value  # (fired_at(done), in line)
            if done > t:
                break
            q.popleft()
        return len(q) >= self.pe.queue_depth

    def _wait(self, ref: HandleRef, reason: StallReason) -> ProcessGenerator:
        """Block until ``ref``'s load or receive has landed (ADR-0062 auto-wait, ``wait``, receive)."""
        pe, env = self.pe, self.env
        if self.t > env.now:
            yield env.timeout(self.t - env.now)  # (_catch_up, inlined)
        landed = pe.ready.get(ref.id)  # set by PE_DMA / PE_IPCQ when the data is in TCM
        t0 = self.t
        corr = pe.load_corr.get(ref.id, -1)
        if isinstance(landed, simpy.Event) and landed.callbacks is not None:
            why = reason.value  # (read once: an enum's value is a property, two Python calls)
            self.waiting_on = f"{why}: {ref.name}"
            yield landed
            self.waiting_on = None
            self.t = self.env.now
            stalls = pe.cpu_stall_ns
            stalls[why] = stalls.get(why, 0.0) + (self.t - t0)
            if pe.bus.active:
                self.last = pe.bus.emit(t0, STALL, self.lane, self.t, corr, why, 0.0, ref.name, pe.ready_seq.get(ref.id, -1))
        if pe.bus.active and reason is StallReason.LAZY_LOAD:
            pe.bus.emit(t0, LOAD_WAIT, self.lane, self.t, corr, ref.name)

    def _finish(self) -> ProcessGenerator:
        """The kernel has returned: its work is done when every command it issued is."""
        env = self.env
        yield from self._catch_up()
        for c, _corr in list(self._outstanding):
            t = c
            if isinstance(t, simpy.Event):  # (ready_time, in line: ~4k a GQA re-timing)
                if t.callbacks is not None:  # (not ready yet)
                    self.waiting_on = "completion of its last commands"
                    yield t
                    self.waiting_on = None
                    continue
                t = t._value  # (fired_at(t): the time it fired with)
            if t > env.now:
                yield env.timeout(t - env.now)
        self._outstanding.clear()
        self.pe.done_ns = env.now
        self.finished = True

    def _check_limits(self) -> None:
        lim = self.limits
        if lim.max_commands_per_pe is not None and self.issued >= lim.max_commands_per_pe:
            raise self._limit_error(f"issued {self.issued:,} commands, the limit per PE", "--max-commands-per-pe")
        if lim.max_sim_ns is not None and self.t > lim.max_sim_ns:
            raise self._limit_error(f"reached t={self.t:,.3f} ns, past the simulated-time limit of {lim.max_sim_ns:g} ns", "--max-sim-ns")
        if time.monotonic() > self.deadline:
            raise self._limit_error(f"ran past the wall-time limit of {lim.max_wall_s:g} s", "--max-wall-s")
        raise_pending(self.t)  # an interrupt Python dropped (kernbench.interrupts): stop at this PE's next step

    def _limit_error(self, what: str, flag: str, where: Callable[..., str] | None = None) -> RunLimitError:
        at = where(sys.exc_info()[1]) if where is not None else self.locate()
        return RunLimitError(
            f"{self.pe.pe_id} (program {self.pe.program_id}) {what}; the run was stopped (raise it with {flag} or RunLimits){at}"
        )

    def _catch_up(self) -> ProcessGenerator:
        """Let SimPy's clock reach this CPU's."""
        if self.t > self.env.now:
            yield self.env.timeout(self.t - self.env.now)

    def _queue_space(self) -> ProcessGenerator:
        """Stall until the scheduler queue has room (its oldest command completes)."""
        q = self._outstanding
        t0 = self.t
        oldest, oldest_corr = q[0]
        self.waiting_on = f"{StallReason.QUEUE_FULL.value} ({len(q)} commands in flight)"
        t = ready_time(oldest)
        if t is None:
            assert isinstance(oldest, simpy.Event)  # (only an event is not ready yet)
            yield from self._catch_up()
            yield oldest
            self.t = max(self.t, self.env.now)
        else:
            self.t = max(self.t, t)
        self.waiting_on = None
        q.popleft()
        if self.t > t0:
            stalls, reason = self.pe.cpu_stall_ns, StallReason.QUEUE_FULL.value
            stalls[reason] = stalls.get(reason, 0.0) + (self.t - t0)
        if self.pe.bus.active and self.t > t0:
            self.last = self.pe.bus.emit(
                t0,
                EventKind.STALL,
                self.lane,
                end_ns=self.t,
                label=StallReason.QUEUE_FULL.value,
                detail=f"oldest of {self.pe.queue_depth} in-flight commands",
                pred=self.pe.done_seq.get(oldest_corr, -1),
            )

    @property
    def op_log(self) -> list[OpLogEntry]:
        """One entry per command it issued, in order (RunResult.op_logs)."""
        return _op_log(self._dispatched)

    def _kernel_error(self, exc: BaseException) -> KernelError:
        where = self.describe_error(exc)
        err = KernelError(f"{self.pe.pe_id} (program {self.pe.program_id}): {described(getattr(exc, 'original', exc))}{where}")
        err.__cause__ = None
        return err


def kernel_frame_location(frame: Any, kernel_file: str) -> str:
    """`` at file:line`` of the innermost frame of ``kernel_file`` on a suspended greenlet's stack."""
    while frame is not None and frame.f_code.co_filename != kernel_file:
        frame = frame.f_back
    if frame is None:
        return ""
    line = (linecache.getline(kernel_file, frame.f_lineno) or "").strip()
    return f"\n  at {kernel_file}:{frame.f_lineno} in {frame.f_code.co_name}\n    {line}"


def kernel_location(exc: BaseException, kernel_file: str) -> str:
    """`` at file:line`` of the deepest frame in the kernel's own file, with its source."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == kernel_file]
    if not frames:
        return ""
    f = frames[-1]
    line = (linecache.getline(f.filename, f.lineno) or "").strip() if f.lineno is not None else ""
    return f"\n  at {f.filename}:{f.lineno} in {f.name}\n    {line}"


def _op_log(dispatched: list[tuple[float, Dispatched]]) -> list[OpLogEntry]:
    """An op log from the dispatch records a PE_CPU kept as it went (a list of tuples, where a dict per command cost a call)."""
    return [
        {"t_ns": t, "op": d.op, "cmd": d.name, "logical_bytes": d.logical_bytes, "dispatch_cycles": d.cycles}
        if d.ops is None
        else {"t_ns": t, "op": d.op, "cmd": d.name, "logical_bytes": d.logical_bytes, "dispatch_cycles": d.cycles, "ops": list(d.ops)}
        for t, d in dispatched
    ]


class OpLogs(Mapping[str, list[OpLogEntry]]):
    """``RunResult.op_logs``: each PE's op log, built when first read from its PE_CPU's dispatch records.
    Most runs, and every re-timing, never read one: building them all took ~3 % of a GQA re-timing.
    A read-only mapping that compares, prints and pickles as the dict it stands for."""

    __slots__ = ("_built", "_records")

    def __init__(self, cpus: Mapping[str, PeCpu], order: Sequence[str]) -> None:
        self._records = {p: cpus[p]._dispatched for p in order}  # (the records only: not the PE_CPUs and what they hold)
        self._built: dict[str, list[OpLogEntry]] = {}

    def __getitem__(self, pe_id: str) -> list[OpLogEntry]:
        log = self._built.get(pe_id)
        if log is None:
            log = self._built[pe_id] = _op_log(self._records[pe_id])
        return log

    def __iter__(self) -> Iterator[str]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def __reduce__(self) -> tuple[type, tuple[dict[str, list[OpLogEntry]]]]:
        return dict, (dict(self.items()),)
