"""One sweep point's result: its run record (:mod:`kernbench.record`), and that record as one flat row.

A point's result is what ``kernbench run --json`` reports for it, the same
record under the same names, with its lists left out (the attribution's
``top`` and ``path``, with ``--explain``: a sweep keeps the nanoseconds
``by_cause`` and ``by_component_kind``, each summing to ``latency_ns``).
That is what is cached and what ``--json`` / ``--out FILE.json`` give (with
the point's swept values as ``point``). The table, the plot and
``--out FILE.csv`` read it flattened (:func:`kernbench.record.flatten`):
nested objects as ``parent.key`` columns (``engine_util_pct.cpu``,
``engine_busy_ns.dma.rd``, ``stall_ns_by_reason.recv wait``), the context
(kernel, topology, options, overrides) left out, as the row's swept values
say which point it was (:mod:`kernbench.sweep.table`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernbench.record import flatten, without_lists

Scalar = int | float | str | bool | None


def point_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` (``kernbench run --json``'s object for the point) as a sweep keeps it: its lists left out."""
    return without_lists(record)


def point_metrics(record: Mapping[str, Any]) -> dict[str, Scalar]:
    """A point's record as one flat row of measurements (the table's, the CSV's)."""
    return flatten(record)
