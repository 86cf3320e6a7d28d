"""Capturing the source site of a command, cheaply, where the kernel context issues it.

:func:`site_of` walks the issuing greenlet's frames from the ``tl`` call
outwards, keeps the user's frames (see :mod:`kernbench.events.source`: not
kernbench's machinery, not Python's libraries; shipped kernels are user code)
and returns their ``src`` string. Two caches make it cost a few dictionary
lookups per command: whether a code object is the user's (per code object),
and the string of a chain of ``(code, line)`` pairs (per chain). A kernel's
commands come from a handful of lines, so after the first command of each
line nothing is formatted again.

``benchmarks/bench_sources.py`` measures what it costs (docs/lines.md).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from types import CodeType, FrameType

from kernbench.events.source import Frame, site_text

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../kernbench
_USER_INSIDE = tuple(os.path.join(_PACKAGE, folder) + os.sep for folder in ("kernels", "layers"))  # shipped kernels are user code
_LIBRARY = tuple(
    sorted({os.path.abspath(p) + os.sep for key in ("stdlib", "platstdlib", "purelib", "platlib") if (p := sysconfig.get_paths().get(key))})
)

# Keyed by the code object's id, not the object: code objects compare by value and leave the
# file name out (two identical functions in two files are "equal"). Every code object seen is
# kept alive in _seen, so no id is ever reused for another one.
_user_code: dict[int, bool] = {}
_seen: list[CodeType] = []
_sites: dict[tuple[int, ...], str] = {}


def is_user_file(filename: str) -> bool:
    """Is ``filename`` the user's code (a kernel file, a shipped kernel), not kernbench's or a library's?"""
    path = os.path.abspath(filename)
    if path.startswith(_USER_INSIDE):
        return True
    if path.startswith(_PACKAGE + os.sep):
        return False
    if filename.startswith("<") and filename != "<string>":  # <frozen importlib>, <decorator-gen>
        return False
    return not path.startswith(_LIBRARY)


def _is_user(code: CodeType) -> bool:
    user = _user_code.get(id(code))
    if user is None:
        user = _user_code[id(code)] = is_user_file(code.co_filename)
        _seen.append(code)
    return user


def site_of(frame: FrameType | None) -> str:
    """The ``src`` string of the user's frames on the stack from ``frame`` outwards ("" if none)."""
    key: list[int] = []
    frames: list[FrameType] = []
    while frame is not None:
        code = frame.f_code
        if _is_user(code):
            key.append(id(code))
            key.append(frame.f_lineno)
            frames.append(frame)
        frame = frame.f_back
    if not key:
        return ""
    chain = tuple(key)
    src = _sites.get(chain)
    if src is None:
        src = _sites[chain] = site_text([Frame(f.f_code.co_filename, f.f_lineno, f.f_code.co_name) for f in frames])
    return src


def caller_site(depth: int) -> str:
    """:func:`site_of` from the frame ``depth`` levels above the caller's."""
    return site_of(sys._getframe(depth + 1))
