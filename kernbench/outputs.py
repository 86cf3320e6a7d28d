"""Output files: checked before any work, written whole or not at all.

Every file kernbench writes (``--trace``, ``--perfetto``, the goldens, the
debugger's saves) goes through :func:`write_atomic`: the bytes go to a
temporary file beside the target, which is renamed over it only once it is
complete. A failed write (disk full, ``ulimit -f``), Ctrl-C or SIGTERM
removes the temporary file and leaves an existing target as it was.

:func:`check_outputs` runs before a simulation starts, so a bad path fails at
once: the folder must exist and be writable, the target must be a regular
file (or not exist yet), no two outputs may share a path and no output may
overwrite an input — nor a module the user's kernel file loaded (a helper
beside it, one its set-up imported: :func:`kernbench.usercode.user_modules`),
which :func:`write_all_atomic` checks again just before writing, when the
whole run has imported what it will. Any odd path (a name too long, a folder that cannot be
searched, a symlink loop) is an :class:`~kernbench.errors.OutputPathError`
naming it, never an ``OSError`` traceback.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from kernbench.errors import InputPathError, OutputPathError
from kernbench.inputs import stat_or_none
from kernbench.interrupts import committing, raise_pending

PART_SUFFIX = ".part"


def check_outputs(
    outputs: Iterable[tuple[str, str | os.PathLike[str] | None]], inputs: Iterable[str | os.PathLike[str] | None] = ()
) -> None:
    """``outputs`` as ``(flag, path)`` pairs (``None`` paths are skipped); raise on the first bad one.

    ``inputs`` are every file the run reads (a topology, each topology of a sweep's grid, …):
    no output may be one of them."""
    given = [(flag, raw) for flag, raw in outputs if raw is not None]
    if not given:
        return
    seen: dict[tuple[int, int] | Path, str] = {}
    ins = {ident for p in inputs if p is not None and (ident := _input_identity(Path(p))) is not None}
    users = _users_modules()
    for flag, raw in given:
        path = Path(raw)
        _check_one(flag, path)
        key = _identity(flag, path)
        if key in seen:
            raise OutputPathError(f"{flag} {raw}: the same file as {seen[key]}; give each output its own path")
        if key in ins:
            raise OutputPathError(f"{flag} {raw}: that is an input of this run; writing it would destroy it")
        if key in users:
            raise OutputPathError(_users_module_message(f"{flag} {raw}", users[key]))
        seen[key] = f"{flag} {raw}"


def _users_modules() -> dict[tuple[int, int], str]:
    """(device, inode) of every module the user's kernel files loaded, with its name (none if no kernel file was)."""
    from kernbench.usercode import user_modules

    return {ident: name for path, name in user_modules().items() if (ident := _input_identity(path)) is not None}


def _users_module_message(where: str, module: str) -> str:
    return f"{where}: that is the module {module!r}, which your kernel file loaded (an input of this run); writing it would destroy it"


def _refuse_users_modules(paths: Iterable[Path]) -> None:
    users = _users_modules()
    if not users:
        return
    for path in paths:
        ident = _input_identity(path)
        if ident is not None and ident in users:
            raise OutputPathError(_users_module_message(str(path), users[ident]))


def _identity(flag: str, path: Path) -> tuple[int, int] | Path:
    """One key per file: (device, inode) of a file that exists (a symlink, a hard link or another
    spelling of it is the same file), else its resolved path."""
    info = _stat(flag, path)
    if info is not None:
        return (info.st_dev, info.st_ino)
    try:
        return path.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop on older Pythons
        raise OutputPathError(f"{flag} {path}: {exc}") from None


def _input_identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None  # an input that is not there is the reader's to report
    return (info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None


def _stat(flag: str, path: Path) -> os.stat_result | None:
    """``os.stat``; None when nothing is there; any other OSError is an :class:`OutputPathError`."""
    try:
        return stat_or_none(path, flag)
    except InputPathError as exc:
        raise OutputPathError(str(exc)) from None


def _check_one(flag: str, path: Path) -> None:
    where = f"{flag} {path}"
    if str(path) == "" or path.name in ("", ".", ".."):
        raise OutputPathError(f"{where}: not a file name")
    info = _stat(flag, path)
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise OutputPathError(f"{where}: is a directory; give a file name inside it")
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise OutputPathError(f"{where}: exists and is not a regular file")
    folder = path.parent
    there = _stat(f"{flag} {path}: folder", folder)
    if there is None:
        raise OutputPathError(f"{where}: folder {folder} does not exist")
    if not stat.S_ISDIR(there.st_mode):
        raise OutputPathError(f"{where}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputPathError(f"{where}: folder {folder} is not writable")
    size, most = len(os.fsencode(path.name)), _name_max(folder)
    if size > most:
        raise OutputPathError(f"{where}: the file name is too long ({size} bytes; this folder allows {most})")


def _name_max(folder: Path) -> int:
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return 255


def write_atomic(path: str | os.PathLike[str], write: Callable[[IO[bytes]], Any], *, announce: bool = True) -> None:
    """Call ``write(f)`` on a temporary file beside ``path``, then rename it over ``path``.

    On any failure (including KeyboardInterrupt) the temporary file is
    removed and ``path`` is untouched; an OSError becomes an
    :class:`OutputPathError` naming the file.
    """
    write_all_atomic([(path, write)], announce=announce)


def write_all_atomic(outputs: Sequence[tuple[str | os.PathLike[str], Callable[[IO[bytes]], Any]]], *, announce: bool = True) -> None:
    """Several outputs of one command, all or none: each is written to its
    temporary file first; only when every one is complete are they renamed
    (an interrupt waits for the last rename). ``announce``: an interrupt's
    line names them as written (not for a cache's entries)."""
    _refuse_users_modules(Path(raw) for raw, _ in outputs)  # (one the run imported after the outputs were checked)
    done: list[tuple[Path, Path]] = []
    current: Path | None = None
    try:
        for raw, write in outputs:
            current = Path(raw)
            tmp, fd = _create_beside(current)
            done.append((tmp, current))
            with os.fdopen(fd, "wb") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
        raise_pending()  # (an interrupt Python dropped while they were made: see kernbench.interrupts)
        with committing([str(path) for _, path in done] if announce else []):  # (all renamed, or none)
            for tmp, path in done:
                current = path
                os.replace(tmp, path)
            done.clear()
    except OSError as exc:
        assert current is not None  # set before anything that can raise OSError
        raise OutputPathError(f"cannot write {current}: {exc.strerror or exc}; {_kept(current)}") from None
    finally:
        for tmp, _ in done:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _create_beside(path: Path) -> tuple[Path, int]:
    """A new, exclusively created temporary file in ``path``'s folder (mode from the umask)."""
    import secrets  # (here: a run that writes no file does not load it and what it imports)

    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}{PART_SUFFIX}")
        if len(os.fsencode(tmp.name)) > _name_max(path.parent):  # a long target name: a short temporary one
            tmp = path.with_name(f".kb{secrets.token_hex(8)}{PART_SUFFIX}")
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue


def _kept(path: Path) -> str:
    return f"{path} was left as it was" if os.path.exists(path) else f"{path} was not created"


def write_text_atomic(path: str | os.PathLike[str], text: str, *, announce: bool = True) -> None:
    write_atomic(path, lambda f: f.write(text.encode("utf-8")), announce=announce)


def to_json(obj: Any, **kwargs: Any) -> str:
    """Strict JSON (``NaN``/``Infinity`` are not JSON: they raise instead of being printed)."""
    return json.dumps(obj, allow_nan=False, **kwargs)
