"""The engine's rooms stay rooms: small modules without section banners, and only
``fifo.py`` writes a ``Fifo``'s or a ``Passage``'s fields (issue 19, item 3)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kernbench.sim.fifo import Fifo, Passage

ROOT = Path(__file__).resolve().parents[2] / "kernbench"
SIM = sorted((ROOT / "sim").glob("*.py"))
MAX_LINES = 420  # "no module over ~400 lines"
BANNER = re.compile(r"^\s*#\s*(?:[-=#*~]{3,}|.*[-=#*~]{8,}\s*$)")
# what mutates a list, deque or dict in place
MUTATORS = {"append", "appendleft", "extend", "insert", "pop", "popleft", "remove", "clear", "sort", "update", "setdefault"}


@pytest.mark.parametrize("path", SIM, ids=lambda p: p.name)
def test_a_sim_module_is_small_and_has_no_section_banners(path):
    lines = path.read_text().splitlines()
    assert len(lines) <= MAX_LINES, f"{path.name}: {len(lines)} lines"
    banners = [f"{i}: {line}" for i, line in enumerate(lines, 1) if BANNER.match(line)]
    assert not banners, banners


def _field_writes(tree: ast.AST, fields: set[str]) -> list[str]:
    """Assignments to, and in-place changes of, ``x.field`` for a ``field`` in ``fields``
    and an ``x`` other than ``self`` (a class's own fields are its business)."""

    def foreign(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Attribute) and node.attr in fields and not (isinstance(node.value, ast.Name) and node.value.id == "self")
        )

    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        for t in targets:
            for sub in ast.walk(t):
                if foreign(sub):
                    found.append(f"{node.lineno}: {ast.unparse(t)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
            if foreign(node.func.value):
                found.append(f"{node.lineno}: {ast.unparse(node.func)}(…)")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            found.append(f"{node.lineno}: setattr(…)")
    return found


def test_only_fifo_py_writes_the_fields_of_a_fifo_or_a_passage():
    fields = set(Fifo.__slots__) | set(Passage.__slots__)
    offenders = {}
    for path in sorted(ROOT.rglob("*.py")):
        if path == ROOT / "sim" / "fifo.py":
            continue
        tree = ast.parse(path.read_text())
        subclasses = [
            n.name
            for n in ast.walk(tree)
            if isinstance(n, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id in ("Fifo", "Passage") for b in n.bases)
        ]
        assert not subclasses, f"{path}: {subclasses} subclass Fifo or Passage"
        writes = _field_writes(tree, fields)
        if writes:
            offenders[str(path.relative_to(ROOT))] = writes
    assert not offenders, offenders


def test_the_field_check_sees_a_write():
    tree = ast.parse("f.free = 3.0\np.out += 1\nf.members.append(p)\nself.free = 0.0\nx = f.free\n")
    assert _field_writes(tree, {"free", "out", "members"}) == ["1: f.free", "2: p.out", "3: f.members.append(…)"]


def test_the_banner_check_sees_a_banner():
    assert BANNER.match("# --- the kernels ---------------------------------------")
    assert BANNER.match("    # ======== fast mode")
    assert not BANNER.match("# a comment - with a dash")
