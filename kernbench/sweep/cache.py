"""Finished sweep points on disk, so a re-run simulates only the new ones.

A point's key is the SHA-256 of everything its result depends on, in one
canonical JSON document: the kernel's name, every option (defaults filled),
the resolved topology (the validated document after ``--set`` and grid
overrides — so an edited YAML file is a new key), the timing mode, and the
kernbench version together with a digest of the simulator's source (a
changed model is a new key even when the version string is not bumped).
Run limits are not in it: they decide whether a run finishes, not its result.

Entries are ``<dir>/<key[:2]>/<key>.json``, written atomically
(:func:`kernbench.outputs.write_text_atomic`). An entry that cannot be read
or does not hold what its name says is ignored and recomputed. Only
successful points are kept; a failure (which may be a wall-time limit) is
retried next time. The default folder is ``$XDG_CACHE_HOME/kernbench/sweep``
(``~/.cache/kernbench/sweep``); delete it to drop every entry.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernbench import __version__
from kernbench.errors import KernbenchError, OutputPathError
from kernbench.outputs import to_json, write_text_atomic

FORMAT = 1


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
    kernel: str, options: Mapping[str, Any], topology: Mapping[str, Any], timing: str, *, explain: bool = False, source: str = ""
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
        "explain": explain,  # a row with the attribution's columns is another row
    }
    return hashlib.sha256(to_json(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class ResultCache:
    """``get``/``put`` a point's metrics by key; ``None`` as the folder turns the cache off (``--no-cache``)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.write_error: str | None = None  # the first failed write, for one warning
        if folder is not None:
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise KernbenchError(
                    f"--cache-dir {folder}: cannot create it: {exc.strerror or exc} (give another --cache-dir, or --no-cache)"
                ) from None

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        if self.folder is None:
            return None
        try:
            doc = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("key") != key or not isinstance(doc.get("metrics"), dict):
            return None
        metrics: dict[str, Any] = doc["metrics"]
        return metrics

    def put(self, key: str, metrics: Mapping[str, Any]) -> None:
        if self.folder is None:
            return
        path = self._path(key)
        try:
            path.parent.mkdir(exist_ok=True)
            write_text_atomic(path, to_json({"format": FORMAT, "key": key, "metrics": dict(metrics)}))
        except (OSError, OutputPathError) as exc:
            self.write_error = self.write_error or str(exc)
