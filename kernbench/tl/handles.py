"""What kernels hold: HBM tensors and pointers into them, TCM handles, futures.

Commands never hold a :class:`TensorHandle` (which owns numpy data and
whose lifetime frees scratch); they hold its frozen :class:`HandleRef`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np


@dataclass(frozen=True, slots=True)
class HandleRef:
    """Identity and geometry of a handle, as a command descriptor names it."""

    id: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    space: str = "tcm"  # "tcm" (scratch) or "hbm" (a tl.ref operand)
    memory: str = ""  # for "hbm": the memory node and byte offset it lives at
    offset: int = 0

    nbytes: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nbytes", math.prod(self.shape) * _itemsize(self.dtype))


@lru_cache(maxsize=None)
def _itemsize(dtype: str) -> int:
    return np.dtype(dtype).itemsize


class HbmTensor:
    """A tensor deployed to one memory (HBM slice or SRAM) at a byte offset."""

    def __init__(self, name: str, memory: str, offset: int, array: np.ndarray):
        self.name = name
        self.memory = memory
        self.offset = offset
        self.array = array

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    @property
    def nbytes(self) -> int:
        return int(self.array.nbytes)

    def __getitem__(self, index: Any) -> "Ptr":
        return Ptr(self, index if isinstance(index, tuple) else (index,))

    def whole(self) -> "Ptr":
        return Ptr(self, (slice(None),))

    def __repr__(self) -> str:
        return f"HbmTensor({self.name}, {self.shape}, {self.dtype}, {self.memory}+{self.offset})"


class Ptr:
    """A region of an :class:`HbmTensor`: what ``tl.load``/``tl.store``/``tl.ref`` take."""

    __slots__ = ("tensor", "index", "_view")

    def __init__(self, tensor: HbmTensor, index: tuple):
        self.tensor = tensor
        self.index = index
        self._view = tensor.array[index]
        if self._view.size == 0:
            raise IndexError(f"empty region {index!r} of {tensor.name}{tensor.shape}")

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
        base = self.tensor.array
        first = self._view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        return self.tensor.offset + int(first)

    def read(self) -> np.ndarray:
        return np.array(self._view, copy=True)

    def write(self, value: np.ndarray) -> None:
        self.tensor.array[self.index] = value

    def describe(self) -> str:
        parts = []
        for s in self.index:
            if isinstance(s, slice):
                a = "" if s.start is None else s.start
                b = "" if s.stop is None else s.stop
                parts.append(f"{a}:{b}")
            else:
                parts.append(str(s))
        return f"{self.tensor.name}[{','.join(parts)}]"


class TensorHandle:
    """A tensor a kernel holds: data in TCM scratch, or an HBM-resident ``tl.ref``."""

    __slots__ = ("ref", "data", "ptr", "__weakref__")

    def __init__(self, ref: HandleRef, data: np.ndarray | None, ptr: Ptr | None = None):
        self.ref = ref
        self.data = data
        self.ptr = ptr

    @property
    def shape(self) -> tuple[int, ...]:
        return self.ref.shape

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.ref.dtype)

    @property
    def nbytes(self) -> int:
        return self.ref.nbytes

    @property
    def name(self) -> str:
        return self.ref.name

    def numpy(self) -> np.ndarray:
        """The handle's value (waits for a pending load/recv like any consuming op)."""
        from kernbench.tl.context import current

        current().need((self,))
        return np.array(self.data, copy=True)

    def __repr__(self) -> str:
        return f"<{self.ref.space} {self.ref.name} {self.shape} {self.ref.dtype}>"


class RecvFuture:
    """The result of ``tl.recv_async``: resolved when the message arrives."""

    __slots__ = ("handle", "src_pe")

    def __init__(self, handle: TensorHandle, src_pe: int):
        self.handle = handle
        self.src_pe = src_pe
