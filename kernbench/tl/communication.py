"""``tl`` communication: messages between the programs of one launch through PE_IPCQ.

``tl.send`` copies a TCM handle's value into a message to another program;
``tl.recv_async`` posts a receive from one and returns a future at once;
``tl.wait`` blocks until a receive (or a lazy load) has landed. Messages
from one program to another land in that program's receives from it in
send order. The collectives (:mod:`kernbench.collectives`) are built on
these three.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kernbench.handles import RecvFuture, TensorHandle
from kernbench.pe.commands import IpcqRecvCmd, IpcqSendCmd
from kernbench.tl.context import KernelContext, current

__all__ = ["recv_async", "send", "wait"]


def _program(ctx: KernelContext, p: Any, what: str) -> int:
    """``p`` as a program id of this launch, or a clear error naming ``what`` (``tl.send: destination``)."""
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, np.integer)):
        raise TypeError(f"{what} must be a program id (an int in 0..{ctx.num_programs - 1}), not {p!r}")
    if not 0 <= p < ctx.num_programs:
        raise ValueError(f"{what} {int(p)} is not a program of this launch (0..{ctx.num_programs - 1})")
    return int(p)


def _shape(shape: Any) -> tuple[int, ...]:
    """A receive's shape: a sequence of positive ints (a negative or fractional size has no bytes to hold)."""
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence) or not shape:
        raise TypeError(f"tl.recv_async: shape must be a non-empty tuple of positive ints, not {shape!r}")
    for n in shape:
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"tl.recv_async: shape {tuple(shape)!r}: every size must be an int, not {n!r}")
        if n < 1:
            raise ValueError(f"tl.recv_async: shape {tuple(shape)!r}: every size must be at least 1, not {int(n)}")
    return tuple(int(n) for n in shape)


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
        ``TypeError`` if ``handle`` is not a TCM handle or ``dst`` is not an int;
        ``ValueError`` if ``dst`` is not a program of this launch (0 …
        ``tl.num_programs() − 1``) or if ``handle`` is another program's.
        A message that lands in a receive of another shape ends the run with a
        ``KernelError`` naming both PEs, both shapes and the receive's kernel line.
    Example:
        if tl.program_id() == 0:
            tl.send(1, tl.load(x))
        else:
            got = tl.wait(tl.recv_async(0, (64, 128), np.float16))
            assert got.shape == (64, 128)
    """
    ctx = current()
    dst = _program(ctx, dst, "tl.send: destination")
    if not isinstance(handle, TensorHandle):
        raise TypeError(f"tl.send: expected a TensorHandle to send, got {type(handle).__name__}")
    if handle.ref.space != "tcm":
        raise TypeError(f"tl.send: {handle.name} is an HBM tl.ref; only tl.composite can stream it (tl.load it to send it)")
    ctx.need((handle,))
    ctx.issue(IpcqSendCmd(dst, handle.ref, handle.nbytes, np.array(handle.data, copy=True)))


def recv_async(src: int, shape: Sequence[int], dtype: Any = np.float32) -> RecvFuture:
    """Post a receive of one message from program ``src``; returns a ``RecvFuture`` at once.

    ``tl.wait(future)`` blocks until the message has landed and returns its
    handle; ``future.handle`` used by an op auto-waits the same way.

    Shapes:
        ``shape``: the message's shape (the sent value's), a tuple of ints ≥ 1.
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
        ``TypeError`` if ``src`` or a size of ``shape`` is not an int; ``ValueError`` if
        ``src`` is not a program of this launch or a size is below 1; ``ScratchError`` if
        it does not fit.
    Example:
        if tl.program_id() == 1:
            fut = tl.recv_async(0, (64, 1))
            tl.store(out[:, 0:1], tl.scale(fut.handle, 2.0))  # auto-waits for the message
        else:
            tl.send(1, tl.rowsum(tl.load(x)))
    """
    ctx = current()
    src = _program(ctx, src, "tl.recv_async: source")
    h = ctx.new_handle(_shape(shape), dtype, f"recv from {src}", None)
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
    Errors:
        ``TypeError`` if ``fut`` is neither a ``RecvFuture`` nor a handle; ``ValueError``
        if it is another program's.
    Example:
        t = tl.wait(tl.load(x))  # a blocking load
        assert t.shape == (64, 128)
    """
    ctx = current()
    h = fut.handle if isinstance(fut, RecvFuture) else fut
    if not isinstance(h, TensorHandle):
        raise TypeError(f"tl.wait: expected a RecvFuture or a TensorHandle, got {type(fut).__name__}")
    ctx.wait_explicit(h)
    return h
