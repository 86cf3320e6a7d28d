"""Input files: a regular file of bounded size, read without blocking, every OS error one clear line.

Every file kernbench reads (a topology, a trace, the goldens, a sweep cache
entry) goes through :func:`read_regular`: it opens without blocking (a FIFO
named as a topology does not hang the command), checks on the open file
that it is a regular file (not ``/dev/zero``, a FIFO or a folder) no larger
than the reader's limit, and reads at most one byte past that limit. A path
is looked at only through :func:`stat_or_none`, which answers "not there"
for a missing file and turns every other ``OSError`` (a name over 255
bytes, a folder without search permission, a symlink loop) into an
:class:`InputPathError` naming the path and what to do, instead of the
traceback ``Path.exists()`` gives for those.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

from kernbench.errors import InputPathError

#: errno → what it means for a path a person gave (the OS's own words say less: "File name too long")
_MEANING = {
    errno.ENAMETOOLONG: "the file name is too long (at most 255 bytes per name on most file systems)",
    errno.EACCES: "permission denied (a folder on the way cannot be searched, or the file cannot be read)",
    errno.EPERM: "operation not permitted",
    errno.ELOOP: "too many levels of symbolic links (a symlink loop?)",
    errno.ENOTDIR: "a part of the path that should be a folder is a file",
    errno.EISDIR: "is a folder, not a file",
    errno.ENXIO: "not a regular file (a FIFO or socket with nobody on the other end)",
}


def meaning(exc: OSError) -> str:
    """An ``OSError`` in words a person acts on (the errno's meaning for a path, else the OS's message)."""
    return _MEANING.get(exc.errno or 0) or exc.strerror or str(exc)


def stat_or_none(path: str | os.PathLike[str], what: str = "") -> os.stat_result | None:
    """``os.stat(path)``; None when nothing is there (missing, or a dangling symlink); any other
    ``OSError`` (a file where a folder should be, too long a name, no permission) is an
    :class:`InputPathError` ("``what`` PATH: …")."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputPathError(f"{_label(what, path)}: {meaning(exc)}", meaning(exc)) from None
    except ValueError as exc:  # an embedded NUL byte
        raise InputPathError(f"{_label(what, path)}: not a usable path ({exc})", f"not a usable path ({exc})") from None


def exists(path: str | os.PathLike[str], what: str = "") -> bool:
    return stat_or_none(path, what) is not None


def open_regular(path: str | os.PathLike[str], what: str = "") -> BinaryIO:
    """``path`` opened for reading, once it is known to be a regular file (opened without blocking,
    checked on the open file); else an :class:`InputPathError` (missing, not a regular file, unreadable)."""
    label = _label(what, path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputPathError(f"{label}: no such file", "no such file") from None
    except OSError as exc:
        raise InputPathError(f"{label}: {meaning(exc)}", meaning(exc)) from None
    except ValueError as exc:  # an embedded NUL byte
        raise InputPathError(f"{label}: not a usable path ({exc})", f"not a usable path ({exc})") from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise InputPathError(f"{label}: {meaning(exc)}", meaning(exc)) from None
    if not stat.S_ISREG(mode):
        os.close(fd)
        problem = "is a folder, not a file" if stat.S_ISDIR(mode) else "not a regular file"
        raise InputPathError(f"{label}: {problem}", problem)
    return os.fdopen(fd, "rb")


def read_regular(path: str | os.PathLike[str], max_bytes: int, what: str = "") -> bytes:
    """The whole of a regular file of at most ``max_bytes`` (read no further than one byte past it);
    anything else is an :class:`InputPathError` whose ``problem`` says what is wrong."""
    label = _label(what, path)
    with open_regular(path, what) as f:
        try:
            size = os.fstat(f.fileno()).st_size
            data = f.read(max_bytes + 1) if size <= max_bytes else b""  # (+1: a file that grew while read)
        except OSError as exc:
            raise InputPathError(f"{label}: cannot read: {meaning(exc)}", f"cannot read: {meaning(exc)}") from None
    if size > max_bytes or len(data) > max_bytes:
        problem = f"{max(size, len(data)):,} bytes, larger than the limit of {max_bytes:,}"
        raise InputPathError(f"{label}: {problem}", problem)
    return data


def _label(what: str, path: str | os.PathLike[str]) -> str:
    return f"{what} {os.fsdecode(path)}" if what else os.fsdecode(path)
