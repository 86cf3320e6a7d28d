"""The host-facing API: deploy tensors, launch kernels, run, read back.

It knows nothing of routing. Placement is by memory: give ``pe=`` (an index
into :meth:`Runtime.pe_ids`, or a PE id) to put a tensor in that PE's own
HBM slice (the default is PE 0's), or ``memory=`` to name any HBM slice or
SRAM node. Tensors are placed one after another in a memory, aligned to the
burst size, so contiguous data spreads over all pseudo-channels.

    rt = Runtime("cube1")
    a = rt.deploy(np.ones((64, 64), np.float16), pe=0)
    out = rt.empty((64, 64), np.float16, pe=0)
    rt.launch(my_kernel, pes=[0], args=(a, out))
    result = rt.run()
    rt.read(out), result.latency_ns
"""

from __future__ import annotations

import functools
import gc
import heapq
import inspect
import math
import numbers
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy

from kernbench.dtypes import as_dtype, check_storable, narrow
from kernbench.errors import DeadlockError, Interrupted, KernbenchError, LostMessageError, NotRecordedError, RetimeError, RunLimitError
from kernbench.events.bus import Bus, Recorder
from kernbench.events.source import parse_site
from kernbench.events.types import ENGINES, Event
from kernbench.handles import HbmTensor, Ptr, layout_only
from kernbench.interrupts import raise_pending
from kernbench.limits import RunLimits, WallTimeExceeded, alarm_frame, wall_clock_watchdog
from kernbench.pe.cpu import OpLogEntry, OpLogs, PeCpu, kernel_frame_location, kernel_location
from kernbench.pe.processing_element import IpcqFabric, PlanCaches, ProcessingElement
from kernbench.pe.requests import CommandLog, Request
from kernbench.pe.scale import WorkScale
from kernbench.raised import Raised, theirs
from kernbench.sim.clock import Action, Environment, Rewind
from kernbench.sim.fidelity import check_fidelity
from kernbench.sim.network import MODES, Mode, Network
from kernbench.tl.context import KernelContext, kernel_greenlet
from kernbench.topology.compile import load_topology
from kernbench.topology.digest import topology_digest
from kernbench.topology.graph import Graph
from kernbench.topology.ids import local_slice, pe_key

if TYPE_CHECKING:
    import greenlet

    from kernbench.analysis.critical import Attribution
    from kernbench.events.store import EventStore
    from kernbench.events.tracefile import TraceMetadata


@dataclass(frozen=True)
class Launch:
    kernel: Callable[..., Any]
    pes: tuple[str, ...]
    args: tuple[Any, ...]  # the kernel's own arguments, whatever it takes
    kwargs: dict[str, Any]


@dataclass
class RunResult:
    """What a run produced: latency, per-PE accounting, op logs, events."""

    latency_ns: float
    pes: tuple[str, ...]
    op_logs: Mapping[str, list[OpLogEntry]]  # (built per PE when read: kernbench.pe.cpu.OpLogs)
    dispatch_cycles: dict[str, float]
    commands: dict[str, int]
    engine_busy_ns: dict[str, dict[str, float]]
    stall_ns: dict[str, float]  # per PE: PE_CPU stalled, all reasons
    scratch_peak_bytes: dict[str, int]
    events: list[Event] | None
    command_logs: dict[str, CommandLog] = field(repr=False, default_factory=dict)
    wall_events: int = 0
    stall_ns_by_reason: dict[str, float] = field(default_factory=dict)  # PE_CPU stalled, summed over PEs, by reason
    topology: str = ""  # the topology's name
    timing: str = ""  # the engine's mode (fast or oracle)
    fidelity: str = "paper"  # the model's level (paper, credit, full)
    kernel: str = ""  # what ran: the launched kernels' names
    kernel_files: tuple[str, ...] = ()  # the source files of the launched kernels: a save may not overwrite one
    topology_digest: str = ""  # kernbench.topology.digest of the topology it ran on
    _store: EventStore | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def total_dispatch_cycles(self) -> float:
        return sum(self.dispatch_cycles.values())

    # --- from a script to the tools --------------------------------------

    def store(self) -> EventStore:
        """The recorded events as a columnar store (what the debugger, traces and the critical path read)."""
        from kernbench.events.store import EventStore

        if self.events is None:
            raise NotRecordedError(
                "this run kept no events: run it with Runtime.run(record=True) to save a trace, export Perfetto, explain it or debug it"
            )
        if self._store is None:
            self._store = EventStore.from_events(self.events)
        return self._store

    def trace_metadata(self, **extra: Any) -> TraceMetadata:
        """What a trace of this run says it is (``extra``: more to keep beside it, e.g. the kernel's options)."""
        from kernbench.events.tracefile import TraceMetadata

        return TraceMetadata(kernel=self.kernel, topology=self.topology, end_ns=self.latency_ns, extra={"timing": self.timing, **extra})

    def save_trace(self, path: str | os.PathLike[str]) -> None:
        """Save the recorded events as a ``.kbtrace`` file (``kernbench-tui open PATH``, ``kernbench compare``)."""
        from kernbench.events.tracefile import trace_bytes

        self._save(path, "trace", trace_bytes)

    def save_perfetto(self, path: str | os.PathLike[str]) -> None:
        """Export the recorded events as Chrome/Perfetto trace JSON (ui.perfetto.dev)."""
        from kernbench.events.perfetto import perfetto_bytes

        self._save(path, "Perfetto trace", perfetto_bytes)

    def _save(self, path: str | os.PathLike[str], what: str, encode: Callable[[EventStore, TraceMetadata], bytes]) -> None:
        from kernbench.outputs import check_outputs, write_atomic

        store = self.store()
        check_outputs([(what, os.fspath(path))], inputs=self.kernel_files)
        data = encode(store, self.trace_metadata())
        write_atomic(path, lambda f: f.write(data))

    def explain(self, by: str = "cause") -> Attribution:
        """Where every ns of the latency went: the critical path and its attribution, as ``kernbench run --explain``.

        ``by`` is what :meth:`explain_text` leads with: ``"cause"``, or ``"line"`` / ``"function"`` of the
        kernel's source; the attribution holds all of them (``a.by_cause``; per line:
        :func:`kernbench.analysis.lines.by_source`, ``a.lines("line")``)."""
        from kernbench.analysis.critical import attribute
        from kernbench.analysis.lines import BY

        if by not in BY:
            raise ValueError(f"explain by {by!r}: by is one of {', '.join(BY)}")
        return attribute(self.store(), self.latency_ns)

    def explain_text(self, by: str = "cause") -> str:
        """:meth:`explain` as ``kernbench run --explain [--by line|function]`` prints it."""
        from kernbench.analysis.explain import explain_text

        return explain_text(self.explain(by), by=by)

    @property
    def total_commands(self) -> int:
        return sum(self.commands.values())

    def run_record(
        self,
        *,
        kernel: str | None = None,
        kernel_file: str | None = None,
        variant: str = "",
        params: Mapping[str, Any] | None = None,
        overrides: Mapping[str, Any] | None = None,
        max_abs_err: float | None = None,
        attribution: Attribution | None = None,
        figures: Mapping[str, Any] | None = None,
        what_if: Mapping[str, Any] | None = None,
        speedups: Mapping[str, Any] | None = None,
        data: str = "held",
    ) -> dict[str, Any]:
        """This run as a run record (:mod:`kernbench.record`, ``kernbench run --json``'s object): the
        per-PE accounting summed over PEs under the record's names; what ran (the kernel, its options,
        the ``--set`` overrides, its check's error, …) as given, the kernel defaulting to the launched
        kernels' names and the overrides to none."""
        from kernbench.record import record

        return record(
            kernel=self.kernel if kernel is None else kernel,
            kernel_file=kernel_file,
            topology=self.topology,
            timing=self.timing,
            fidelity=self.fidelity,
            variant=variant,
            params=params or {},
            overrides=overrides or {},
            topology_digest=self.topology_digest or None,
            latency_ns=self.latency_ns,
            pes=len(self.pes),
            commands=self.total_commands,
            dispatch_cycles=self.total_dispatch_cycles,
            max_abs_err=max_abs_err,
            stall_ns_by_reason=self.stall_ns_by_reason,
            engine_busy_ns={e: sum(b[e] for b in self.engine_busy_ns.values()) for e in ENGINES},
            attribution=attribution.as_json() if attribution is not None else None,
            figures=figures,
            what_if=what_if,
            speedups=speedups,
            data=data,
        )

    def engine_util_pct(self) -> dict[str, float]:
        """Busy time of each engine kind over (latency × PEs), in percent."""
        if self.latency_ns <= 0:
            return {e: 0.0 for e in ENGINES}
        n = len(self.pes)
        return {e: 100.0 * sum(b[e] for b in self.engine_busy_ns.values()) / (self.latency_ns * n) for e in ENGINES}


class Runtime:
    def __init__(
        self,
        topology: str | Path | Graph | None = None,
        overrides: Sequence[str] | None = None,
        mode: Mode = "fast",
        fidelity: str = "paper",
        data: bool = True,
    ) -> None:
        """``fidelity``: the model's level (``paper``, ``credit``, ``full``: docs/fidelity.md);
        above ``paper`` transfers run flit by flit whatever ``mode`` says.

        ``data=False`` (``kernbench run --no-data``): tensors hold no payload. ``deploy`` and ``empty``
        record shape, dtype and placement only (no array of that size is made, nor refused as too big),
        loads of them yield zero tiles, stores to them are discarded, and ``read`` raises
        :class:`~kernbench.handles.NoDataError`. The commands, and so the event stream and the latency,
        are the same as with data, as long as the kernel's control flow and addresses do not depend on
        values (a data-dependent choice, such as MoE routing, must come from the host's side)."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)} (fast: trains in closed form; oracle: flit by flit), not {mode!r}")
        self.fidelity = check_fidelity(fidelity)
        self.graph = topology if isinstance(topology, Graph) else load_topology(topology, list(overrides or []))
        self.mode = mode
        self.holds_data = bool(data)
        self._pe_ids = tuple(sorted((n.id[: -len(".cpu")] for n in self.graph.nodes_of_kind("pe_cpu")), key=pe_key))
        self._pe_set = frozenset(self._pe_ids)
        self._next_offset: dict[str, int] = {}
        self._launches: list[Launch] = []
        self._names = 0
        self._token = object()  # marks the tensors this runtime deployed (see launch)

    # --- placement --------------------------------------------------------

    def pe_ids(self) -> list[str]:
        """Every PE, ordered by SIP, CUBE, PE."""
        return list(self._pe_ids)

    def pe_id(self, pe: int | str) -> str:
        ids = self._pe_ids
        if isinstance(pe, str):
            if pe not in self._pe_set:
                raise ValueError(f"unknown PE {pe!r}; PEs are {ids[0]} … {ids[-1]}")
            return pe
        if isinstance(pe, bool) or not isinstance(pe, numbers.Integral):  # (True is an int: it would be PE 1)
            raise TypeError(f"a PE is an index (int) or an id (str), not {type(pe).__name__} {pe!r}")
        if not 0 <= pe < len(ids):
            raise ValueError(f"PE index {pe} out of range 0..{len(ids) - 1}")
        return ids[pe]

    def local_slice(self, pe: int | str) -> str:
        """The HBM slice beside a PE."""
        return local_slice(self.pe_id(pe))

    def _place(self, nbytes: int, pe: int | str | None, memory: str | None) -> tuple[str, int]:
        mem = memory if memory is not None else self.local_slice(pe if pe is not None else 0)
        node = self.graph.node(mem)
        if node.kind not in ("hbm_slice", "sram"):
            raise ValueError(f"{mem} is a {node.kind}, not an HBM slice or SRAM")
        burst = node.attrs["burst_bytes"]
        off = self._next_offset.get(mem, 0)
        end = off + nbytes
        if end > node.attrs["capacity_bytes"]:
            raise ValueError(f"{mem} is full: {off} B used, {nbytes} B more do not fit in {node.attrs['capacity_bytes']} B")
        self._next_offset[mem] = -(-end // burst) * burst
        return mem, off

    def deploy(
        self,
        array: np.ndarray,
        *,
        pe: int | str | None = None,
        memory: str | None = None,
        name: str | None = None,
        dtype: Any = None,
        copy: bool = True,
    ) -> HbmTensor:
        """Copy a numpy array into HBM (float arrays become float16 unless ``dtype``).

        ``name`` is what traces, the debugger, ``--explain`` and errors call it; without one the
        tensor is ``t1``, ``t2``, … until its first launch names it after the kernel parameter it
        is passed as (``x``, ``xs[0]``, ``ws['q']``: :func:`name_by_parameters`).

        ``dtype`` may be any numeric numpy type or ``tl.bfloat16``, ``tl.float8_e4m3fn``,
        ``tl.float8_e5m2``; a finite value it cannot hold raises ``NarrowingOverflowError``
        and an object (or other non-numeric) array a ``TypeError`` (kernbench/dtypes.py).

        ``copy=False`` takes the array over as it is when it already is a
        C-contiguous array of the stored dtype (the caller must not change it
        afterwards): a large input is then held once, not twice. A runtime
        holding no data (``data=False``) keeps only the array's shape and dtype.
        """
        arr = np.asarray(array)
        what = f"Runtime.deploy of {name or 'an array'} {arr.shape}"
        check_storable(arr, what)
        if dtype is not None:
            target = as_dtype(dtype)
            check_storable(np.empty(0, dtype=target), what)
        elif arr.dtype.kind == "f":
            target = np.dtype(np.float16)
        else:
            target = arr.dtype
        if not self.holds_data:
            return self._phantom(tuple(arr.shape), target, pe, memory, name)
        if arr.dtype != target:
            arr = np.ascontiguousarray(
                narrow(arr, target, what, "scale the array first, or deploy it as float32")
            )  # a fresh array already (an overflow raises)
        elif copy or not arr.flags.c_contiguous:
            arr = np.array(arr, order="C", copy=True)
        mem, off = self._place(arr.nbytes, pe, memory)
        self._names += 1
        return HbmTensor(name or f"t{self._names}", mem, off, arr, deployed_by=self._token, named=name is not None)

    def empty(self, shape: Sequence[int], dtype: Any = np.float16, **where: Any) -> HbmTensor:
        """A zero-filled HBM tensor to write results into (with ``data=False``: its geometry only)."""
        if not self.holds_data:
            return self._phantom(tuple(int(n) for n in shape), as_dtype(dtype), where.get("pe"), where.get("memory"), where.get("name"))
        return self.deploy(np.zeros(tuple(shape), dtype=dtype), dtype=dtype, copy=False, **where)

    def _phantom(self, shape: tuple[int, ...], dtype: np.dtype, pe: int | str | None, memory: str | None, name: str | None) -> HbmTensor:
        """A tensor placed as ``deploy`` places one, holding no data (see :func:`~kernbench.handles.layout_only`)."""
        layout = layout_only(shape, dtype)
        mem, off = self._place(int(layout.nbytes), pe, memory)
        self._names += 1
        return HbmTensor(name or f"t{self._names}", mem, off, layout, deployed_by=self._token, holds_data=False)

    def read(self, tensor: HbmTensor) -> np.ndarray:
        """A copy of a tensor's values (:class:`~kernbench.handles.NoDataError` if it holds none)."""
        return np.array(tensor.array, copy=True)

    # --- launching --------------------------------------------------------

    def launch(self, kernel: Callable[..., Any], pes: Sequence[int | str], args: Sequence[Any] = (), **kwargs: Any) -> None:
        """Queue ``kernel(*args, **kwargs)`` on each PE; ``tl.program_id()`` is its index in ``pes``."""
        _check_kernel(kernel)
        ids = tuple(self.pe_id(p) for p in pes)
        if not ids:
            raise ValueError("launch on no PE: give pes at least one PE (an index or id)")
        twice = sorted({p for p in ids if ids.count(p) > 1}, key=pe_key)
        if twice:
            raise ValueError(f"launch: {', '.join(twice)} appears twice in pes; a PE runs one program of a launch")
        for n, earlier in enumerate(self._launches):
            taken = sorted(set(ids) & set(earlier.pes), key=pe_key)
            if taken:
                name = getattr(_unwrap(earlier.kernel), "__name__", "a kernel")
                raise ValueError(
                    f"launch: {', '.join(taken)} already run{'s' if len(taken) == 1 else ''} {name} (launch {n} of this run); a PE runs one kernel "
                    "per run: give this launch other PEs, or run it after Runtime.run"
                )
        for where, tensor in _tensors_in({"args": tuple(args), **kwargs}):
            if tensor.deployed_by is not None and tensor.deployed_by is not self._token:
                raise ValueError(
                    f"launch {where}: tensor {tensor.name} was deployed by another Runtime (its address means"
                    " nothing in this one's memories); deploy it with this Runtime"
                )
        name_by_parameters(kernel, tuple(args), kwargs)
        self._launches.append(Launch(kernel, ids, tuple(args), dict(kwargs)))

    @property
    def launched(self) -> int:
        """Launches queued for the next :meth:`run`."""
        return len(self._launches)

    def run(
        self,
        *,
        record: bool = False,
        bus: Bus | None = None,
        limits: RunLimits | None = None,
        progress: Callable[[float, int], None] | None = None,
    ) -> RunResult:
        """Run every launched kernel to completion; ``record`` keeps the event stream.

        ``limits`` stop a runaway run with a :class:`RunLimitError`; on any
        simulation error the events recorded so far are on ``exc.recorded``.
        ``progress(t_ns, commands)``, if given, is called from the simulation
        loop at most every :data:`PROGRESS_EVERY_S` of wall time with the
        simulated time reached and the commands issued so far (the result is
        the same with or without it).
        """
        if not self._launches:
            raise ValueError("nothing launched: call Runtime.launch first")
        launches, self._launches = self._launches, []
        limits = limits or RunLimits()
        names = "+".join(dict.fromkeys(getattr(_unwrap(launch.kernel), "__name__", "kernel") for launch in launches))
        result = _simulate(self.graph, self.mode, _live_programs(launches, limits), record, bus, limits, progress, names, self.fidelity)
        result.kernel_files = tuple(sorted({f for launch in launches if (f := _kernel_file(launch.kernel))}))
        result.topology_digest = topology_digest(self.graph.spec)
        result.fidelity = self.fidelity
        return result

    def replay(
        self,
        result: RunResult,
        *,
        overrides: Sequence[str] | None = None,
        record: bool = False,
        bus: Bus | None = None,
        limits: RunLimits | None = None,
        scale: WorkScale | None = None,
    ) -> RunResult:
        """Re-time ``result``'s command logs without running kernel code.

        With ``overrides`` (``--set``-style) the commands are re-timed on a
        changed topology, e.g. another dispatch cost ``R``; with ``scale``
        (:mod:`kernbench.pe.scale`) a source line's or an engine's work takes
        a multiple of its time. A kernel that read simulated time may issue
        other commands under other timing: re-timing it is refused
        (:class:`~kernbench.errors.RetimeError`, naming the line).
        """
        for pe_id, log in result.command_logs.items():
            if log.time_read_at:
                raise RetimeError(
                    f"{pe_id} (program {log.program_id}): the kernel read simulated time at {_shown_site(log.time_read_at)}, so its "
                    "commands may depend on timing and cannot be re-timed honestly; run it again with --set instead"
                )
        graph = _reload(self.graph, overrides) if overrides else self.graph
        limits = limits or RunLimits()
        programs = _replayed_programs(result.command_logs, limits)
        replayed = _simulate(graph, self.mode, programs, record, bus, limits, kernel=result.kernel, fidelity=self.fidelity, scale=scale)
        replayed.kernel_files = getattr(result, "kernel_files", ())  # (a replay reads only the logs: a stand-in may hold no more)
        replayed.topology_digest = topology_digest(graph.spec)
        replayed.fidelity = self.fidelity
        return replayed


def _shown_site(src: str) -> str:
    """A source site as errors show it: ``file:line in function`` of its innermost frame, and the line's text."""
    import linecache

    try:
        frames = parse_site(src)
    except ValueError:  # not a site (a description of where)
        return src
    if not frames:
        return src
    f = frames[0]
    text = (linecache.getline(f.file, f.line) or "").strip()
    return f"{f.file}:{f.line} in {f.function}" + (f" ({text})" if text else "")


def _tensors_in(obj: Any, where: str = "", depth: int = 0) -> Iterator[tuple[str, HbmTensor]]:
    """Every :class:`HbmTensor` in a launch's arguments (as is, under a ``Ptr``, or inside lists,
    tuples and dicts a few levels deep), with where it was found (``args[1]``, ``out``)."""
    if isinstance(obj, HbmTensor):
        yield where, obj
    elif isinstance(obj, Ptr):
        yield where, obj.tensor
    elif depth < 4 and isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            yield from _tensors_in(item, f"{where}[{i}]", depth + 1)
    elif depth < 4 and isinstance(obj, dict):
        for key, item in obj.items():
            yield from _tensors_in(item, f"{where}[{key!r}]" if where else str(key), depth + 1)


def name_by_parameters(kernel: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    """Name each tensor of a launch that was deployed without ``name=`` after the kernel parameter it is
    passed as: ``x`` for ``kernel(x, …)``, ``xs[2]`` for the third item of a list passed as ``xs``,
    ``ws['q']`` for a dict's item (as :func:`_tensors_in` finds them, in argument order). The first
    launch that passes a tensor names it; a name given at deploy is kept. Arguments that do not bind
    to the kernel's signature (the call would fail at run time, where it says so) are left as they are."""
    while isinstance(kernel, functools.partial):  # its own arguments are the kernel's too: bind them by name
        args, kwargs = (*kernel.args, *args), {**kernel.keywords, **kwargs}
        kernel = kernel.func
    try:
        bound = inspect.signature(kernel).bind(*args, **kwargs)
    except (TypeError, ValueError):  # (ValueError: a callable without a signature)
        return
    for where, tensor in _tensors_in(dict(bound.arguments)):
        tensor.name_after(where)


def _check_kernel(kernel: Any) -> None:
    """A kernel is a plain function (or a ``functools.partial`` of one), not a generator or coroutine."""
    if not callable(kernel):
        raise TypeError(f"a kernel must be a function, got {type(kernel).__name__}")
    fn = _unwrap(kernel)
    code = getattr(fn, "__code__", None) or getattr(getattr(fn, "__call__", None), "__code__", None)  # noqa: B004
    if code is None:  # a builtin (print, len) or a C function: no Python code of its own to run on a PE
        raise TypeError(f"a kernel must be a Python function (def …), got {getattr(fn, '__name__', None) or type(fn).__name__!r}")
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn) or inspect.iscoroutinefunction(fn):
        raise TypeError(
            f"kernel {getattr(fn, '__name__', fn)!r} is a generator or async function; a kernel is a plain function (drop the yield/async)"
        )


def _unwrap(kernel: Any) -> Any:
    while isinstance(kernel, functools.partial):
        kernel = kernel.func
    return kernel


def _kernel_file(kernel: Any) -> str:
    """The source file whose lines kernel errors point at ("" if it has none)."""
    fn = _unwrap(kernel)
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


def _reload(graph: Graph, overrides: Sequence[str]) -> Graph:
    """``graph``'s topology with ``--set`` overrides, validated like a YAML file."""
    from kernbench.topology.compile import compile_spec
    from kernbench.topology.spec import apply_overrides, validate_spec

    doc = apply_overrides(_thaw(graph.spec), list(overrides))
    with collector_paused():  # a graph is ~30k objects and no cycle: they join the oldest generation unscanned, as a run's result does
        return compile_spec(validate_spec(doc, "--set"))


def _thaw(obj: Any) -> Any:
    from collections.abc import Mapping

    if isinstance(obj, Mapping):
        # Absent optional sections compile to None; leave them absent again.
        return {k: _thaw(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, tuple):
        return [_thaw(v) for v in obj]
    return obj


@dataclass(frozen=True)
class _Program:
    """One program of a run: the PE it runs on, its ids, and how its PE_CPU gets requests."""

    pe_id: str
    program_id: int
    launch: int
    start: Callable[[ProcessingElement], tuple[PeCpu, KernelContext | None]]
    replays: CommandLog | None = None  # the log it re-times (replay); None when a kernel runs


def _live_programs(launches: list[Launch], limits: RunLimits) -> list[_Program]:
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
        _Program(pid, i, li, functools.partial(start, launch, i, _kernel_file(launch.kernel)))
        for li, launch in enumerate(launches)
        for i, pid in enumerate(launch.pes)
    ]


def _replayed_programs(logs: dict[str, CommandLog], limits: RunLimits) -> list[_Program]:
    """Each PE's command log, fed to its PE_CPU request by request; no kernel code runs."""

    def start(log: CommandLog, pe: ProcessingElement) -> tuple[PeCpu, None]:
        # the next request, whatever the response (none in a log): next(requests, None), in C
        return PeCpu(pe, functools.partial(next, iter(log.requests)), limits=limits), None

    return [_Program(pid, log.program_id, log.launch, functools.partial(start, log), log) for pid, log in logs.items()]


def _simulate(
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
        _run_within(env, limits, recorder, tick)
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
        raise _kept(DeadlockError("the simulation ran out of events with kernels still waiting:\n  " + "\n  ".join(lines)), recorder)
    lost = fabric.lost_messages()
    if lost:
        raise _kept(LostMessageError("the run ended with messages no receive took:\n  " + "\n  ".join(lost)), recorder)


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


def _run_within(env: Environment, limits: RunLimits, recorder: Recorder | None, tick: Callable[[], None] | None = None) -> None:
    """``env.run()`` under the run limits. A failure keeps what was recorded (``exc.recorded``);
    Ctrl-C/SIGTERM becomes :class:`Interrupted` with the simulated time reached."""
    try:
        with wall_clock_watchdog(limits):
            _run_loop(env, limits.max_sim_ns, tick)
            raise_pending(env.now)  # (an interrupt Python dropped: see kernbench.interrupts)
    except KernbenchError as exc:
        _kept(exc, recorder)
        raise
    except KeyboardInterrupt as exc:
        raise Interrupted(env.now, getattr(exc, "signum", 2)) from None
    except WallTimeExceeded:
        raise _kept(
            RunLimitError(
                f"the run passed the wall-time limit of {limits.max_wall_s:g} s at t={env.now:,.3f} ns "
                "while the engine was busy (raise it with --max-wall-s or RunLimits)"
            ),
            recorder,
        ) from None


PROGRESS_EVERY_S = 0.2
_STEPS_PER_CLOCK_READ = 256


def _run_loop(env: Environment, max_sim_ns: float | None, tick: Callable[[], None] | None) -> None:
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


def _kept(exc: KernbenchError, recorder: Recorder | None) -> KernbenchError:
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
    run ends. The finished machine is no cycle either (``_dismantle``): it is
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
