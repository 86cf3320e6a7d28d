"""A trace file's columns are exactly what ``np.savez_compressed`` of 1-D arrays writes.

The reader checks each column's ``.npy`` header before allocating anything:
dtype, shape ``(n_events,)`` and C order. A header that differs in any of
them is not a column kernbench wrote, so the file is corrupt — here one
column is rewritten with ``fortran_order: True`` (same dtype, shape and
bytes) under a valid checksum, and must still be refused.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib

import numpy as np
import pytest
from numpy.lib import format as npformat

from kernbench.errors import TraceFormatError
from kernbench.events.store import EventStore
from kernbench.events.tracefile import open_trace, save_trace
from kernbench.events.types import Event, EventKind

FIXED = "<8sHHIQI"  # magic, version, flags, header length, payload length, CRC-32 (the layout in the module docstring)


def rewrite_column(path, name: str, fortran: bool) -> None:
    data = path.read_bytes()
    magic, version, flags, h_len, _p_len, _crc = struct.unpack_from(FIXED, data)
    size = struct.calcsize(FIXED)
    header = data[size : size + h_len]
    json.loads(header)  # still the same header
    src = zipfile.ZipFile(io.BytesIO(data[size + h_len :]))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            raw = src.read(info)
            if info.filename == f"{name}.npy":
                arr = np.load(io.BytesIO(raw))
                buf = io.BytesIO()
                npformat.write_array_header_1_0(
                    buf, {"descr": npformat.dtype_to_descr(arr.dtype), "fortran_order": fortran, "shape": arr.shape}
                )
                raw = buf.getvalue() + arr.tobytes()
            dst.writestr(info.filename, raw)
    payload = out.getvalue()
    crc = zlib.crc32(payload, zlib.crc32(header))
    path.write_bytes(struct.pack(FIXED, magic, version, flags, h_len, len(payload), crc) + header + payload)


@pytest.fixture
def saved(tmp_path):
    evs = [Event(10.0 * i, EventKind.ENGINE_BUSY, "sip0.cube0.pe0.gemm", end_ns=10.0 * i + 5, label="gemm", seq=i) for i in range(20)]
    store = EventStore.from_events(evs)
    path = tmp_path / "run.kbtrace"
    save_trace(path, store)
    return path, store


def test_a_column_rewritten_in_c_order_still_opens(saved):
    # the rewriting itself is sound: the same header in C order reads back the same events
    path, store = saved
    rewrite_column(path, "t_ns", fortran=False)
    assert open_trace(path).store.events() == store.events()


def test_a_column_header_in_fortran_order_is_corrupt(saved):
    path, _ = saved
    rewrite_column(path, "t_ns", fortran=True)
    with pytest.raises(TraceFormatError, match="corrupt"):
        open_trace(path)
