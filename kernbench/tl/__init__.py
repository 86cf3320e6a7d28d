"""``tl``: the tile-level kernel API.

A kernel is a plain Python function of its arguments that calls these
functions. Every call computes real numerics with numpy at once (tensors are
stored as float16 unless deployed otherwise; arithmetic runs in float32 and
``tl.dot`` accumulates in float32) and issues one PE command whose timing the
simulation models. Numerics never depend on timing.

``tl.load`` is lazy (ADR-0062): it issues the DMA and returns at once; the
first op that consumes the handle waits for it.
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
    """This PE's index within the launch (0 … num_programs − 1)."""
    return current().program_id


def num_programs() -> int:
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
    """Issue a DMA read of ``ptr`` into TCM; returns at once (lazy, ADR-0062)."""
    ctx = current()
    p = _ptr(ptr)
    _check_geometry(p, shape, dtype)
    h = ctx.new_handle(p.shape, p.dtype, f"load {p.describe()}", p.read())
    ctx.load_issued(h.ref)
    ctx.issue(DmaReadCmd(p, h.ref, p.nbytes))
    return h


def store(ptr: Ptr | HbmTensor, value: TensorHandle) -> None:
    """Write a handle to HBM (cast to the destination's dtype)."""
    ctx = current()
    p = _ptr(ptr)
    _expect_handle(value, "tl.store value")
    ctx.need((value,))
    if tuple(value.shape) != p.shape:
        raise ValueError(f"tl.store: value shape {value.shape} does not match {p.describe()} {p.shape}")
    p.write(_data(value).astype(p.dtype))
    ctx.issue(DmaWriteCmd(value.ref, p, p.nbytes))


def ref(ptr: Ptr | HbmTensor, shape: Sequence[int] | None = None, dtype: Any = None) -> TensorHandle:
    """An HBM-resident composite operand, streamed per tile by PE_SCHEDULER."""
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
    """``a @ b`` on PE_GEMM with float32 accumulation."""
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
    return _math("add", (a, b))


def sub(a: TensorHandle, b: TensorHandle) -> TensorHandle:
    return _math("sub", (a, b))


def mul(a: TensorHandle, b: TensorHandle) -> TensorHandle:
    return _math("mul", (a, b))


def div(a: TensorHandle, b: TensorHandle) -> TensorHandle:
    return _math("div", (a, b))


def maximum(a: TensorHandle, b: TensorHandle) -> TensorHandle:
    return _math("maximum", (a, b))


def exp(x: TensorHandle) -> TensorHandle:
    return _math("exp", (x,))


def max(x: TensorHandle, axis: int | None = None) -> TensorHandle:  # shadows the builtin: tl vocabulary
    return _math("max", (x,), {"axis": axis} if axis is not None else None)


def sum(x: TensorHandle, axis: int | None = None) -> TensorHandle:  # shadows the builtin: tl vocabulary
    return _math("sum", (x,), {"axis": axis} if axis is not None else None)


def rowmax(x: TensorHandle) -> TensorHandle:
    """Row-wise max, shape (rows, 1)."""
    return _math("rowmax", (x,))


def rowsum(x: TensorHandle) -> TensorHandle:
    """Row-wise sum, shape (rows, 1)."""
    return _math("rowsum", (x,))


def mul_bcast(x: TensorHandle, col: TensorHandle) -> TensorHandle:
    """``x * col`` with a (rows, 1) column broadcast along rows."""
    return _math("mul_bcast", (x, col))


def sub_bcast(x: TensorHandle, col: TensorHandle) -> TensorHandle:
    return _math("sub_bcast", (x, col))


def scale(x: TensorHandle, factor: float) -> TensorHandle:
    return _math("scale", (x,), {"factor": float(factor)})


def copy(x: TensorHandle) -> TensorHandle:
    """A TCM-to-TCM copy through PE_FETCH_STORE."""
    ctx = current()
    _expect_handle(x, "tl.copy")
    ctx.need((x,))
    out = ctx.new_handle(x.shape, x.dtype, "copy", np.array(x.data, copy=True))
    ctx.issue(CopyCmd(x.ref, out.ref, x.nbytes))
    return out


def full(shape: Sequence[int], value: float, dtype: Any = np.float32) -> TensorHandle:
    """A TCM tensor filled with ``value`` (set up by PE_CPU: no command)."""
    ctx = current()
    data = np.full(tuple(shape), value, dtype=dtype)
    return ctx.new_handle(data.shape, data.dtype, f"full {value}", data)


def zeros(shape: Sequence[int], dtype: Any = np.float32) -> TensorHandle:
    return full(shape, 0.0, dtype)


def composite(ops: Iterable[OpSpec], rw_handles: Iterable[TensorHandle] = ()) -> None:
    """Issue one CompositeCmd: the ops run per tile on the engines, streamed by PE_SCHEDULER.

    Operands may be TCM handles or ``tl.ref`` HBM operands; each op's ``out``
    is a TCM handle (from ``tl.zeros``/``tl.full`` or an earlier result) or a
    ``tl.ref`` (written back per tile by DMA_WRITE) and is overwritten with
    the op's result. ``extra`` may carry
    ``transpose_b`` for a GEMM and ``accumulate=True`` to add into ``out``.
    The descriptor is checked against the D7 cap before anything is issued.
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
    """Spend exactly ``n`` PE_CPU cycles (no dispatch charge, ADR-0064 D5); 0 <= n <= 1e12."""
    ctx = current()
    if isinstance(n, bool) or not isinstance(n, (int, float, np.integer, np.floating)) or not 0 <= n <= MAX_CYCLES:
        raise ValueError(f"tl.cycles: n must be a number of cycles in 0..{MAX_CYCLES:g}, got {n!r}")
    ctx.issue(PeCpuOverheadCmd(float(n)))


def send(dst: int, handle: TensorHandle) -> None:
    """Send a handle's value to program ``dst`` through PE_IPCQ."""
    ctx = current()
    _expect_handle(handle, "tl.send")
    ctx.need((handle,))
    if not 0 <= dst < ctx.num_programs:
        raise ValueError(f"tl.send: destination {dst} is not a program of this launch (0..{ctx.num_programs - 1})")
    ctx.issue(IpcqSendCmd(dst, handle.ref, handle.nbytes, np.array(handle.data, copy=True)))


def recv_async(src: int, shape: Sequence[int], dtype: Any = np.float32) -> RecvFuture:
    """Post a receive from program ``src``; returns a future (``tl.wait`` it)."""
    ctx = current()
    if not 0 <= src < ctx.num_programs:
        raise ValueError(f"tl.recv_async: source {src} is not a program of this launch")
    h = ctx.new_handle(tuple(shape), dtype, f"recv from {src}", None)
    ctx.recv_posted(h)
    ctx.issue(IpcqRecvCmd(src, h.ref, h.nbytes))
    return RecvFuture(h, src)


def wait(fut: RecvFuture | TensorHandle) -> TensorHandle:
    """Block until a receive (or a lazy load) has landed; returns its handle."""
    ctx = current()
    h = fut.handle if isinstance(fut, RecvFuture) else fut
    ctx.wait_explicit(h)
    return h
