"""A sweep's rows and their files: one per point, in grid order, as a table, CSV or JSON.

JSON (``--json``, ``--out FILE.json``) is a list of the points' run records
(:mod:`kernbench.record`, as ``kernbench run --json`` prints them, lists left
out), each with ``point``: its swept values by ``--grid`` key. A point that
failed is ``{"schema", "kernel", "point", "error"}``: its one-line error.

The table, the plot and CSV read flat rows: the swept values (one column per
``--grid`` key) followed by the record flattened
(:func:`~kernbench.sweep.metrics.point_metrics`, under the record's names); a
field named like a swept key is suffixed ``_resolved`` (``--grid pes=…`` and
the record's ``pes``: ``pes_resolved``, the value the run used). A failed
point's row has ``latency_ns`` empty and its ``error``. CSV columns are every
key met, in the order first met (a text cell that a spreadsheet would run as
a formula starts with ``'``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from kernbench.errors import KernbenchError
from kernbench.outputs import to_json
from kernbench.record import SCHEMA
from kernbench.sweep.grid import Point
from kernbench.sweep.metrics import point_metrics
from kernbench.sweep.point import Outcome

FORMATS = (".csv", ".json")


#: columns of time by reason or cause: a stall reason a point never met, or a cause its path never met (``--explain``), took 0 ns there
ZERO_WHEN_ABSENT = ("stall_ns_by_reason.", "attribution.by_cause.", "attribution.by_component_kind.")


def rows(points: Sequence[Point], outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """The flat rows of the points' outcomes (:func:`flat_rows` of their :func:`records`)."""
    return flat_rows(records("", points, outcomes))


def flat_rows(recs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sweep records (:func:`records`, or ``--json``'s list read back) as the table's flat rows."""
    out = []
    for rec in recs:
        row: dict[str, Any] = dict(rec["point"])
        if "error" in rec:
            row.update(latency_ns=None, error=rec["error"])
        else:
            swept = set(row)
            measured = point_metrics({k: v for k, v in rec.items() if k != "point"})
            row.update({f"{k}_resolved" if k in swept else k: v for k, v in measured.items()})
        out.append(row)
    spent = [c for c in columns(out) if c.startswith(ZERO_WHEN_ABSENT)]
    for row in out:
        if row.get("error") is None:
            for c in spent:
                row.setdefault(c, 0.0)
    return out


def records(kernel: str, points: Sequence[Point], outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """Each point's run record with its swept values as ``point``; a failed point's error in its place."""
    out: list[dict[str, Any]] = []
    for point, outcome in zip(points, outcomes, strict=True):
        if outcome.error is not None:
            out.append({"schema": SCHEMA, "kernel": kernel, "point": dict(point.values), "error": outcome.error})
        else:
            out.append({**(outcome.metrics or {}), "point": dict(point.values)})
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


def to_json_text(records: Sequence[dict[str, Any]]) -> str:
    return to_json(list(records), indent=2) + "\n"


def check_format(path: str) -> str:
    """``--out``'s format from its suffix."""
    suffix = "." + path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if suffix not in FORMATS:
        raise KernbenchError(f"--out {path}: name a .csv or .json file (the suffix says which)")
    return suffix


def render(table: Sequence[dict[str, Any]], records: Sequence[dict[str, Any]], path: str) -> str:
    """``--out``'s text: the flat rows as CSV, or the records as JSON."""
    return to_csv(table) if check_format(path) == ".csv" else to_json_text(records)
