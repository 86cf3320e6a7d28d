"""The kernel ↔ PE_CPU protocol: what a running kernel asks of its PE_CPU.

A kernel runs in its own greenlet; each ``tl`` call computes its numerics at
once and then hands PE_CPU one of these records:

``Issue(cmd, src)``         dispatch a command (pays ADR-0064 dispatch cost); ``src``: the
                            user's source line that issued it
``Wait(ref, reason)``       block until a handle's load or receive has landed
``Sync()``                  let SimPy's clock reach PE_CPU's (PE_CPU runs ahead)

A program's requests, in order, are its :class:`CommandLog`: the replay path
re-times them on another topology or cost model without running the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernbench.events.types import StallReason
from kernbench.handles import HandleRef
from kernbench.pe.commands import PeCommand


@dataclass(frozen=True, slots=True)
class Issue:
    """Dispatch ``cmd`` to PE_SCHEDULER; ``src``: the kernel source site that issued it
    (:mod:`kernbench.events.source`; ``""`` when unknown)."""

    cmd: PeCommand
    src: str = ""


@dataclass(frozen=True, slots=True)
class Wait:
    """Block until the load or receive into ``ref`` has landed; ``reason`` names the stall."""

    ref: HandleRef
    reason: StallReason


@dataclass(frozen=True, slots=True)
class Sync:
    """Let the simulation catch up with PE_CPU's clock (loads land, messages arrive)."""


SYNC = Sync()

Request = Issue | Wait | Sync


@dataclass(frozen=True, slots=True)
class CommandLog:
    """One program's requests in issue order: what replay re-times."""

    program_id: int
    launch: int  # index of its launch in the run
    requests: tuple[Request, ...]
    time_read_at: str = ""  # the source site where the kernel read simulated time: its requests may depend on timing
