"""One side of a comparison as a person writes it: a trace file, or a run ``"KERNEL [options]"``.

``kernbench compare A B`` and ``kernbench-tui compare A B`` read each side with
:func:`parse_side` and check it with :func:`check_side` before anything is
simulated::

    parse_side("runs/opt3.kbtrace")              # TraceSide('runs/opt3.kbtrace')
    parse_side("gqa-decode --variant opt3")      # RunSide(('gqa-decode', '--variant', 'opt3'))

A side is a trace when it is one word that ends in ``.kbtrace`` or names a
path (has a ``/``) that is not a kernel file (``.py``, ``.py:NAME``), or when
the whole of it, unsplit, is a ``.kbtrace`` file that exists (a file named
``my run.kbtrace`` needs no quotes inside the argument); anything
else is a kernel — shipped, or a kernel file — and the options of
``kernbench run KERNEL``, split as a shell would (quotes keep a value with
spaces whole). Inside a run side, ``--trace`` and ``--perfetto`` save that
side's events; ``--json`` and ``--explain`` are the comparison's own business
(``kernbench compare --json``; it always attributes both sides) and refused.
"""

from __future__ import annotations

import argparse
import os
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernbench.errors import InputPathError, KernbenchError
from kernbench.inputs import exists
from kernbench.kernels.files import is_file_ref

if TYPE_CHECKING:
    from kernbench.events.tracefile import Trace

TRACE_SUFFIX = ".kbtrace"


class SideError(KernbenchError):
    """A side of a comparison that cannot be read or run (the caller says which side)."""


@dataclass(frozen=True, slots=True)
class TraceSide:
    """A saved trace (``kernbench run … --trace FILE``)."""

    path: str

    @property
    def text(self) -> str:
        return self.path


@dataclass(frozen=True, slots=True)
class RunSide:
    """A kernel to simulate: ``argv`` is the kernel's name, then its ``kernbench run`` options."""

    argv: tuple[str, ...]

    @property
    def kernel(self) -> str:
        return self.argv[0]

    @property
    def options(self) -> list[str]:
        return list(self.argv[1:])

    @property
    def text(self) -> str:
        return shlex.join(self.argv)


Side = TraceSide | RunSide


def parse_side(text: str) -> Side:
    """Read one side as written on the command line (see the module docstring)."""
    if text.endswith(TRACE_SUFFIX) and _is_a_file(text):
        return TraceSide(text)
    try:
        words = shlex.split(text)
    except ValueError as exc:  # an unclosed quote
        raise SideError(f"{text!r}: {exc}") from None
    if not words:
        raise SideError('an empty side: give a .kbtrace file or a kernel with its options, e.g. "gqa-decode --variant opt3"')
    if len(words) == 1 and not is_file_ref(words[0]) and (words[0].endswith(TRACE_SUFFIX) or os.sep in words[0] or "/" in words[0]):
        return TraceSide(words[0])
    return RunSide(tuple(words))


def _is_a_file(path: str) -> bool:
    try:
        return exists(path)
    except InputPathError:  # (too long a name, a locked folder: check_side says so when it opens it as one word)
        return False


#: kernbench run's analyses that a side of compare would not do
_NOT_IN_A_SIDE = {
    "--what-if": "compare runs both sides in full: re-time one run with `kernbench run … --what-if`",
    "--speedups": "compare attributes both sides, per line too: ask for speedups with `kernbench run … --explain --speedups`",
    "--by": "compare shows the path by cause and, when both sides run one file, by line",
}


def check_side(side: Side, *, saves: bool = True) -> Trace | argparse.Namespace:
    """Everything about a side that can fail before it runs: the trace file (opened and
    validated) or the kernel, its options and its topology. Raises :class:`SideError`.

    Returns the opened trace of a :class:`TraceSide` (so it is read once), a run's options
    (``kernbench run``'s namespace) for a :class:`RunSide`. Where a side cannot save its
    events (``saves`` false: the debugger's compare), ``--trace``/``--perfetto`` are refused.
    """
    try:
        if isinstance(side, TraceSide):
            from kernbench.events.tracefile import open_trace

            return open_trace(side.path)
        from kernbench.commands.run import check_run

        for flag, why in _NOT_IN_A_SIDE.items():  # (before the options are read: --by and --speedups would ask for --explain)
            if any(opt == flag or opt.startswith(flag + "=") for opt in side.options):
                raise SideError(f"{side.text}: {flag} is not taken inside a side ({why})")
        _spec, ns, _params = check_run(side.kernel, side.options)
        refused = [("json", "give --json to compare itself"), ("explain", "compare attributes both sides always")]
        if not saves:
            why = "the debugger's compare does not save a side: save it with `kernbench run … --trace FILE` and compare the file"
            refused += [("trace", why), ("perfetto", why)]
        for flag, why in refused:
            if getattr(ns, flag):
                raise SideError(f"{side.text}: --{flag} is not taken inside a side ({why})")
        return ns
    except KernbenchError as exc:  # each names what it read: the file, or the kernel and option
        raise SideError(str(exc)) from None
