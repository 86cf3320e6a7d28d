"""Indexing: pick by value — top-k and argmax on PE_MATH, rows gathered from or scattered to HBM.

``tl.topk`` and ``tl.argmax`` are PE_MATH ops (op kinds ``topk``, ``topk_indices``,
``argmax``: usable in ``tl.composite`` too). ``tl.gather`` and ``tl.scatter`` move
whole rows between HBM and TCM, one DMA per row at the row's real address (never
one block), in index order on the PE's read (write) channel. Their addresses come
from the index's *values*, so they wait for the index: PE_CPU auto-waits on an index
handle whose load has not landed (ADR-0062), and the DMAs start once the index is
ready. With ``Runtime(data=False)`` tiles loaded from HBM are zeros, so an index
computed on the PE picks row 0 every time: a kernel that wants data-independent
timing passes its indices from the host (a Python sequence or numpy integer array),
which the command then carries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kernbench.handles import HandleRef, HbmTensor, Ptr, TensorHandle
from kernbench.pe.commands import GatherCmd, MathCmd, MathPairCmd, ScatterCmd
from kernbench.pe.opkinds import OP_KINDS
from kernbench.tl.context import current
from kernbench.tl.issue import data, expect_handle

__all__ = ["argmax", "gather", "scatter", "topk"]

Index = TensorHandle | Sequence[int] | np.ndarray


def _rows_operand(x: TensorHandle, what: str) -> None:
    expect_handle(x, what)
    if len(x.shape) < 2:
        raise ValueError(f"{what}: {x.name} {x.shape} has no rows; it takes a (rows, cols) handle")


def topk(x: TensorHandle, k: int) -> tuple[TensorHandle, TensorHandle]:
    """The ``k`` largest values of each row of ``x`` and their columns, largest first, in one PE_MATH op.

    Ties go to the lower column. Op kinds ``topk`` (the values) and ``topk_indices``
    (the columns, as numbers) do the same in a ``tl.composite``, one result each.

    Shapes:
        ``x`` (rows, cols) (or more axes: along the last); both results (rows, k).
    Dtypes:
        Compared in float32; values in ``x``'s dtype, indices int32.
    Cost:
        - Command: ``MathPairCmd`` (op kind ``topk``), 35 logical bytes (framing, opcode,
          an input tuple of one handle, the values handle, the extras' tuple with k, the
          indices handle).
        - PE_CPU: auto-wait on ``x``; dispatch(35), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(E × ceil(log2(k + 1))),
          store(values bytes + indices bytes), E the elements of ``x``: every element is
          inserted into a sorted k-entry buffer of its row with a binary search,
          ceil(log2(k + 1)) compares (an assumed rule; k = 1 costs as ``tl.argmax``).
        - Scratch: both results' bytes, from now on.
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle; ``ValueError`` if it has fewer than 2 axes or
        ``k`` is not an integer in 1 … cols.
    Example:
        t = tl.load(x)
        vals, idx = tl.topk(t, 2)  # 4+1+1+8+8+1+4+8 = 35 logical bytes
        assert vals.shape == idx.shape == (64, 2) and idx.dtype == np.int32
        assert np.array_equal(vals.numpy(), np.take_along_axis(t.numpy(), idx.numpy(), axis=1))
    """
    ctx = current()
    _rows_operand(x, "tl.topk x")
    cols = x.shape[-1]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= int(k) <= cols:
        raise ValueError(f"tl.topk: k must be an integer in 1..{cols} (the rows of {x.name} {x.shape} are {cols} long), got {k!r}")
    ctx.need((x,))
    extra = {"k": int(k)}
    d = data(x)
    vals = OP_KINDS["topk"].compute([d], extra).astype(x.dtype)
    cols_of = OP_KINDS["topk_indices"].compute([d], extra).astype(np.int32)
    v = ctx.new_handle(vals.shape, vals.dtype, f"topk {k}", vals)
    i = ctx.new_handle(cols_of.shape, np.int32, f"topk {k} indices", cols_of)
    ctx.issue(MathPairCmd("topk", (x.ref,), v.ref, dict(extra), i.ref))
    return v, i


def argmax(x: TensorHandle) -> TensorHandle:
    """The column of each row's largest value of ``x`` (the first of equals), on PE_MATH.

    Shapes:
        ``x`` (rows, cols) (or more axes: along the last); the result (rows, 1).
    Dtypes:
        Compared in float32; the result is int32.
    Cost:
        - Command: ``MathCmd`` of op kind ``argmax``, 23 logical bytes (framing, opcode, an
          input tuple of one handle, out handle, an empty extras tuple).
        - PE_CPU: auto-wait on ``x``; dispatch(23), single-op FIXED.
        - Engines: single-op compute on PE_MATH: fetch(x.nbytes), math(E), store(rows × 4),
          E the elements of ``x`` (one compare each, as ``tl.rowmax``).
        - Scratch: rows × 4 bytes, from now on.
    Errors:
        ``TypeError`` if ``x`` is not a TCM handle; ``ValueError`` if it has fewer than 2 axes.
    Example:
        t = tl.load(x)
        best = tl.argmax(t)
        assert best.shape == (64, 1) and best.dtype == np.int32
        assert np.array_equal(best.numpy()[:, 0], np.argmax(t.numpy(), axis=1))
    """
    ctx = current()
    _rows_operand(x, "tl.argmax x")
    ctx.need((x,))
    r = OP_KINDS["argmax"].compute([data(x)], {}).astype(np.int32)
    out = ctx.new_handle(r.shape, np.int32, "argmax", r)
    ctx.issue(MathCmd("argmax", (x.ref,), out.ref, {}))
    return out


# --- rows between HBM and TCM ------------------------------------------------------------


def _region(x: Any, fn: str, what: str) -> Ptr:
    """``x`` as an HBM region: an ``HbmTensor``, a ``Ptr`` or a ``tl.ref``."""
    if isinstance(x, HbmTensor):
        return x.whole()
    if isinstance(x, Ptr):
        return x
    if isinstance(x, TensorHandle) and x.ptr is not None:
        return x.ptr
    raise TypeError(f"tl.{fn} {what}: expected an HBM tensor, a region of one or a tl.ref, got {x!r}")


def _indices(idx: Index, rows: int, fn: str, where: str) -> tuple[list[int], HandleRef | None, tuple[int, ...]]:
    """The row numbers ``idx`` names (its values in C order), checked against ``rows``; the index
    handle's ref (None for host-side indices) and the host-side indices (empty for a handle)."""
    if isinstance(idx, TensorHandle):
        expect_handle(idx, f"tl.{fn} idx")
        current().need((idx,))
        values = np.asarray(data(idx)).reshape(-1)
        ref: HandleRef | None = idx.ref
        source = f"{idx.name}"
    else:
        values = np.asarray(idx)
        if values.dtype == np.bool_ or (values.size and not np.issubdtype(values.dtype, np.number)):
            raise TypeError(f"tl.{fn} idx: expected a TCM handle or integers, got {idx!r}")
        values = values.reshape(-1)
        ref = None
        source = "the host-side index"
    if values.size == 0:
        raise ValueError(f"tl.{fn}: {source} names no row")
    if not np.issubdtype(values.dtype, np.integer):
        whole = np.isfinite(values) & (values == np.floor(values))
        if not whole.all():
            pos = int(np.argmin(whole))
            raise ValueError(f"tl.{fn}: {source} holds {values[pos].item()!r} at position {pos}, not a row number")
    out = [int(v) for v in values.tolist()]
    for pos, r in enumerate(out):
        if not 0 <= r < rows:
            raise IndexError(f"tl.{fn}: row {r} (position {pos} of {source}) is out of range for {where}, rows 0..{rows - 1}")
    return out, ref, (tuple(out) if ref is None else ())


def gather(src: HbmTensor | Ptr | TensorHandle, idx: Index) -> TensorHandle:
    """Rows of an HBM (or SRAM) tensor picked by ``idx``, read into a new TCM handle: one DMA per row at the row's real address.

    Row ``r`` of the result is row ``idx[r]`` of ``src`` (``idx``'s values in C order).
    Like ``tl.load`` it returns at once; the first op that consumes the result waits
    for its last row (auto-wait). ``idx`` is a TCM handle (integer values, e.g. from
    ``tl.topk`` or ``tl.argmax``) or host-side integers (a sequence or numpy array):
    under ``Runtime(data=False)`` a handle's values are zeros (row 0 every time), so a
    kernel whose timing must not depend on data passes host-side indices.

    Shapes:
        ``src`` (rows, …): an ``HbmTensor``, a region of one or a ``tl.ref``; the result
        (n, …), n the number of indices.
    Dtypes:
        ``src``'s; an index handle's values must be whole numbers (any dtype).
    Cost:
        - Command: ``GatherCmd``, 32 logical bytes with an index handle (framing, the source,
          index and result handles, the size); with n host-side indices 25 + 4n (the index a
          tuple of n scalars).
        - PE_CPU: auto-wait on an index handle (its values decide the addresses); dispatch(B),
          single-op FIXED; it does not wait for the rows.
        - Engines: sched; once the index is ready, n DMA reads, one per row in index order,
          each of the row's bytes at its real address (its bursts on the channels they
          select), one after another on the PE's read channel; the result is ready when the
          last one lands.
        - Scratch: n rows' bytes, from now on.
    Errors:
        ``TypeError`` if ``src`` is not an HBM tensor, region or ``tl.ref``, or ``idx`` is neither a
        TCM handle nor integers; ``IndexError`` naming the row, its position and ``src`` for a row
        out of range; ``ValueError`` for an index that is not a whole number or names no row.
    Example:
        rows = tl.gather(x, [5, 0, 63])  # 25 + 4 × 3 = 37 logical bytes
        assert rows.shape == (3, 128)
        best = tl.argmax(tl.load(y[0:4, 0:64]))  # (4, 1) int32, values 0..63
        picked = tl.gather(x, best)  # waits for best, then 4 row reads
        assert np.array_equal(picked.numpy(), tl.load(x).numpy()[best.numpy()[:, 0]])
    """
    ctx = current()
    p = _region(src, "gather", "src")
    if not p.shape:
        raise ValueError(f"tl.gather: {p.describe()} has no rows")
    rows, ref, host = _indices(idx, p.shape[0], "gather", f"{p.describe()} {p.shape}")
    row_ptrs = [p[r] for r in rows]
    value = np.stack([rp.read() for rp in row_ptrs])
    h = ctx.new_handle(value.shape, value.dtype, f"gather {p.describe()}", value)
    ctx.load_issued(h.ref)
    ctx.issue(GatherCmd(ref, host, tuple(rp.region for rp in row_ptrs), h.nbytes, p, h.ref))
    return h


def scatter(dst: HbmTensor | Ptr | TensorHandle, idx: Index, value: TensorHandle) -> None:
    """Write the rows of a TCM handle to the rows of an HBM (or SRAM) tensor that ``idx`` names: one DMA per row at the row's real address.

    Row ``r`` of ``value`` goes to row ``idx[r]`` of ``dst``, cast to its dtype; when two
    indices name one row, the later one's value stays (both are written, in order). The
    rows hold the new values at once (numerics); the writes are timed once ``value`` and
    the index are ready, and nothing waits for them (as ``tl.store``).

    Shapes:
        ``dst`` (rows, …); ``value`` (n, …) with ``dst``'s row shape, n the number of indices.
    Dtypes:
        ``value`` any, cast to ``dst``'s; an index handle's values whole numbers.
    Cost:
        - Command: ``ScatterCmd``, 32 logical bytes with an index handle (framing, the value,
          index and destination handles, the size); with n host-side indices 25 + 4n.
        - PE_CPU: auto-wait on ``value`` and an index handle; dispatch(B), single-op FIXED.
        - Engines: sched; once ``value`` and the index are ready, n DMA writes, one per row in
          index order, each of the row's bytes at its real address, one after another on the
          PE's write channel.
    Errors:
        ``TypeError`` for a ``dst`` that is not an HBM tensor, region or ``tl.ref``, a ``value``
        that is not a TCM handle, or an ``idx`` neither a handle nor integers; ``ValueError`` if
        ``value``'s shape is not (n, …) with ``dst``'s rows; ``IndexError`` naming a row out of range.
    Example:
        t = tl.load(x[0:2, :])
        tl.scatter(out, [7, 3], t)  # 25 + 4 × 2 = 33 logical bytes
        tl.scatter(out, tl.argmax(tl.load(y[0:2, 0:64])), t)  # rows chosen on the PE
    """
    ctx = current()
    p = _region(dst, "scatter", "dst")
    expect_handle(value, "tl.scatter value")
    ctx.need((value,))
    rows, ref, host = _indices(idx, p.shape[0] if p.shape else 0, "scatter", f"{p.describe()} {p.shape}")
    want = (len(rows), *p.shape[1:])
    if tuple(value.shape) != want:
        raise ValueError(
            f"tl.scatter: value {value.name} {value.shape} does not match {len(rows)} rows of {p.describe()} {p.shape}: {want}"
        )
    v = data(value).astype(p.dtype)
    row_ptrs = [p[r] for r in rows]
    for r, rp in enumerate(row_ptrs):
        rp.write(v[r])
    ctx.issue(ScatterCmd(ref, host, tuple(rp.region for rp in row_ptrs), value.nbytes, value.ref, p))
