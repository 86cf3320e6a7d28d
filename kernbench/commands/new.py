"""``kernbench new kernel NAME``: write a commented, runnable kernel file to start from.

The file holds a kernel (a plain function against ``tl``) and its set-up,
declared with :func:`kernbench.kernel`, so every command takes it at once:
``kernbench run NAME.py``, ``kernbench-tui run NAME.py``, ``--explain``,
``compare``, ``sweep``. It is written to ``NAME.py`` in the current folder
(``--out PATH`` elsewhere) and never over an existing file.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import keyword
import os
import re
from functools import cache
from pathlib import Path

from kernbench.cliargs import description
from kernbench.errors import KernbenchError
from kernbench.inputs import stat_or_none
from kernbench.outputs import check_outputs, write_text_atomic

_NAME = re.compile(r"\A[A-Za-z][A-Za-z0-9_]*\Z")  # (\Z: "$" would take "x\n")

TEMPLATE = '''\
"""{name}: a kernel for kernbench, written against its tile-level API (`tl`).

    kernbench run {name}.py                    # simulate it: latency, engines, error vs numpy
    kernbench run {name}.py --help             # its options (below), their ranges, the topology
    kernbench run {name}.py --explain          # where every nanosecond of the latency went
    kernbench-tui run {name}.py                # step through its timeline in the debugger
    kernbench compare "{name}.py --tile 256" "{name}.py --tile 2048"
    kernbench sweep {name}.py --grid tile=256,512,1024,2048

Every `tl` call computes real numerics with numpy at once and issues one PE
command whose time the simulation models; the `tl` reference (docs/tl.md in
the kernbench repository) says what each call costs.
"""

import numpy as np

from kernbench import Option, kernel, tl


def {name}_kernel(xs, ys, outs, tile):
    """Runs on every PE of the launch: out = x * y + x over this PE's row, one tile at a time."""
    me = tl.program_id()  # which program of the launch this is (0, 1, ...): it picks this PE's data
    x, y, out = xs[me], ys[me], outs[me]
    n = x.shape[1]
    # tl.load is lazy (ADR-0062): it issues the DMA read and returns at once; the first op that
    # uses the handle waits for the data. Loading the next tile before computing this one lets
    # the DMA engine stream while the MATH engine works.
    nxt = (tl.load(x[:, 0:tile]), tl.load(y[:, 0:tile]))
    for j in range(0, n, tile):
        a, b = nxt
        k = j + tile
        if k < n:
            nxt = (tl.load(x[:, k : k + tile]), tl.load(y[:, k : k + tile]))
        r = tl.add(tl.mul(a, b), a)  # two MATH commands; each costs PE_CPU a dispatch (ADR-0064)
        tl.store(out[:, j : j + tile], r)  # a DMA write back to HBM


def _fits(options, pes_available):
    """Rules between the options and the topology, checked before anything is deployed."""
    problems = []
    if options["pes"] > pes_available:
        problems.append(f"--pes {{options['pes']}}: the topology has {{pes_available}} PEs")
    if options["n"] % options["tile"]:
        problems.append(f"--n {{options['n']}} must divide by --tile {{options['tile']}}")
    return problems


@kernel(
    options=[  # each becomes --name on the command line and a keyword argument below
        Option("n", int, 8192, "elements per row", low=1, high=1 << 22),
        Option("tile", int, 1024, "elements per load", low=1, high=1 << 22),
        Option("pes", int, 4, "PEs, one row each", low=1, high=256),
        Option("seed", int, 0, "random seed of the inputs", low=0, high=2**32 - 1),
    ],
    topology="cube1",  # one CUBE, 8 PEs; --topology paper (or a YAML file) for another
    check=_fits,
)
def {name}(rt, n, tile, pes, seed):
    """x * y + x, one row per PE, in tiles (a template: make it yours)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((pes, n))
    Y = rng.standard_normal((pes, n))
    # Each PE's row in its own HBM slice (pe=i), so every PE reads beside itself. Arrays are
    # stored as float16; tl math runs in float32.
    xs = [rt.deploy(X[i : i + 1], pe=i) for i in range(pes)]
    ys = [rt.deploy(Y[i : i + 1], pe=i) for i in range(pes)]
    outs = [rt.empty((1, n), pe=i) for i in range(pes)]
    rt.launch({name}_kernel, pes=range(pes), args=(xs, ys, outs, tile))

    def max_error():  # called after the run: the output against a numpy reference
        x, y = X.astype(np.float16).astype(np.float32), Y.astype(np.float16).astype(np.float32)
        got = np.concatenate([rt.read(o) for o in outs]).astype(np.float32)
        return float(np.abs(got - (x * y + x)).max())

    return max_error
'''


@cache
def _names_the_template_uses() -> frozenset[str]:
    """The names the template's functions look up when they run: its own module-level names (np, tl,
    _fits, …) and the builtins it calls (float, range, …). A kernel named after one would replace it
    before it is used. Names only its decorators read (kernel, Option) are read before the kernel's
    own def binds, so they may name it."""
    tree = ast.parse(TEMPLATE.format(name="kernel_name_placeholder"))
    top = {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom | ast.Import) for alias in node.names}
    top |= {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    bodies = [stmt for node in tree.body if isinstance(node, ast.FunctionDef) for stmt in node.body]
    loaded = {n.id for stmt in bodies for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return frozenset(name for name in loaded if (name in top or hasattr(builtins, name)) and "placeholder" not in name)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = subparsers.add_parser("new", help="write a new kernel file to start from", description=description(__doc__))
    sub = p.add_subparsers(dest="new_command", metavar="WHAT", required=True)
    k = sub.add_parser("kernel", help="a commented, runnable kernel file: NAME.py")
    k.add_argument("name", metavar="NAME", help="the kernel's name (letters, digits, _; a letter first)")
    k.add_argument(
        "--out", default=None, metavar="PATH", help="where to write it: a .py file, or a folder for NAME.py (default: NAME.py here)"
    )
    return p


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name the template's kernel (a function of that name), or None."""
    if not _NAME.match(name):
        return "a name is letters, digits and _, a letter first (it names a Python function)"
    if keyword.iskeyword(name):
        return "is a Python keyword; choose another"
    if name in _names_the_template_uses():
        return "is a name the file's own code uses (the kernel would replace it); choose another"
    return None


def shadow_problem(path: Path) -> str | None:
    """Why a module file at ``path`` would hide an installed module of its name from Python run in its
    folder (``numpy.py``: ``import numpy`` there finds it), or None. Installed: found by Python's import
    system (site-packages, the standard library, an editable install) anywhere but the current folder,
    ``path``'s folder and the folders of kernel files this process loaded."""
    import importlib.util

    from kernbench.usercode import FOLDERS

    name = path.stem
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.has_location and spec.origin:
        where = Path(spec.origin).resolve().parent  # the folder on sys.path: a module's, or a package's parent
        if spec.submodule_search_locations is not None:
            where = where.parent
        local = {Path(p or os.getcwd()).resolve() for p in ("", str(path.parent), *FOLDERS)}
        if where in local:
            return None
    return f"{path.name} would be imported in place of the installed module {name!r} by Python run in its folder; choose another name"


def run(args: argparse.Namespace) -> int:
    name = args.name
    if problem := name_problem(name):
        raise KernbenchError(f"new kernel {name!r}: {problem}")
    path = Path(args.out) if args.out else Path(f"{name}.py")
    if os.path.isdir(path):  # --out a folder: NAME.py in it (isdir: False, not OSError, for a name too long)
        path = path / f"{name}.py"
    if path.suffix != ".py":
        raise KernbenchError(f"--out {path}: a kernel file ends in .py (or give a folder to write {name}.py in)")
    if os.path.lexists(path):  # (lexists: False, not OSError, for a name too long)
        stat_or_none(path, "--out")  # a symbolic-link loop or the like is said as what it is
        raise KernbenchError(f"{path} exists; not overwritten (give --out another path)")
    check_outputs([("--out", str(path))])  # (a name too long or a locked folder is one error here, not an OSError)
    if problem := shadow_problem(path):
        raise KernbenchError(f"new kernel {name!r}: {problem}")
    write_text_atomic(path, TEMPLATE.format(name=name))
    print(f"wrote {path}: try `kernbench run {path}` (and `kernbench run {path} --help`)")
    return 0
