import struct

import pytest
from randtrace import random_trace

from kernbench.errors import TraceFormatError
from kernbench.events.store import EventStore
from kernbench.events.tracefile import FORMAT_VERSION, TraceMetadata, open_trace, save_trace
from kernbench.events.types import EventKind


@pytest.fixture
def saved(tmp_path):
    store = EventStore.from_events(random_trace(2, 300))
    meta = TraceMetadata(kernel="gemm", topology="small", variant="opt2", end_ns=store.end_ns, extra={"m": 64})
    path = tmp_path / "run.kbtrace"
    save_trace(path, store, meta)
    return path, store, meta


def test_saved_trace_reopens_with_same_events_and_metadata(saved):
    path, store, meta = saved
    trace = open_trace(path)
    assert trace.metadata == meta
    assert trace.store.events() == store.events()
    assert trace.store.end_ns == store.end_ns


def test_trace_of_empty_store_round_trips(tmp_path):
    save_trace(tmp_path / "e.kbtrace", EventStore())
    assert len(open_trace(tmp_path / "e.kbtrace").store) == 0


def test_truncated_file_is_reported_as_truncated(saved):
    path, _, _ = saved
    data = path.read_bytes()
    for cut in (3, 20, len(data) // 2, len(data) - 1):
        path.write_bytes(data[:cut])
        with pytest.raises(TraceFormatError, match="truncated"):
            open_trace(path)


def test_flipped_byte_is_reported_as_corrupt(saved):
    path, _, _ = saved
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(TraceFormatError, match="corrupt: checksum"):
        open_trace(path)


def test_trailing_garbage_is_reported_as_corrupt(saved):
    path, _, _ = saved
    path.write_bytes(path.read_bytes() + b"xx")
    with pytest.raises(TraceFormatError, match="corrupt"):
        open_trace(path)


def test_file_from_a_newer_format_asks_to_upgrade(saved):
    path, _, _ = saved
    data = bytearray(path.read_bytes())
    struct.pack_into("<H", data, 8, FORMAT_VERSION + 1)
    path.write_bytes(bytes(data))
    with pytest.raises(TraceFormatError, match=r"newer kernbench .*v3.*upgrade"):
        open_trace(path)


def test_other_file_is_not_a_trace(tmp_path):
    path = tmp_path / "notes.kbtrace"
    path.write_text('{"traceEvents": []} and some more text to pass the header size')
    with pytest.raises(TraceFormatError, match="not a kernbench trace"):
        open_trace(path)


def test_missing_file_is_a_trace_format_error(tmp_path):
    with pytest.raises(TraceFormatError, match="no such trace file"):
        open_trace(tmp_path / "absent.kbtrace")


def test_valid_checksum_over_bad_columns_is_still_corrupt(saved, tmp_path):
    import json
    import zlib

    path, _, _ = saved
    data = path.read_bytes()
    magic, version, flags, h_len, p_len, crc = struct.unpack_from("<8sHHIQI", data)
    header = json.loads(data[28 : 28 + h_len])
    header["components"] = header["components"][:1]
    new_header = json.dumps(header).encode()
    payload = data[28 + h_len :]
    crc = zlib.crc32(payload, zlib.crc32(new_header))
    path.write_bytes(struct.pack("<8sHHIQI", magic, version, flags, len(new_header), p_len, crc) + new_header + payload)
    with pytest.raises(TraceFormatError, match="corrupt: component index out of range"):
        open_trace(path)


@pytest.mark.parametrize("extra", [b"x", b"\0", b"xx"])
def test_any_byte_after_the_payload_is_reported_as_corrupt(saved, extra):
    # exactly one trailing byte sits just past what the header promises: it must not slip through
    path, _, _ = saved
    path.write_bytes(path.read_bytes() + extra)
    with pytest.raises(TraceFormatError, match="unexpected bytes after the payload"):
        open_trace(path)


def _as_version_1(store: EventStore) -> bytes:
    """``store`` written the way format v1 wrote it: no ``pred`` column (nor ``src``)."""
    return _as_version(store, 1, ("pred", "src"))


def _as_version(store: EventStore, version: int, lacking: tuple[str, ...]) -> bytes:
    """``store`` written the way format ``version`` wrote it: without the ``lacking`` columns."""
    import io
    import json
    import zlib

    import numpy as np

    from kernbench.events.tracefile import MAGIC

    header = json.dumps(
        {"metadata": {"kernel": "old"}, "components": store.components, "strings": store.strings, "n_events": len(store)},
        sort_keys=True,
    ).encode()
    buf = io.BytesIO()
    np.savez_compressed(buf, **{name: np.asarray(col) for name, col in store.columns().items() if name not in lacking})
    payload = buf.getvalue()
    crc = zlib.crc32(payload, zlib.crc32(header))
    return struct.pack("<8sHHIQI", MAGIC, version, 0, len(header), len(payload), crc) + header + payload


def test_a_version_1_trace_opens_with_no_causes_recorded(tmp_path):

    events = [e._replace(pred=e.seq - 1) for e in random_trace(3, 200)]  # v2 data with preds...
    store = EventStore.from_events(events)
    path = tmp_path / "v1.kbtrace"
    path.write_bytes(_as_version_1(store))  # ...written by v1, which had none
    trace = open_trace(path)
    assert trace.metadata.kernel == "old"
    assert [e._replace(pred=-1) for e in store.events()] == trace.store.events()


def test_a_version_2_trace_opens_with_its_causes_and_no_source_lines(tmp_path):

    events = [
        e._replace(pred=e.seq - 1, src=f"/k.py:{e.seq % 7 + 1}:kern" if e.kind == EventKind.DISPATCH else "") for e in random_trace(3, 200)
    ]
    store = EventStore.from_events(events)
    assert any(e.src for e in store.events())
    path = tmp_path / "v2.kbtrace"
    path.write_bytes(_as_version(store, 2, ("src",)))  # v2 had causes but no source sites
    trace = open_trace(path)
    assert [e._replace(src="") for e in store.events()] == trace.store.events()
    assert FORMAT_VERSION == 3


def test_source_sites_survive_a_save_and_open(tmp_path):

    events = [
        e._replace(src=f"/k.py:{e.seq % 7 + 1}:kern < /k.py:90:main" if e.kind == EventKind.DISPATCH else "") for e in random_trace(5, 300)
    ]
    store = EventStore.from_events(events)
    save_trace(tmp_path / "s.kbtrace", store)
    assert open_trace(tmp_path / "s.kbtrace").store.events() == store.events()


def test_a_malformed_source_site_is_reported_as_corrupt(tmp_path):

    events = [e._replace(src="/k.py:notaline:kern" if e.kind == EventKind.DISPATCH else "") for e in random_trace(2, 50)]
    store = EventStore.from_events(events)
    assert any(e.src for e in store.events())
    save_trace(tmp_path / "bad.kbtrace", store)
    with pytest.raises(TraceFormatError, match=r"corrupt: the source site '/k.py:notaline:kern' is not FILE:LINE:FUNCTION frames"):
        open_trace(tmp_path / "bad.kbtrace")
