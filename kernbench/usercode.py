"""The user's own code: which files are theirs, which of their modules this process loaded, and their lines.

A kernel file's folder tree is the user's (:func:`watch`, called as the
file is imported). Every module loaded from it — a helper beside the file,
a package beside it, whether imported by the file, its set-up or its kernel,
at any point of the process — is recorded (:func:`user_modules`): by an
import hook watching every import from then on, and by a look at
``sys.modules``. Results depend on them (:func:`dependencies`: the sweep
cache checks their digests) and no output may overwrite one
(:mod:`kernbench.outputs` asks before writing). Installed code (the standard
library, site-packages, kernbench itself) is never the user's, even inside
that tree.

The folder comes first for the imports the user's own code makes, as under
``python file.py`` (``from helpers import h``), but last for everyone else's:
it is appended to ``sys.path`` (:data:`FOLDERS`), and the import hook looks
in it first only when the importing frame is the user's. So a
``logging.py``, ``queue.py`` or ``json.py`` beside the file never replaces
the standard module for kernbench, the standard library or a spawned worker
process (whose ``sys.path`` is this one's).

Standard library only: the limits, the outputs and the kernel files all ask it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.machinery
import linecache
import os
import sys
import sysconfig
import threading
import traceback
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: the folders of kernel files this process put on sys.path (their modules are the user's, not installed ones)
FOLDERS: set[str] = set()
#: the folders of every kernel file this process loaded: a module loaded from under one is the user's
_TREES: set[Path] = set()
#: every user's module file seen in this process (see the module docstring), with its module's name
_SEEN: dict[Path, str] = {}


def _module_file(module: object) -> Path | None:
    file = getattr(module, "__file__", None)
    if not isinstance(file, str) or not file:
        return None
    return _resolved(file)


@functools.lru_cache(maxsize=65536)
def _resolved(file: str) -> Path | None:
    """``file`` resolved (as ``Path.resolve``), once per spelling: a process asks about the same module files
    again and again. Its folder is resolved once for all the files in it (a process has ~600 modules in a few
    dozen folders, and resolving looks at every component of a path): then only the file itself is looked at."""
    try:
        path = os.path.abspath(file)
        if os.path.islink(path):
            return Path(os.path.realpath(path))
        folder, name = os.path.split(path)
        return _resolved_folder(folder) / name
    except (OSError, RuntimeError, ValueError):
        return None


@functools.lru_cache(maxsize=4096)
def _resolved_folder(folder: str) -> Path:
    return Path(os.path.realpath(folder))


@functools.cache
def _installed_roots() -> frozenset[Path]:
    """Where installed code lives: the standard library, site-packages, kernbench's own package."""
    roots = {Path(__file__).resolve().parent}
    for p in (*sysconfig.get_paths().values(), sys.prefix, sys.base_prefix, sys.exec_prefix):
        try:
            roots.add(Path(p).resolve())
        except (OSError, RuntimeError, ValueError):
            continue
    return frozenset(roots)


def is_users(file: Path) -> bool:
    """Whether ``file`` (resolved) lies in a kernel file's folder tree and is not installed code.

    Asked for every module of the process and every import, so it looks up ``file``'s ancestors in
    sets rather than comparing it with every tree: its cost does not grow with the number of kernel
    files a process has loaded (a test session loads hundreds)."""
    if not _TREES:
        return False
    up = (file, *file.parents)
    if _TREES.isdisjoint(up):
        return False
    return _installed_roots().isdisjoint(up)


#: module name → (its ``__file__`` as given, that file when it is the user's): :func:`user_modules`
#: resolves and judges each module once, not on every call (cleared when a tree is added)
_CHECKED: dict[str, tuple[object, Path | None]] = {}


def user_modules() -> dict[Path, str]:
    """Every user's module file (see the module docstring) this process loaded, with its module's name."""
    if not _TREES:
        return dict(_SEEN)
    for name, module in list(sys.modules.items()):
        given = getattr(module, "__file__", None)
        known = _CHECKED.get(name)
        if known is None or known[0] != given:
            file = _module_file(module)
            known = _CHECKED[name] = (given, file if file is not None and is_users(file) else None)
        if known[1] is not None:
            _SEEN.setdefault(known[1], name)
    return dict(_SEEN)


def note_user_modules(files: Iterable[str]) -> None:
    """Record user's module files another process loaded (a sweep's or a compare's worker)."""
    for f in files:
        _SEEN.setdefault(Path(f), "(loaded by a worker)")


def dependencies(tree: Path | None) -> dict[str, str]:
    """Each user's module file in ``tree`` (a kernel file's folder; None, a shipped kernel: none) with the
    digest of what it holds now (a file gone: ""). Only that tree's: a process that ran other kernel
    files (a script, a test session) has loaded their helpers too, and they are not this kernel's inputs."""
    out: dict[str, str] = {}
    if tree is None:
        return out
    for file in sorted(f for f in user_modules() if f.is_relative_to(tree)):
        try:
            out[str(file)] = hashlib.sha256(file.read_bytes()).hexdigest()[:16]
        except OSError:
            out[str(file)] = ""
    return out


class _ImportWatch:
    """The first meta-path entry once a kernel file is loaded. A top-level import made by the user's own code
    is looked for in the kernel files' folders first (``python file.py``'s order for that code, though the
    folders are last on ``sys.path``); anything else finds nothing here and goes on as usual. Either way the
    file a module comes from is recorded when it lies in a kernel file's tree (so one imported and then
    dropped from ``sys.modules`` is still known). Reentrant imports inside its own look-up are left alone."""

    _busy = threading.local()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if getattr(self._busy, "on", False):
            return None
        self._busy.on = True
        try:
            first = None
            if path is None and FOLDERS and _imported_by_users_code():
                first = importlib.machinery.PathFinder.find_spec(name, sorted(FOLDERS))
            spec = first or importlib.machinery.PathFinder.find_spec(name, path)
            origin = getattr(spec, "origin", None)
            if isinstance(origin, str) and origin not in ("built-in", "frozen"):
                file = _resolved(origin)
                if file is not None and is_users(file):
                    _SEEN.setdefault(file, name)
            return first
        except Exception:  # (a finder's own trouble is the import's to report, not the watch's)
            return None
        finally:
            self._busy.on = False

    def invalidate_caches(self) -> None:
        return None


def _imported_by_users_code() -> bool:
    """Whether the frame that asked for the import being found (past the import system's own) is the user's."""
    frame = sys._getframe(2)
    while frame is not None:
        file = frame.f_code.co_filename
        if not (file.startswith("<frozen importlib") or file == importlib.__file__ or file == __file__):
            resolved = _resolved(file)
            return resolved is not None and is_users(resolved)
        frame = frame.f_back  # type: ignore[assignment]
    return False


_WATCH = _ImportWatch()


def watch(folder: Path) -> None:
    """Treat ``folder``'s tree as the user's, and watch imports from now on."""
    if folder not in _TREES:
        _TREES.add(folder)
        _CHECKED.clear()  # (a module seen before may lie in the new tree)
    if not any(f is _WATCH for f in sys.meta_path):
        sys.meta_path.insert(0, _WATCH)


def users_line_of(tb: object, frame: object = None) -> str:
    """``\n  at FILE:LINE in FUNCTION\n    source`` of the deepest frame in a user's kernel file tree, of a
    traceback ``tb`` or (when None) the stack ``frame`` is on; "" when none is the user's."""
    frames = list(traceback.extract_tb(tb)) if tb is not None else list(traceback.extract_stack(frame)) if frame is not None else []  # type: ignore[arg-type]
    for f in reversed(frames):
        resolved = _resolved(f.filename) if f.filename else None
        mine = resolved is not None and is_users(resolved)
        if mine:
            line = (linecache.getline(f.filename, f.lineno) or "").strip() if f.lineno is not None else ""
            return f"\n  at {f.filename}:{f.lineno} in {f.name}\n    {line}"
    return ""
