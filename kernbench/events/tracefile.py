"""Versioned trace files (``.kbtrace``): an event store plus what produced it.

Layout (little-endian)::

    offset  size  field
    0       8     magic  b"KBTRACE\\0"
    8       2     format version (u16)
    10      2     flags (u16, 0)
    12      4     header length H (u32)
    16      8     payload length P (u64)
    24      4     CRC-32 of header + payload (u32)
    28      H     header: UTF-8 JSON {metadata, components, strings, n_events}
    28+H    P     payload: ``np.savez_compressed`` of the store's columns

A file that is not a trace, is cut short, fails its checksum or was written
by a newer format raises :class:`~kernbench.errors.TraceFormatError` naming
the file and what is wrong.
"""

from __future__ import annotations

import io
import json
import math
import os
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import numpy as np
from numpy.lib import format as npformat

from kernbench.errors import InputPathError, TraceFormatError
from kernbench.events.store import COLUMNS, EventStore
from kernbench.inputs import meaning, open_regular
from kernbench.outputs import write_atomic
from kernbench.printable import printable

MAGIC = b"KBTRACE\x00"
#: v2 added the ``pred`` column (v1 files read with every pred -1); v3 the ``src`` column, the
#: kernel source site of each command (v1/v2 files read with every src "": no line is known)
FORMAT_VERSION = 3
#: Columns a version's files lack, and the value each event gets for them.
_ADDED_IN: dict[str, tuple[int, int]] = {"pred": (2, -1), "src": (3, 0)}
_FIXED = struct.Struct("<8sHHIQI")
_Fail = Callable[[str], TraceFormatError]  # the error to raise, naming the file


@dataclass(frozen=True)
class TraceMetadata:
    """What a trace is a trace of."""

    kernel: str = ""
    topology: str = ""
    variant: str = ""
    end_ns: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class Trace(NamedTuple):
    store: EventStore
    metadata: TraceMetadata


def trace_bytes(store: EventStore, metadata: TraceMetadata | None = None) -> bytes:
    """``store`` and ``metadata`` in the trace file format."""
    metadata = metadata or TraceMetadata(end_ns=store.end_ns)
    header = json.dumps(
        {
            "metadata": asdict(metadata),
            "components": store.components,
            "strings": store.strings,
            "n_events": len(store),
        },
        sort_keys=True,
    ).encode("utf-8")
    buf = io.BytesIO()
    # numeric columns only (allow_pickle is a keyword of its own, not a column)
    np.savez_compressed(buf, allow_pickle=False, **{name: np.asarray(col) for name, col in store.columns().items()})
    payload = buf.getvalue()
    crc = zlib.crc32(payload, zlib.crc32(header))
    return _FIXED.pack(MAGIC, FORMAT_VERSION, 0, len(header), len(payload), crc) + header + payload


def save_trace(path: str | os.PathLike[str], store: EventStore, metadata: TraceMetadata | None = None) -> None:
    """Write :func:`trace_bytes` to ``path`` (whole or not at all: :func:`~kernbench.outputs.write_atomic`)."""
    data = trace_bytes(store, metadata)
    write_atomic(path, lambda f: f.write(data))


MAX_TRACE_BYTES = 4 * 2**30
MAX_TRACE_EVENTS = 200_000_000
_NPY_HEADERS = {(1, 0): npformat.read_array_header_1_0, (2, 0): npformat.read_array_header_2_0}
_META_TYPES: dict[str, type | tuple[type, ...]] = {"kernel": str, "topology": str, "variant": str, "end_ns": (int, float), "extra": dict}


def open_trace(path: str | os.PathLike[str]) -> Trace:
    """Read a trace file; every problem is a :class:`TraceFormatError`.

    The checksum only says the bytes are the ones written; the structure is
    validated too (header types, each column's ``.npy`` header, dtype and
    length, finite times, indices in range, names without control
    characters) and so is what a recorded run always holds (times from 0 to
    its end, spans that do not end before they start, distinct ``seq``, each
    ``pred`` an earlier event), and nothing larger than the header promises
    is ever allocated.
    """
    path = Path(path)

    def fail(what: str) -> TraceFormatError:
        return TraceFormatError(f"{path}: {what}")

    try:
        with open_regular(path) as f:
            head = f.read(_FIXED.size)
            data = _read_rest(f, head, fail)
    except InputPathError as exc:
        raise fail("no such trace file" if exc.problem == "no such file" else exc.problem) from None
    except OSError as exc:
        raise fail(f"cannot read trace file ({meaning(exc)})") from None
    _magic, version, _flags, h_len, _p_len, crc = _FIXED.unpack_from(data)
    header = data[_FIXED.size : _FIXED.size + h_len]
    payload = data[_FIXED.size + h_len :]
    if zlib.crc32(payload, zlib.crc32(header)) != crc:
        raise fail("corrupt: checksum mismatch (the file was altered or damaged)")
    meta, components, strings, n_events = _read_header(header, fail)
    columns = _read_columns(payload, n_events, version, fail)
    _check_events(columns, meta.end_ns, fail)
    try:
        store = EventStore.from_columns(columns, components, strings)
    except ValueError as exc:
        raise fail(f"corrupt: {exc}") from None
    _check_sites(store, fail)
    return Trace(store, meta)


def _check_sites(store: EventStore, fail: _Fail) -> None:
    """Each source site (the ``src`` column) reads as one (``FILE:LINE:FUNCTION`` frames): the analyses parse them."""
    from kernbench.events.source import parse_site

    for i in np.unique(store.col("src")).tolist():
        if i > 0:
            try:
                parse_site(store.strings[i])
            except ValueError:
                raise fail(f"corrupt: the source site '{store.strings[i][:80]}' is not FILE:LINE:FUNCTION frames") from None


def _read_rest(f: BinaryIO, head: bytes, fail: _Fail) -> bytes:
    """The whole file, once the fixed header has said how long it is."""
    if len(head) < _FIXED.size:
        if head and not MAGIC.startswith(head[: len(MAGIC)]):
            raise fail("not a kernbench trace file (bad magic bytes)")
        raise fail(f"truncated: {len(head)} bytes, shorter than the {_FIXED.size}-byte file header")
    magic, version, _flags, h_len, p_len, _crc = _FIXED.unpack_from(head)
    if magic != MAGIC:
        raise fail("not a kernbench trace file (bad magic bytes)")
    if version > FORMAT_VERSION:
        raise fail(
            f"written by a newer kernbench (trace format v{version}); this version reads "
            f"up to v{FORMAT_VERSION} — upgrade kernbench to open it"
        )
    if version < 1:
        raise fail(f"corrupt: invalid trace format version {version}")
    expected = _FIXED.size + h_len + p_len
    if expected > MAX_TRACE_BYTES:
        raise fail(f"corrupt or too large: the header promises {expected:,} bytes, the limit is {MAX_TRACE_BYTES:,}")
    rest = f.read(expected - _FIXED.size + 1)
    size = _FIXED.size + len(rest)
    if size < expected:
        raise fail(f"truncated: {size} bytes, the header promises {expected}")
    if size > expected or f.read(1):
        raise fail("corrupt: unexpected bytes after the payload")
    return head + rest


def _read_header(header: bytes, fail: _Fail) -> tuple[TraceMetadata, list[str], list[str], int]:
    try:
        head = json.loads(header.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise fail(f"corrupt: unreadable header ({type(exc).__name__})") from None
    if not isinstance(head, dict) or not {"metadata", "components", "strings", "n_events"} <= set(head):
        raise fail("corrupt: the header lacks metadata, components, strings or n_events")
    meta, components, strings, n_events = head["metadata"], head["components"], head["strings"], head["n_events"]
    if (
        not isinstance(meta, dict)
        or set(meta) - set(_META_TYPES)
        or not all(isinstance(meta[k], t) and not isinstance(meta[k], bool) for k, t in _META_TYPES.items() if k in meta)
    ):
        raise fail("corrupt: malformed metadata in the header")
    if "end_ns" in meta and not (math.isfinite(meta["end_ns"]) and meta["end_ns"] >= 0):
        raise fail(f"corrupt: metadata end_ns {meta['end_ns']} is not a time of the run (a finite number of ns, 0 or more)")
    if not (isinstance(components, list) and all(isinstance(c, str) for c in components) and len(set(components)) == len(components)):
        raise fail("corrupt: the component table is not a list of distinct names")
    if not (isinstance(strings, list) and strings[:1] == [""] and all(isinstance(x, str) for x in strings)):
        raise fail("corrupt: the string table is malformed")
    if isinstance(n_events, bool) or not isinstance(n_events, int) or not 0 <= n_events <= MAX_TRACE_EVENTS:
        raise fail(f"corrupt: n_events {str(n_events)[:40]} is not a count of events")
    shown = next((printable(x) for x in (*components, *strings, *meta.values()) if isinstance(x, str) and printable(x) != x), None)
    if shown is not None:  # (a trace's names are printed: an escape sequence would reach the terminal)
        raise fail(f"corrupt: a name holds a control character: '{shown[:80]}'")
    return TraceMetadata(**meta), components, strings, n_events


def _read_columns(payload: bytes, n_events: int, version: int, fail: _Fail) -> dict[str, np.ndarray]:
    """Each column from its ``.npy`` member, checked before any array is allocated."""
    columns = {}
    try:
        with zipfile.ZipFile(io.BytesIO(payload)) as zf:
            for name, dtype in COLUMNS.items():
                since, default = _ADDED_IN.get(name, (1, 0))
                if version < since:  # an older file: the column did not exist yet
                    columns[name] = np.full(n_events, default, dtype=dtype)
                    continue
                info = zf.getinfo(f"{name}.npy")
                with zf.open(info) as member:
                    read_header = _NPY_HEADERS[npformat.read_magic(member)]
                    shape, fortran, got = read_header(member, max_header_size=1024)
                    if got != dtype or shape != (n_events,) or fortran:
                        raise ValueError(f"column {name!r} is {got}{shape}, expected {dtype}({n_events},)")
                    raw = member.read(n_events * dtype.itemsize + 1)
                if len(raw) != n_events * dtype.itemsize:
                    raise ValueError(f"column {name!r} holds {len(raw)} bytes, expected {n_events * dtype.itemsize}")
                columns[name] = np.frombuffer(raw, dtype=dtype)
    except TraceFormatError:
        raise
    except Exception as exc:  # anything a damaged zip or .npy header raises is corruption, not a bug
        raise fail(f"corrupt: unreadable event columns ({type(exc).__name__}: {str(exc)[:120]})") from None
    for name in ("t_ns", "end_ns", "value"):
        if not np.isfinite(columns[name]).all():
            raise fail(f"corrupt: column {name!r} holds a non-finite number")
    return columns


#: how far a trace's end (metadata ``end_ns``) may fall short of its last event's end: rounding only
END_TOLERANCE_NS = 1e-6
#: how far past its last event's end a trace's end may lie (a run ends as its last event does; this is slack)
END_SLACK_NS = 1.0


def _check_events(columns: dict[str, np.ndarray], end_ns: float, fail: _Fail) -> None:
    """What a recorded run always holds, which the analyses rely on: times from 0 on, no span ending
    before it starts, nothing after the run's end (``end_ns``; 0 when unknown, as in a partial
    trace), one event per ``seq``, and each ``pred`` the ``seq`` of an event published earlier (the
    bus hands out a seq only as it publishes, so a cause always precedes its effect; that also rules
    out a loop of causes)."""
    t, end, seq, pred = columns["t_ns"], columns["end_ns"], columns["seq"], columns["pred"]
    if len(t) == 0:
        return
    if end_ns > 0 and end.max() > end_ns + END_TOLERANCE_NS * max(1.0, end_ns):
        raise fail(f"corrupt: the run ends at {end_ns} ns (metadata end_ns) but an event ends later, at {end.max()} ns")
    if end_ns > end.max() + END_SLACK_NS + END_TOLERANCE_NS * end_ns:  # (a run ends when its last event does)
        raise fail(f"corrupt: the run ends at {end_ns} ns (metadata end_ns), long after its last event ends, at {end.max()} ns")
    if t.min() < 0:
        raise fail(f"corrupt: an event at t={t.min()} ns, before the run began (0 ns)")
    if (end < t).any():
        i = int(np.argmax(end < t))
        raise fail(f"corrupt: an event ends at {end[i]} ns, before it starts at {t[i]} ns")
    if seq.min() < 0:
        raise fail(f"corrupt: event number (seq) {seq.min()} is negative")
    ordered = np.sort(seq)
    if (ordered[1:] == ordered[:-1]).any():
        raise fail(f"corrupt: event number (seq) {int(ordered[1:][ordered[1:] == ordered[:-1]][0])} is given to more than one event")
    caused = pred != -1
    if not caused.any():
        return
    causes = pred[caused]
    at = np.minimum(np.searchsorted(ordered, causes), len(ordered) - 1)
    known = (ordered[at] == causes) & (causes < seq[caused])
    if not known.all():
        i = int(np.argmax(~known))
        raise fail(
            f"corrupt: event #{int(seq[caused][i])} names event #{int(causes[i])} as its cause (pred), "
            "which is not an earlier event of this trace"
        )
