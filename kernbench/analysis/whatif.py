"""What-if re-timing: the recorded command graph under changed parameters or scaled work.

``kernbench run K --what-if CHANGE …`` runs the kernel once, then re-times
its command logs (:meth:`kernbench.runtime.api.Runtime.replay`: the same
commands, no kernel Python, no numerics) with the changes, and reports the
new latency and how each cause and each source line moved. A CHANGE is

``KEY.PATH=VALUE``
    a topology parameter, as ``--set`` takes it: the re-timed latency is
    exactly that of a full run with ``--set KEY.PATH=VALUE``;
``line:N*F`` or ``line:FILE.py:N*F``
    every command line ``N`` (of the kernel's file, or of FILE) issued —
    itself, or through a helper it called — does its PE work in ``F`` × the
    time (:mod:`kernbench.pe.scale`; 0 is "free", 0.5 "twice as fast");
``engine:KIND*F``
    every command's time on an engine kind (``PE_GEMM``, ``PE_MATH``,
    ``PE_FETCH_STORE``, ``PE_SCHEDULER``, ``PE_CPU``) scaled by ``F``.

:func:`speedups` asks, for each of the lines with the most time on the
critical path, what the whole run would gain if its work took no time and
half its time: a re-timing each, so the overlap a profile cannot see
(another line's work that was hidden behind it) is counted.
"""

from __future__ import annotations

import math
import os
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kernbench.analysis.critical import Attribution, attribute
from kernbench.analysis.lines import NO_LINE, LineCost, by_source
from kernbench.errors import RetimeError
from kernbench.events.source import parse_site
from kernbench.pe.requests import Issue
from kernbench.pe.scale import LANE_ENGINES, UNSCALABLE, WorkScale

if TYPE_CHECKING:
    from kernbench.runtime.api import RunResult, Runtime

_SCALED = re.compile(r"^(?P<what>line|engine):(?P<target>.+)\*(?P<factor>[^*]+)$")


@dataclass(frozen=True)
class WhatIf:
    """The changes of one re-timing: ``--set``-style overrides and scaled work."""

    overrides: tuple[str, ...] = ()
    lines: dict[str, float] = field(default_factory=dict)  # "file:line" -> factor
    engines: dict[str, float] = field(default_factory=dict)
    given: tuple[str, ...] = ()  # as the user wrote them

    def scale(self) -> WorkScale | None:
        return WorkScale(dict(self.lines), dict(self.engines)) if self.lines or self.engines else None


def source_lines(result: RunResult) -> dict[str, int]:
    """Every ``file:line`` on the stack of a command of ``result`` (innermost or a caller), with its commands."""
    out: dict[str, int] = {}
    seen: dict[str, tuple[str, ...]] = {}
    for log in result.command_logs.values():
        for req in log.requests:
            if isinstance(req, Issue) and req.src:
                wheres = seen.get(req.src)
                if wheres is None:
                    wheres = seen[req.src] = tuple(dict.fromkeys(f.where for f in parse_site(req.src)))
                for w in wheres:
                    out[w] = out.get(w, 0) + 1
    return out


def parse_what_ifs(changes: list[str], result: RunResult | None) -> WhatIf:
    """The ``--what-if`` arguments, checked against the run (a line must have issued commands);
    without a run (before it), every check but that one (a line is then kept as given)."""
    overrides: list[str] = []
    lines: dict[str, float] = {}
    engines: dict[str, float] = {}
    known: dict[str, int] | None = None
    for text in changes:
        m = _SCALED.match(text.strip())
        if m is None:
            if "=" not in text or text.startswith(("line:", "engine:")):
                raise RetimeError(
                    f"--what-if {text!r}: give KEY.PATH=VALUE (a topology parameter), line:N*F, line:FILE.py:N*F or engine:KIND*F"
                )
            overrides.append(text)
            continue
        factor = _factor(text, m.group("factor"))
        target = m.group("target").strip()
        if m.group("what") == "engine":
            engines[_engine(text, target)] = factor
        elif result is None:
            _line_number(text, target)
            lines[target] = factor
        else:
            known = known if known is not None else source_lines(result)
            lines[_line(text, target, known)] = factor
    return WhatIf(tuple(overrides), lines, engines, tuple(changes))


def _factor(text: str, raw: str) -> float:
    try:
        f = float(raw)
    except ValueError:
        raise RetimeError(f"--what-if {text!r}: the factor {raw!r} is not a number (0: no time, 0.5: half the time)") from None
    if not (math.isfinite(f) and f >= 0):
        raise RetimeError(f"--what-if {text!r}: the factor must be a finite number >= 0, not {raw}")
    return f


def _engine(text: str, name: str) -> str:
    kinds = sorted(set(LANE_ENGINES.values()))
    kind = LANE_ENGINES.get(name, name.upper())
    if kind in UNSCALABLE:
        raise RetimeError(f"--what-if {text!r}: {UNSCALABLE[kind]}; change its parameters instead (KEY.PATH=VALUE)")
    if kind not in kinds:
        raise RetimeError(f"--what-if {text!r}: no engine {name!r}; engines whose work scales: {', '.join(kinds)}")
    return kind


def _line(text: str, target: str, known: dict[str, int]) -> str:
    """``N`` or ``FILE:N`` → the ``file:line`` of the run's commands it names (one, or an error)."""
    file, num = _line_number(text, target)
    hits = sorted({w for w in known if w.rpartition(":")[2] == num and (not file or _same_file(w.rpartition(":")[0], file))})
    if not hits:
        top = sorted(known, key=lambda w: (-known[w], w))[:8]
        shown = ", ".join(f"{os.path.basename(w)}" for w in top) or "none (the run recorded no source lines)"
        raise RetimeError(f"--what-if {text!r}: no command came from {target}; lines that issued commands include {shown}")
    if len(hits) > 1:
        raise RetimeError(
            f"--what-if {text!r}: line {num} of several files issued commands ({', '.join(hits)}): say which, line:FILE.py:{num}*F"
        )
    return hits[0]


def _line_number(text: str, target: str) -> tuple[str, str]:
    file, _, num = target.rpartition(":")
    if not num.isdigit() or int(num) < 1:
        raise RetimeError(f"--what-if {text!r}: name a line as line:N*F or line:FILE.py:N*F (N a line number)")
    return file, num


def _same_file(path: str, given: str) -> bool:
    p, g = os.path.normpath(path), os.path.normpath(given)
    return p == g or p.endswith(os.sep + g) or os.path.abspath(g) == p


@dataclass(frozen=True)
class Retimed:
    """A what-if's answer: the re-timed run, its attribution (when recorded) and how long re-timing took
    (wall seconds: for benchmarks; outputs leave it out, so they are the same run after run)."""

    what: WhatIf
    result: RunResult
    attribution: Attribution | None
    wall_s: float


def retime(rt: Runtime, result: RunResult, what: WhatIf, *, record: bool = True) -> Retimed:
    """Re-time ``result``'s commands under ``what`` (no kernel code runs)."""
    t = time.perf_counter()
    new = rt.replay(result, overrides=list(what.overrides), record=record, scale=what.scale())
    wall = time.perf_counter() - t
    return Retimed(what, new, attribute(new.store(), new.latency_ns) if record else None, wall)


def deltas_json(before: Attribution, after: Retimed, lines: int = 20) -> dict[str, object]:
    """The what-if's record: the changes, the new latency, and the deltas per cause and per source line."""
    a1 = after.attribution
    assert a1 is not None
    causes = sorted(set(before.by_cause) | set(a1.by_cause))
    b_lines = {lc.key: lc for lc in by_source(before)}
    a_lines = {lc.key: lc for lc in by_source(a1)}
    keys = sorted(set(b_lines) | set(a_lines), key=lambda k: (-abs(_ns(a_lines, k) - _ns(b_lines, k)), k))
    return {
        "changes": list(after.what.given),
        "latency_ns": round(a1.latency_ns, 6),
        "before_ns": round(before.latency_ns, 6),
        "delta_ns": round(a1.latency_ns - before.latency_ns, 6),
        "by_cause": {c: {"before": round(before.by_cause.get(c, 0.0), 9), "after": round(a1.by_cause.get(c, 0.0), 9)} for c in causes},
        "by_line": [
            {
                "name": (b_lines.get(k) or a_lines[k]).name,
                "key": k,
                "before": round(_ns(b_lines, k), 9),
                "after": round(_ns(a_lines, k), 9),
                "delta": round(_ns(a_lines, k) - _ns(b_lines, k), 9),
            }
            for k in keys[:lines]
        ],
    }


def _ns(table: dict[str, LineCost], key: str) -> float:
    lc = table.get(key)
    return lc.ns if lc is not None else 0.0


@dataclass(frozen=True)
class Speedup:
    """One line's answer: its time on the path, and the run's gain if its work took 0 and ½ its time."""

    key: str
    name: str
    text: str
    path_ns: float
    gain_zero_ns: float
    gain_half_ns: float

    def as_json(self, latency_ns: float) -> dict[str, object]:
        return {
            "name": self.name,
            "key": self.key,
            "text": self.text,
            "path_ns": round(self.path_ns, 6),
            "path_share": round(self.path_ns / latency_ns, 9) if latency_ns > 0 else 0.0,
            "gain_if_zero_ns": round(self.gain_zero_ns, 6),
            "gain_if_half_ns": round(self.gain_half_ns, 6),
        }


def speedups(rt: Runtime, result: RunResult, a: Attribution, top: int = 5) -> list[Speedup]:
    """For each of the ``top`` lines with the most time on the critical path, the whole run's gain if its
    work took no time (``line:L*0``) and half its time (``line:L*0.5``): two re-timings each."""
    out = []
    for lc in [lc for lc in by_source(a) if lc.key != NO_LINE][:top]:
        gains = []
        for f in (0.0, 0.5):
            new = rt.replay(result, scale=WorkScale({lc.key: f}))
            gains.append(result.latency_ns - new.latency_ns)
        out.append(Speedup(lc.key, lc.name, lc.text, lc.ns, gains[0], gains[1]))
    return out
