"""A saved run, run again: the ``kernbench run`` arguments a trace's metadata says it was made with, and
whether a rerun is that run.

A ``.kbtrace`` holds a run's events, not the commands its kernel issued, so it cannot be re-timed as it
is (:meth:`~kernbench.runtime.api.Runtime.replay` reads command logs). It does hold how the run was made:
the kernel (a shipped one's name, or a kernel file's absolute path), the options that differ from their
defaults, the topology (a named one, or a YAML file's absolute path) with its ``--set`` changes and its
digest, the timing mode, the fidelity, whether tensors held data, and the limits it ran under.
:func:`rerun_argv` turns that back into arguments; :func:`difference` says whether the rerun's events are
the saved ones. A kernel file, a topology or kernbench itself that changed since the trace was saved gives
another run, and what is asked of it would answer for that other run: the debugger's what-if prompt
(``kernbench_tui.rerun``) and ``compare --check-fidelity`` refuse it, saying what differs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from kernbench.errors import KernbenchError
from kernbench.events.store import EventStore
from kernbench.events.tracefile import TraceMetadata
from kernbench.events.types import EventKind

if TYPE_CHECKING:
    from kernbench.commands.run import RecordedRun
    from kernbench.events.bus import Bus


class NotRerunnable(KernbenchError):
    """A trace's metadata does not say how to make its run again (or says it is no plain run)."""


def rerun_base(meta: TraceMetadata) -> list[str]:
    """The rerun's arguments but the kernel's own options (:func:`rerun_argv` adds them): read from the metadata
    alone, no kernel code loaded, so a saved trace names the run it would make before anything runs.
    :class:`NotRerunnable`, saying why, for a failed run's trace, a what-if's re-timing, or one whose metadata
    does not say. The run's limits are the ones it ran under (the defaults for a trace written before they were kept)."""
    extra = meta.extra if isinstance(meta.extra, dict) else {}
    if extra.get("partial"):
        raise NotRerunnable("it is a failed run's trace (its events up to the failure): only a run that ended can be re-timed")
    if "what_if" in extra:
        raise NotRerunnable("it is a what-if's re-timing, not a run: open the trace of the run it re-timed, and re-time that")
    if not meta.kernel or not isinstance(extra.get("params"), dict):
        raise NotRerunnable(
            "its metadata does not say which kernel ran with which options (a trace saved from Python, not by kernbench run)"
        )
    kernel_file = _field(extra, "kernel_file", str)
    kernel = f"{kernel_file}:{meta.kernel}" if kernel_file is not None else meta.kernel
    topology = _field(extra, "topology_file", str) or meta.topology
    argv = [kernel, "--topology", topology, "--timing", _field(extra, "timing", str) or "fast"]
    if (fidelity := _field(extra, "fidelity", str)) is not None:
        argv += ["--fidelity", fidelity]
    if extra.get("data") == "none":
        argv.append("--no-data")
    for name, value in (_field(extra, "limits", dict) or {}).items():  # (a trace written before they were kept: the defaults)
        if name not in LIMITS or not (value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0)):
            raise NotRerunnable(f"its metadata is malformed: limits.{name} = {value!r}")
        argv += [LIMITS[name], "0" if value is None else repr(value)]
    for key, value in (_field(extra, "overrides", dict) or {}).items():
        argv += ["--set", f"{key}={json.dumps(value)}"]  # (JSON is YAML: the value reads back as it was read)
    return argv


T = TypeVar("T")

#: the limits a trace keeps, and the options that set them (0: no limit)
LIMITS = {"max_commands_per_pe": "--max-commands-per-pe", "max_sim_ns": "--max-sim-ns", "max_wall_s": "--max-wall-s"}


def _field(extra: dict[str, Any], name: str, kind: type[T]) -> T | None:
    """``extra[name]`` if it is a ``kind`` (None if absent or null); a trace file is input: anything else is refused."""
    value = extra.get(name)
    if value is None or isinstance(value, kind):
        return value
    raise NotRerunnable(f"its metadata is malformed: {name} is {type(value).__name__}, not {kind.__name__}")


def rerun_argv(meta: TraceMetadata) -> list[str]:
    """``kernbench run``'s arguments (kernel first) that make the run ``meta`` describes: :func:`rerun_base` and the
    kernel's options that differ from their defaults (an option another one makes meaningless, ``--tile-k`` with
    ``--layout naive``, is refused when given). This loads the kernel (a kernel file's code runs); :class:`NotRerunnable`
    if it cannot be loaded, or no longer takes those options."""
    from kernbench.commands.run import check_run
    from kernbench.kernels import registry

    argv = rerun_base(meta)
    try:
        spec = registry.get(argv[0])
    except KernbenchError as exc:
        raise NotRerunnable(f"its kernel cannot be loaded again: {exc}") from None
    known = {prm.name: prm for prm in spec.params}
    for name, value in meta.extra["params"].items():
        prm = known.get(name)
        if prm is None:
            raise NotRerunnable(f"{spec.name} no longer has the option {name} the trace was run with")
        if value != prm.default:
            argv += [prm.flag, repr(value) if isinstance(value, float) else str(value)]
    try:
        check_run(argv[0], argv[1:], "the saved run's rerun")
    except KernbenchError as exc:
        raise NotRerunnable(f"its run cannot be made again as it was: {exc}") from None
    return argv


def tui_rerun(meta: TraceMetadata) -> tuple[Callable[[Bus], RecordedRun], TraceMetadata]:
    """The debugger's rerun of a saved trace, in the child that runs it (``kernbench_tui.rerun``): the arguments
    :func:`rerun_argv` finds, the kernel loaded there and not in the debugger, then ``kernbench-tui run``'s hook."""
    from kernbench.commands.run import tui_simulation

    return tui_simulation(rerun_argv(meta))


def topology_changed(meta: TraceMetadata, argv: list[str]) -> str | None:
    """Why the topology ``argv`` (:func:`rerun_base`'s) would run on is not the one the trace ran on (its digest differs), or None
    (or a trace written before digests were kept: the rerun's events are checked either way)."""
    from kernbench.topology.digest import topology_digest
    from kernbench.topology.spec import load_spec

    saved = meta.extra.get("topology_digest") if isinstance(meta.extra, dict) else None
    if not isinstance(saved, str):
        return None
    sets = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--set"]
    topology = argv[argv.index("--topology") + 1]
    try:
        if topology_digest(load_spec(topology, sets)) == saved:
            return None
    except KernbenchError as exc:  # (the file is gone, or no longer reads: another topology either way)
        return f"its topology cannot be read as it was: {exc}"
    return f"the topology {topology} has changed since the trace was saved (its digest differs)"


def difference(saved: EventStore, rerun: EventStore) -> str | None:
    """How ``rerun``'s events differ from ``saved``'s (its count, its end, the first event that differs), or None
    when they are the same events: every column equal, names compared as text."""
    if len(saved) != len(rerun) or not _same_float(saved.end_ns, rerun.end_ns):
        return f"the rerun has {_events(len(rerun))} ending at {rerun.end_ns:,.3f} ns, the trace {_events(len(saved))} ending at {saved.end_ns:,.3f} ns"
    if not len(saved):
        return None
    a, b = saved.columns(), rerun.columns()
    unequal = np.zeros(len(saved), dtype=bool)
    for name in a:
        x, y = a[name], b[name]
        if name == "component":
            x, y = np.asarray(saved.components, dtype=object)[x], np.asarray(rerun.components, dtype=object)[y]
        elif name in ("label", "detail", "src"):
            x, y = np.asarray(saved.strings, dtype=object)[x], np.asarray(rerun.strings, dtype=object)[y]
        elif x.dtype.kind == "f":
            unequal |= ~((x == y) | (np.isnan(x) & np.isnan(y)))
            continue
        unequal |= x != y
    if not unequal.any():
        return None
    row = int(np.argmax(unequal))
    return f"event {row:,} differs: the trace's is {_shown(saved, row)}, the rerun's {_shown(rerun, row)}"


def _events(n: int) -> str:
    return f"{n:,} event" + ("" if n == 1 else "s")


def _same_float(x: float, y: float) -> bool:
    return x == y or (math.isnan(x) and math.isnan(y))


def _shown(store: EventStore, row: int) -> str:
    ev = store.event(row)
    kind = ev.kind.name if isinstance(ev.kind, EventKind) else str(ev.kind)
    return f"{kind} on {ev.component} at {ev.t_ns:,.3f} ns" + (f" ({ev.label})" if ev.label else "")


def describe(argv: list[str]) -> str:
    """The rerun as a command line, for messages (``argv``: :func:`rerun_base`'s; the kernel's options are the trace's)."""
    import shlex

    return f"kernbench run {shlex.join(argv)} with the kernel's options as saved"


__all__ = ["NotRerunnable", "describe", "difference", "rerun_argv", "rerun_base", "topology_changed", "tui_rerun"]
