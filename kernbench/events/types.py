"""The event schema: one flat record type, kinds as data.

Every component publishes :class:`Event` records. A record is flat on
purpose: it maps one-to-one onto the columns of the event store (see
``kernbench.events.store``), onto trace files and onto Perfetto's trace-event
format, so no subscriber needs a per-kind decoder.

Field meaning by kind (``component`` is always a dotted graph node id, or an
edge id ``"a->b"`` for edge kinds):

====================  ========  ================================================
kind                  span?     label / value / detail
====================  ========  ================================================
TRANSFER_START        instant   label = transfer kind (dma_read, h2d, ipcq, ...);
                                value = size_bytes; detail = "src=>dst"
TRANSFER_END          instant   as TRANSFER_START; value = size_bytes
EDGE_BUSY             span      value = flits serialized on the edge
QUEUE_DEPTH           instant   value = flits waiting in the edge FIFO after t
CHANNEL_BUSY          span      HBM/SRAM channel; label = its memory node
                                (``sip0.cube0.hbm.slice3``); value = bursts served
ENGINE_BUSY           span      label = command name; value = logical_bytes
DISPATCH              span      PE_CPU charge; label = command name;
                                value = dispatch cycles; detail = logical bytes
STALL                 span      PE_CPU; label = reason; detail = what it waits on
LOAD_ISSUE            instant   lazy load; label = handle name; value = bytes
LOAD_COMPLETE         instant   label = handle name; value = bytes
LOAD_WAIT             span      auto-wait at first use; label = handle name
CPU_WORK              span      explicit tl.cycles(n); value = cycles
TRANSIT               span      where a transfer's critical flit spent
                                ``[t_ns, end_ns]``: component = node, edge or
                                channel; label = cause (overhead,
                                serialization, propagation, queueing, drain);
                                value = corr_id of the transfer it queued
                                behind (queueing), else -1; pred = the span
                                the transfer belongs to (its DMA/IPCQ lane)
====================  ========  ================================================

``pred`` is the ``seq`` of the span whose end released this span's start:
the span it waited for (a data dependency, its engine or lane being busy,
its dispatch, a landing load or message), ``-1`` when nothing did (it
started at time 0, or is an instant). A STALL's pred is what ended the stall.
Following preds back from the last span is the run's critical path
(:mod:`kernbench.analysis.critical`).

``src`` is the kernel source site that issued the command (DISPATCH) or the
``tl.cycles`` (CPU_WORK): the user's frames, innermost first
(:mod:`kernbench.events.source`); ``""`` on every other kind, and on a run
whose commands came from no kernel (a bare command log). Every span of a
command shares its DISPATCH's ``corr_id``, so the DISPATCH's ``src`` names
the line of all of them.

``corr_id`` joins everything one request caused (a transfer's hops, its
channel bursts, its start and end); ``-1`` when not applicable.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True, slots=True)
class Engine:
    """One engine lane of a PE: its component suffix, the name people read, the hardware
    block it belongs to, and what time spent on it is called on a critical path."""

    lane: str  # component ``sipS.cubeC.peP.<lane>``
    title: str  # `kernbench run`'s engine table, `--explain`
    block: str  # the PE block (paper Fig. pe-arch) the lane is part of
    cause: str  # a critical-path step on it is charged to this cause


#: The PE's engine lanes, in display order: the one definition (record, --explain,
#: the debugger's lanes and Perfetto's tracks all read it). FETCH and STORE are two
#: lanes of the one PE_FETCH_STORE block: each reads or writes TCM on its own port.
ENGINE_TABLE: tuple[Engine, ...] = (
    Engine("cpu", "PE_CPU", "PE_CPU", "dispatch"),
    Engine("sched", "PE_SCHED", "PE_SCHEDULER", "scheduler hand-off"),
    Engine("dma.rd", "DMA read", "PE_DMA", "dma read"),
    Engine("dma.wr", "DMA write", "PE_DMA", "dma write"),
    Engine("fetch", "FETCH", "PE_FETCH_STORE", "fetch"),
    Engine("store", "STORE", "PE_FETCH_STORE", "store"),
    Engine("gemm", "GEMM", "PE_GEMM", "gemm"),
    Engine("math", "MATH", "PE_MATH", "math"),
    Engine("ipcq", "IPCQ", "PE_IPCQ", "ipcq"),
)
#: Engine lanes of one PE (components ``sipS.cubeC.peP.<engine>``), in display order.
ENGINES: tuple[str, ...] = tuple(e.lane for e in ENGINE_TABLE)
ENGINE_BY_LANE: dict[str, Engine] = {e.lane: e for e in ENGINE_TABLE}


class EventKind(enum.IntEnum):
    TRANSFER_START = 0
    TRANSFER_END = 1
    EDGE_BUSY = 2
    QUEUE_DEPTH = 3
    CHANNEL_BUSY = 4
    ENGINE_BUSY = 5
    DISPATCH = 6
    STALL = 7
    LOAD_ISSUE = 8
    LOAD_COMPLETE = 9
    LOAD_WAIT = 10
    CPU_WORK = 11
    TRANSIT = 12


SPAN_KINDS = frozenset(
    {
        EventKind.EDGE_BUSY,
        EventKind.CHANNEL_BUSY,
        EventKind.ENGINE_BUSY,
        EventKind.DISPATCH,
        EventKind.STALL,
        EventKind.LOAD_WAIT,
        EventKind.CPU_WORK,
        EventKind.TRANSIT,
    }
)


class StallReason(str, enum.Enum):  # noqa: UP042 - not StrEnum: its str() and format() give the value, this one the member name
    """Why PE_CPU stopped issuing commands."""

    LAZY_LOAD = "lazy-load auto-wait"
    QUEUE_FULL = "scheduler queue full"
    RECV_WAIT = "recv wait"
    EXPLICIT_WAIT = "explicit wait"
    HAZARD = "rw-handle hazard"


class Event(NamedTuple):
    """One observation. ``end_ns`` is ``t_ns`` for instants.

    A named tuple rather than a slotted dataclass: a recorded run makes one per
    observation (149k for the GQA default), and the bus builds each with one C
    call (``tuple.__new__(Event, fields)``: :meth:`kernbench.events.bus.Bus.emit`) where a dataclass's ``__init__`` ran a Python
    frame setting eleven slots (measured 2026-12-03: ~0.2 µs instead of ~2 µs).
    Read it by field name as before; it is immutable as before."""

    t_ns: float
    kind: EventKind
    component: str
    end_ns: float = -1.0
    corr_id: int = -1
    label: str = ""
    value: float = 0.0
    detail: str = ""
    seq: int = -1
    pred: int = -1
    src: str = ""

    @property
    def is_span(self) -> bool:
        return self.kind in SPAN_KINDS

    @property
    def duration_ns(self) -> float:
        return max(0.0, self.end_ns - self.t_ns) if self.is_span else 0.0

    def sort_key(self) -> tuple[float, int]:
        return (self.t_ns, self.seq)
