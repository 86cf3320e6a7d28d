"""PE command descriptors and their hardware-logical byte size (ADR-0064 D2).

``logical_bytes`` counts what a descriptor carries in hardware, not Python
object size:

=====================================================  =====
command framing (type discriminator + completion id)     4
opcode / enum (op kind, scope)                            1
TensorHandle reference (address; shape/dtype in table)    8
scalar (int / float)                                      4
tuple length marker                                       1
=====================================================  =====

Counting is per field with no deduplication: a handle named in two operand
slots, or in an operand slot and in ``rw_handles``, is counted each time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from kernbench.handles import HandleRef, Ptr
from kernbench.pe.work import op_work
from kernbench.sim.region import Region

FRAMING = 4
OPCODE = 1
ENUM = 1
HANDLE = 8
SCALAR = 4
TUPLE_LEN = 1


def extra_bytes(v: Any) -> int:
    """Type-aware byte count of one ``OpSpec.extra`` value (D2)."""
    if isinstance(v, bool):
        return 1
    if isinstance(v, (int, float)):
        return 4
    if isinstance(v, (tuple, list)):
        return 1 + 4 * len(v)
    if isinstance(v, str):
        return 1
    return 4


@dataclass(frozen=True, eq=False)
class PeCommand:
    """Base of every command PE_CPU sends to PE_SCHEDULER."""

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def logical_bytes(self) -> int:  # pragma: no cover - every subclass defines it
        raise TypeError(f"{self.name} must define logical_bytes")

    is_composite = False


@dataclass(frozen=True, eq=False)
class _MoveCmd(PeCommand):
    """A single-op command that moves ``size_bytes`` from ``src`` to ``dst``."""

    @cached_property
    def logical_bytes(self) -> int:
        return FRAMING + HANDLE + HANDLE + SCALAR


@dataclass(frozen=True, eq=False)
class DmaReadCmd(_MoveCmd):
    """HBM/SRAM → TCM: ``src`` (a pointer) into the new handle ``dst``."""

    src: Ptr
    dst: HandleRef
    size_bytes: int


@dataclass(frozen=True, eq=False)
class DmaWriteCmd(_MoveCmd):
    """TCM → HBM/SRAM: handle ``src`` to pointer ``dst``."""

    src: HandleRef
    dst: Ptr
    size_bytes: int


@dataclass(frozen=True, eq=False)
class GemmCmd(PeCommand):
    """``out = a @ b`` (f32 accumulate) on PE_GEMM."""

    a: HandleRef
    b: HandleRef
    out: HandleRef
    m: int
    k: int
    n: int

    @cached_property
    def logical_bytes(self) -> int:
        return FRAMING + OPCODE + 3 * HANDLE + 3 * SCALAR


@dataclass(frozen=True, eq=False)
class MathCmd(PeCommand):
    """One elementwise or reduction op on PE_MATH."""

    op: str
    inputs: tuple[HandleRef, ...]
    out: HandleRef
    extra: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def logical_bytes(self) -> int:
        return (
            FRAMING + OPCODE + TUPLE_LEN + HANDLE * len(self.inputs) + HANDLE + TUPLE_LEN + sum(extra_bytes(v) for v in self.extra.values())
        )

    # What PE_SCHEDULER derives from the command alone, once (a replay submits the same command again).

    @cached_property
    def work(self) -> float:
        """Elements it runs through PE_MATH (:func:`kernbench.pe.work.op_work`)."""
        return op_work(self.op, [r.shape for r in self.inputs], self.out.shape, self.extra)

    @cached_property
    def in_bytes(self) -> int:
        """Bytes its inputs FETCH from TCM."""
        return sum([r.nbytes for r in self.inputs])

    @cached_property
    def tcm_input_ids(self) -> tuple[int, ...]:
        """Its TCM inputs' handle ids (what the readiness table is keyed by)."""
        return tuple([r.id for r in self.inputs if r.space == "tcm"])


@dataclass(frozen=True, eq=False)
class CopyCmd(_MoveCmd):
    """TCM → TCM copy through PE_FETCH_STORE."""

    src: HandleRef
    dst: HandleRef
    size_bytes: int


@dataclass(frozen=True, eq=False)
class IpcqSendCmd(PeCommand):
    """Send handle ``src`` to PE ``dst_pe`` over the NoC."""

    dst_pe: int
    src: HandleRef
    size_bytes: int
    payload: np.ndarray | None = field(default=None, repr=False)  # the value sent (numerics only)

    @cached_property
    def logical_bytes(self) -> int:
        return FRAMING + SCALAR + HANDLE + SCALAR


@dataclass(frozen=True, eq=False)
class IpcqRecvCmd(PeCommand):
    """Post a receive from PE ``src_pe`` into handle ``dst``."""

    src_pe: int
    dst: HandleRef
    size_bytes: int

    @cached_property
    def logical_bytes(self) -> int:
        return FRAMING + SCALAR + HANDLE + SCALAR


@dataclass(frozen=True, eq=False)
class OpSpec:
    """One op inside a composite: kind, named operand handles, out, scope, extra."""

    kind: str
    operands: dict[str, HandleRef]
    out: HandleRef | None = None
    scope: str = "tile"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def logical_bytes(self) -> int:  # read once, by its CompositeCmd's (cached) sum
        return (
            OPCODE
            + ENUM
            + TUPLE_LEN
            + HANDLE * len(self.operands)
            + (HANDLE if self.out is not None else 0)
            + TUPLE_LEN
            + sum(map(extra_bytes, self.extra.values()))
        )


#: every composite shape met in this process, numbered (CompositeCmd.plan_id)
_PLAN_IDS: dict[tuple[object, ...], int] = {}


@dataclass(frozen=True, eq=False)
class CompositeCmd(PeCommand):
    """An ordered pipeline of OpSpecs the scheduler tiles and streams (D2)."""

    ops: tuple[OpSpec, ...]
    rw_handles: tuple[HandleRef, ...] = ()

    is_composite = True

    @cached_property
    def logical_bytes(self) -> int:
        return FRAMING + TUPLE_LEN + sum([op.logical_bytes for op in self.ops]) + TUPLE_LEN + HANDLE * len(self.rw_handles)

    # What PE_SCHEDULER derives from the command alone, once: a replay (what-if re-timing)
    # submits the same command objects again and finds them here.

    @cached_property
    def plan_key(self) -> tuple[object, ...]:
        """What its plan depends on besides the PE (:func:`kernbench.pe.composite_plan.plan_of`'s cache key):
        per op its kind, its operands' and result's geometry, its extras. The key may tell apart
        composites with equal plans (extras given in another order): each is then planned once."""
        return tuple(
            [
                (
                    op.kind,
                    tuple([r.geometry for r in op.operands.values()]),
                    None if op.out is None else op.out.geometry,
                    tuple(op.extra.items()) if op.extra else (),
                )
                for op in self.ops
            ]
        )

    @cached_property
    def plan_id(self) -> int | None:
        """:attr:`plan_key` numbered (equal keys, equal numbers; None when a value in it is
        unhashable): the plan cache's key, the nested key hashed once per command rather than at
        every submission of it (a replay submits it again)."""
        try:
            return _PLAN_IDS.setdefault(self.plan_key, len(_PLAN_IDS))
        except TypeError:
            return None

    @cached_property
    def tcm_handles(self) -> tuple[tuple[HandleRef, ...], tuple[HandleRef, ...]]:
        """(every TCM handle it reads or writes, each once, in order; its TCM results and TCM
        ``rw_handles``: what is ready only when it is done)."""
        refs: dict[int, HandleRef] = {}
        claimed: list[HandleRef] = []
        for op in self.ops:
            for r in op.operands.values():
                refs.setdefault(r.id, r)
            out = op.out
            if out is not None:
                refs.setdefault(out.id, out)
                if out.space != "hbm":
                    claimed.append(out)
        for r in self.rw_handles:
            refs.setdefault(r.id, r)
            if r.space == "tcm":
                claimed.append(r)
        return tuple([r for r in refs.values() if r.space == "tcm"]), tuple(claimed)

    @cached_property
    def tcm_ids(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """:attr:`tcm_handles` by handle id (what the readiness table is keyed by)."""
        tcm, claimed = self.tcm_handles
        return tuple([r.id for r in tcm]), tuple([r.id for r in claimed])


@dataclass(frozen=True, eq=False)
class PeCpuOverheadCmd(PeCommand):
    """Explicit PE_CPU cycles (``tl.cycles``); bypasses the dispatch formula (D5)."""

    cycles: float

    @property
    def logical_bytes(self) -> int:
        return 0


# --- indexing (kernbench/tl/indexing.py) ---------------------------------------------------


@dataclass(frozen=True, eq=False)
class MathPairCmd(MathCmd):
    """One PE_MATH op with two results (``tl.topk``: ``out`` its values, ``out2`` their indices)."""

    out2: HandleRef | None = None

    @cached_property
    def logical_bytes(self) -> int:
        return super().logical_bytes + HANDLE


@dataclass(frozen=True, eq=False)
class _RowsCmd(PeCommand):
    """Rows of an HBM region moved one DMA per row: the rows' bytes at their real addresses
    (``rows``, in index order; what the DMA engine works out from the index values and the
    region's base and pitch, so not counted) and the index: a TCM handle, or host-side
    values carried in the descriptor (``host_index``)."""

    index: HandleRef | None
    host_index: tuple[int, ...]
    rows: tuple[Region, ...] = field(repr=False)
    size_bytes: int

    @cached_property
    def logical_bytes(self) -> int:
        index = HANDLE if self.index is not None else TUPLE_LEN + SCALAR * len(self.host_index)
        return FRAMING + HANDLE + index + HANDLE + SCALAR


@dataclass(frozen=True, eq=False)
class GatherCmd(_RowsCmd):
    """HBM/SRAM rows of ``src`` → TCM handle ``dst``, in index order, one DMA read per row."""

    src: Ptr
    dst: HandleRef


@dataclass(frozen=True, eq=False)
class ScatterCmd(_RowsCmd):
    """TCM handle ``src``'s rows → the HBM/SRAM rows of ``dst`` the index names, one DMA write per row."""

    src: HandleRef
    dst: Ptr
