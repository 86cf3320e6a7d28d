"""``--plot METRIC:KEY``: one metric against one swept key, drawn in the terminal with plotext.

One line per combination of the other swept keys' values (its label says
which), points in grid order. A numeric key is an x axis with a tick at
every swept value (a log axis when the values span a factor of
:data:`LOG_RATIO` or more); any other key (``variant``) is a row of categories.
Failed points are left out. Every line has its own marker, so the lines
stay apart without colour (``NO_COLOR``, a pipe, this README).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from kernbench.errors import KernbenchError
from kernbench.sweep.grid import show

#: A numeric key whose largest value is this many times its smallest is drawn on a log axis (512 … 32768).
LOG_RATIO = 8
MARKERS = ("•", "+", "x", "o", "*", "#", "@", "%", "=", "~")
WIDTH, HEIGHT = 78, 20


def parse_spec(text: str, swept: Sequence[str]) -> tuple[str, str]:
    """``METRIC:KEY`` → (metric, key); the key must be swept."""
    from kernbench.kernels.registry import suggest

    metric, sep, key = text.rpartition(":")
    if not sep or not metric or not key:
        raise KernbenchError(f"--plot {text}: expected METRIC:KEY (e.g. latency_ns:context)")
    if key not in swept:
        guesses = suggest(key, list(swept))
        hint = f" (did you mean {guesses[0]!r}?)" if guesses else ""
        raise KernbenchError(f"--plot {text}: {key!r} is not a swept key{hint}; the swept keys are {', '.join(swept)}")
    return metric, key


def series(table: Sequence[dict[str, Any]], metric: str, key: str, swept: Sequence[str]) -> dict[str, list[tuple[Any, float]]]:
    """``{line label: [(key value, metric value), …]}``, lines and points in grid order."""
    others = [k for k in swept if k != key]
    ok = [row for row in table if "error" not in row]
    if ok and all(metric not in row for row in ok):
        known = [c for c, v in ok[0].items() if c not in swept and isinstance(v, (int, float)) and not isinstance(v, bool)]
        raise KernbenchError(f"--plot {metric}:{key}: no point has a metric {metric!r}; numeric ones: {', '.join(known)}")
    lines: dict[str, list[tuple[Any, float]]] = {}
    for row in table:
        value = row.get(metric)
        if value is None:
            continue  # a failed point
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise KernbenchError(f"--plot {metric}:{key}: {metric} is not a number ({value!r})")
        label = ", ".join(f"{k}={show(row[k])}" for k in others) or metric
        lines.setdefault(label, []).append((row[key], float(value)))
    return lines


def render(
    table: Sequence[dict[str, Any]],
    metric: str,
    key: str,
    swept: Sequence[str],
    *,
    width: int = WIDTH,
    height: int = HEIGHT,
    color: bool = False,
) -> str:
    """The plot as text, its legend (marker and label of each line) below it."""
    import plotext

    lines = series(table, metric, key, swept)
    if not lines:
        return f"(nothing to plot: no point has {metric})"
    xs = list(dict.fromkeys(x for points in lines.values() for x, _ in points))
    numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xs)
    logarithmic = numeric and min(xs) > 0 and max(xs) >= LOG_RATIO * min(xs)
    where = {x: (math.log2(x) if logarithmic else x if numeric else i + 1) for i, x in enumerate(xs)}
    ys = [y for points in lines.values() for _, y in points]
    fig = plotext.figure
    fig.clear()
    try:
        fig.plot_size(width, height)
        if not color:
            fig.theme("colorless")
        for i, points in enumerate(lines.values()):
            signal = fig.signal([where[x] for x, _ in points], [y for _, y in points], marker=MARKERS[i % len(MARKERS)])
            signal.lines()
            fig.draw(signal)
        if xs:
            shown = xs[:: -(-len(xs) // MAX_TICKS)]
            fig.ruler(0).ticks([where[x] for x in shown], [show(x) for x in shown])
            fig.ruler(1).ticks(*_y_ticks(min(ys), max(ys)))
        fig.title(f"{metric} by {key}")
        fig.label(f"{key} (log scale)" if logarithmic else key, axis=0)
        text: str = fig.build().string(colorless=not color)
    finally:
        fig.clear()
    legend = "   ".join(f"{MARKERS[i % len(MARKERS)]} {label}" for i, label in enumerate(lines))
    return text.rstrip("\n") + "\n" + legend


MAX_TICKS = 12


def _y_ticks(low: float, high: float, count: int = 5) -> tuple[list[float], list[str]]:
    """``count`` evenly spaced ticks from ``low`` to ``high``, written plainly (1,223 rather than 1.2e3)."""
    if high <= low:
        return [low], [_number(low, 0.0)]
    ticks = [low + (high - low) * i / (count - 1) for i in range(count)]
    return ticks, [_number(t, high - low) for t in ticks]


def _number(value: float, span: float) -> str:
    if span >= 10 or (span == 0 and abs(value) >= 10):
        return f"{value:,.0f}"
    return f"{value:.4g}"
