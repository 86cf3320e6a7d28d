"""A one-line sparkline as text (readable without colour)."""

from __future__ import annotations

from collections.abc import Sequence

BARS = " ▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float], top: float | None = None) -> str:
    """One bar per value, scaled to ``top`` (default: the largest value)."""
    top = max(values, default=0.0) if top is None else top
    if top <= 0:
        return BARS[0] * len(values)
    out = []
    for v in values:
        level = 0 if v <= 0 else max(1, min(8, round(8 * v / top)))
        out.append(BARS[level])
    return "".join(out)
