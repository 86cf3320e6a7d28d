"""Round 2, class 3: the sweep cache trusts nothing it reads.

Each damaged entry of the corpus below is written over a good one, then the
same sweep runs again. Every one must be a miss: exit 0, the rows (JSON on
stdout, CSV in ``--out``) those of a clean run (a hand-edited latency never
shows), one ``warning:`` line naming the entry and the cause, no traceback,
bounded time and memory (a FIFO does not block, a symlink to ``/dev/zero`` is
not read), the other entry untouched, and the damaged entry rewritten: a
third run prints the clean table from the cache without simulating. A folder
in the entry's place cannot be rewritten (kernbench deletes no folder of
yours): its run says so too. The entries that could hang or exhaust this
process are met by a child under an address-space limit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import tracemalloc
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hardening_harness import HANG_BOUND_S, Outcome, child_env, cpu_scale, invoke, spawn, without_permission_override
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernbench import cli
from kernbench.commands import sweep as sweep_command
from kernbench.sweep import cache as result_cache

SWEEP = ["sweep", "gemm-primitive", "--topology", "cube1", "--m", "64", "--n", "64", "--grid", "k=128,256", "--jobs", "1"]
MAX_SECONDS = 15  # (a clean two-point run takes ~0.2 s in process, ~1 s in a child)
MAX_MIB_READ = 16  # allocations while the cache reads its entries, in this process (tracemalloc)
MAX_MIB_CHILD = 400  # peak RSS of a child, interpreter included
LATENCY = re.compile(rb'"latency_ns": [^,}]+')


def digest(key: str, metrics: object, dependencies: object = None) -> str:
    """What an entry's ``sha256`` is: the SHA-256 of its key, metrics and dependencies in canonical JSON."""
    doc = {"key": key, "metrics": metrics, "dependencies": dependencies or {}}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


# --- the corpus: each a way to damage the entry at ``path`` ----------------------------------------


def edited(change: Callable[[dict], None], *, reseal: bool = True) -> Callable[[Path], None]:
    """The entry's document after ``change``; resealed (its digest made to match again) so that the
    check meant is the one that catches it, not the digest."""

    def damage(path: Path) -> None:
        doc = json.loads(path.read_text())
        change(doc)
        if reseal and "sha256" in doc:
            doc["sha256"] = digest(doc["key"], doc["metrics"], doc.get("dependencies"))
        path.write_text(json.dumps(doc))

    return damage


def latency_as(text: bytes) -> Callable[[Path], None]:
    """The latency's number replaced, as written, by ``text`` (which JSON may not allow)."""
    return lambda path: path.write_bytes(LATENCY.sub(b'"latency_ns": ' + text, path.read_bytes(), count=1))


def metric(name: str, value: object) -> Callable[[dict], None]:
    return lambda doc: doc["metrics"].__setitem__(name, value)


def halved(doc: dict) -> None:
    doc["metrics"]["latency_ns"] /= 2


def replaced_by(make: Callable[[Path], None]) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        path.unlink()
        make(path)

    return damage


def folder_is_a_file(path: Path) -> None:
    for entry in path.parent.iterdir():
        entry.unlink()
    path.parent.rmdir()
    path.parent.write_text("a file where the entry's folder was")


def padded_beyond_the_limit(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b" " * 256 * 1024)  # valid JSON, only larger than 256 KiB


@dataclass(frozen=True)
class Damage:
    make: Callable[[Path], None]
    cause: str  # a regex over the warning's cause
    rewritten: bool = True  # False: the cache cannot put the good result back (and says so)
    child: bool = False  # met by a child process: in this one it could hang or exhaust memory
    preexec: Callable[[], None] | None = None  # for the child


CORPUS = {
    "a hand-edited latency": Damage(edited(halved, reseal=False), r"checksum does not match"),
    "a hand-edited latency, the digest dropped": Damage(edited(lambda d: halved(d) or d.pop("sha256", None)), r"fields missing or added"),
    "a NaN latency": Damage(latency_as(b"NaN"), r"NaN is not a number JSON allows"),
    "an Infinity latency": Damage(latency_as(b"Infinity"), r"Infinity is not a number JSON allows"),
    "a -Infinity latency": Damage(latency_as(b"-Infinity"), r"-Infinity is not a number JSON allows"),
    "a 1e999 latency (infinite once read)": Damage(latency_as(b"1e999"), r"metric 'latency_ns': not a finite number"),
    "a 400-digit integer": Damage(edited(metric("commands", 10**400)), r"metric 'commands': an integer out of range"),
    "an integer of more digits than Python reads": Damage(latency_as(b"9" * 5000), r"not readable JSON \(Exceeds the limit"),
    "another key": Damage(edited(lambda d: d.update(key="0" * 64)), r"written for another key or format"),
    "another format": Damage(edited(lambda d: d.update(format=1)), r"written for another key or format"),
    "a field missing": Damage(edited(lambda d: d.pop("key"), reseal=False), r"fields missing or added"),
    "a field added": Damage(edited(lambda d: d.update(note="hand-made")), r"fields missing or added"),
    "not a JSON object": Damage(lambda p: p.write_text("[1, 2, 3]"), r"not a cache entry of this kernbench"),
    "metrics not a mapping": Damage(edited(lambda d: d.update(metrics=list(d["metrics"].items()))), r"its metrics are not a mapping"),
    "a metric that is a list": Damage(edited(metric("latency_ns", [1.0, 2.0])), r"metric 'latency_ns': a list, not a number or text"),
    "a metric that is a mapping": Damage(edited(metric("latency_ns", {"ns": 1.0})), r"metric 'latency_ns': a dict, not a number or text"),
    "a control character in a text metric": Damage(edited(metric("note", "\x1b[2Jgone")), r"metric 'note': not short plain text"),
    "a lone surrogate in a text metric (JSON's \\ud800)": Damage(edited(metric("note", "\ud800")), r"metric 'note': not short plain text"),
    "a lone surrogate in a metric's name": Damage(edited(metric("a\udfffb", 1.0)), r"metric 'a\\udfffb': not a plain name"),
    "a text metric too long": Damage(edited(metric("note", "x" * 5000)), r"metric 'note': not short plain text"),
    "a control character in a metric's name": Damage(edited(metric("lat\x1b[31m", 1.0)), r"metric 'lat\\x1b\[31m': not a plain name"),
    "truncated JSON": Damage(lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]), r"not readable JSON \(.*line 1 column"),
    "invalid UTF-8": Damage(lambda p: p.write_bytes(b"\xff\xfe" + p.read_bytes()), r"not readable JSON \(.*codec can't decode"),
    "an empty file": Damage(lambda p: p.write_bytes(b""), r"not readable JSON \(Expecting value"),
    "nesting deeper than the parser goes": Damage(lambda p: p.write_bytes(b"[" * 200_000), r"not readable JSON \(maximum recursion depth"),
    "a file larger than the limit": Damage(padded_beyond_the_limit, r"[\d,]+ bytes, larger than the limit of 262,144"),
    "a symlink loop": Damage(replaced_by(lambda p: os.symlink(p.name, p)), r"too many levels of symbolic links"),
    "a folder in its place": Damage(replaced_by(lambda p: p.mkdir()), r"is a folder, not a file", rewritten=False),
    "a file in place of its folder": Damage(folder_is_a_file, r"a part of the path that should be a folder is a file", rewritten=False),
    "a FIFO": Damage(replaced_by(os.mkfifo), r"not a regular file", child=True),
    "a symlink to /dev/zero": Damage(replaced_by(lambda p: os.symlink("/dev/zero", p)), r"not a regular file", child=True),
    "unreadable (mode 000)": Damage(
        lambda p: os.chmod(p, 0),
        r"permission denied",
        child=True,
        preexec=without_permission_override if os.geteuid() == 0 else None,
    ),
}


# --- the runs --------------------------------------------------------------------------------------

_CLEAN: dict[str, object] = {}


@pytest.fixture
def clean(capsys, tmp_path_factory) -> dict[str, object]:
    """A cache the sweep filled (``cache``), and what the sweep prints and writes from an empty
    cache (the JSON rows, the CSV) and with none (the table): made once, copied by each test."""
    if not _CLEAN:
        top = tmp_path_factory.mktemp("clean")
        json_run = invoke(
            cli.main, [*SWEEP, "--cache-dir", str(top / "cache"), "--json", "--out", str(top / "clean.csv")], capsys, trace_memory=False
        )
        table_run = invoke(cli.main, [*SWEEP, "--no-cache"], capsys, trace_memory=False)
        assert json_run.status == table_run.status == 0 and json_run.err == table_run.err == ""
        _CLEAN.update(cache=top / "cache", json=json_run.out, csv=(top / "clean.csv").read_text(), table=table_run.out)
    return _CLEAN


def run_in_process(argv: list[str], capsys, monkeypatch) -> Outcome:
    """The command in this process; ``peak_mib`` is the most allocated while reading an entry
    (tracing the whole run would make the simulation ten times slower)."""
    peaks = [0.0]
    real_get = result_cache.ResultCache.get

    def traced_get(cache, key):
        tracemalloc.start()
        try:
            return real_get(cache, key)
        finally:
            peaks.append(tracemalloc.get_traced_memory()[1] / 2**20)
            tracemalloc.stop()

    monkeypatch.setattr(result_cache.ResultCache, "get", traced_get)
    got = invoke(cli.main, argv, capsys, trace_memory=False)
    monkeypatch.setattr(result_cache.ResultCache, "get", real_get)
    return dataclasses.replace(got, peak_mib=max(peaks))


def run_in_child(argv: list[str], cwd: Path, damage: Damage) -> Outcome:
    """(Wall time bounds only a hang, generously: a 20 s kill was a speed bound on a busy machine; the cost is the CPU bound.)"""
    return spawn("kernbench.cli", argv, cwd=cwd, env=child_env(), timeout_s=HANG_BOUND_S, memory_mib=2048, preexec_fn=damage.preexec)


def cache_files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_a_damaged_entry_is_a_miss_said_once_and_rewritten(name, clean, tmp_path, capsys, monkeypatch):
    damage = CORPUS[name]
    if damage.preexec is not None and subprocess.run(["true"], preexec_fn=damage.preexec, check=False).returncode != 0:
        pytest.skip("cannot drop the permission-override capabilities here")  # pragma: no cover
    folder = tmp_path / "cache"
    shutil.copytree(clean["cache"], folder)  # (as the same sweep with this --cache-dir leaves it)
    argv = [*SWEEP, "--cache-dir", str(folder), "--json", "--out", str(tmp_path / "rows.csv")]
    good = cache_files(folder)
    entry, other = (folder / e for e in sorted(good))  # (k=128's and k=256's, in some order)
    damage.make(entry)

    got = run_in_child(argv, tmp_path, damage) if damage.child else run_in_process(argv, capsys, monkeypatch)

    assert got.status == 0, got.err[-3000:]
    assert "Traceback" not in got.err + got.out, got.err[-3000:]
    assert got.cpu_seconds < MAX_SECONDS * cpu_scale(), got.cpu_seconds  # (CPU time: see hardening_harness)
    assert got.peak_mib < (MAX_MIB_CHILD if damage.child else MAX_MIB_READ), got.peak_mib
    assert json.loads(got.out) == json.loads(clean["json"])  # (a hand-edited latency is not shown)
    assert (tmp_path / "rows.csv").read_text() == clean["csv"]
    warning = rf"warning: sweep cache entry {re.escape(str(entry))} ignored: .*{damage.cause}.*; the point was simulated again"
    lines = got.err.splitlines()
    assert len([line for line in lines if re.fullmatch(warning, line)]) == 1, got.err
    assert other.read_bytes() == good[other.relative_to(folder).as_posix()]  # nothing else lost
    assert not [p for p in folder.rglob("*") if p.name.endswith(".part")]
    if damage.rewritten:
        assert lines == [line for line in lines if re.fullmatch(warning, line)]
        assert entry.read_bytes() == good[entry.relative_to(folder).as_posix()]  # the same result, rewritten
        monkeypatch.setattr(sweep_command, "simulate_point", no_simulation)
        again = run_in_process([*SWEEP, "--cache-dir", str(folder)], capsys, monkeypatch)
        assert (again.status, again.err, again.out) == (0, "", clean["table"])
    else:  # the result is not cached, and that is said as well; the next run meets the same entry
        assert len(lines) == 2 and re.match(r"warning: results not cached: cannot (write|create the folder) ", lines[1]), got.err


def no_simulation(task):
    raise AssertionError(f"point {task.index} was simulated, not read from the rewritten entry")


# --- the warning itself ----------------------------------------------------------------------------

KEY = "ab" + "0" * 62
METRICS = {"latency_ns": 241.83, "commands": 16, "max_abs_err": None, "fault": "", "engine_util_pct.cpu": 19.461}


def stored(folder: Path) -> Path:
    result_cache.ResultCache(folder).put(KEY, METRICS)
    return folder / KEY[:2] / f"{KEY}.json"


def test_many_bad_entries_are_five_lines_and_a_count(tmp_path):
    cache = result_cache.ResultCache(tmp_path)
    for i in range(8):
        key = f"{i:02d}" + "0" * 62
        (tmp_path / key[:2]).mkdir()
        (tmp_path / key[:2] / f"{key}.json").write_text("{")
        assert cache.get(key) is None
    lines = result_cache.rejected_lines(cache)
    assert len(lines) == 6 and lines[-1] == "warning: … and 3 more sweep cache entries ignored"


def test_a_control_character_in_the_cache_folder_is_printed_as_its_escape(tmp_path):
    cache = result_cache.ResultCache(tmp_path / "odd\x1b[2Jname")
    stored(cache.folder).write_text("{")
    assert cache.get(KEY) is None
    (line,) = result_cache.rejected_lines(cache)
    assert line.isprintable() and "odd\\x1b[2Jname" in line


# --- generated: any change to an entry's bytes --------------------------------------------------------


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_changed_byte_anywhere_is_a_miss_with_a_reason_or_the_same_metrics(tmp_path, data):
    entry = stored(tmp_path)
    original = entry.read_bytes()
    at = data.draw(st.integers(0, len(original) - 1), label="at")
    byte = data.draw(st.integers(0, 255).filter(lambda b: b != original[at]), label="byte")
    entry.write_bytes(original[:at] + bytes([byte]) + original[at + 1 :])
    cache = result_cache.ResultCache(tmp_path)
    got = cache.get(KEY)
    if got is None:
        ((path, why),) = cache.rejected
        assert path == entry and why.isprintable() and len(why) < 300
    else:  # only a change JSON does not see (a space for a tab or a newline between tokens)
        assert got == METRICS and cache.rejected == []


def plain_text(text: str) -> bool:
    """At most 1,000 characters, none a control or format character or a lone surrogate."""
    return len(text) <= 1000 and all(unicodedata.category(ch) not in {"Cc", "Cf", "Cs"} for ch in text)


TEXT = st.text(st.characters(exclude_categories=()), max_size=20) | st.sampled_from(["\ud800", "a\udfffb", "x" * 1001, "plain"])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=TEXT, value=JSON_VALUES | st.integers(min_value=2**62, max_value=10**300))
def test_a_metric_of_any_json_value_is_kept_only_when_it_is_a_finite_number_or_plain_text(tmp_path, name, value):
    entry = stored(tmp_path)
    doc = json.loads(entry.read_text())
    doc["metrics"][name] = value
    doc["sha256"] = digest(KEY, doc["metrics"])
    entry.write_text(json.dumps(doc))  # (NaN and Infinity written as JSON does not allow)
    cache = result_cache.ResultCache(tmp_path)
    plain = plain_text(name) and (
        value is None
        or isinstance(value, bool)
        or (isinstance(value, int) and abs(value) < 2**63)
        or (isinstance(value, float) and math.isfinite(value))
        or (isinstance(value, str) and plain_text(value))
    )
    got = cache.get(KEY)
    assert (got is not None) == plain, cache.rejected
    assert got is None or got[name] == value
    assert len(cache.rejected) == (0 if plain else 1)
