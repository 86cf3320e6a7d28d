"""The kernel's source as the debugger shows it, without Textual: which commands each line issued.

Every DISPATCH (and ``tl.cycles``) of a recording names the source site that
issued it (:mod:`kernbench.events.source`). :class:`SourceIndex` groups a
recording's commands by the innermost line of that site, per PE and in time
order, so the Source view can say which line PE_CPU was issuing at the
cursor, and ``enter`` can step through a line's commands on the timeline.
The critical path's nanoseconds per line (the heat column) come from
:func:`kernbench.analysis.lines.by_source`.
"""

from __future__ import annotations

import bisect
import linecache
from dataclasses import dataclass

import numpy as np

from kernbench.analysis.critical import Attribution
from kernbench.analysis.lines import LineCost, by_source
from kernbench.events.source import innermost
from kernbench.events.store import EventStore
from kernbench.events.types import Event, EventKind
from kernbench.topology.ids import pe_of

NO_SOURCE = "no source lines in this recording (recorded before trace format v3)"


@dataclass(frozen=True)
class LineCommands:
    """The commands one source line issued: their store rows and start times, in time order."""

    file: str
    line: int
    rows: tuple[int, ...]
    starts: tuple[float, ...]
    seqs: tuple[int, ...]  # the events' seq: which of them a selected event is


@dataclass(frozen=True, eq=False)
class SourceIndex:
    """A recording's commands by source line (``file:line`` of the innermost user frame)."""

    lines: dict[str, LineCommands]
    by_corr: dict[int, str]  # a command's corr id -> its line
    issued: dict[str, tuple[tuple[float, ...], tuple[str, ...]]]  # PE -> (dispatch starts, their lines), in time order

    @classmethod
    def of(cls, store: EventStore) -> SourceIndex:
        kind, src = store.col("kind"), store.col("src")
        rows = np.flatnonzero(np.isin(kind, [int(EventKind.DISPATCH), int(EventKind.CPU_WORK)]) & (src > 0))
        t, corr, comp, seq = store.col("t_ns"), store.col("corr_id"), store.col("component"), store.col("seq")
        key_of: dict[int, tuple[str, str, int]] = {}
        acc: dict[str, tuple[str, int, list[int], list[float], list[int]]] = {}
        by_corr: dict[int, str] = {}
        per_pe: dict[str, tuple[list[float], list[str]]] = {}
        for r in rows.tolist():  # rows are in time order already
            s = int(src[r])
            hit = key_of.get(s)
            if hit is None:
                f = innermost(store.strings[s])
                assert f is not None  # (src > 0: a site)
                hit = key_of[s] = (f.where, f.file, f.line)
            key = hit[0]
            entry = acc.setdefault(key, (hit[1], hit[2], [], [], []))
            entry[2].append(r)
            entry[3].append(float(t[r]))
            entry[4].append(int(seq[r]))
            if corr[r] >= 0:
                by_corr[int(corr[r])] = key
            pe = pe_of(store.components[int(comp[r])]) or ""
            starts, keys = per_pe.setdefault(pe, ([], []))
            starts.append(float(t[r]))
            keys.append(key)
        return cls(
            lines={k: LineCommands(f, n, tuple(rs), tuple(ts), tuple(sq)) for k, (f, n, rs, ts, sq) in acc.items()},
            by_corr=by_corr,
            issued={pe: (tuple(s), tuple(k)) for pe, (s, k) in per_pe.items()},
        )

    def files(self) -> list[str]:
        """The files the recording's commands came from, the one with most commands first."""
        count: dict[str, int] = {}
        for lc in self.lines.values():
            count[lc.file] = count.get(lc.file, 0) + len(lc.rows)
        return sorted(count, key=lambda f: (-count[f], f))

    def line_of(self, event: Event | None) -> str | None:
        """The line that issued ``event``'s command (any span of the command: its corr id)."""
        if event is None:
            return None
        return self.by_corr.get(event.corr_id) if event.corr_id >= 0 else None

    def line_at(self, t_ns: float, pes: list[str] | tuple[str, ...] = ()) -> str | None:
        """The line of the last command issued at or before ``t_ns`` on ``pes`` (all PEs when none)."""
        best: tuple[float, str] | None = None
        for pe, (starts, keys) in self.issued.items():
            if pes and pe not in pes:
                continue
            i = bisect.bisect_right(starts, t_ns) - 1
            if i >= 0 and (best is None or starts[i] > best[0]):
                best = (starts[i], keys[i])
        return best[1] if best is not None else None

    def next_command(self, key: str, t_ns: float, current: Event | None = None) -> tuple[int, int] | None:
        """(row, index) of ``key``'s command after ``current`` (one of its commands: the next in time order,
        PE by PE at one instant), else its first starting after ``t_ns``; the first one again after its last."""
        lc = self.lines.get(key)
        if lc is None or not lc.rows:
            return None
        if current is not None and current.seq in lc.seqs:
            i = lc.seqs.index(current.seq) + 1
        else:
            i = bisect.bisect_right(lc.starts, t_ns)
        i = i if i < len(lc.rows) else 0
        return lc.rows[i], i


@dataclass(frozen=True, eq=False)
class PathLines:
    """The critical path's segments per source line, in time order, to say how much of each line's path
    time lies before a given instant (the Source view's column that follows the cursor)."""

    spans: dict[str, tuple[list[float], list[float], list[float]]]  # key -> (starts, ends, path ns before each)

    @classmethod
    def of(cls, attribution: Attribution) -> PathLines:
        acc: dict[str, tuple[list[float], list[float], list[float]]] = {}
        total: dict[str, float] = {}
        for seg in attribution.path:  # (in time order: the path's segments tile [0, latency])
            f = innermost(seg.src)
            key = f.where if f is not None else ""
            starts, ends, before = acc.setdefault(key, ([], [], []))
            starts.append(seg.start_ns)
            ends.append(seg.end_ns)
            before.append(total.get(key, 0.0))
            total[key] = total.get(key, 0.0) + seg.ns
        return cls(acc)

    def ns_until(self, key: str, t_ns: float) -> float:
        """Nanoseconds of the path on ``key``'s commands from 0 to ``t_ns``."""
        hit = self.spans.get(key)
        if hit is None:
            return 0.0
        starts, ends, before = hit
        i = bisect.bisect_right(starts, t_ns) - 1
        if i < 0:
            return 0.0
        return before[i] + min(t_ns, ends[i]) - starts[i]


def file_lines(path: str) -> list[str]:
    """The lines of a source file as it is now (empty when it cannot be read)."""
    return [line.rstrip("\n") for line in linecache.getlines(path)]


def line_key(file: str, line: int) -> str:
    return f"{file}:{line}"


def heat(attribution_lines: list[LineCost]) -> dict[str, LineCost]:
    """The critical path's time per ``file:line`` key."""
    return {lc.key: lc for lc in attribution_lines}


__all__ = ["NO_SOURCE", "LineCommands", "PathLines", "SourceIndex", "by_source", "file_lines", "heat", "line_key"]
