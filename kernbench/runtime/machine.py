"""The machine a run builds, and how it runs: one PE per program (a kernel in its greenlet, or a command log
re-timed), the network between them, the run to its end, and its :class:`~kernbench.runtime.result.RunResult`."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import simpy

from kernbench.errors import DeadlockError, LostMessageError
from kernbench.events.bus import Bus, Recorder
from kernbench.limits import RunLimits, alarm_frame
from kernbench.pe.cpu import OpLogs, PeCpu, kernel_frame_location, kernel_location
from kernbench.pe.processing_element import IpcqFabric, PlanCaches, ProcessingElement
from kernbench.pe.requests import CommandLog, Request
from kernbench.pe.scale import WorkScale
from kernbench.raised import Raised, theirs
from kernbench.runtime.loop import collector_paused, kept, run_within
from kernbench.runtime.result import RunResult
from kernbench.sim.clock import Environment
from kernbench.sim.network import Mode, Network
from kernbench.tl.context import KernelContext, kernel_greenlet
from kernbench.topology.graph import Graph
from kernbench.topology.ids import pe_key

if TYPE_CHECKING:
    import greenlet


@dataclass(frozen=True)
class Launch:
    kernel: Callable[..., Any]
    pes: tuple[str, ...]
    args: tuple[Any, ...]  # the kernel's own arguments, whatever it takes
    kwargs: dict[str, Any]


def unwrap_kernel(kernel: Any) -> Any:
    while isinstance(kernel, functools.partial):
        kernel = kernel.func
    return kernel


def kernel_file(kernel: Any) -> str:
    """The source file whose lines kernel errors point at ("" if it has none)."""
    fn = unwrap_kernel(kernel)
    # a function's code, else a callable object's __call__'s (B004: reads the method, tests nothing)
    code = getattr(fn, "__code__", None) or getattr(getattr(fn, "__call__", None), "__code__", None)  # noqa: B004
    try:
        return inspect.getsourcefile(fn) or (code.co_filename if code else "")
    except TypeError:
        return code.co_filename if code else ""


def _call_kernel(launch: Launch) -> None:
    try:
        out = launch.kernel(*launch.args, **launch.kwargs)
    except Exception:
        raise
    except BaseException as exc:  # the kernel's own sys.exit(), GreenletExit, …: its error, at its line
        if not theirs(exc) or _thrown_in(exc):
            raise
        raise Raised(exc).with_traceback(exc.__traceback__) from None
    if inspect.isgenerator(out) or inspect.iscoroutine(out) or inspect.isasyncgen(out):
        if inspect.iscoroutine(out):
            out.close()
        raise TypeError("the kernel returned a generator or coroutine; a kernel is a plain function that runs to its end")


def _thrown_in(exc: BaseException) -> bool:
    """Whether ``exc`` was thrown into the kernel where it waits for its PE (``GreenletExit`` when its greenlet
    is collected), not raised by the kernel's own code."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename == _CONTEXT_FILE


_CONTEXT_FILE = inspect.getsourcefile(KernelContext) or ""


@dataclass(frozen=True)
class _Program:
    """One program of a run: the PE it runs on, its ids, and how its PE_CPU gets requests."""

    pe_id: str
    program_id: int
    launch: int
    start: Callable[[ProcessingElement], tuple[PeCpu, KernelContext | None]]
    replays: CommandLog | None = None  # the log it re-times (replay); None when a kernel runs


def live_programs(launches: list[Launch], limits: RunLimits) -> list[_Program]:
    """Each launched kernel on each of its PEs, run in a greenlet that PE_CPU drives."""

    def start(launch: Launch, i: int, kfile: str, pe: ProcessingElement) -> tuple[PeCpu, KernelContext]:
        ctx = KernelContext(i, pe.pe_id, i, len(launch.pes), pe.cost, pe.scratch_bytes)
        ctx.kernel_file = kfile
        pe.ctx = ctx
        g = kernel_greenlet(functools.partial(_call_kernel, launch), ctx)
        cpu = PeCpu(
            pe,
            _live_requests(g, ctx),
            lambda exc: kernel_location(exc, kfile),
            limits,
            lambda: kernel_frame_location(g.gr_frame, kfile) or kernel_frame_location(alarm_frame(), kfile),
        )
        return cpu, ctx

    return [
        _Program(pid, i, li, functools.partial(start, launch, i, kernel_file(launch.kernel)))
        for li, launch in enumerate(launches)
        for i, pid in enumerate(launch.pes)
    ]


def replayed_programs(logs: dict[str, CommandLog], limits: RunLimits) -> list[_Program]:
    """Each PE's command log, fed to its PE_CPU request by request; no kernel code runs."""

    def start(log: CommandLog, pe: ProcessingElement) -> tuple[PeCpu, None]:
        # the next request, whatever the response (none in a log): next(requests, None), in C
        return PeCpu(pe, functools.partial(next, iter(log.requests)), limits=limits), None

    return [_Program(pid, log.program_id, log.launch, functools.partial(start, log), log) for pid, log in logs.items()]


def simulate(
    graph: Graph,
    mode: Mode,
    programs: list[_Program],
    record: bool,
    bus: Bus | None,
    limits: RunLimits,
    progress: Callable[[float, int], None] | None = None,
    kernel: str = "",
    fidelity: str = "paper",
    scale: WorkScale | None = None,
) -> RunResult:
    """Build the machine for ``programs``, run it to the end, and account for what it did."""
    # building the machine and accounting for it allocate as much as the run itself
    with collector_paused():
        env = Environment()
        bus = bus if bus is not None else Bus()
        recorder = Recorder(bus) if record else None
        network = Network(env, graph, bus, mode, fidelity=fidelity)
        fabric = IpcqFabric()
        pes = _place(programs, env, graph, network, bus, fabric)
        if scale is not None:
            for pe in pes.values():
                pe.scale_work(scale)
        cpus: dict[str, PeCpu] = {}
        contexts: dict[str, KernelContext] = {}
        for prog in programs:
            cpu, ctx = prog.start(pes[prog.pe_id])
            cpus[prog.pe_id] = cpu
            if ctx is not None:
                contexts[prog.pe_id] = ctx
        for pid in sorted(cpus, key=pe_key):
            env.process(cpus[pid].run())
        tick = None if progress is None else lambda: progress(env.now, sum(c.commands for c in cpus.values()))
        run_within(env, limits, recorder, tick)
        network.flush()
        _check_ended(cpus, fabric, recorder)
        result = _result(env, programs, pes, cpus, contexts, recorder, (graph.name, mode, kernel))
        _dismantle(network, fabric, pes)
        return result


def _dismantle(network: Network, fabric: IpcqFabric, pes: dict[str, ProcessingElement]) -> None:
    """A finished run's machine, its result taken: break the references that make it cyclic
    (PE ↔ scheduler, PE ↔ fabric, network ↔ engine ↔ FIFOs ↔ passages), so that reference
    counting frees it as the run returns rather than a cycle collection long after
    (:func:`collector_paused`)."""
    network.close()
    fabric.close()
    for pe in pes.values():
        pe.close()


def _place(
    programs: list[_Program], env: simpy.Environment, graph: Graph, network: Network, bus: Bus, fabric: IpcqFabric
) -> dict[str, ProcessingElement]:
    """One ProcessingElement per program, registered with the IPCQ fabric by (launch, program);
    PEs whose engines time a composite alike plan each shape of composite once between them."""
    pes: dict[str, ProcessingElement] = {}
    plans: PlanCaches = {}
    for prog in programs:
        if prog.pe_id in pes:
            raise ValueError(f"{prog.pe_id} is used by two launches in one run")
        pe = ProcessingElement(env, graph, network, bus, fabric, prog.pe_id, prog.program_id, prog.launch, plans)
        pes[prog.pe_id] = pe
        fabric.pes[(prog.launch, prog.program_id)] = pe
    return pes


def _check_ended(cpus: dict[str, PeCpu], fabric: IpcqFabric, recorder: Recorder | None) -> None:
    """The run ran out of events: every kernel must have finished and every message been taken."""
    blocked = [c for c in cpus.values() if not c.finished]
    if blocked:
        # each with the kernel's line it waits at (its suspended greenlet's frame in the kernel's file)
        lines = [
            f"{c.pe.pe_id} (program {c.pe.program_id}) waits on {c.waiting_on or 'nothing it can name'}" + c.locate().replace("\n", "\n  ")
            for c in blocked
        ]
        lines += fabric.unmatched()
        raise kept(DeadlockError("the simulation ran out of events with kernels still waiting:\n  " + "\n  ".join(lines)), recorder)
    lost = fabric.lost_messages()
    if lost:
        raise kept(LostMessageError("the run ended with messages no receive took:\n  " + "\n  ".join(lost)), recorder)


def _result(
    env: simpy.Environment,
    programs: list[_Program],
    pes: dict[str, ProcessingElement],
    cpus: dict[str, PeCpu],
    contexts: dict[str, KernelContext],
    recorder: Recorder | None,
    what: tuple[str, str, str],
) -> RunResult:
    """The result of a finished run; ``what``: the topology's name, the timing mode, the kernel's name."""
    latency = max([pe.done_ns or 0.0 for pe in pes.values()] + [env.now])
    order = sorted(pes, key=pe_key)
    # each program's PE is its own (_place): its command log is keyed in the same order, sorted once
    program_of = {prog.pe_id: prog for prog in programs}
    return RunResult(
        latency_ns=latency,
        pes=tuple(order),
        op_logs=OpLogs(cpus, order),
        dispatch_cycles={p: cpus[p].dispatch_cycles for p in order},
        commands={p: cpus[p].commands for p in order},
        engine_busy_ns={p: pes[p].engine_busy_ns() for p in order},
        stall_ns={p: sum(pes[p].cpu_stall_ns.values()) for p in order},
        scratch_peak_bytes={p: contexts[p].scratch_peak for p in order} if contexts else {},
        events=recorder.events() if recorder is not None else None,
        command_logs={p: _command_log(program_of[p], contexts) for p in order},
        stall_ns_by_reason=_by_reason([pes[p].cpu_stall_ns for p in order]),
        topology=what[0],
        timing=what[1],
        kernel=what[2],
    )


def _by_reason(per_pe: list[dict[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for stalls in per_pe:
        for reason, ns in stalls.items():
            out[reason] = out.get(reason, 0.0) + ns
    return dict(sorted(out.items()))


def _command_log(prog: _Program, contexts: dict[str, KernelContext]) -> CommandLog:
    """What a program asked of its PE_CPU, in order: the kernel's requests, or the log it replayed."""
    if prog.replays is not None:
        return prog.replays
    ctx = contexts[prog.pe_id]
    return CommandLog(prog.program_id, prog.launch, tuple(ctx.requests), ctx.time_read_at)


def _live_requests(g: greenlet.greenlet, ctx: KernelContext) -> Callable[[Any], Request | None]:
    """Drive the kernel greenlet: each call returns its next request (None when done)."""
    import greenlet

    started = False

    def next_request(response: Any) -> Request | None:
        nonlocal started
        if g.dead:
            return None
        ctx.driver = greenlet.getcurrent()
        req: Request | None = g.switch(response) if started else g.switch()  # what the kernel's tl call yielded
        started = True
        if g.dead:
            return None
        return req

    return next_request
