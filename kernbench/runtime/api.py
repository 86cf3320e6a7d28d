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
import inspect
import numbers
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kernbench.dtypes import as_dtype, check_storable, narrow
from kernbench.errors import RetimeError
from kernbench.events.bus import Bus
from kernbench.events.source import parse_site
from kernbench.handles import HbmTensor, Ptr, layout_only
from kernbench.limits import RunLimits
from kernbench.pe.scale import WorkScale
from kernbench.runtime.loop import collector_paused
from kernbench.runtime.machine import Launch, kernel_file, live_programs, replayed_programs, simulate, unwrap_kernel
from kernbench.runtime.result import RunResult as RunResult  # (the host-facing API: a run returns one)
from kernbench.sim.fidelity import check_fidelity
from kernbench.sim.network import MODES, Mode
from kernbench.topology.compile import load_topology
from kernbench.topology.digest import topology_digest
from kernbench.topology.graph import Graph
from kernbench.topology.ids import local_slice, pe_key

if TYPE_CHECKING:
    pass


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
                name = getattr(unwrap_kernel(earlier.kernel), "__name__", "a kernel")
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
        names = "+".join(dict.fromkeys(getattr(unwrap_kernel(launch.kernel), "__name__", "kernel") for launch in launches))
        result = simulate(self.graph, self.mode, live_programs(launches, limits), record, bus, limits, progress, names, self.fidelity)
        result.kernel_files = tuple(sorted({f for launch in launches if (f := kernel_file(launch.kernel))}))
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
        programs = replayed_programs(result.command_logs, limits)
        replayed = simulate(graph, self.mode, programs, record, bus, limits, kernel=result.kernel, fidelity=self.fidelity, scale=scale)
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
    fn = unwrap_kernel(kernel)
    code = getattr(fn, "__code__", None) or getattr(getattr(fn, "__call__", None), "__code__", None)  # noqa: B004
    if code is None:  # a builtin (print, len) or a C function: no Python code of its own to run on a PE
        raise TypeError(f"a kernel must be a Python function (def …), got {getattr(fn, '__name__', None) or type(fn).__name__!r}")
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn) or inspect.iscoroutinefunction(fn):
        raise TypeError(
            f"kernel {getattr(fn, '__name__', fn)!r} is a generator or async function; a kernel is a plain function (drop the yield/async)"
        )


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
