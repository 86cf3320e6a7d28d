"""What kernels hold: HBM tensors and pointers into them, TCM handles, futures.

Commands never hold a :class:`TensorHandle` (which owns numpy data and
whose lifetime frees scratch); they hold its frozen :class:`HandleRef`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, ClassVar, Protocol

import numpy as np
from numpy.typing import DTypeLike

from kernbench.dtypes import as_dtype
from kernbench.errors import KernbenchError
from kernbench.sim.region import Region, byte_distance, region_of_view


@dataclass(frozen=True, slots=True)
class HandleRef:
    """Identity and geometry of a handle, as a command descriptor names it."""

    id: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    space: str = "tcm"  # "tcm" (scratch) or "hbm" (a tl.ref operand)
    memory: str = ""  # for "hbm": the memory node it lives in
    offset: int = 0  # … the byte address of its first element
    region: Region | None = field(default=None, compare=False, repr=False)  # … and the bytes it covers

    nbytes: int = field(init=False, repr=False, compare=False)
    geometry: tuple[tuple[int, ...], int, str] = field(init=False, repr=False, compare=False)  # (shape, nbytes, space)

    def __post_init__(self) -> None:
        nbytes = math.prod(self.shape) * _itemsize(self.dtype)
        object.__setattr__(self, "nbytes", nbytes)
        object.__setattr__(self, "geometry", (self.shape, nbytes, self.space))


@cache
def _itemsize(dtype: str) -> int:
    return as_dtype(dtype).itemsize


@cache
def _dtype(name: str) -> np.dtype:
    return as_dtype(name)


@cache
def dtype_name(dtype: DTypeLike) -> str:
    """``np.dtype(dtype).name``, remembered (numpy computes it anew each time)."""
    return as_dtype(dtype).name


class NoDataError(ValueError, KernbenchError):
    """A tensor's values were asked for, but it holds none (deployed by ``Runtime(data=False)``)."""


def layout_only(shape: tuple[int, ...], dtype: DTypeLike) -> np.ndarray:
    """A C-contiguous array's *geometry* with no payload: shape, dtype, strides and addresses, for
    views and regions to be computed from exactly as from a real array. Its memory is one element:
    it is never read or written (a tensor holding no data gives zeros and discards what is stored)."""
    dt = as_dtype(dtype)
    strides = []
    step = dt.itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(1, n)
    base = np.zeros(1, dt)
    return np.lib.stride_tricks.as_strided(base, shape=shape, strides=tuple(reversed(strides)), writeable=False)


class HbmTensor:
    """A tensor deployed to one memory (HBM slice or SRAM) at a byte offset.

    ``deployed_by`` is the token of the :class:`~kernbench.runtime.api.Runtime` that placed it (its
    offset means something in that runtime's memories only); None for one made by hand. ``named``:
    the name was given (``deploy(name=…)``); a default name (``t3``) is replaced, at the tensor's first
    launch, by the kernel parameter it is passed as (:func:`kernbench.runtime.api.name_by_parameters`).

    ``root``: for a view (``x.T``, ``x.reshape(...)``, a region of a region), the deployed tensor
    whose bytes ``array`` views; ``offset`` is then the address of ``array``'s first element, and
    real addresses are computed against the root (None for a deployed tensor).

    ``holds_data=False`` (``Runtime(data=False)``, ``--no-data``; a view's is its root's): ``layout``
    is only the tensor's geometry (:func:`layout_only`); its regions read as zeros, stores to it are
    discarded, and :attr:`array` raises :class:`NoDataError`."""

    def __init__(
        self,
        name: str,
        memory: str,
        offset: int,
        array: np.ndarray,
        deployed_by: object | None = None,
        root: HbmTensor | None = None,
        named: bool = True,
        holds_data: bool = True,
    ) -> None:
        self.name = name
        self.named = named
        self.memory = memory
        self.offset = offset
        self.layout = array  # the values, or (no data) their geometry only
        self.deployed_by = deployed_by
        self.root = root
        self.holds_data: bool = holds_data if root is None else root.holds_data

    @property
    def array(self) -> np.ndarray:
        """The tensor's values (a tensor holding no data has none: :class:`NoDataError`)."""
        if not self.holds_data:
            raise NoDataError(f"tensor {self.name}{self.shape} holds no data: it was deployed by Runtime(data=False) (--no-data)")
        return self.layout

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.layout.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.layout.dtype

    @property
    def nbytes(self) -> int:
        return int(self.layout.nbytes)

    def __getitem__(self, index: Any) -> Ptr:
        return Ptr(self, index if isinstance(index, tuple) else (index,))

    def name_after(self, parameter: str) -> None:
        """Take a kernel parameter's name (``x``, ``xs[0]``) if no name was given at deploy."""
        if not self.named:
            self.name, self.named = parameter, True

    def retargeted(self, name: str, offset: int, layout: np.ndarray) -> HbmTensor:
        """The same tensor (memory, runtime, root, data or not) under another name, address and layout:
        a view over the same bytes (a collective's flat view)."""
        return HbmTensor(name, self.memory, offset, layout, self.deployed_by, self.root, named=self.named, holds_data=self.holds_data)

    def whole(self) -> Ptr:
        return Ptr(self, (slice(None),))

    def reshape(self, *shape: Any) -> Ptr:
        """The whole tensor seen with another shape: address arithmetic (``Ptr.reshape``)."""
        return self.whole().reshape(*shape)

    @property
    def T(self) -> Ptr:
        """The whole tensor with its axes reversed: a strided region (``Ptr.T``)."""
        return self.whole().T

    def __repr__(self) -> str:
        return f"HbmTensor({self.name}, {self.shape}, {self.dtype}, {self.memory}+{self.offset})"


class Ptr:
    """A region of an :class:`HbmTensor`: what ``tl.load``/``tl.store``/``tl.ref`` take.

    Indexes are basic: integers and slices (with steps). A region is the
    bytes it covers in its memory (:attr:`region`), so a column block of a
    row-major matrix, every 8th row or any other strided view moves the
    bursts at its real addresses.

    Views of a region are regions again, and cost nothing: ``p[i:j, ...]``
    (a region of the region), ``p.reshape(shape)`` (when the bytes allow it
    without moving any) and ``p.T`` (its axes reversed: a load of it is a
    strided DMA at the elements' real addresses).
    """

    __slots__ = ("_offset", "_region", "_view", "index", "tensor")

    def __init__(self, tensor: HbmTensor, index: tuple[Any, ...]):
        self.tensor = tensor
        self.index = index
        check_index(tensor.name, tensor.shape, index)
        self._view: np.ndarray = tensor.layout[(*index, ...)]  # (with "...": a view even when it is one element)
        if self._view.size == 0:
            raise IndexError(f"empty region {self.describe()} of {tensor.name}{tensor.shape}")
        self._view.flags.writeable = False  # reads go through it without a copy (values()); writes through the tensor
        self._offset: int | None = None
        self._region: Region | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._view.shape)

    @property
    def dtype(self) -> np.dtype:
        return self._view.dtype

    @property
    def nbytes(self) -> int:
        return int(self._view.nbytes)

    @property
    def memory(self) -> str:
        return self.tensor.memory

    @property
    def offset(self) -> int:
        """Byte address of the region's first element in its memory."""
        if self._offset is None:
            root = self.tensor.root
            if root is None:
                self._offset = self.tensor.offset + first_byte(self.tensor.layout, self.index)
            else:  # a view's strides may be anything: measure against the deployed bytes
                self._offset = root.offset + byte_distance(root.layout, self._view)
        return self._offset

    @property
    def region(self) -> Region:
        """The bytes the region covers in its memory, as runs (see :mod:`kernbench.sim.region`)."""
        if self._region is None:
            if self._view.flags.c_contiguous:  # one run from its first byte
                self._region = Region.contiguous(self.offset, self._view.nbytes)
            else:
                base = self.tensor.root or self.tensor
                self._region = region_of_view(base.layout, self._view, base.offset)
        return self._region

    # --- views: regions of the same bytes, no data moved ----------------------------

    def _derived(self, name: str, array: np.ndarray) -> HbmTensor:
        """``array`` (a numpy view of this region's bytes) as a tensor of the same memory."""
        root = self.tensor.root or self.tensor
        assert np.may_share_memory(array, root.layout), f"{name} is not a view of {root.name}"
        return HbmTensor(name, self.memory, root.offset + byte_distance(root.layout, array), array, self.tensor.deployed_by, root)

    def _writable(self) -> np.ndarray:
        return self.tensor.layout[(*self.index, ...)]

    def __getitem__(self, index: Any) -> Ptr:
        """A region of this region (integers and slices, checked against its shape)."""
        index = index if isinstance(index, tuple) else (index,)
        check_index(self.describe(), self.shape, index)
        return Ptr(self._derived(self.describe(), self._writable()), index)

    def reshape(self, *shape: Any) -> Ptr:
        """The region with another shape, when that is address arithmetic: always for a
        contiguous region; for a strided one only when numpy can keep it a view.

        Raises ``ValueError`` naming both shapes if the sizes differ, or if the new shape
        would need the bytes moved (load it, then reshape the TCM handle: that is free)."""
        new = _shape_arg(shape)
        v = self._writable()
        try:
            r = v.reshape(new)
        except ValueError:
            raise ValueError(f"cannot reshape {self.describe()} {self.shape} ({v.size} elements) to {new}") from None
        root = (self.tensor.root or self.tensor).layout
        if not np.may_share_memory(r, root):
            raise ValueError(
                f"reshaping the strided region {self.describe()} {self.shape} to {new} would move data; "
                "tl.load it and reshape the TCM handle instead (free there)"
            )
        return self._derived(f"{self.describe()}.reshape{tuple(r.shape)}", r).whole()

    @property
    def T(self) -> Ptr:
        """The region with its axes reversed: the same bytes, strided (a load of it moves
        the bursts its elements lie in, at their real addresses)."""
        return self._derived(f"{self.describe()}.T", self._writable().T).whole()

    def read(self) -> np.ndarray:
        """A copy of the region's values (zeros from a tensor that holds no data)."""
        if not self.tensor.holds_data:
            return np.zeros(self._view.shape, self._view.dtype)
        return np.array(self._view, copy=True)

    def values(self) -> np.ndarray:
        """The region's values as they are now, without a copy: read-only, to compute from at once
        (zeros, broadcast, from a tensor that holds no data)."""
        if not self.tensor.holds_data:
            return np.broadcast_to(np.zeros((), self._view.dtype), self._view.shape)
        return self._view

    @property
    def holds_data(self) -> bool:
        return self.tensor.holds_data

    def write(self, value: np.ndarray) -> None:
        """Store ``value`` in the region (discarded by a tensor that holds no data)."""
        if self.tensor.holds_data:
            self.tensor.layout[self.index] = value

    def describe(self) -> str:
        if self.tensor.root is not None and self.index == (slice(None),):
            return self.tensor.name  # a view, whole: its name says what it is
        parts = []
        for s in self.index:
            if isinstance(s, slice):
                a = "" if s.start is None else s.start
                b = "" if s.stop is None else s.stop
                step = "" if s.step in (None, 1) else f":{s.step}"
                parts.append(f"{a}:{b}{step}")
            else:
                parts.append(str(s))
        return f"{self.tensor.name}[{','.join(parts)}]"


def first_byte(array: np.ndarray, index: tuple[Any, ...]) -> int:
    """Bytes from ``array``'s first element to the first element of ``array[index]``
    (a checked basic index naming at least one element): each axis's first index times its stride."""
    first = 0
    for x, n, stride in zip(index, array.shape, array.strides, strict=False):
        first += (x.indices(n)[0] if type(x) is slice else int(x) % n) * stride
    return first


def _shape_arg(shape: tuple[Any, ...]) -> tuple[int, ...]:
    """``reshape``'s arguments — ``(4, 8)`` or ``4, 8`` — as a tuple (a ``-1`` left to numpy)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in shape):
        raise TypeError(f"a shape is integers, not {shape!r}")
    return tuple(int(n) for n in shape)


def check_index(name: str, shape: tuple[int, ...], index: tuple[Any, ...]) -> None:
    """Basic indexing within bounds only: anything else has no address to move.

    An ``IndexError`` names the tensor (``name``) and its shape for an index past the end."""
    tensor = _Named(name, shape)
    if len(index) > len(shape) or any([x is Ellipsis or x is None for x in index]):
        dims = [x for x in index if x is not Ellipsis and x is not None]
        if len(dims) > len(shape):
            raise IndexError(f"{tensor.name}{shape}: {len(dims)} indices for {len(shape)} dimensions")
        raise IndexError(f"{tensor.name}: use integers and slices only (no ... or None) to name a region")
    for axis, x in enumerate(index):
        if type(x) is slice and x.start is None and x.stop is None and x.step is None:
            continue  # the whole axis
        n = shape[axis]
        if isinstance(x, (bool, np.bool_)):
            raise IndexError(f"{tensor.name}: a boolean index copies data; use slices to name a region")
        if isinstance(x, (int, np.integer)):
            if not -n <= int(x) < n:
                raise IndexError(f"{tensor.name}{shape}: index {int(x)} out of range for axis {axis} (size {n})")
            continue
        if isinstance(x, slice):
            for name, v in (("start", x.start), ("stop", x.stop)):
                if v is None:
                    continue
                if not isinstance(v, (int, np.integer)):
                    raise IndexError(f"{tensor.name}: slice {name} must be an integer, not {v!r}")
                if not -n <= int(v) <= n:
                    raise IndexError(f"{tensor.name}{shape}: slice {name} {int(v)} is past the end of axis {axis} (size {n})")
            if x.step is not None and (not isinstance(x.step, (int, np.integer)) or int(x.step) == 0):
                raise IndexError(f"{tensor.name}: slice step must be a nonzero integer, not {x.step!r}")
            continue
        raise IndexError(
            f"{tensor.name}: index {x!r} is not an integer or a slice (fancy indexing copies data "
            "and has no address in HBM); use slices to name a region"
        )


@dataclass(frozen=True, slots=True)
class _Named:
    name: str
    shape: tuple[int, ...]


class ScratchOwner(Protocol):
    """What a scratch handle needs of its kernel context (:class:`kernbench.tl.context.KernelContext`)."""

    def release(self, hid: int, nbytes: int) -> None: ...

    def need(self, handles: tuple[object, ...]) -> None: ...


@dataclass(frozen=True, slots=True)
class ViewOps:
    """The views of a TCM handle or ``tl.ref`` (``kernbench.tl.views`` registers them)."""

    view: Callable[[TensorHandle, Any], TensorHandle]
    reshape: Callable[[TensorHandle, tuple[int, ...]], TensorHandle]
    transpose: Callable[[TensorHandle], TensorHandle]


class TensorHandle:
    """A tensor a kernel holds: data in TCM scratch, or an HBM-resident ``tl.ref``."""

    __slots__ = ("__weakref__", "data", "owner", "ptr", "ref")

    def __init__(self, ref: HandleRef, data: np.ndarray | None, ptr: Ptr | None = None, owner: ScratchOwner | None = None):
        self.ref = ref
        self.data = data
        self.ptr = ptr
        self.owner = owner  # the kernel context whose scratch it holds (TCM handles)

    def __del__(self) -> None:
        # the last reference is gone: its scratch goes back (see KernelContext.release)
        owner = self.owner
        if owner is not None:
            owner.release(self.ref.id, self.ref.nbytes)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.ref.shape

    @property
    def dtype(self) -> np.dtype:
        return _dtype(self.ref.dtype)

    @property
    def nbytes(self) -> int:
        return self.ref.nbytes

    @property
    def name(self) -> str:
        return self.ref.name

    # views: kernbench.tl.views (free when address arithmetic, a copy otherwise), which
    # registers itself here (the handles module does not import tl: tl imports it)
    view_ops: ClassVar[ViewOps | None] = None

    def _views(self) -> ViewOps:
        ops = TensorHandle.view_ops
        assert ops is not None, "kernbench.tl registers the views when it is imported"
        return ops

    def __getitem__(self, index: Any) -> TensorHandle:
        """``tl.view(self, index)``: rows, columns or a block of the handle."""
        return self._views().view(self, index)

    def reshape(self, *shape: Any) -> TensorHandle:
        """``tl.reshape(self, shape)``."""
        return self._views().reshape(self, _shape_arg(shape))

    @property
    def T(self) -> TensorHandle:
        """``tl.transpose(self)``: its axes reversed."""
        return self._views().transpose(self)

    def numpy(self) -> np.ndarray:
        """The handle's value (waits for a pending load/recv like any consuming op)."""
        if self.owner is not None:  # only scratch handles have loads or receives in flight
            self.owner.need((self,))
        return np.array(self.data, copy=True)

    def __repr__(self) -> str:
        return f"<{self.ref.space} {self.ref.name} {self.shape} {self.ref.dtype}>"


class RecvFuture:
    """The result of ``tl.recv_async``: resolved when the message arrives."""

    __slots__ = ("handle", "src_pe")

    def __init__(self, handle: TensorHandle, src_pe: int):
        self.handle = handle
        self.src_pe = src_pe
