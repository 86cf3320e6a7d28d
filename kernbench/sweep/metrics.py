"""One sweep point's metrics: its run record (:mod:`kernbench.record`) as one flat row.

A row holds what ``kernbench run --json`` reports for the point, nested
objects flattened to ``parent.key`` columns (``engine_util_pct.cpu``,
``engine_busy_ns.dma.rd``, ``stall_ns_by_reason.recv wait``; with
``--explain`` ``attribution.by_cause.dispatch`` and
``attribution.by_component_kind.edge``, each group summing to
``latency_ns``), lists and the ``params`` object left out (the row's swept
values say which point it was). Kept under the record's own names: a row
is the swept values and then this (:mod:`kernbench.sweep.table`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernbench.record import flatten

Scalar = int | float | str | bool | None


def point_metrics(record: Mapping[str, Any]) -> dict[str, Scalar]:
    """``record`` is ``kernbench run --json``'s object for the point."""
    return flatten(record)
