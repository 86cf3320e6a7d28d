"""Views: another shape of the same tensor — a block of it, a reshape, a transpose.

A view is either *address arithmetic* or a *copy*, and costs what it is:

- A TCM view whose elements are one contiguous run of its base's (rows of a
  row-major tile, a reshape, a transpose that only moves size-1 axes) is a
  :class:`TensorView`: no command, no time, no scratch of its own. It shares
  its base's handle id, so it is ready when the base is (an engine that reads
  it waits for what produced the base; a kernel that consumes it before the
  base's lazy load has landed auto-waits, ADR-0062), and it keeps the base
  alive (the base's scratch is held until both are gone). Writing it (a
  composite ``out``) writes the base's elements.
- A TCM view whose elements are not one run (a column block, a strided slice,
  a transpose) is charged as the copy it is: one ``CopyCmd`` through
  PE_FETCH_STORE, like ``tl.copy`` of its bytes, into a new handle with its
  own scratch.
- A view of an HBM region (``HbmTensor``, ``Ptr``) or of a ``tl.ref`` is a
  region of the same bytes (:class:`kernbench.handles.Ptr`): it moves nothing
  itself; what later moves it (``tl.load``, ``tl.store``, a composite) moves
  the bursts at its elements' real addresses, a strided DMA when the view is
  strided.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, overload

import numpy as np

from kernbench.handles import HandleRef, HbmTensor, Ptr, TensorHandle, ViewOps, check_index
from kernbench.pe.commands import CopyCmd
from kernbench.tl.context import current

__all__ = ["TensorView", "reshape", "transpose", "view"]


class TensorView(TensorHandle):
    """A free view of a TCM handle: ``shape`` elements from element ``start`` of its base, in C order.

    ``base`` is the handle that holds the scratch (never itself a view); the view's
    ``ref`` has the base's id (so readiness and auto-wait are the base's) and its own
    shape, so an op that reads it fetches the view's bytes only."""

    __slots__ = ("base", "start")

    def __init__(self, base: TensorHandle, start: int, shape: tuple[int, ...], label: str) -> None:
        # (TensorHandle.__init__ is not called: a view holds no scratch and its data is the base's)
        self.ref = HandleRef(base.ref.id, label, shape, base.ref.dtype, "tcm")
        self.ptr = None
        self.owner = base.owner
        self.base = base
        self.start = start

    def __del__(self) -> None:
        pass  # its scratch is its base's, freed when the base goes

    @property
    def data(self) -> np.ndarray | None:
        d = self.base.data
        if d is None:  # a receive not landed yet
            return None
        n = math.prod(self.ref.shape)
        return np.ravel(d)[self.start : self.start + n].reshape(self.ref.shape)

    @data.setter
    def data(self, value: np.ndarray | None) -> None:
        assert value is not None, f"{self.name}: a view's value cannot be unset"
        base = self.base
        d = base.data
        assert d is not None, f"{base.name} has no value yet"
        if not (d.flags.c_contiguous and d.flags.writeable):
            d = np.array(d, order="C", copy=True)
            base.data = d
        n = math.prod(self.ref.shape)
        d.reshape(-1)[self.start : self.start + n] = np.asarray(value).reshape(-1)


def _root(x: TensorHandle) -> tuple[TensorHandle, int]:
    """The handle holding ``x``'s scratch, and ``x``'s first element in it."""
    if isinstance(x, TensorView):
        return x.base, x.start
    return x, 0


def describe_index(index: tuple[Any, ...]) -> str:
    parts = []
    for s in index:
        if isinstance(s, slice):
            a = "" if s.start is None else s.start
            b = "" if s.stop is None else s.stop
            step = "" if s.step in (None, 1) else f":{s.step}"
            parts.append(f"{a}:{b}{step}")
        else:
            parts.append(str(int(s)))
    return f"[{','.join(parts)}]"


def _contiguous_start(shape: tuple[int, ...], index: tuple[Any, ...]) -> int | None:
    """The first element of ``x[index]`` in a C-contiguous ``x`` of ``shape`` when its elements
    are one run there (then the view is address arithmetic), else None. ``index`` is checked."""
    sel = []  # per axis: (start, count, step, size)
    for axis, n in enumerate(shape):
        x = index[axis] if axis < len(index) else slice(None)
        if isinstance(x, slice):
            start, stop, step = x.indices(n)
            sel.append((start, len(range(start, stop, step)), step, n))
        else:
            sel.append((int(x) % n, 1, 1, n))
    j = len(sel) - 1
    while j >= 0 and sel[j][0] == 0 and sel[j][1] == sel[j][3] and sel[j][2] == 1:
        j -= 1  # whole trailing axes
    if j >= 0 and sel[j][1] > 1 and sel[j][2] != 1:
        return None  # a step within the run
    if any(sel[k][1] != 1 for k in range(j)):
        return None  # more than one element of an outer axis: runs a pitch apart
    first, pitch = 0, 1
    for start, _, _, n in reversed(sel):
        first += start * pitch
        pitch *= n
    return first


def _block_shape(shape: tuple[int, ...], index: tuple[Any, ...]) -> tuple[int, ...]:
    """The shape of ``x[index]`` (``index`` checked): a slice's length per sliced axis, an integer's axis dropped."""
    out = []
    for axis, n in enumerate(shape):
        x = index[axis] if axis < len(index) else slice(None)
        if isinstance(x, slice):
            out.append(len(range(*x.indices(n))))
    return tuple(out)


def _copy_of(x: TensorHandle, label: str, value: np.ndarray) -> TensorHandle:
    """A data-moving view: ``value`` (x's elements, rearranged) into new scratch, charged as a
    ``CopyCmd`` of its bytes through PE_FETCH_STORE that waits for ``x``."""
    ctx = current()
    out = ctx.new_handle(value.shape, value.dtype, f"copy {label}", value)
    src = HandleRef(x.ref.id, label, tuple(value.shape), x.ref.dtype, "tcm")
    ctx.issue(CopyCmd(src, out.ref, out.nbytes))
    return out


def _ref_view(x: TensorHandle, p: Ptr) -> TensorHandle:
    """A ``tl.ref`` of region ``p`` (a view of ``x``'s region)."""
    return current().new_handle(p.shape, p.dtype, f"ref {p.describe()}", None, space="hbm", ptr=p)


def _ptr_of(x: TensorHandle) -> Ptr:
    assert x.ptr is not None, f"{x.name} is not an HBM tl.ref"
    return x.ptr


@overload
def view(x: TensorHandle, index: Any) -> TensorHandle: ...


@overload
def view(x: HbmTensor | Ptr, index: Any) -> Ptr: ...


def view(x: TensorHandle | HbmTensor | Ptr, index: Any) -> TensorHandle | Ptr:
    """``x[index]``: a block of a TCM handle, of a ``tl.ref`` or of an HBM region — free when its elements are one run, a copy otherwise.

    ``h[a:b, c:d]`` on a handle is this function. On a TCM handle it is free when
    the block's elements are one contiguous run of the handle's (whole rows of a
    2-D tile: ``h[0:16]``, ``h[3]``, ``h[2:4, :]``; one row's columns: ``h[5, 8:24]``):
    a ``TensorView`` sharing the handle's scratch and readiness. Otherwise (a column
    block ``h[:, 0:32]``, a step ``h[::2]``) the block is copied into new scratch.
    On a ``tl.ref``, an ``HbmTensor`` or a ``Ptr`` it is the region of the same bytes
    (``x[0:32, :]`` on a tensor has always been one).

    Shapes:
        ``index``: integers and slices (steps allowed), at most one per axis; an integer
        drops its axis, as in numpy. The result has the block's shape.
    Dtypes:
        ``x``'s.
    Cost:
        - Command: none for a contiguous block of a TCM handle, or any block of a ``tl.ref``
          or HBM region. Otherwise ``CopyCmd``, 24 logical bytes (framing, two handles, the
          size; the view's geometry is in the handle table, ADR-0064 D2).
        - A free view: no time; no scratch (its base's is held while the view lives); an op
          that reads it fetches the view's bytes only, once the base is ready.
        - A copy: PE_CPU auto-waits on ``x``; dispatch(24), single-op FIXED; sched, then
          once ``x`` is ready fetch(B) and store(B), B the block's bytes (as ``tl.copy``).
          Scratch: B, from now on.
        - An HBM view moves nothing; a ``tl.load`` of it reads the bursts its elements lie
          in (a strided DMA for a column block), a ``tl.store`` writes them.
    Errors:
        ``IndexError`` naming ``x`` and its shape for an index or slice past the end, an empty
        block, or an index that is not an integer or slice; ``TypeError`` for an ``x`` that is
        not a handle or HBM region.
    Example:
        t = tl.load(x)
        top = t[0:16]  # rows 0..15: free, no command
        assert top.shape == (16, 128)
        cols = t[:, 0:32]  # a column block: a CopyCmd of 64 × 32 × 2 bytes, 24 logical bytes
        assert np.array_equal(cols.numpy(), t.numpy()[:, 0:32])
        half = tl.load(x[0:32, :][:, 64:128])  # a region of a region: a strided DMA
        assert half.shape == (32, 64)
    """
    index = index if isinstance(index, tuple) else (index,)
    if isinstance(x, (HbmTensor, Ptr)):
        return x[index]
    if not isinstance(x, TensorHandle):
        raise TypeError(f"tl.view: expected a handle or an HBM tensor or region, got {type(x).__name__}")
    check_index(x.name, x.shape, index)
    if x.ref.space == "hbm":
        return _ref_view(x, _ptr_of(x)[index])
    label = f"{x.name}{describe_index(index)}"
    if 0 in _block_shape(x.shape, index):
        raise IndexError(f"empty block {label} of {x.name}{x.shape}")
    first = _contiguous_start(x.shape, index)
    if first is not None:
        root, start = _root(x)
        return TensorView(root, start + first, _block_shape(x.shape, index), label)
    ctx = current()
    ctx.need((x,))
    d = x.data
    assert d is not None
    return _copy_of(x, label, np.array(d[index], copy=True))


def _new_shape(x: TensorHandle | Ptr, shape: Sequence[int]) -> tuple[int, ...]:
    """``shape`` with a ``-1`` resolved; ``ValueError`` naming both shapes if the sizes differ."""
    shape = tuple(int(n) for n in shape)
    size = math.prod(x.shape)
    known = math.prod(n for n in shape if n != -1)
    free = [i for i, n in enumerate(shape) if n == -1]
    bad = len(free) > 1 or any(n < -1 for n in shape)
    if len(free) == 1 and not bad:
        bad = known == 0 or size % known != 0
        shape = tuple(size // known if n == -1 else n for n in shape)
    if bad or math.prod(shape) != size:
        raise ValueError(
            f"tl.reshape: cannot reshape {x.name if isinstance(x, TensorHandle) else x.describe()} {x.shape} ({size} elements) to {shape}"
        )
    return shape


@overload
def reshape(x: TensorHandle, shape: Sequence[int]) -> TensorHandle: ...


@overload
def reshape(x: HbmTensor | Ptr, shape: Sequence[int]) -> Ptr: ...


def reshape(x: TensorHandle | HbmTensor | Ptr, shape: Sequence[int]) -> TensorHandle | Ptr:
    """``x`` seen with another shape of the same elements in the same (C) order — always free on a TCM handle.

    A TCM handle's elements are dense in C order (a block that is not is copied when it is
    made: ``tl.view``), so a reshape is address arithmetic: a ``TensorView``. ``h.reshape(4, 16, 128)``
    is the same. On a ``tl.ref``, an ``HbmTensor`` or a ``Ptr`` it is the region with the new
    shape (``x.reshape(...)``), when the region's bytes allow it without moving any (always
    for a contiguous region).

    Shapes:
        ``shape``: a sequence of ints with the same product as ``x.shape`` (one ``-1`` is
        worked out, as in numpy).
    Dtypes:
        ``x``'s.
    Cost:
        - Command: none; no time and no scratch (a TCM view holds its base's scratch while it
          lives, and is ready when its base is).
    Errors:
        ``ValueError`` naming both shapes when the sizes differ, or when an HBM region is
        strided so that the new shape would need its bytes moved (load it and reshape the
        TCM handle); ``TypeError`` for an ``x`` that is not a handle or HBM region.
    Example:
        t = tl.load(x)  # (64, 128)
        heads = tl.reshape(t, (64, 4, 32))  # free
        assert heads.shape == (64, 4, 32)
        assert np.array_equal(t.reshape(-1).numpy(), t.numpy().reshape(-1))
        flat = tl.load(x[0:2, :].reshape(256))  # a contiguous region, reshaped
        assert flat.shape == (256,)
    """
    if isinstance(x, (HbmTensor, Ptr)):
        return x.reshape(tuple(shape))
    if not isinstance(x, TensorHandle):
        raise TypeError(f"tl.reshape: expected a handle or an HBM tensor or region, got {type(x).__name__}")
    if x.ref.space == "hbm":
        return _ref_view(x, _ptr_of(x).reshape(tuple(shape)))
    new = _new_shape(x, shape)
    root, start = _root(x)
    return TensorView(root, start, new, f"{x.name}.reshape{new}")


@overload
def transpose(x: TensorHandle, axes: Sequence[int] | None = None) -> TensorHandle: ...


@overload
def transpose(x: HbmTensor | Ptr, axes: Sequence[int] | None = None) -> Ptr: ...


def transpose(x: TensorHandle | HbmTensor | Ptr, axes: Sequence[int] | None = None) -> TensorHandle | Ptr:
    """``x`` with its axes permuted (reversed by default: ``x.T``) — a copy on a TCM handle unless only size-1 axes move.

    On a TCM handle, a transpose that keeps the order of the axes longer than 1 (a
    ``(64, 1)`` column to a ``(1, 64)`` row) is a free reshape; any other moves data
    and is charged as the copy it is: through PE_FETCH_STORE, like ``tl.copy``, into a
    new handle. On a ``tl.ref``, an ``HbmTensor`` or a ``Ptr`` (``x.T``) it is the
    region with reversed axes, the same bytes: nothing moves until it is loaded, and
    that load is a strided DMA at the elements' real addresses. (Such a region is one
    run per element: right for tiles, slow to simulate for a large tensor; a GEMM
    with a transposed B says ``transpose_b`` instead.)

    Shapes:
        ``axes``: a permutation of ``range(x.ndim)`` (TCM handles only; HBM views take
        ``None``, the reversal). The result's shape is ``x.shape`` permuted.
    Dtypes:
        ``x``'s.
    Cost:
        - Command: ``CopyCmd``, 24 logical bytes (framing, two handles, the size) on a TCM
          handle; none when only size-1 axes move, or on an HBM view.
        - PE_CPU: auto-wait on ``x``; dispatch(24), single-op FIXED.
        - Engines: sched; once ``x`` is ready, fetch(x.nbytes), then store(x.nbytes).
        - Scratch: x.nbytes more, from now on.
        - An HBM view moves nothing; a ``tl.load`` of it reads the bursts its elements lie
          in, each once.
    Errors:
        ``ValueError`` if ``axes`` is not a permutation of the axes, or is given for an HBM
        view; ``TypeError`` for an ``x`` that is not a handle or HBM region.
    Example:
        t = tl.load(x)  # (64, 128)
        tt = tl.transpose(t)  # a CopyCmd of 64 × 128 × 2 bytes: 24 logical bytes
        assert tt.shape == (128, 64) and np.array_equal(tt.numpy(), t.numpy().T)
        c = tl.dot(tl.load(w).T, t.T)  # (64, 128) @ (128, 64)
        assert c.shape == (64, 64)
        assert tl.load(x.T).shape == (128, 64)  # an HBM view: a strided DMA
    """
    if isinstance(x, (HbmTensor, Ptr)):
        if axes is not None:
            raise ValueError(f"tl.transpose: an HBM region is only reversed (x.T); load {x!r} to permute other axes")
        return x.T
    if not isinstance(x, TensorHandle):
        raise TypeError(f"tl.transpose: expected a handle or an HBM tensor or region, got {type(x).__name__}")
    n = len(x.shape)
    perm = tuple(reversed(range(n))) if axes is None else tuple(int(a) for a in axes)
    if sorted(perm) != list(range(n)):
        raise ValueError(f"tl.transpose: axes {perm} are not a permutation of the {n} axes of {x.name} {x.shape}")
    if x.ref.space == "hbm":
        if axes is not None:
            raise ValueError(f"tl.transpose: an HBM tl.ref is only reversed (x.T); {x.name} was given axes {perm}")
        return _ref_view(x, _ptr_of(x).T)
    shape = tuple(x.shape[a] for a in perm)
    long_axes = [a for a in perm if x.shape[a] > 1]
    if long_axes == sorted(long_axes):  # only size-1 axes move: the same elements in the same order
        root, start = _root(x)
        return TensorView(root, start, shape, f"{x.name}.T")
    ctx = current()
    ctx.need((x,))
    d = x.data
    assert d is not None
    return _copy_of(x, f"{x.name}.T", np.ascontiguousarray(np.transpose(d, perm)))


TensorHandle.view_ops = ViewOps(view, reshape, transpose)
