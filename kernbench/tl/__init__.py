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
  each lane does one thing at a time, in the order stages reach it.
- **gemm(F)**: PE_GEMM is busy
  ``gemm_pipeline_cycles / clock_freq_ghz + F / (gemm_tflops × 1000)`` ns
  for F FLOPs.
- **math(E)**: PE_MATH is busy
  ``(math_pipeline_cycles + ceil(E / math_elems_per_cycle)) / clock_freq_ghz``
  ns for E elements.
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
from typing import Any

import numpy as np

from kernbench.handles import HandleRef, HbmTensor, Ptr, RecvFuture, TensorHandle
from kernbench.pe.commands import (
    CompositeCmd,
    CopyCmd,
    DmaReadCmd,
    DmaWriteCmd,
    GemmCmd,
    IpcqRecvCmd,
    IpcqSendCmd,
    MathCmd,
    PeCpuOverheadCmd,
)
from kernbench.pe.commands import OpSpec as CmdOpSpec
from kernbench.pe.opkinds import OP_KINDS, op_kind
from kernbench.tl.context import current
from kernbench.tl.spec import OpSpec

__all__ = [
    "OpSpec",
    "add",
    "composite",
    "copy",
    "cycles",
    "div",
    "dot",
    "exp",
    "full",
    "load",
    "max",
    "maximum",
    "mul",
    "mul_bcast",
    "num_programs",
    "program_id",
    "recv_async",
    "ref",
    "rowmax",
    "rowsum",
    "scale",
    "send",
    "store",
    "sub",
    "sub_bcast",
    "sum",
    "wait",
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
    if dtype is not None and np.dtype(dtype) != p.dtype:
        raise ValueError(f"{p.describe()} has dtype {p.dtype}, not {np.dtype(dtype)}")


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
    p.write(_data(value).astype(p.dtype))
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


def _expect_handle(x: Any, what: str) -> None:
    if not isinstance(x, TensorHandle):
        raise TypeError(f"{what}: expected a TensorHandle, got {type(x).__name__}")
    if x.ref.space != "tcm":
        raise TypeError(f"{what}: {x.name} is an HBM tl.ref; only tl.composite can stream it")


def _out_dtype(*xs: TensorHandle) -> np.dtype:
    return np.result_type(*[x.dtype for x in xs if isinstance(x, TensorHandle)])


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
          gemm(2·m·k·n), store(the result's bytes at ``out_dtype``).
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


def _math(kind: str, inputs: tuple[TensorHandle, ...], extra: dict[str, Any] | None = None) -> TensorHandle:
    ctx = current()
    for i, x in enumerate(inputs):
        _expect_handle(x, f"tl.{kind} operand {i}")
    ctx.need(inputs)
    extra = extra or {}
    k = op_kind(kind)
    r = k.compute([_data(x) for x in inputs], extra).astype(_out_dtype(*inputs))
    out = ctx.new_handle(r.shape, r.dtype, kind, r)
    ctx.issue(MathCmd(kind, tuple(x.ref for x in inputs), out.ref, dict(extra)))
    return out


def add(a: TensorHandle, b: TensorHandle) -> TensorHandle:
    """``a + b`` elementwise on PE_MATH (numpy broadcasting).

    Shapes:
        ``a`` and ``b`` broadcast as in numpy; the result has the broadcast shape.
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(a.dtype, b.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``add``, 31 logical bytes (framing, opcode, two
          input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``a`` and ``b``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(a.nbytes + b.nbytes), math(E),
          store(the result's bytes), E the largest element count of ``a``, ``b`` and the result.
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not);
        ``ValueError`` if the shapes do not broadcast.
    Example:
        s = tl.add(tl.load(x), tl.load(y))
        assert s.shape == (64, 128) and s.dtype == np.float16
    """
    return _math("add", (a, b))


def sub(a: TensorHandle, b: TensorHandle) -> TensorHandle:
    """``a − b`` elementwise on PE_MATH (numpy broadcasting).

    Shapes:
        ``a`` and ``b`` broadcast as in numpy; the result has the broadcast shape.
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(a.dtype, b.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``sub``, 31 logical bytes (framing, opcode, two
          input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``a`` and ``b``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(a.nbytes + b.nbytes), math(E),
          store(the result's bytes), E the largest element count of ``a``, ``b`` and the result.
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not);
        ``ValueError`` if the shapes do not broadcast.
    Example:
        d = tl.sub(tl.load(x), tl.load(y))
        assert d.shape == (64, 128)
    """
    return _math("sub", (a, b))


def mul(a: TensorHandle, b: TensorHandle) -> TensorHandle:
    """``a × b`` elementwise on PE_MATH (numpy broadcasting).

    Shapes:
        ``a`` and ``b`` broadcast as in numpy; the result has the broadcast shape.
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(a.dtype, b.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``mul``, 31 logical bytes (framing, opcode, two
          input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``a`` and ``b``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(a.nbytes + b.nbytes), math(E),
          store(the result's bytes), E the largest element count of ``a``, ``b`` and the result.
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not);
        ``ValueError`` if the shapes do not broadcast.
    Example:
        p = tl.mul(tl.load(x), tl.load(y))
        assert p.shape == (64, 128)
    """
    return _math("mul", (a, b))


def div(a: TensorHandle, b: TensorHandle) -> TensorHandle:
    """``a / b`` elementwise on PE_MATH (numpy broadcasting).

    Shapes:
        ``a`` and ``b`` broadcast as in numpy; the result has the broadcast shape.
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(a.dtype, b.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``div``, 31 logical bytes (framing, opcode, two
          input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``a`` and ``b``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(a.nbytes + b.nbytes), math(E),
          store(the result's bytes), E the largest element count of ``a``, ``b`` and the result.
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not);
        ``ValueError`` if the shapes do not broadcast.
    Example:
        q = tl.div(tl.load(x), tl.load(y))  # y is positive
        assert q.shape == (64, 128)
    """
    return _math("div", (a, b))


def maximum(a: TensorHandle, b: TensorHandle) -> TensorHandle:
    """The larger of ``a`` and ``b``, elementwise on PE_MATH (numpy broadcasting).

    Shapes:
        ``a`` and ``b`` broadcast as in numpy; the result has the broadcast shape.
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(a.dtype, b.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``maximum``, 31 logical bytes (framing, opcode, two
          input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``a`` and ``b``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(a.nbytes + b.nbytes), math(E),
          store(the result's bytes), E the largest element count of ``a``, ``b`` and the result.
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not);
        ``ValueError`` if the shapes do not broadcast.
    Example:
        t = tl.load(x)
        relu = tl.maximum(t, tl.zeros((1, 128), np.float16))  # a row broadcast down the columns
        assert relu.shape == (64, 128) and relu.numpy().min() >= 0
    """
    return _math("maximum", (a, b))


def exp(x: TensorHandle) -> TensorHandle:
    """``e ** x`` elementwise on PE_MATH.

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype.
    Cost:
        - Command: ``MathCmd`` of op kind ``exp``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not).
    Example:
        e = tl.exp(tl.load(x))
        assert e.shape == (64, 128) and e.numpy().min() > 0
    """
    return _math("exp", (x,))


def max(x: TensorHandle, axis: int | None = None) -> TensorHandle:  # shadows the builtin: tl vocabulary
    """The largest element of ``x``, over all of it or along ``axis``, on PE_MATH.

    Write it as ``tl.max``: imported by name it would shadow Python's builtin ``max``.

    Shapes:
        With ``axis=None`` the result has shape ``()``; with an ``axis`` it keeps that axis
        as size 1 (``numpy.max(x, axis, keepdims=True)``).
    Dtypes:
        Computed in float32; the result has ``x``'s dtype.
    Cost:
        - Command: ``MathCmd`` of op kind ``max``, 23 logical bytes; 27 with an ``axis`` (an int
          scalar, 4).
        - PE_CPU: auto-wait on ``x``; dispatch(23 or 27), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(elements of ``x``),
          store(the result's bytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not); numpy's
        ``AxisError`` (a ``ValueError``) for an axis ``x`` does not have.
    Example:
        t = tl.load(x)
        assert tl.max(t).shape == ()  # over every element
        assert tl.max(t, axis=0).shape == (1, 128)  # per column, kept 2-D
    """
    return _math("max", (x,), {"axis": axis} if axis is not None else None)


def sum(x: TensorHandle, axis: int | None = None) -> TensorHandle:  # shadows the builtin: tl vocabulary
    """The sum of the elements of ``x``, over all of it or along ``axis``, on PE_MATH.

    Write it as ``tl.sum``: imported by name it would shadow Python's builtin ``sum``.

    Shapes:
        With ``axis=None`` the result has shape ``()``; with an ``axis`` it keeps that axis
        as size 1 (``numpy.sum(x, axis, keepdims=True)``).
    Dtypes:
        Computed in float32; the result has ``x``'s dtype.
    Cost:
        - Command: ``MathCmd`` of op kind ``sum``, 23 logical bytes; 27 with an ``axis`` (an int
          scalar, 4).
        - PE_CPU: auto-wait on ``x``; dispatch(23 or 27), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(elements of ``x``),
          store(the result's bytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not); numpy's
        ``AxisError`` (a ``ValueError``) for an axis ``x`` does not have.
    Example:
        t = tl.load(y)
        total = tl.sum(t)
        assert total.shape == () and total.dtype == np.float16
        assert tl.sum(t, axis=1).shape == (64, 1)
    """
    return _math("sum", (x,), {"axis": axis} if axis is not None else None)


def rowmax(x: TensorHandle) -> TensorHandle:
    """The maximum of each row (along the last axis) on PE_MATH.

    Shapes:
        (rows, cols) gives (rows, 1): the last axis kept as size 1.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype.
    Cost:
        - Command: ``MathCmd`` of op kind ``rowmax``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(elements of ``x``),
          store(the result's bytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not).
    Example:
        m = tl.rowmax(tl.load(x))
        assert m.shape == (64, 1)
    """
    return _math("rowmax", (x,))


def rowsum(x: TensorHandle) -> TensorHandle:
    """The sum of each row (along the last axis) on PE_MATH.

    Shapes:
        (rows, cols) gives (rows, 1): the last axis kept as size 1.
    Dtypes:
        Computed in float32; the result has ``x``'s dtype.
    Cost:
        - Command: ``MathCmd`` of op kind ``rowsum``, 23 logical bytes (framing, opcode, one input
          handle, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(elements of ``x``),
          store(the result's bytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not).
    Example:
        t = tl.exp(tl.load(x))
        probs = tl.div(t, tl.rowsum(t))  # a softmax, rows summing to 1
        assert probs.shape == (64, 128)
    """
    return _math("rowsum", (x,))


def mul_bcast(x: TensorHandle, col: TensorHandle) -> TensorHandle:
    """``x × col`` with ``col`` a (rows, 1) column applied along each row, on PE_MATH.

    The numerics are ``tl.mul``'s (numpy broadcasting, so any shapes that
    broadcast are accepted); the command names kind ``mul_bcast``, and the model
    times it as any PE_MATH op.

    Shapes:
        ``x`` (rows, cols) and ``col`` (rows, 1) give (rows, cols); in general ``x`` and ``col``
        broadcast as in numpy and the result has the broadcast shape.
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(x.dtype, col.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``mul_bcast``, 31 logical bytes (framing, opcode, two
          input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x`` and ``col``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes + col.nbytes), math(E),
          store(the result's bytes), E the largest element count of ``x``, ``col`` and the result.
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not);
        ``ValueError`` if the shapes do not broadcast.
    Example:
        t = tl.load(x)
        scaled = tl.mul_bcast(t, tl.rowmax(t))
        assert scaled.shape == (64, 128)
    """
    return _math("mul_bcast", (x, col))


def sub_bcast(x: TensorHandle, col: TensorHandle) -> TensorHandle:
    """``x − col`` with ``col`` a (rows, 1) column applied along each row, on PE_MATH.

    The numerics are ``tl.sub``'s (numpy broadcasting, so any shapes that
    broadcast are accepted); the command names kind ``sub_bcast``, and the model
    times it as any PE_MATH op.

    Shapes:
        ``x`` (rows, cols) and ``col`` (rows, 1) give (rows, cols); in general ``x`` and ``col``
        broadcast as in numpy and the result has the broadcast shape.
    Dtypes:
        Computed in float32; the result has ``numpy.result_type(x.dtype, col.dtype)``.
    Cost:
        - Command: ``MathCmd`` of op kind ``sub_bcast``, 31 logical bytes (framing, opcode, two
          input handles, out handle, two tuple lengths).
        - PE_CPU: auto-wait on ``x`` and ``col``; dispatch(31), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes + col.nbytes), math(E),
          store(the result's bytes), E the largest element count of ``x``, ``col`` and the result.
    Errors:
        ``TypeError`` if an operand is not a TCM handle (a ``tl.ref`` is not);
        ``ValueError`` if the shapes do not broadcast.
    Example:
        t = tl.load(x)
        shifted = tl.sub_bcast(t, tl.rowmax(t))  # the softmax shift: every row's max is 0
        assert shifted.shape == (64, 128) and float(tl.max(shifted).numpy()) == 0.0
    """
    return _math("sub_bcast", (x, col))


def scale(x: TensorHandle, factor: float) -> TensorHandle:
    """``x × factor`` elementwise on PE_MATH, ``factor`` a Python number.

    Shapes:
        The result has ``x``'s shape.
    Dtypes:
        Computed in float32 (``factor`` as float32); the result has ``x``'s dtype.
    Cost:
        - Command: ``MathCmd`` of op kind ``scale``, 27 logical bytes (the unary 23 and
          ``factor``, a float scalar, 4).
        - PE_CPU: auto-wait on ``x``; dispatch(27), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(elements of ``x``),
          store(x.nbytes).
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle (a ``tl.ref`` is not); ``ValueError`` or
        ``TypeError`` if ``factor`` is not a number (``float(factor)`` fails).
    Example:
        half = tl.scale(tl.load(x), 0.5)
        assert half.shape == (64, 128) and half.dtype == np.float16
    """
    return _math("scale", (x,), {"factor": float(factor)})


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
        and int(np.prod(dims, dtype=object)) * np.dtype(dtype).itemsize > ctx.scratch_bytes
    ):
        ctx.new_handle(dims, np.dtype(dtype), f"full {value}", None)  # (raises ScratchError before any array is built)
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
          axis's length. Each op streams along one axis, cut into N near-equal slices: a
          gemm its K (step s reads A's columns ``[k0, k1)`` — in a row-major A one run per
          row, a row pitch apart — and B's rows ``[k0, k1)``), an elementwise op its
          elements, a row op or reduction its rows; a tensor without the axis (a
          broadcast operand, a gemm's C, a reduction's result) is read whole at the first
          step and stored and written whole after the last. Per step: a DMA read of every
          ``tl.ref`` operand's piece at its real addresses (at most 2 steps ahead of the
          fetch); fetch(bytes of the step's operand pieces); each op with work in the step,
          in order, on its engine, gemm(2 · m · n · (k1 − k0)) or math(its elements or
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
        return CmdOpSpec(op.kind, operands, None, op.scope, dict(op.extra))
    if not isinstance(out, TensorHandle):
        raise TypeError(f"OpSpec {op.kind}: out must be a handle, got {out!r}")
    return CmdOpSpec(op.kind, operands, out.ref, op.scope, dict(op.extra))


def _data(h: TensorHandle) -> np.ndarray:
    """A TCM handle's value: there once ``ctx.need`` has returned (loads and receives landed)."""
    assert h.data is not None, f"{h.name} has no value yet"
    return h.data


def _ref_ptr(h: TensorHandle) -> Ptr:
    """The HBM region of a ``tl.ref`` handle."""
    assert h.ptr is not None, f"{h.name} is not an HBM tl.ref"
    return h.ptr


def _value(h: TensorHandle) -> np.ndarray:
    """An operand's value: a TCM handle's data, or a ``tl.ref``'s region as it is now (read-only, not copied)."""
    return _ref_ptr(h).values() if h.ref.space == "hbm" else _data(h)


def _run_spec(op: OpSpec) -> None:
    """An op's numerics into its ``out`` (its kind and handles checked by :func:`_spec_refs`)."""
    r = OP_KINDS[op.kind].compute([_value(h) for h in op.operands.values()], op.extra)
    out = op.out
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
    if ref.space == "hbm":
        _ref_ptr(out).write(np.asarray(r).astype(out.dtype))
    else:
        out.data = np.array(r, dtype=out.dtype)


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


def send(dst: int, handle: TensorHandle) -> None:
    """Send a TCM handle's value to program ``dst`` of this launch through PE_IPCQ.

    The value is copied when sent. It lands in the first receive that program
    ``dst`` posted from this program (``tl.recv_async(src)``) that no earlier
    message took, in send order; a message no receive takes ends the run with
    ``LostMessageError``.

    Shapes:
        Any; the receive's ``shape`` must equal it.
    Dtypes:
        Any; the receiver casts it to the receive's ``dtype``.
    Cost:
        - Command: ``IpcqSendCmd``, 20 logical bytes (framing, destination, handle, size).
        - PE_CPU: auto-wait on ``handle``; dispatch(20), single-op FIXED; it does not wait
          for the delivery.
        - Engines: sched; once ``handle`` is ready, IPCQ: ``handle.nbytes`` to the PE of
          program ``dst``.
    Errors:
        ``TypeError`` if ``handle`` is not a TCM handle; ``ValueError`` if ``dst`` is not
        a program of this launch (0 … ``tl.num_programs() − 1``).
    Example:
        if tl.program_id() == 0:
            tl.send(1, tl.load(x))
        else:
            got = tl.wait(tl.recv_async(0, (64, 128), np.float16))
            assert got.shape == (64, 128)
    """
    ctx = current()
    _expect_handle(handle, "tl.send")
    ctx.need((handle,))
    if not 0 <= dst < ctx.num_programs:
        raise ValueError(f"tl.send: destination {dst} is not a program of this launch (0..{ctx.num_programs - 1})")
    ctx.issue(IpcqSendCmd(dst, handle.ref, handle.nbytes, np.array(handle.data, copy=True)))


def recv_async(src: int, shape: Sequence[int], dtype: Any = np.float32) -> RecvFuture:
    """Post a receive of one message from program ``src``; returns a ``RecvFuture`` at once.

    ``tl.wait(future)`` blocks until the message has landed and returns its
    handle; ``future.handle`` used by an op auto-waits the same way.

    Shapes:
        ``shape``: the message's shape (the sent value's).
    Dtypes:
        ``dtype`` (float32 by default): the value is cast to it.
    Cost:
        - Command: ``IpcqRecvCmd``, 20 logical bytes (framing, source, handle, size).
        - PE_CPU: dispatch(20), single-op FIXED; then the simulation catches up with
          PE_CPU's clock, so the receive is posted when its dispatch ends.
        - Engines: sched only; the data lands when the sender's IPCQ transfer arrives (at
          once if it has arrived already).
        - Scratch: its bytes, from now on.
    Errors:
        ``ValueError`` if ``src`` is not a program of this launch; ``ScratchError`` if it
        does not fit.
    Example:
        if tl.program_id() == 1:
            fut = tl.recv_async(0, (64, 1))
            tl.store(out[:, 0:1], tl.scale(fut.handle, 2.0))  # auto-waits for the message
        else:
            tl.send(1, tl.rowsum(tl.load(x)))
    """
    ctx = current()
    if not 0 <= src < ctx.num_programs:
        raise ValueError(f"tl.recv_async: source {src} is not a program of this launch")
    h = ctx.new_handle(tuple(shape), dtype, f"recv from {src}", None)
    ctx.recv_posted(h)
    ctx.issue(IpcqRecvCmd(src, h.ref, h.nbytes))
    return RecvFuture(h, src)


def wait(fut: RecvFuture | TensorHandle) -> TensorHandle:
    """Block until a receive (a ``RecvFuture`` or its handle) or a lazy load has landed; returns the handle.

    Shapes:
        The handle's.
    Dtypes:
        The handle's.
    Cost:
        - Command: none.
        - PE_CPU: if the receive or load has not been waited for yet, the simulation
          catches up with PE_CPU's clock and PE_CPU stalls until the data has landed
          (a *recv wait* for a receive, an *explicit wait* for a load); otherwise nothing.
    Example:
        t = tl.wait(tl.load(x))  # a blocking load
        assert t.shape == (64, 128)
    """
    ctx = current()
    h = fut.handle if isinstance(fut, RecvFuture) else fut
    ctx.wait_explicit(h)
    return h
