"""The per-PE kernel context: the bridge between ``tl`` calls and PE_CPU.

A kernel runs in its own greenlet. Each ``tl`` call computes its numerics at
once, then hands PE_CPU a request record (:mod:`kernbench.pe.requests`:
``Issue``, ``Wait``, ``Sync``) by switching to the driver greenlet. The
requests are also kept in order: that list *is* the command log the replay
path re-times without running the kernel.
"""

from __future__ import annotations

import dataclasses
import linecache
import sys
import weakref
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

import greenlet
import numpy as np

from kernbench.dtypes import narrow
from kernbench.events.types import StallReason
from kernbench.handles import HandleRef, Ptr, TensorHandle, dtype_name
from kernbench.pe.commands import IpcqSendCmd, PeCommand
from kernbench.pe.cost import DispatchCostModel
from kernbench.pe.requests import SYNC, Issue, Request, Wait


class ScratchError(MemoryError):
    """The kernel's live TCM handles exceed its scratch budget."""


class KernelContext:
    def __init__(
        self,
        pe_index: int,
        pe_id: str,
        program_id: int,
        num_programs: int,
        cost: DispatchCostModel,
        scratch_bytes: int,
    ) -> None:
        self.pe_index = pe_index
        self.pe_id = pe_id
        self.program_id = program_id
        self.num_programs = num_programs
        self.cost = cost
        self.scratch_bytes = scratch_bytes
        self._scratch_used = 0
        self.scratch_peak = 0
        self.requests: list[Request] = []
        self.driver: greenlet.greenlet | None = None
        self._next_id = 0
        self._pending: dict[int, str] = {}  # handle id -> "load" | "recv"
        self._in_flight: set[int] = set()  # loads whose DMA has not completed
        self._dropped_in_flight: dict[int, int] = {}
        self._recv_handles: dict[int, weakref.ref[TensorHandle]] = {}
        self._recv_sites: dict[int, tuple[str, int, str]] = {}  # receive handle id -> the kernel line that posted it
        self.kernel_file = ""  # the kernel's source file: the lines errors point at (set by the runtime)

    # --- handles and scratch ----------------------------------------------

    @property
    def scratch_used(self) -> int:
        """Bytes of scratch held now (in this kernel's simulated time)."""
        if self._dropped_in_flight:
            self.sync()
        return self._scratch_used

    def new_handle(
        self,
        shape: tuple[int, ...],
        dtype: Any,
        label: str,
        data: np.ndarray | None,
        *,
        space: str = "tcm",
        ptr: Ptr | None = None,
    ) -> TensorHandle:
        hid = self._next_id
        self._next_id += 1
        where = (ptr.memory, ptr.offset, ptr.region) if ptr is not None else ("", 0, None)
        ref = HandleRef(hid, f"h{hid}:{label}", tuple([int(s) for s in shape]), dtype_name(dtype), space, *where)
        if space == "tcm":
            need = ref.nbytes
            if self._scratch_used + need > self.scratch_bytes and self._dropped_in_flight:
                self.sync()  # dropped loads that landed by now give their buffers back
            if self._scratch_used + need > self.scratch_bytes:
                raise ScratchError(
                    f"TCM scratch exhausted: {label} needs {need} B but {self._scratch_used} B of "
                    f"{self.scratch_bytes} B are held by live handles; drop references to tiles "
                    "you no longer need or use smaller tiles"
                )
            self._scratch_used += need
            self.scratch_peak = max(self.scratch_peak, self._scratch_used)
        return TensorHandle(ref, data, ptr, self if space == "tcm" else None)

    def release(self, hid: int, nbytes: int) -> None:
        """A TCM handle is gone (no reference left): its scratch is free."""
        # ADR-0062: an in-flight load's buffer is not recycled before it lands.
        if hid in self._in_flight:
            self._dropped_in_flight[hid] = nbytes
            return
        self._scratch_used -= nbytes

    def load_issued(self, ref: HandleRef) -> None:
        self._pending[ref.id] = "load"
        self._in_flight.add(ref.id)

    def load_landed(self, hid: int) -> None:
        """Called by PE_DMA when a load's data is in TCM."""
        self._in_flight.discard(hid)
        nbytes = self._dropped_in_flight.pop(hid, None)
        if nbytes is not None:
            self._scratch_used -= nbytes

    def recv_posted(self, h: TensorHandle) -> None:
        self._pending[h.ref.id] = "recv"
        self._recv_handles[h.ref.id] = weakref.ref(h)
        site = self._kernel_site()
        if site is not None:
            self._recv_sites[h.ref.id] = site

    def _kernel_site(self) -> tuple[str, int, str] | None:
        """(file, line, function) of the innermost frame of the kernel's file calling ``tl`` now."""
        frame: FrameType | None = sys._getframe(2)
        kfile = self.kernel_file
        while frame is not None and kfile:
            if frame.f_code.co_filename == kfile:
                return kfile, frame.f_lineno, frame.f_code.co_name
            frame = frame.f_back
        return None

    def recv_site(self, hid: int) -> str:
        """`` at file:line`` (with its source) of the kernel line that posted receive ``hid``, or ""."""
        site = self._recv_sites.get(hid)
        if site is None:
            return ""
        kfile, line, fn = site
        return f"\n  at {kfile}:{line} in {fn}\n    {(linecache.getline(kfile, line) or '').strip()}"

    def deliver(self, hid: int, data: np.ndarray) -> None:
        """Called by PE_IPCQ when a message lands in a posted receive (of its shape: the fabric checks it)."""
        self._recv_sites.pop(hid, None)
        h = self._recv_handles.pop(hid)()
        if h is None:
            return
        if tuple(data.shape) != h.shape:
            raise ValueError(f"received {data.shape} into {h.name} of shape {h.shape}")
        h.data = np.array(narrow(data, h.dtype, f"received into {h.name}"), copy=True)

    # --- requests to PE_CPU -----------------------------------------------

    def _request(self, req: Request, logged: Request | None = None) -> Any:
        self.requests.append(req if logged is None else logged)
        assert self.driver is not None, "a kernel context is driven by its PE_CPU"
        return self.driver.switch(req)

    def issue(self, cmd: PeCommand) -> Any:
        # The log keeps a send without its value: a replay re-times, it never reads what was sent,
        # and a run's sends hold more bytes than its tensors (a ring all-reduce: 2(p−1)/p of them).
        logged = Issue(dataclasses.replace(cmd, payload=None)) if isinstance(cmd, IpcqSendCmd) and cmd.payload is not None else None
        return self._request(Issue(cmd), logged)

    def need(self, handles: Iterable[object]) -> None:
        """Auto-wait (ADR-0062): block on any operand whose load/recv is pending; refuse another program's handle."""
        pending = self._pending
        reader = getattr(greenlet.getcurrent(), "ctx", None)  # (not self when h.numpy() is called by another kernel)
        for h in handles:
            if not isinstance(h, TensorHandle):
                continue
            if h.owner is not self and h.owner is not None:
                raise ValueError(self._foreign(h))
            if reader is not self and isinstance(reader, KernelContext):
                raise ValueError(reader._foreign(h))
            if not pending:
                continue
            why = pending.pop(h.ref.id, None)
            if why is not None:
                reason = StallReason.LAZY_LOAD if why == "load" else StallReason.RECV_WAIT
                self._request(Wait(h.ref, reason))

    def _foreign(self, h: TensorHandle) -> str:
        """Why ``h``, a TCM handle of another kernel context, cannot be used here."""
        owner = h.owner
        whose = f"program {owner.program_id} ({owner.pe_id})" if isinstance(owner, KernelContext) else "another kernel"
        if isinstance(owner, KernelContext) and (owner.program_id, owner.pe_id) == (self.program_id, self.pe_id):
            whose = "an earlier run of this program"
        return (
            f"{h.name} is a TCM handle of {whose}, used by program {self.program_id} ({self.pe_id}): a handle lives "
            "in its own PE's scratch; pass its value with tl.send and tl.recv_async"
        )

    def wait_explicit(self, h: TensorHandle) -> None:
        if h.owner is not self and h.owner is not None:
            raise ValueError(self._foreign(h))
        why = self._pending.pop(h.ref.id, None)
        if why is not None:
            reason = StallReason.RECV_WAIT if why == "recv" else StallReason.EXPLICIT_WAIT
            self._request(Wait(h.ref, reason))

    def sync(self) -> None:
        """Let the simulation catch up with this PE's clock (loads land, messages arrive)."""
        self._request(SYNC)


class _KernelGreenlet(greenlet.greenlet):
    ctx: KernelContext


def current() -> KernelContext:
    """The context of the kernel running now; ``tl`` is only usable inside one."""
    g = greenlet.getcurrent()
    ctx = getattr(g, "ctx", None)
    if not isinstance(ctx, KernelContext):
        raise RuntimeError("tl.* can only be called inside a kernel launched by kernbench")
    return ctx


def kernel_greenlet(run: Callable[[], object], ctx: KernelContext) -> greenlet.greenlet:
    g = _KernelGreenlet(run)
    g.ctx = ctx
    return g
