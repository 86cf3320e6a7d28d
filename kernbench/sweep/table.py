"""A sweep's rows and their files: one row per point, in grid order, as CSV or JSON.

A row is the point's swept values (one column per ``--grid`` key) followed by
its metrics (:func:`~kernbench.sweep.metrics.point_metrics`: its run record
flattened, under the record's names); a metric named like a swept key is
suffixed ``_resolved`` (``--grid pes=…`` and the record's ``pes``:
``pes_resolved``, the value the run used). A point that
failed has ``latency_ns`` empty (JSON ``null``) and its one-line ``error``.
CSV columns are every key met, in the order first met (a text cell that a
spreadsheet would run as a formula starts with ``'``); JSON is a list of
objects.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from kernbench.errors import KernbenchError
from kernbench.outputs import to_json
from kernbench.sweep.grid import Point
from kernbench.sweep.point import Outcome

FORMATS = (".csv", ".json")


#: columns of time by reason or cause: a stall reason a point never met, or a cause its path never met (``--explain``), took 0 ns there
ZERO_WHEN_ABSENT = ("stall_ns_by_reason.", "attribution.by_cause.", "attribution.by_component_kind.")


def rows(points: Sequence[Point], outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    out = []
    for point, outcome in zip(points, outcomes, strict=True):
        row: dict[str, Any] = dict(point.values)
        if outcome.error is not None:
            row.update(latency_ns=None, error=outcome.error)
        else:
            swept = set(row)
            row.update({f"{k}_resolved" if k in swept else k: v for k, v in (outcome.metrics or {}).items()})
        out.append(row)
    spent = [c for c in columns(out) if c.startswith(ZERO_WHEN_ABSENT)]
    for row in out:
        if row.get("error") is None:
            for c in spent:
                row.setdefault(c, 0.0)
    return out


def columns(table: Sequence[dict[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for row in table:
        seen.update(dict.fromkeys(row))
    return list(seen)


#: what a spreadsheet reads as the start of a formula (``=HYPERLINK(…)`` in a topology name or path
#: would run when the CSV is opened); a text cell starting with one is written after a ``'``
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def to_csv(table: Sequence[dict[str, Any]]) -> str:
    buf = io.StringIO()
    names = columns(table)
    plain = csv.writer(buf, lineterminator="\n")
    # (csv quotes a field holding a character of the line terminator, "\n" here, but not a lone "\r",
    # which a reader takes for the end of the row: a row with one quotes every text field)
    quoted = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    for cells in ([_text_cell(n) for n in names], *(["" if row.get(c) is None else _text_cell(row[c]) for c in names] for row in table)):
        (quoted if any(isinstance(c, str) and "\r" in c for c in cells) else plain).writerow(cells)
    return buf.getvalue()


def _text_cell(value: Any) -> Any:
    """A text value that a spreadsheet would take for a formula, written as text (``'=1+1``); numbers as they are."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def to_json_text(table: Sequence[dict[str, Any]]) -> str:
    return to_json(list(table), indent=2) + "\n"


def check_format(path: str) -> str:
    """``--out``'s format from its suffix."""
    suffix = "." + path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if suffix not in FORMATS:
        raise KernbenchError(f"--out {path}: name a .csv or .json file (the suffix says which)")
    return suffix


def render(table: Sequence[dict[str, Any]], path: str) -> str:
    return to_csv(table) if check_format(path) == ".csv" else to_json_text(table)
