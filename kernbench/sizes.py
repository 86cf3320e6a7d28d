"""Byte counts as people write them: ``4KiB``, ``1MiB``, ``256B``, ``4096``."""

from __future__ import annotations

import re

UNITS = {"b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30}


def parse_size(text: str, what: str = "size") -> int:
    """``32KiB`` → 32768; a positive whole count of B, KiB, MiB or GiB (plain numbers are bytes)."""
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", str(text))
    unit = m.group(2).lower() if m else ""
    if not m or (unit and unit not in UNITS):
        raise ValueError(f"{what} {text!r}: write a whole count of B, KiB, MiB or GiB (e.g. 64KiB)")
    n = int(m.group(1)) * UNITS.get(unit, 1)
    if n <= 0:
        raise ValueError(f"{what} {text!r}: must be more than 0 bytes")
    return n


def size_label(size_bytes: int) -> str:
    """The largest binary unit that divides ``size_bytes`` exactly: ``64KiB``, ``1000B``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size_bytes % scale == 0:
            return f"{size_bytes // scale}{unit}"
    return f"{size_bytes}B"
