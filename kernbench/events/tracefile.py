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
import os
import struct
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from kernbench.errors import TraceFormatError
from kernbench.events.store import COLUMNS, EventStore
from kernbench.outputs import write_atomic

MAGIC = b"KBTRACE\x00"
FORMAT_VERSION = 1
_FIXED = struct.Struct("<8sHHIQI")


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


def save_trace(path: str | os.PathLike, store: EventStore, metadata: TraceMetadata | None = None) -> None:
    """Write ``store`` and ``metadata`` to ``path`` (whole or not at all: :func:`~kernbench.outputs.write_atomic`)."""
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
    np.savez_compressed(buf, **{name: np.asarray(col) for name, col in store.columns().items()})
    payload = buf.getvalue()
    crc = zlib.crc32(payload, zlib.crc32(header))
    fixed = _FIXED.pack(MAGIC, FORMAT_VERSION, 0, len(header), len(payload), crc)
    write_atomic(path, lambda f: (f.write(fixed), f.write(header), f.write(payload)))


def open_trace(path: str | os.PathLike) -> Trace:
    """Read a trace file; every problem is a :class:`TraceFormatError`."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TraceFormatError(f"{path}: cannot read trace file ({exc.strerror or exc})") from None

    def fail(what: str) -> TraceFormatError:
        return TraceFormatError(f"{path}: {what}")

    if len(data) < _FIXED.size:
        if data and not MAGIC.startswith(data[: len(MAGIC)]):
            raise fail("not a kernbench trace file (bad magic bytes)")
        raise fail(f"truncated: {len(data)} bytes, shorter than the {_FIXED.size}-byte file header")
    magic, version, _flags, h_len, p_len, crc = _FIXED.unpack_from(data)
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
    if len(data) < expected:
        raise fail(f"truncated: {len(data)} bytes, the header promises {expected}")
    if len(data) > expected:
        raise fail(f"corrupt: {len(data) - expected} unexpected bytes after the payload")
    header = data[_FIXED.size : _FIXED.size + h_len]
    payload = data[_FIXED.size + h_len :]
    if zlib.crc32(payload, zlib.crc32(header)) != crc:
        raise fail("corrupt: checksum mismatch (the file was altered or damaged)")
    try:
        head = json.loads(header.decode("utf-8"))
        meta = TraceMetadata(**head["metadata"])
        components = list(head["components"])
        strings = list(head["strings"])
        n_events = int(head["n_events"])
    except (ValueError, KeyError, TypeError) as exc:
        raise fail(f"corrupt: unreadable header ({exc})") from None
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
            columns = {name: npz[name] for name in COLUMNS}
    except (ValueError, KeyError, OSError, zlib.error) as exc:
        raise fail(f"corrupt: unreadable event columns ({exc})") from None
    try:
        store = EventStore.from_columns(columns, components, strings)
    except ValueError as exc:
        raise fail(f"corrupt: {exc}") from None
    if len(store) != n_events:
        raise fail(f"corrupt: header says {n_events} events, columns hold {len(store)}")
    return Trace(store, meta)
