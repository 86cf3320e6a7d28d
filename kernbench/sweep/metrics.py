"""One sweep point's metrics: its run record (:mod:`kernbench.record`) as one flat row.

A row holds what ``kernbench run --json`` reports for the point, nested
objects flattened to ``parent.key`` columns (``engine_util_pct.cpu``,
``engine_busy_ns.dma.rd``, ``stall_ns_by_reason.recv wait``; with
``--explain`` ``attribution.by_cause.dispatch`` and
``attribution.by_component_kind.edge``, each group summing to
``latency_ns``), lists and the ``params`` object left out (the row's swept
values say which point it was). A kernel's own figure named like one of its
options is suffixed ``_resolved`` (``pes_resolved``: what the run used), so
it never clashes with a swept option's column.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernbench.record import flatten

Scalar = int | float | str | bool | None


def point_metrics(record: Mapping[str, Any]) -> dict[str, Scalar]:
    """``record`` is ``kernbench run --json``'s object for the point."""
    params = record.get("params", {})
    return {f"{key}_resolved" if key in params else key: value for key, value in flatten(record).items()}
