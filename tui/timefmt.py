"""Simulated time as people read it: ``1.25µs``, ``340ns``, ``2ms``."""

from __future__ import annotations

import math
import re

from kernbench.errors import KernbenchError

_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))
_PARSE_UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3, "µs": 1e3, "ns": 1.0, "": 1.0}
_TIME_RE = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(s|ms|us|µs|ns)?\s*$")


class TimeParseError(KernbenchError):
    """A time typed by the user is not a number with an optional unit."""


def unit_for(span_ns: float) -> tuple[str, float]:
    """The largest unit in which ``span_ns`` is at least 1."""
    for name, scale in _UNITS:
        if abs(span_ns) >= scale:
            return name, scale
    return "ns", 1.0


def format_ns(t_ns: float, resolution_ns: float | None = None) -> str:
    """Format ``t_ns`` in the unit of its magnitude, to ``resolution_ns``.

    Without a resolution, up to three decimals are kept (trailing zeros
    dropped): ``format_ns(1500) == "1.5µs"``.
    """
    ref = max(abs(t_ns), abs(resolution_ns or 0.0))
    name, scale = unit_for(ref)
    return format_in(t_ns, name, scale, resolution_ns)


def format_in(t_ns: float, unit: str, scale: float, resolution_ns: float | None = None) -> str:
    """Format ``t_ns`` in a given unit (axes keep one unit for every tick)."""
    value = t_ns / scale
    if resolution_ns:
        step = resolution_ns / scale
        digits = min(6, max(0, math.ceil(-math.log10(step) - 1e-9))) if step < 1 else 0
        return f"{value:.{digits}f}{unit}"
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return f"{'0' if text in ('-0', '') else text}{unit}"


def parse_time(text: str) -> float:
    """``"1.5us"`` → 1500.0; a bare number is nanoseconds."""
    m = _TIME_RE.match(text.replace(",", ""))
    if not m:
        raise TimeParseError(f"not a time: {text!r} (try 250, 250ns, 1.5us, 2ms)")
    return float(m.group(1)) * _PARSE_UNITS[m.group(2) or ""]


def nice_step(raw_ns: float) -> float:
    """The smallest 1-2-5×10^k not below ``raw_ns``."""
    if raw_ns <= 0:
        return 1.0
    exp = math.floor(math.log10(raw_ns))
    for mult in (1, 2, 5, 10):
        step = mult * 10.0**exp
        if step >= raw_ns * (1 - 1e-12):
            return step
    return 10.0 ** (exp + 1)
