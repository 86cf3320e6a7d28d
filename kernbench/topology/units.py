"""The unit of every topology parameter, read from its key's name.

Numbers carry their unit in their key (``bw_gbps``, ``prop_ns``,
``slice_capacity_bytes``); :data:`SUFFIX_UNITS` is the one table from a name's
ending to its unit. The few keys without a unit suffix (counts, indices,
router names, switches) are listed by name in :data:`NAMED_UNITS`.
``tests/topology/test_units_and_provenance.py`` checks that every key of the schema has a
unit, so a new key needs a unit suffix or an entry here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Unit:
    """How a value is measured: ``symbol`` as printed, what it means, and the words a
    YAML comment uses for such a quantity (how a ``[hw]``/``[cal]`` marker names it)."""

    symbol: str
    meaning: str
    words: tuple[str, ...] = ()


GBPS = Unit("GB/s", "gigabytes per second (= bytes per ns)", ("GB/s", "bandwidth", "BW"))
NS = Unit("ns", "nanoseconds", ("ns", "latency", "delay"))
COUNT = Unit("count", "how many")
INDEX = Unit("index", "position from 0 (-1: none)")
ROUTER = Unit("router", "a router's name in cube.routers")
SWITCH = Unit("on/off", "true or false")
TEXT = Unit("text", "free text")
RATIO = Unit("×", "a ratio to another parameter")
FLITS = Unit("flits", "NoC flits (flit_bytes each)")

#: key-name ending → unit; the longest ending that matches wins
SUFFIX_UNITS: dict[str, Unit] = {
    "gbps": GBPS,
    "ns": NS,
    "bytes": Unit("B", "bytes"),
    "cycles": Unit("cycles", "PE clock cycles"),
    "ghz": Unit("GHz", "gigahertz (cycles per ns)"),
    "tflops": Unit("TFLOP/s", "10^12 floating-point operations per second"),
    "byte_cycles_recip": Unit("cycles/B", "PE clock cycles per (logical) byte: the reciprocal of bytes per cycle"),
    "elems_per_cycle": Unit("elements/cycle", "vector elements per PE clock cycle"),
}

#: keys whose name has no unit suffix
NAMED_UNITS: dict[str, Unit] = {
    "sips": COUNT,
    "width": COUNT,
    "height": COUNT,
    "count": COUNT,
    "channels_per_slice": COUNT,
    "sched_queue_depth": COUNT,
    "composite_buffers": COUNT,
    "banks_per_channel": COUNT,
    "gemm_array_rows": COUNT,
    "gemm_array_cols": COUNT,
    "credit_buffer_flits": FLITS,
    "gemm_fp8_peak_ratio": RATIO,
    "gemm_f32_peak_ratio": RATIO,
    "tcm_port_shared": SWITCH,
    "attach_sip": INDEX,
    "attach_cube": INDEX,
    "half": INDEX,
    "attach": ROUTER,
    "ucie_attach": ROUTER,
    "a": ROUTER,
    "b": ROUTER,
    "x": SWITCH,
    "y": SWITCH,
    "name": TEXT,
    "description": TEXT,
}

_BY_LENGTH = sorted(SUFFIX_UNITS.items(), key=lambda item: -len(item[0]))


def unit_of(key: str) -> Unit | None:
    """The unit of the parameter named ``key`` (its last name, ``bw_gbps``; not a path), or None."""
    if key in NAMED_UNITS:
        return NAMED_UNITS[key]
    for suffix, unit in _BY_LENGTH:
        if key == suffix or key.endswith("_" + suffix):
            return unit
    return None
