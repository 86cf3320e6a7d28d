"""Finished sweep points on disk, so a re-run simulates only the new ones.

A point's key is the SHA-256 of everything its result depends on, in one
canonical JSON document: the kernel's name, every option (defaults filled),
the resolved topology (the validated document after ``--set`` and grid
overrides — so an edited YAML file is a new key), the timing mode, and the
kernbench version together with a digest of the simulator's source (a
changed model is a new key even when the version string is not bumped).
Run limits are not in it: they decide whether a run finishes, not its result.
A kernel file's helpers are known only once it has run (a set-up may import
one): an entry records each module of the user's the run loaded with its
digest (:func:`kernbench.usercode.dependencies`), and is a miss once
one of them holds something else (an edited helper changes the result).

Entries are ``<dir>/<key[:2]>/<key>.json``, written atomically
(:func:`kernbench.outputs.write_text_atomic`). What is read back is not
trusted: an entry must be a regular file (not a FIFO, a device or a
symlink to one) of at most :data:`MAX_ENTRY_BYTES`, strict JSON (no
``NaN``) of this format, for this key, its metrics the point's run record
(:mod:`kernbench.record`, lists left out): a mapping of plain names to finite
numbers or short plain text, and, under the fields the record declares
objects, mappings of the same at most :data:`MAX_DEPTH` deep, with a
SHA-256 of its key and
metrics that matches (an edited figure is caught; this is an integrity
check, not a signature). An entry that fails any of these is a miss: the
point is simulated again, the entry rewritten, and :attr:`ResultCache.rejected`
says which entry and why (``kernbench sweep`` prints a warning). Only
successful points are kept; a failure (which may be a wall-time limit) is
retried next time. The default folder is ``$XDG_CACHE_HOME/kernbench/sweep``
(``~/.cache/kernbench/sweep``); delete it to drop every entry.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernbench import __version__
from kernbench.errors import InputPathError, KernbenchError, OutputPathError
from kernbench.inputs import meaning, read_regular, stat_or_none
from kernbench.outputs import to_json, write_text_atomic
from kernbench.printable import printable
from kernbench.record import FIELDS

FORMAT = 4  # v2: entries carry a digest of their key and metrics; v3: the metrics are the point's run record (nested); v4: and the user's modules they depend on
#: an entry's size limit (a point's metrics are ~2 KB; with --explain ~4 KB)
MAX_ENTRY_BYTES = 256 * 1024
#: a metric's name and text value at most this long
MAX_TEXT_CHARS = 1000
#: a whole-number metric (a count, a byte size) is below this in magnitude
MAX_INT = 2**63
#: how deep a record's mappings nest (``attribution.by_cause.dispatch`` is 3)
MAX_DEPTH = 4
#: the run record's fields that hold an object: the only top-level names whose value may be a mapping
OBJECT_FIELDS = frozenset(f.name for f in FIELDS if "object" in f.type.split("|"))


def default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"  # the XDG spec ignores a relative value
    return root / "kernbench" / "sweep"


@functools.cache
def code_digest() -> str:
    """A digest of the ``kernbench`` package's Python source (the simulator that produces a result)."""
    package = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        h.update(path.relative_to(package).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def point_key(
    kernel: str,
    options: Mapping[str, Any],
    topology: Mapping[str, Any],
    timing: str,
    *,
    explain: bool = False,
    source: str = "",
    fidelity: str = "paper",
    data: bool = True,
) -> str:
    """``source``: a kernel file's digest (:attr:`KernelSpec.digest <kernbench.kernels.registry.KernelSpec.digest>`), "" when shipped."""
    doc = {
        "format": FORMAT,
        "kernbench": __version__,
        "code": code_digest(),
        "kernel": kernel,
        "source": source,  # an edited kernel file is a new key
        "options": dict(options),
        "topology": topology,
        "timing": timing,
        "fidelity": fidelity,  # another level of the model is another result
        "explain": explain,  # a row with the attribution's columns is another row
        "data": data,  # a --no-data row has no max_abs_err
    }
    return hashlib.sha256(to_json(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _make_folder(folder: Path) -> None:
    """The cache folder, created if need be; every way that fails is one error naming it (looked at through
    :func:`~kernbench.inputs.stat_or_none`, so a symlink loop says so rather than mkdir's 'File exists')."""
    what = "(give another --cache-dir, or --no-cache)"
    try:
        info = stat_or_none(folder, "--cache-dir")
    except InputPathError as exc:
        raise KernbenchError(f"{exc} {what}") from None
    if info is not None and not stat.S_ISDIR(info.st_mode):
        raise KernbenchError(f"--cache-dir {printable(str(folder))}: is a file, not a folder {what}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KernbenchError(f"--cache-dir {printable(str(folder))}: cannot create it: {meaning(exc)} {what}") from None


class ResultCache:
    """``get``/``put`` a point's metrics by key; ``None`` as the folder turns the cache off (``--no-cache``)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.write_error: str | None = None  # the first failed write, for one warning
        self.rejected: list[tuple[Path, str]] = []  # entries read and refused (each a miss), and why
        if folder is not None:
            _make_folder(folder)

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The metrics stored for ``key``; None for a miss (nothing there, or an entry that fails a
        check: then it is also added to :attr:`rejected`)."""
        if self.folder is None:
            return None
        path = self._path(key)
        try:
            data = read_regular(path, MAX_ENTRY_BYTES)
        except InputPathError as exc:
            if exc.problem != "no such file":
                self.rejected.append((path, exc.problem))
            return None
        metrics, problem = _read_entry(data, key)
        if problem is not None:
            self.rejected.append((path, problem))
            return None
        return metrics

    def put(self, key: str, metrics: Mapping[str, Any], dependencies: Mapping[str, str] | None = None) -> None:
        if self.folder is None:
            return
        path = self._path(key)
        try:
            path.parent.mkdir(exist_ok=True)
        except OSError as exc:  # (a file in its place: "File exists")
            self.write_error = self.write_error or f"cannot create the folder {path.parent}: {exc.strerror or exc}"
            return
        deps = dict(dependencies or {})
        doc = {"format": FORMAT, "key": key, "metrics": dict(metrics), "dependencies": deps, "sha256": entry_digest(key, metrics, deps)}
        try:
            write_text_atomic(path, to_json(doc), announce=False)
        except (OSError, OutputPathError) as exc:
            self.write_error = self.write_error or str(exc)


def rejected_lines(cache: ResultCache, shown: int = 5) -> list[str]:
    """A warning per refused entry (the first ``shown``, then how many more), for stderr."""
    lines = [
        f"warning: sweep cache entry {printable(str(path))} ignored: {why}; the point was simulated again"
        for path, why in cache.rejected[:shown]
    ]
    if len(cache.rejected) > shown:
        lines.append(f"warning: … and {len(cache.rejected) - shown} more sweep cache entries ignored")
    return lines


def entry_digest(key: str, metrics: Mapping[str, Any], dependencies: Mapping[str, str] | None = None) -> str:
    """SHA-256 of an entry's key, metrics and dependencies in canonical JSON."""
    doc = {"key": key, "metrics": dict(metrics), "dependencies": dict(dependencies or {})}
    return hashlib.sha256(to_json(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _stale(dependencies: Mapping[str, str]) -> bool:
    """Whether a user's module an entry depends on holds something else now (or is gone)."""
    for file, digest in dependencies.items():
        try:
            now = hashlib.sha256(Path(file).read_bytes()).hexdigest()[:16]
        except OSError:
            return True
        if now != digest:
            return True
    return False


def _read_entry(data: bytes, key: str) -> tuple[dict[str, Any] | None, str | None]:
    """(metrics, None) for a good entry, (None, what is wrong) for a bad one."""

    def no_constant(name: str) -> None:
        raise ValueError(f"{name} is not a number JSON allows")

    try:
        doc = json.loads(data.decode("utf-8"), parse_constant=no_constant)
    except (ValueError, RecursionError) as exc:  # (UnicodeDecodeError is a ValueError)
        return None, f"not readable JSON ({printable(str(exc))[:120]})"
    if not isinstance(doc, dict) or set(doc) != {"format", "key", "metrics", "dependencies", "sha256"}:
        return None, "not a cache entry of this kernbench (another format, or fields missing or added)"
    if doc["format"] != FORMAT or doc["key"] != key:
        return None, "written for another key or format"
    metrics = doc["metrics"]
    if not isinstance(metrics, dict):
        return None, "its metrics are not a mapping"
    found = _mapping_problem(metrics, "", 1)
    if found is not None:
        name, problem = found
        shown = printable(name).encode("utf-8", "backslashreplace").decode()  # (a lone surrogate too)
        return None, f"metric '{shown[:60]}': {problem}"
    deps = doc["dependencies"]
    if not isinstance(deps, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in deps.items()):
        return None, "its dependencies are not a mapping of files to digests"
    if doc["sha256"] != entry_digest(key, metrics, deps):
        return None, "its checksum does not match its metrics (edited or damaged)"
    if _stale(deps):
        return None, None  # (a helper of the kernel file was edited: a plain miss, nothing wrong with the entry)
    return metrics, None


def _mapping_problem(metrics: Mapping[str, Any], prefix: str, depth: int) -> tuple[str, str] | None:
    """The first (dotted name, problem) in a record's mapping, or None: every name plain, every value a
    finite number, short plain text or — under a field the run record declares an object (``params``,
    ``engine_busy_ns``, ``attribution``, …), at most :data:`MAX_DEPTH` deep — a mapping of the same."""
    for name, value in metrics.items():
        nests = depth > 1 or name in OBJECT_FIELDS  # (a figure of the kernel's own, or a number field, is no mapping)
        if isinstance(value, dict) and nests and isinstance(name, str) and _is_plain(name):
            if depth >= MAX_DEPTH:
                return f"{prefix}{name}", f"nested more than {MAX_DEPTH} deep"
            found = _mapping_problem(value, f"{prefix}{name}.", depth + 1)
            if found is not None:
                return found
            continue
        problem = _metric_problem(name, value)
        if problem is not None:
            return f"{prefix}{name}", problem
    return None


def _metric_problem(name: str, value: Any) -> str | None:
    if not _is_plain(name):
        return "not a plain name"
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):  # (math.isfinite(10**400) raises OverflowError)
        return None if abs(value) < MAX_INT else "an integer out of range"
    if isinstance(value, float):
        return None if math.isfinite(value) else "not a finite number"
    if isinstance(value, str):
        return None if _is_plain(value) else "not short plain text"
    return f"a {type(value).__name__}, not a number or text"


def _is_plain(text: str) -> bool:
    """Short text kernbench can print and write: no control or format character, and no lone
    surrogate (JSON's ``"\\ud800"`` reads as one; no terminal or UTF-8 file takes it)."""
    if len(text) > MAX_TEXT_CHARS or printable(text) != text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
