"""``tl``: the tile-level kernel API.

A kernel is a plain Python function that calls these functions;
``Runtime.launch(kernel, pes=[...], args=...)`` runs one *program* of it on
each PE given (``tl.program_id()`` is its index among them). Every ``tl``
call computes its numerics with numpy at once and issues at most one PE
command, whose timing the simulation models; numerics never depend on timing.

**Numerics.** Tensors are stored as float16 unless deployed otherwise. Every
PE_MATH op computes in float32 and returns its operands' dtype
(``numpy.result_type``); ``tl.dot`` accumulates in float32 and returns
float32 by default; a composite casts each result to its ``out``'s dtype;
``tl.store`` casts to the destination's dtype.

**Dtypes.** numpy's (float16, float32, the integers, bool) and, from
``ml_dtypes``, ``tl.bfloat16`` (2 B), ``tl.float8_e4m3fn`` and
``tl.float8_e5m2`` (1 B each): usable in ``Runtime.deploy``/``empty``,
``tl.load``/``store``, ``tl.cast`` and as any handle's dtype; the math runs
in float32 all the same, and every byte count (DMA, fetch, store, scratch)
is elements × the stored itemsize. Rounding float32 into a smaller type is
checked wherever it happens (a store, a cast, a deploy, an op's result, a
composite's ``out``): a finite value the type cannot hold raises
``NarrowingOverflowError`` (an ``OverflowError``) naming the place, the
value and the type's range — never a silent inf or NaN. Infinities and NaN
pass through as IEEE says, except into ``float8_e4m3fn``, which has no
infinity: there ±inf raises too. ``tl.cast(x, dtype, saturate=True)`` clips
to the type's range instead (kernbench/dtypes.py).

**Tensors.** An ``HbmTensor`` (from ``Runtime.deploy`` or ``Runtime.empty``)
lives in an HBM slice or in SRAM; ``x[0:32, :]`` names a region of it
(integers and slices, steps included: a strided region moves the bursts at
its real addresses; any other index raises ``IndexError``). ``tl.load``
copies a region into a ``TensorHandle`` in the PE's TCM scratch; ``tl.ref``
names a region in place, for ``tl.composite`` only. A handle has ``shape``,
``dtype``, ``nbytes`` and ``numpy()`` (its value, after an auto-wait).

**Costs.** Each entry's *Cost* names the command it issues, with its logical
bytes (ADR-0064 D2: framing 4, opcode or enum 1, handle 8, scalar 4, tuple
length 1, every field counted, none deduplicated), and what that command
costs, in the terms below. Their parameters are keys of the topology's
``pe.attrs`` (change one with ``--set pe.attrs.KEY=VALUE``); the
``pe_cost_model`` keys are ADR-0064's knobs.

- **dispatch(B)**: PE_CPU issues a command of B logical bytes (ADR-0064 D1).
  While ``sched_queue_depth`` commands it issued are not complete it first
  stalls (*scheduler queue full*); then it is busy
  ``(FIXED + B × pe_cost_model.byte_cycles_recip) / clock_freq_ghz + cpu_overhead_ns``
  ns, FIXED being ``pe_cost_model.fixed_per_single_op_cmd_cycles`` for a
  single-op command and ``pe_cost_model.fixed_per_cmd_cycles`` for a
  ``CompositeCmd`` (D8). Then the kernel goes on: the engines work on the
  command while PE_CPU issues the next one.
- **sched**: PE_SCHEDULER takes each command, in issue order, for
  ``sched_overhead_ns``, then starts its stages.
- **fetch(B)**, **store(B)**: PE_FETCH_STORE reads B bytes of TCM on its
  fetch lane, or writes them on its store lane, in ``B / tcm_bw_gbps`` ns;
  each lane does one thing at a time, in the order stages reach it. TCM is a
  port (docs/timing.md, "TCM is a port"): FETCH and DMAs out of TCM take
  its read port, STORE and DMAs into TCM its write port
  (``tcm_port_shared``: one port for both), each for ``B / tcm_bw_gbps``.
- **gemm(m, n, k)**: PE_GEMM is an R×C array (``gemm_array_rows`` ×
  ``gemm_array_cols``, 64 × 64 by default): an ``m × k`` by ``k × n`` GEMM
  takes ``⌈m/R⌉ · ⌈n/C⌉ · k`` array passes, each ``2·R·C / (gemm_tflops × 1000)``
  ns at f16/bf16, plus the fill, ``gemm_pipeline_cycles / clock_freq_ghz``:
  ``fill + ⌈m/R⌉·⌈n/C⌉·k · 2·R·C / (gemm_tflops × 1000 × ratio)`` ns. Full
  tiles run at the paper's peak (8 TFLOP/s); ``m = 8, n = 128, k = 128`` takes
  ``8 + 1 · 2 · 128 · 1.024 = 270.1`` ns, 8× the FLOPs' share (32.8 ns of
  8 TFLOP/s). ``ratio`` by the operands' dtypes: both fp8 (1-byte)
  ``gemm_fp8_peak_ratio`` (2), any float32 ``gemm_f32_peak_ratio`` (0.5),
  else 1.
- **math(E)**: PE_MATH is busy
  ``(math_pipeline_cycles + ceil(E / math_elems_per_cycle)) / clock_freq_ghz``
  ns for E elements (a *plain* op kind: add, mul, max, compare, select, cast, …).
- **tmath(E)**: PE_MATH is busy
  ``(math_pipeline_cycles + ceil(E / math_transcendental_elems_per_cycle)) / clock_freq_ghz``
  ns for E elements of a *transcendental* op kind (exp, log, sqrt, rsqrt,
  reciprocal, tanh, sigmoid, silu, gelu, sin, cos, pow: the special-function
  pipe, ``math_transcendental_elems_per_cycle``, "assumed", docs/extending.md);
  a kind of two passes (pow, sigmoid, silu) is tmath(2E). ``--explain`` names
  its share as the cause ``math (transcendental)``.
- **single-op compute on ENGINE**: sched, then, once every operand is ready
  (produced by an earlier command, or landed): fetch(operand bytes), ENGINE,
  store(result bytes); the result is ready when its store ends.
- **DMA read**, **DMA write**: the PE's read (write) channel carries one
  transfer at a time, in issue order, between the PE's DMA node and the
  memory, over the compiled graph (flits through the FIFO of every link on
  the route, bursts on the pseudo-channels their addresses select:
  docs/timing.md); it is busy until the transfer completes.
- **IPCQ**: the PE's IPCQ channel carries one message at a time, in issue
  order, over the NoC to the destination PE's IPCQ node; a message is done
  when its last flit arrives.
- **auto-wait** (ADR-0062): the first op that consumes a TCM handle whose
  load or receive has not been waited for makes PE_CPU wait until the data
  has landed (a *lazy-load auto-wait* or *recv wait* stall; none if it has
  landed already).
- **scratch**: a TCM handle holds its ``nbytes`` of ``scratch_bytes`` from
  its creation until the last Python reference to it is gone (an in-flight
  load's buffer until it lands); a handle that does not fit raises
  ``ScratchError``.

**Errors.** An exception raised in a ``tl`` call reaches ``Runtime.run`` as
a ``KernelError`` naming the PE and the kernel's own line (an over-cap
composite as a ``CompositeCapError`` naming the PE). Calling ``tl`` outside
a launched kernel raises ``RuntimeError``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kernbench import dtypes as _dtypes
from kernbench.dtypes import as_dtype, narrow
from kernbench.handles import HandleRef, HbmTensor, Ptr, TensorHandle
from kernbench.pe.commands import (
    CompositeCmd,
    CopyCmd,
    DmaReadCmd,
    DmaWriteCmd,
    GemmCmd,
    PeCpuOverheadCmd,
)
from kernbench.pe.commands import OpSpec as CmdOpSpec
from kernbench.pe.opkinds import OP_KINDS, op_kind
from kernbench.tl.communication import recv_async, send, wait
from kernbench.tl.context import current
from kernbench.tl.elementwise import (
    abs,
    add,
    add_bcast,
    add_bcast_row,
    cast,
    causal_mask,
    clamp,
    cos,
    div,
    div_bcast_row,
    exp,
    gelu,
    log,
    maximum,
    minimum,
    mul,
    mul_bcast,
    mul_bcast_row,
    neg,
    pow,
    reciprocal,
    rsqrt,
    scale,
    sigmoid,
    silu,
    sin,
    sqrt,
    sub,
    sub_bcast,
    sub_bcast_row,
    tanh,
    where,
)
from kernbench.tl.indexing import argmax, gather, scatter, topk
from kernbench.tl.issue import data as _data
from kernbench.tl.issue import expect_handle as _expect_handle
from kernbench.tl.reductions import max, rowmax, rowmean, rowsum, sum
from kernbench.tl.spec import OpSpec
from kernbench.tl.views import reshape, transpose, view

#: the dtypes beyond numpy's, by name: ``tl.bfloat16``, ``tl.float8_e4m3fn``, ``tl.float8_e5m2`` are ml_dtypes'
#: types (not in __all__: types, not ops), imported on first use (kernbench.dtypes says why)
DTYPES = _dtypes.ML_NAMES

if TYPE_CHECKING:
    bfloat16: type[Any]
    float8_e4m3fn: type[Any]
    float8_e5m2: type[Any]


def __getattr__(name: str) -> Any:
    if name in _dtypes.ML_NAMES:
        return getattr(_dtypes.ml_dtypes(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "OpSpec",
    "abs",
    "add",
    "add_bcast",
    "add_bcast_row",
    "argmax",
    "cast",
    "causal_mask",
    "clamp",
    "composite",
    "copy",
    "cos",
    "cycles",
    "div",
    "div_bcast_row",
    "dot",
    "exp",
    "full",
    "gather",
    "gelu",
    "load",
    "log",
    "max",
    "maximum",
    "minimum",
    "mul",
    "mul_bcast",
    "mul_bcast_row",
    "neg",
    "num_programs",
    "pow",
    "program_id",
    "reciprocal",
    "recv_async",
    "ref",
    "reshape",
    "rowmax",
    "rowmean",
    "rowsum",
    "rsqrt",
    "scale",
    "scatter",
    "send",
    "sigmoid",
    "silu",
    "sin",
    "sqrt",
    "store",
    "sub",
    "sub_bcast",
    "sub_bcast_row",
    "sum",
    "tanh",
    "topk",
    "transpose",
    "view",
    "wait",
    "where",
    "zeros",
]


def program_id() -> int:
    """This program's index in its launch: 0 … ``tl.num_programs() − 1``, in the order ``Runtime.launch`` was given the PEs.

    Shapes:
        None: a Python ``int``.
    Dtypes:
        None.
    Cost:
        - Command: none; no time.
    Example:
        me = tl.program_id()
        rows = out[me * 32 : (me + 1) * 32, :]  # each program its own half of out
        tl.store(rows, tl.load(x[me * 32 : (me + 1) * 32, :]))
        assert me in (0, 1)
    """
    return current().program_id


def num_programs() -> int:
    """How many programs this launch runs (one per PE given to ``Runtime.launch``).

    Shapes:
        None: a Python ``int``.
    Dtypes:
        None.
    Cost:
        - Command: none; no time.
    Example:
        assert tl.num_programs() == 2
        nxt = (tl.program_id() + 1) % tl.num_programs()  # a ring neighbour
    """
    return current().num_programs


def _ptr(p: Ptr | HbmTensor) -> Ptr:
    if isinstance(p, HbmTensor):
        return p.whole()
    if not isinstance(p, Ptr):
        raise TypeError(f"expected an HBM tensor or a region of one (t[i:j, ...]), got {p!r}")
    return p


def _check_geometry(p: Ptr, shape: Sequence[int] | None, dtype: Any) -> None:
    if shape is not None and tuple(shape) != p.shape:
        raise ValueError(f"{p.describe()} has shape {p.shape}, not {tuple(shape)}")
    if dtype is not None and as_dtype(dtype) != p.dtype:
        raise ValueError(f"{p.describe()} has dtype {p.dtype}, not {as_dtype(dtype)}")


def load(ptr: Ptr | HbmTensor, shape: Sequence[int] | None = None, dtype: Any = None) -> TensorHandle:
    """Issue a DMA read of an HBM (or SRAM) region into TCM scratch and return its handle at once (lazy, ADR-0062).

    The kernel goes on while the data moves; the first op that consumes the
    handle waits for it (auto-wait), so whatever is issued in between overlaps
    the read. Several loads may be in flight; they share the PE's read channel.
    The read is not ordered after earlier ``tl.store`` commands to the same
    bytes: the model tracks no hazards through HBM (the numerics are in program
    order all the same).

    Shapes:
        ``ptr`` is an ``HbmTensor`` or a region of one (``x[0:32, :]``); the handle has
        the region's shape. ``shape``, if given, is only checked against it.
    Dtypes:
        The region's (float16 unless deployed otherwise); ``dtype``, if given, is only
        checked against it.
    Cost:
        - Command: ``DmaReadCmd``, 24 logical bytes (framing, two handles, the size).
        - PE_CPU: dispatch(24), single-op FIXED; it does not wait for the data.
        - Engines: sched, then a DMA read of the region's bytes into the handle.
        - Scratch: the region's bytes, from now on.
    Errors:
        ``TypeError`` if ``ptr`` is not an HBM tensor or region; ``ValueError`` if ``shape``
        or ``dtype`` differ from the region's; ``ScratchError`` if it does not fit.
    Example:
        t = tl.load(x[0:32, :])  # returns before the data is in TCM
        assert t.shape == (32, 128) and t.dtype == np.float16
        u = tl.exp(t)  # waits here until the read has landed
    """
    ctx = current()
    p = _ptr(ptr)
    _check_geometry(p, shape, dtype)
    h = ctx.new_handle(p.shape, p.dtype, f"load {p.describe()}", p.read())
    ctx.load_issued(h.ref)
    ctx.issue(DmaReadCmd(p, h.ref, p.nbytes))
    return h


def store(ptr: Ptr | HbmTensor, value: TensorHandle) -> None:
    """Write a TCM handle's value to an HBM (or SRAM) region, cast to the region's dtype.

    The region holds the new values at once (numerics); the DMA write is timed
    once the value is ready. Nothing in the kernel waits for it: the kernel ends
    when its last command completes, and a later ``tl.load`` of the same bytes
    is not ordered after it in time.

    Shapes:
        ``value.shape`` equals the region's shape (no broadcasting).
    Dtypes:
        Any; cast to the region's dtype.
    Cost:
        - Command: ``DmaWriteCmd``, 24 logical bytes (framing, two handles, the size).
        - PE_CPU: auto-wait on ``value``; dispatch(24), single-op FIXED.
        - Engines: sched; once ``value`` is ready, a DMA write of the region's bytes.
    Errors:
        ``TypeError`` if ``value`` is not a TCM handle (a ``tl.ref`` is not); ``ValueError``
        if the shapes differ.
    Example:
        t = tl.load(x)
        tl.store(out, tl.scale(t, 2.0))
        tl.store(out[:, 0:64], tl.dot(t, tl.load(w)))  # float32 result cast to float16
    """
    ctx = current()
    p = _ptr(ptr)
    _expect_handle(value, "tl.store value")
    ctx.need((value,))
    if tuple(value.shape) != p.shape:
        raise ValueError(f"tl.store: value shape {value.shape} does not match {p.describe()} {p.shape}")
    p.write(narrow(_data(value), p.dtype, f"tl.store to {p.describe()}"))
    ctx.issue(DmaWriteCmd(value.ref, p, p.nbytes))


def ref(ptr: Ptr | HbmTensor, shape: Sequence[int] | None = None, dtype: Any = None) -> TensorHandle:
    """Name an HBM (or SRAM) region as a ``tl.composite`` operand or output, streamed step by step; nothing moves now.

    Shapes:
        As ``tl.load``: the region's; ``shape``, if given, is only checked.
    Dtypes:
        The region's; ``dtype``, if given, is only checked.
    Cost:
        - Command: none; no time and no scratch.
        - In a composite, PE_SCHEDULER reads it (an operand) or writes it (an ``out``)
          on the PE's DMA channels, at each step the part of it the step consumes or
          has made final (a GEMM's K-slice of A and B; its C once, after the last
          step): see ``tl.composite``.
    Errors:
        As ``tl.load`` for the region. ``tl.store``, ``tl.dot``, ``tl.copy``, ``tl.send`` and
        the PE_MATH ops raise ``TypeError`` when given one.
    Example:
        acc = tl.zeros((64, 64))
        tl.composite([tl.OpSpec("gemm", {"a": tl.ref(x), "b": tl.ref(w)}, acc)])
        assert acc.shape == (64, 64)
    """
    ctx = current()
    p = _ptr(ptr)
    _check_geometry(p, shape, dtype)
    return ctx.new_handle(p.shape, p.dtype, f"ref {p.describe()}", None, space="hbm", ptr=p)


def dot(a: TensorHandle, b: TensorHandle, *, out_dtype: Any = np.float32) -> TensorHandle:
    """``a @ b`` on PE_GEMM, accumulated in float32.

    Shapes:
        ``a`` (m, k) and ``b`` (k, n), both 2-D, give (m, n).
    Dtypes:
        Any operands; computed in float32; the result is ``out_dtype`` (float32 by default).
    Cost:
        - Command: ``GemmCmd`` (op kind ``gemm``), 41 logical bytes (framing, opcode, three handles, m, k, n).
        - PE_CPU: auto-wait on ``a`` and ``b``; dispatch(41), single-op FIXED.
        - Engines: single-op compute on PE_GEMM: fetch(a.nbytes + b.nbytes),
          gemm(m, n, k) at the operands' dtype ratio (the R×C array: ``fill + ⌈m/R⌉·⌈n/C⌉·k``
          passes; m = 8, n = k = 128 at f16 is 8 + 2 · 128 · 1.024 = 270.1 ns on 64 × 64),
          store(the result's bytes at ``out_dtype``).
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not: use
        ``tl.composite``); ``ValueError`` if ``a``'s last axis differs from ``b``'s first.
    Example:
        c = tl.dot(tl.load(x), tl.load(w))
        assert c.shape == (64, 64) and c.dtype == np.float32
        h = tl.dot(tl.load(x), tl.load(w), out_dtype=np.float16)
        assert h.nbytes == 64 * 64 * 2
    """
    ctx = current()
    _expect_handle(a, "tl.dot a")
    _expect_handle(b, "tl.dot b")
    if a.shape[-1] != b.shape[0]:
        raise ValueError(f"tl.dot: inner dimensions differ: {a.shape} @ {b.shape}")
    ctx.need((a, b))
    r = op_kind("gemm").fn(_data(a), _data(b)).astype(out_dtype)
    out = ctx.new_handle(r.shape, r.dtype, "dot", r)
    ctx.issue(GemmCmd(a.ref, b.ref, out.ref, a.shape[0], a.shape[1], b.shape[1]))
    return out


def copy(x: TensorHandle) -> TensorHandle:
    """A copy of a TCM handle in new scratch, through PE_FETCH_STORE only.

    A ``copy`` op inside a ``tl.composite`` runs on PE_MATH instead (the op
    kinds table).

    Shapes:
        The copy has ``x``'s shape.
    Dtypes:
        ``x``'s.
    Cost:
        - Command: ``CopyCmd``, 24 logical bytes (framing, two handles, the size).
        - PE_CPU: auto-wait on ``x``; dispatch(24), single-op FIXED.
        - Engines: sched; once ``x`` is ready, fetch(x.nbytes), then store(x.nbytes);
          no compute engine.
        - Scratch: x.nbytes more, from now on.
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not).
    Example:
        t = tl.load(x)
        c = tl.copy(t)
        assert c.shape == t.shape and c.dtype == t.dtype
    """
    ctx = current()
    _expect_handle(x, "tl.copy")
    ctx.need((x,))
    out = ctx.new_handle(x.shape, x.dtype, "copy", np.array(x.data, copy=True))
    ctx.issue(CopyCmd(x.ref, out.ref, x.nbytes))
    return out


def full(shape: Sequence[int], value: float, dtype: Any = np.float32) -> TensorHandle:
    """A new TCM tensor of ``shape`` filled with ``value``, set up by PE_CPU with no command.

    Shapes:
        ``shape``, a sequence of ints.
    Dtypes:
        ``dtype``, float32 by default.
    Cost:
        - Command: none; the model charges no time for it.
        - Scratch: its bytes, from now on.
    Errors:
        ``ScratchError`` if it does not fit.
    Example:
        m = tl.full((64, 1), -np.inf)  # a running max, before the first tile
        assert m.shape == (64, 1) and m.dtype == np.float32
    """
    ctx = current()
    dims = tuple(shape)
    if (
        all(isinstance(d, (int, np.integer)) and d >= 0 for d in dims)
        and int(np.prod(dims, dtype=object)) * as_dtype(dtype).itemsize > ctx.scratch_bytes
    ):
        ctx.new_handle(dims, as_dtype(dtype), f"full {value}", None)  # (raises ScratchError before any array is built)
    data = np.full(dims, value, dtype=dtype)
    return ctx.new_handle(data.shape, data.dtype, f"full {value}", data)


def zeros(shape: Sequence[int], dtype: Any = np.float32) -> TensorHandle:
    """A new TCM tensor of zeros: ``tl.full(shape, 0.0, dtype)``.

    Shapes:
        ``shape``, a sequence of ints.
    Dtypes:
        ``dtype``, float32 by default.
    Cost:
        - Command: none; the model charges no time for it.
        - Scratch: its bytes, from now on.
    Errors:
        ``ScratchError`` if it does not fit.
    Example:
        acc = tl.zeros((64, 64))  # an accumulator for tl.composite to write into
        assert acc.nbytes == 64 * 64 * 4
    """
    return full(shape, 0.0, dtype)


def composite(ops: Iterable[OpSpec], rw_handles: Iterable[TensorHandle] = ()) -> None:
    """Issue one ``CompositeCmd``: PE_SCHEDULER runs its ops step by step on the engines, streaming ``tl.ref`` operands, with no redispatch.

    The numerics of every op run now, in order: each op's result goes into its
    ``out`` (a TCM handle, from ``tl.zeros`` or ``tl.full`` or an earlier result,
    or a ``tl.ref`` region), broadcast to its shape and cast to its dtype; with
    ``extra={"accumulate": True}`` it is added to ``out``'s value instead. A
    later op may read an earlier op's ``out``. ``rw_handles`` names TCM handles
    the composite also writes: like its outs, later commands that use them wait
    for it (naming an ``out`` there again only adds logical bytes). A GEMM's
    ``extra`` may say ``a_kstep_major=True``: its A is stored as its K-step
    blocks, shape ``(k / tk, m, tk)``.

    Shapes:
        Each op's operands as its kind takes them (the op kinds table); its result
        must broadcast to its ``out``'s shape.
    Dtypes:
        Each op computes in float32; an ``out`` keeps its dtype.
    Cost:
        - Command: ``CompositeCmd``, ``4 + 1 + Σ OpSpec bytes + 1 + 8 × len(rw_handles)``
          logical bytes (an OpSpec's: ``tl.OpSpec``). Over
          ``pe_cost_model.max_composite_logical_bytes`` it is rejected before anything is
          issued (ADR-0064 D7).
        - PE_CPU: auto-wait on every TCM handle it names; dispatch(B) with the composite
          FIXED, ``pe_cost_model.fixed_per_cmd_cycles`` (D8): one dispatch however many
          steps and ops.
        - Engines: sched, then N steps, N = ceil(bytes of the largest ``tl.ref`` tensor
          streamed along its op's axis / ``composite_tile_bytes``), at least 1, at most the
          axis's length; a gemm with a K-step-major A (``extra["a_kstep_major"]``) streams
          whole ``tk`` blocks, as many a step as fit in ``composite_tile_bytes`` (at least one). Each op streams along one axis, cut into N near-equal slices: a
          gemm its K (step s reads A's columns ``[k0, k1)`` — in a row-major A one run per
          row, a row pitch apart — and B's rows ``[k0, k1)``), an elementwise op its
          elements, a row op or reduction its rows; a tensor without the axis (a
          broadcast operand, a gemm's C, a reduction's result) is read whole at the first
          step and stored and written whole after the last. Per step: a DMA read of every
          ``tl.ref`` operand's piece at its real addresses (at most ``composite_buffers``,
          2, steps ahead of the fetch, and the fetch at most that many ahead of the engines); fetch(bytes of the step's operand pieces); each op with work in the step,
          in order, on its engine, gemm(m, n, k1 − k0) (the R×C array: ``fill + ⌈m/R⌉·⌈n/C⌉·(k1 − k0)``
          passes; an m = 8 step of 128 K against n = 128 is 270.1 ns at f16) or math(its elements or
          rows' share of E, the op kinds table); store(bytes of the results final after
          the step); a DMA write of every ``tl.ref`` out's piece final then. The first
          fetch waits until every TCM handle it names (operands, outs, ``rw_handles``) is
          ready; its TCM outs and ``rw_handles`` are ready when its last store and write
          are done, so composites sharing a handle run in program order.
        - Planning the steps costs nothing beyond ``sched_overhead_ns`` (ADR-0064, open
          review item 2).
    Errors:
        ``ValueError`` for no ops, an unknown kind (with a suggestion), operands not named
        as the kind names them, or a result that does not fit its ``out``; ``TypeError``
        for an operand or ``out`` that is not a handle; ``CompositeCapError`` (a
        ``ValueError``) over the D7 cap.
    Example:
        q = tl.load(x)
        acc = tl.zeros((64, 64))
        tl.composite(
            [
                tl.OpSpec("gemm", {"a": q, "b": tl.ref(w)}, acc),  # w streamed from HBM
                tl.OpSpec("scale", {"x": acc}, acc, extra={"factor": 0.5}),
            ],
            rw_handles=[acc],
        )  # 4 + 1 + (28 + 24) + 1 + 8 = 66 logical bytes
        expected = tl.scale(tl.dot(q, tl.load(w)), 0.5)
        assert np.allclose(acc.numpy(), expected.numpy())
    """
    ctx = current()
    ops = list(ops)
    rw = list(rw_handles)
    if not ops:
        raise ValueError("tl.composite needs at least one OpSpec")
    cmd = CompositeCmd(tuple([_spec_refs(op) for op in ops]), tuple([h.ref for h in rw]))
    ctx.cost.check_composite(cmd)
    ctx.need(_tcm_handles(ops, rw))
    for op in ops:
        _run_spec(op)
    ctx.issue(cmd)


def _tcm_handles(ops: list[OpSpec], rw: list[TensorHandle]) -> Iterator[TensorHandle]:
    """The TCM handles a composite touches, in order: operands, outs, ``rw_handles`` (all handles: _spec_refs checked)."""
    for op in ops:
        for h in op.operands.values():
            if h.ref.space == "tcm":
                yield h
    for op in ops:
        if op.out is not None and op.out.ref.space == "tcm":
            yield op.out
    for h in rw:
        if h.ref.space == "tcm":
            yield h


def _spec_refs(op: OpSpec) -> CmdOpSpec:
    names = op_kind(op.kind).arity
    if tuple(op.operands) != names:
        # the numerics and the work take operands by position: a misnamed or extra one would be misread silently
        raise ValueError(
            f"OpSpec {op.kind}: operands must be named {', '.join(names)}, in that order; got {', '.join(op.operands) or 'none'}"
        )
    operands: dict[str, HandleRef] = {}
    for name, h in op.operands.items():
        if not isinstance(h, TensorHandle):
            raise TypeError(f"OpSpec {op.kind}: operand {name!r} must be a handle, got {h!r}")
        operands[name] = h.ref
    out = op.out
    if out is None:
        if op_kind(op.kind).shaped:
            raise ValueError(f"OpSpec {op.kind}: needs an out (the result's shape is out's)")
        return CmdOpSpec(op.kind, operands, None, op.scope, dict(op.extra))
    if not isinstance(out, TensorHandle):
        raise TypeError(f"OpSpec {op.kind}: out must be a handle, got {out!r}")
    return CmdOpSpec(op.kind, operands, out.ref, op.scope, dict(op.extra))


def _ref_ptr(h: TensorHandle) -> Ptr:
    """The HBM region of a ``tl.ref`` handle."""
    assert h.ptr is not None, f"{h.name} is not an HBM tl.ref"
    return h.ptr


def _value(h: TensorHandle) -> np.ndarray:
    """An operand's value: a TCM handle's data, or a ``tl.ref``'s region as it is now (read-only, not copied)."""
    return _ref_ptr(h).values() if h.ref.space == "hbm" else _data(h)


def _run_spec(op: OpSpec) -> None:
    """An op's numerics into its ``out`` (its kind and handles checked by :func:`_spec_refs`)."""
    out = op.out
    if op.kind == "gemm" and out is not None and not all(h.ptr.holds_data for h in op.operands.values() if h.ptr is not None):
        r = np.zeros(out.shape, np.float32)  # a tensor of Runtime(data=False) reads as zeros: so is the product (not multiplied out)
    else:
        r = OP_KINDS[op.kind].compute([_value(h) for h in op.operands.values()], op.extra, out.shape if out is not None else None)
    if out is None:
        return
    if op.extra and op.extra.get("accumulate"):
        r = _value(out).astype(np.float32) + r
    ref = out.ref
    if r.shape != ref.shape:
        try:
            r = np.broadcast_to(r, ref.shape)
        except ValueError:
            raise ValueError(f"OpSpec {op.kind}: result shape {r.shape} does not fit out {out.name} {out.shape}") from None
    r = narrow(np.asarray(r), out.dtype, f"OpSpec {op.kind} into {out.name}")
    if ref.space == "hbm":
        _ref_ptr(out).write(r)
    else:
        out.data = np.array(r, copy=True)


MAX_CYCLES = 1e12  # 1000 s at 1 GHz: far past any run limit


def cycles(n: float) -> None:
    """Spend exactly ``n`` PE_CPU cycles: explicit CPU work, with no dispatch charge (ADR-0064 D5).

    Use it to model work the kernel does on PE_CPU itself (address arithmetic,
    a scalar loop); ``tl.cycles(0)`` is a free marker in the op log.

    Shapes:
        None: ``n`` is a number of cycles, 0 ≤ n ≤ 1e12 (fractions allowed).
    Dtypes:
        None.
    Cost:
        - Command: ``PeCpuOverheadCmd``, 0 logical bytes; it never reaches PE_SCHEDULER.
        - PE_CPU: busy ``n / clock_freq_ghz`` ns, and nothing else: no dispatch formula,
          no ``cpu_overhead_ns``, no wait for room in the scheduler queue. It counts as a
          command for the ``--max-commands-per-pe`` limit and appears in the op log as
          ``cpu/cycles``.
    Errors:
        ``ValueError`` if ``n`` is not a number (a ``bool`` is not) in 0 … 1e12.
    Example:
        t = tl.load(x)
        tl.cycles(40)  # PE_CPU computes something for 40 cycles while the load is in flight
        tl.store(out, t)
    """
    ctx = current()
    if isinstance(n, bool) or not isinstance(n, (int, float, np.integer, np.floating)) or not 0 <= n <= MAX_CYCLES:
        raise ValueError(f"tl.cycles: n must be a number of cycles in 0..{MAX_CYCLES:g}, got {n!r}")
    ctx.issue(PeCpuOverheadCmd(float(n)))
