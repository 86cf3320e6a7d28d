"""Kernel files: a kernel of the user's, named on the command line as ``path/to/file.py[:NAME]``.

The file is imported as a module of its own (not as ``__main__``, so an
``if __name__ == "__main__":`` block does not run), and the kernels it
declares with :func:`kernbench.kernel` are what it offers. ``:NAME`` picks
one when it declares several. Its folder is the user's
(:mod:`kernbench.usercode`): its helpers import as under ``python file.py``,
are recorded wherever they are imported, and are inputs of the run.

What can go wrong says where, in the user's file: a missing or unreadable
file, a syntax error (line and column), an exception while the file is
imported (its deepest line in the file), a file that declares no kernel
(what to add, naming the ``tl`` functions it found), a ``:NAME`` it does
not declare (the names it does).

A loaded file is kept for the process's lifetime, keyed by its path and
its content's digest, so every command of one process (a sweep's points,
both sides of a compare) reads it once; an edited file is read again.

"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.machinery
import importlib.util
import linecache
import re
import sys
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kernbench.errors import KernbenchError
from kernbench.kernels.declared import DECLARED
from kernbench.raised import described, theirs
from kernbench.usercode import FOLDERS, _module_file, is_users, watch

if TYPE_CHECKING:
    from kernbench.kernels.registry import KernelSpec

SUFFIX = ".py"
MAX_BYTES = 1 << 20  # a kernel file is code, not data
MAX_SHOWN_CHARS = 160  # of a source line quoted in an error
_REF = re.compile(r"\A(?P<path>.+\.py)(?::(?P<name>[A-Za-z][A-Za-z0-9_.-]*))?\Z", re.S)
_MODULE_PREFIX = "kernbench_file_"


class KernelFileError(KernbenchError):
    """A kernel file cannot be read, imported, or does not declare the kernel asked for."""


@dataclass(frozen=True)
class KernelFile:
    path: Path
    digest: str
    kernels: dict[str, KernelSpec]  # declared name -> spec, in declaration order


_loaded: dict[tuple[Path, str], KernelFile] = {}


def is_file_ref(text: str) -> bool:
    """Whether a kernel argument names a file (``x.py``, ``dir/x.py:name``) rather than a shipped kernel."""
    return bool(_REF.match(text))


def split_ref(text: str) -> tuple[str, str | None]:
    m = _REF.match(text)
    if m is None:
        raise KernelFileError(f"{text!r}: name a kernel file as path/to/file.py or path/to/file.py:NAME")
    return m["path"], m["name"]


def get(ref: str) -> KernelSpec:
    """The kernel ``ref`` (``path.py`` or ``path.py:NAME``) names."""
    path, name = split_ref(ref)
    kf = load(path)
    if name is None:
        if len(kf.kernels) > 1:
            names = ", ".join(kf.kernels)
            raise KernelFileError(f"{path} declares {len(kf.kernels)} kernels ({names}): name one, e.g. {path}:{next(iter(kf.kernels))}")
        return next(iter(kf.kernels.values()))
    key = name.replace("_", "-")
    for spec in kf.kernels.values():
        if key in (spec.name, spec.name.replace("_", "-")):
            return spec
    raise KernelFileError(f"{path} declares no kernel {name!r}; it declares {', '.join(kf.kernels)}")


def load(path_text: str) -> KernelFile:
    """Read and import a kernel file once per content (see the module docstring)."""
    path = _resolve(path_text)
    source = _read(path_text, path)
    digest = hashlib.sha256(source).hexdigest()[:16]
    if (path, digest) in _loaded:
        return _loaded[(path, digest)]
    tree = _parse(path_text, source)
    module_name = f"{_MODULE_PREFIX}{hashlib.sha256(str(path).encode()).hexdigest()[:12]}_{digest}"
    before = set(sys.modules)
    if not _declares_something(tree):
        raise KernelFileError(_no_declaration(path_text, tree))
    _import(path_text, path, module_name)
    declared = DECLARED.get(module_name, {})
    if not declared:
        raise KernelFileError(_no_declaration(path_text, tree))
    neighbours = _neighbours(path, set(sys.modules) - before - {module_name})
    full = _digest(source, neighbours)
    inputs = (str(path), *(str(f) for _name, f in neighbours if f != path))
    kf = KernelFile(path, full, {n: replace(s, source=str(path), digest=full, inputs=inputs) for n, s in declared.items()})
    _loaded[(path, digest)] = kf
    return kf


def _resolve(path_text: str) -> Path:
    path = Path(path_text).expanduser()
    try:
        return path.resolve(strict=True)
    except FileNotFoundError:
        raise KernelFileError(f"{path_text}: no such kernel file") from None
    except (OSError, RuntimeError) as exc:
        raise KernelFileError(f"{path_text}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None


def _read(path_text: str, path: Path) -> bytes:
    if not path.is_file():
        raise KernelFileError(f"{path_text}: not a regular file")
    try:
        with path.open("rb") as f:
            source = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise KernelFileError(f"{path_text}: cannot read it: {exc.strerror or exc}") from None
    if len(source) > MAX_BYTES:
        raise KernelFileError(f"{path_text}: over {MAX_BYTES // 2**20} MiB; a kernel file is code (keep data out of it)")
    return source


def _parse(path_text: str, source: bytes) -> ast.Module:
    try:
        return ast.parse(source, filename=path_text)
    except SyntaxError as exc:
        raise KernelFileError(_syntax_message(path_text, exc)) from None
    except ValueError as exc:  # null bytes
        raise KernelFileError(f"{path_text}: not Python source ({exc})") from None
    except (RecursionError, MemoryError):  # (an expression nested thousands deep: the parser's stack)
        raise KernelFileError(f"{path_text}: too deeply nested for Python's parser (an expression or block thousands deep)") from None


def _syntax_message(path_text: str, exc: SyntaxError) -> str:
    where = f"{path_text}:{exc.lineno}" + (f":{exc.offset}" if exc.offset else "")
    text = (exc.text or "").strip()
    if len(text) > MAX_SHOWN_CHARS:  # (a generated line of thousands of brackets: the start says enough)
        text = text[:MAX_SHOWN_CHARS] + f"… ({len(text):,} characters)"
    return f"{where}: {type(exc).__name__}: {exc.msg}" + (f"\n    {text}" if text else "")


def _declares_something(tree: ast.Module) -> bool:
    """Whether the file imports ``kernel`` from kernbench or calls ``*.kernel(...)``: without that, importing it
    could only run its top-level code (a script's own simulation) to find nothing."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("kernbench", "kernbench.kernels.registry"):
            if any(alias.name in ("kernel", "*") for alias in node.names):
                return True
        if isinstance(node, ast.Attribute) and node.attr == "kernel":
            return True
    return False


def _import(path_text: str, path: Path, module_name: str) -> None:
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise KernelFileError(f"{path_text}: cannot be imported as Python")
    module = importlib.util.module_from_spec(spec)
    watch(path.parent)
    folder = str(path.parent)
    if folder not in FOLDERS:
        FOLDERS.add(folder)
        if folder not in sys.path:
            sys.path.append(folder)  # (last: see kernbench.usercode; the user's code finds it first anyway)
    sys.modules[module_name] = module  # (pickling and dataclasses look a module up by name)
    try:
        spec.loader.exec_module(module)
    except KernbenchError:
        raise
    except SyntaxError as exc:  # in a file it imports
        sys.modules.pop(module_name, None)
        raise KernelFileError(_syntax_message(exc.filename or path_text, exc)) from None
    except BaseException as exc:  # (sys.exit() and other BaseExceptions at import are the user's too)
        sys.modules.pop(module_name, None)
        DECLARED.pop(module_name, None)
        if not theirs(exc):
            raise
        raise KernelFileError(f"{path_text}: importing it raised {described(exc)}{user_line(exc, path)}") from None


def user_line(exc: BaseException, path: Path) -> str:
    """``\\n  at FILE:LINE in FUNCTION\\n    source`` of the deepest frame of ``exc`` in ``path`` ("" if none)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename and Path(f.filename).resolve() == path]
    if not frames:
        return ""
    f = frames[-1]
    line = (linecache.getline(f.filename, f.lineno) or "").strip() if f.lineno is not None else ""
    return f"\n  at {f.filename}:{f.lineno} in {f.name}\n    {line}"


def _neighbours(path: Path, imported: set[str]) -> list[tuple[str, Path]]:
    """The modules ``path`` imported from its own folder tree, by name, with their files (results depend on them too)."""
    out = []
    for name in sorted(imported):
        file = _module_file(sys.modules.get(name))
        if file is not None and is_users(file):
            out.append((name, file))
    return out


def _digest(source: bytes, neighbours: list[tuple[str, Path]]) -> str:
    """The file's digest with those of the modules it imported beside it."""
    h = hashlib.sha256(source)
    for name, file in neighbours:
        try:
            h.update(name.encode() + b"\0" + file.read_bytes())
        except OSError:
            continue
    return h.hexdigest()[:16]


def tl_functions(tree: ast.Module) -> list[tuple[str, int]]:
    """Top-level functions that call ``tl.*``: the kernels a file holds, with their lines."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            uses = any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "tl" for n in ast.walk(node))
            if uses:
                found.append((node.name, node.lineno))
    return found


def _no_declaration(path_text: str, tree: ast.Module) -> str:
    fns = tl_functions(tree)
    launched = fns[0][0] if fns else "my_kernel"
    found = (
        f"it has the tl function(s) {', '.join(f'{n} (line {line})' for n, line in fns)}, but no set-up that deploys their tensors and launches them"
        if fns
        else "it has no function that calls tl"
    )
    return (
        f"{path_text} declares no kernel: {found}. Declare one beside it:\n\n"
        "    from kernbench import Option, kernel\n\n"
        '    @kernel(options=[Option("n", int, 4096, "elements", low=1, high=1 << 20)], topology="cube1")\n'
        "    def setup(rt, n):\n"
        "        x = rt.deploy(np.ones((1, n)), pe=0)          # the tensors, in HBM\n"
        "        out = rt.empty((1, n), pe=0)\n"
        f"        rt.launch({launched}, pes=[0], args=(x, out))\n"
        "        return lambda: float(np.abs(rt.read(out) - 1).max())   # optional: max |error| vs a reference\n\n"
        '`kernbench new kernel NAME` writes a commented template; README, "Write your own kernel", says more.'
    )
