"""One sweep point's metrics: a flat mapping of column name → number (or short text).

Built from what ``kernbench run --json`` reports (:func:`kernbench.commands.run.report`)
plus the run's per-engine busy totals, so a sweep row and ``kernbench run``
agree on every figure they share. This is the one place a new column goes
(with ``--explain``, the critical-path attribution's ``cause.<name>_ns`` and
``kind.<name>_ns`` totals).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernbench.analysis.critical import Attribution
from kernbench.events.types import ENGINES
from kernbench.runtime.api import RunResult

#: ``report()`` entries that describe the run rather than measure it (the sweep's own columns say which point it was).
_CONTEXT = frozenset({"kernel", "topology", "timing", "variant", "params", "engine_util_pct"})
_STANDARD = ("latency_ns", "commands", "dispatch_cycles", "pes", "max_abs_err")
Scalar = int | float | str | bool | None


def point_metrics(report: Mapping[str, Any], result: RunResult, attribution: Attribution | None = None) -> dict[str, Scalar]:
    """``report`` is ``kernbench run --json``'s object for ``result``.

    Columns: ``latency_ns``, ``commands``, ``dispatch_cycles``, ``pes``,
    ``max_abs_err``; ``stall_ns`` (PE_CPU stalled, summed over PEs);
    ``util_pct.<engine>`` (busy over latency × PEs, as ``run`` prints) and
    ``busy_ns.<engine>`` (summed over PEs) for every engine; then the
    kernel's own figures (``cmds_per_tile``, ``model_ns``, …). A column
    named like a kernel option is suffixed ``_resolved`` (``pes_resolved``,
    ``pes_per_head_resolved``: what the run used), so it never clashes with
    a swept option's column. With an ``attribution`` (``--explain``): the
    critical path's nanoseconds by cause (``cause.dispatch_ns``,
    ``cause.hbm_channel_drain_ns``, …) and by component kind
    (``kind.pe_cpu_ns``, ``kind.edge_ns``, …); each group sums to ``latency_ns``.
    """
    out: dict[str, Scalar] = {key: report[key] for key in _STANDARD}
    out["stall_ns"] = round(sum(result.stall_ns.values()), 6)
    for engine in ENGINES:
        out[f"util_pct.{engine}"] = report["engine_util_pct"][engine]
    for engine in ENGINES:
        out[f"busy_ns.{engine}"] = round(sum(busy[engine] for busy in result.engine_busy_ns.values()), 6)
    for key, value in report.items():
        if key not in _CONTEXT and key not in _STANDARD and _scalar(value):
            out[key] = value
    if attribution is not None:
        out.update({f"cause.{_column(cause)}_ns": round(ns, 6) for cause, ns in attribution.by_cause.items()})
        out.update({f"kind.{_column(kind)}_ns": round(ns, 6) for kind, ns in attribution.by_component_kind.items()})
    params = report.get("params", {})
    return {f"{key}_resolved" if key in params else key: value for key, value in out.items()}


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (int, float, str, bool))


def _column(name: str) -> str:
    """A cause or component kind as a column name: ``hbm channel drain`` → ``hbm_channel_drain``, ``fetch/store`` → ``fetch_store``."""
    return "".join(ch if ch.isalnum() else "_" for ch in name.lower())
