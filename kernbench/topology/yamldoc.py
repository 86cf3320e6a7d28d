"""Reading topology YAML safely, remembering where every key came from.

The one reader of topology text (files and ``--set`` values alike). It
bounds what a hostile or broken input can cost and reports what is wrong
with a line and column:

* input size (:data:`MAX_BYTES`), read no further than that, regular files
  only (not ``/dev/zero`` or a FIFO), strict UTF-8;
* nesting depth (:data:`MAX_DEPTH`), checked while composing, before Python
  recursion could run out;
* the document's size with every alias expanded (:data:`MAX_NODES`),
  computed from the node graph before anything is built (alias bombs);
* duplicate keys (both lines named); merge keys (``<<``) work as in YAML 1.1.

Numbers are read as YAML 1.2 and JSON spell them: ``1e3``, ``1.0e3``,
``2E-5`` and ``0o17`` are numbers (PyYAML's YAML 1.1 rules make the first
three strings).

:func:`load` returns the plain document and a map from key path
(``cube.links[4].prop_ns``, as :mod:`kernbench.topology.schema` writes
paths) to the ``(line, column)`` of that key or list item.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kernbench.errors import InputPathError, TopologyError
from kernbench.inputs import read_regular
from kernbench.topology.schema import join_path

MAX_BYTES = 1 << 20  # 1 MiB; the paper topology is 6 KiB
MAX_DEPTH = 32  # mapping/list nesting; the schema is 5 deep
MAX_NODES = 100_000  # scalars, lists and mappings once aliases are expanded

Positions = dict[str, tuple[int, int]]

_MERGE = "tag:yaml.org,2002:merge"
_PLAIN_TAGS = frozenset({"tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"})
_FLOAT_12 = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)[eE][-+]?[0-9]+$")
_OCTAL_12 = re.compile(r"^[-+]?0o[0-7_]+$")


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 number spellings and a nesting bound."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]  # types-PyYAML leaves Parser.peek_event unannotated
                raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels (the limit)", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_yaml_int(self, node: ScalarNode) -> int:
        text = node.value.replace("_", "")
        if _OCTAL_12.match(text):
            sign = -1 if text.startswith("-") else 1
            return sign * int(text.lstrip("+-")[2:], 8)
        return super().construct_yaml_int(node)


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_12, list("-+0123456789."))
_Loader.add_implicit_resolver("tag:yaml.org,2002:int", _OCTAL_12, list("-+0"))
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def read_file(path: Path) -> str:
    """A topology file's text: a regular file of at most :data:`MAX_BYTES`, in UTF-8."""
    source = str(path)
    try:
        data = read_regular(path, MAX_BYTES)
    except InputPathError as exc:
        if exc.problem.startswith(("not a regular file", "is a folder")):
            raise TopologyError(["not a regular file (a topology is a YAML file)"], source) from None
        if "larger than the limit" in exc.problem:
            raise TopologyError([f"larger than {MAX_BYTES // 1024} KiB, the limit for a topology file"], source) from None
        raise TopologyError([f"cannot read: {exc.problem}"], source) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise TopologyError(
            [f"line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); is this a YAML file?"], source
        ) from None


def load(text: str, source: str) -> tuple[Any, Positions]:
    """Parse one YAML document; every problem is a :class:`TopologyError` with a line and column."""
    if len(text) > MAX_BYTES:
        raise TopologyError([f"larger than {MAX_BYTES // 1024} KiB, the limit for a topology document"], source)
    loader = None
    try:
        loader = _Loader(text)  # the reader checks the characters here already
        root = loader.get_single_node()
        if root is None:
            return None, {}
        size, depth = _measure(root)
        if size > MAX_NODES:
            raise TopologyError([f"the document expands to more than {MAX_NODES:,} values (aliases included), the limit"], source)
        if depth > MAX_DEPTH:
            raise TopologyError([f"the document nests deeper than {MAX_DEPTH} levels (aliases included), the limit"], source)
        builder = _Builder(loader)
        doc = builder.build(root, "")
    except yaml.YAMLError as exc:
        raise TopologyError([_yaml_problem(exc, text)], source) from None
    except (ValueError, OverflowError) as exc:  # e.g. an integer of more digits than Python converts
        raise TopologyError([f"unreadable value: {_short(str(exc))}"], source) from None
    finally:
        if loader is not None:
            loader.dispose()
    if builder.problems:
        raise TopologyError(builder.problems, source)
    return doc, builder.positions


def _measure(root: Node) -> tuple[int, int]:
    """(values under ``root`` with aliases expanded, nesting depth), without recursion.

    Stops counting past the limits; a node that contains itself (a recursive
    alias) has no finite size and is reported as too big.
    """
    too_big = (MAX_NODES + 1, MAX_DEPTH + 1)
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        kids = _children(node)
        if children_done:
            size[key] = min(MAX_NODES + 1, 1 + sum(size[id(c)] for c in kids))
            depth[key] = 1 + max((depth[id(c)] for c in kids), default=0)
            open_nodes.discard(key)
            continue
        if key in size:
            continue
        open_nodes.add(key)
        stack.append((node, True))
        for child in kids:
            if id(child) in open_nodes:
                return too_big
            if id(child) not in size:
                stack.append((child, False))
    return size[id(root)], depth[id(root)]


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


class _Builder:
    """Node graph → plain Python values, recording each key's position and every duplicate key."""

    def __init__(self, loader: _Loader) -> None:
        self.loader = loader
        self.positions: Positions = {}
        self.problems: list[str] = []

    def build(self, node: Node, path: str) -> Any:
        if isinstance(node, ScalarNode) or node.tag not in _PLAIN_TAGS:
            # PyYAML's safe constructor: plain scalars, the safe tags, an error for any other tag
            return self.loader.construct_object(node, deep=True)
        if isinstance(node, SequenceNode):
            items = []
            for i, item in enumerate(node.value):
                sub = join_path(path, i)
                self.positions.setdefault(sub, _mark(item))
                items.append(self.build(item, sub))
            return items
        assert isinstance(node, MappingNode)
        out: dict[Any, Any] = {}
        for value in self._merged(node, path):
            out.update(self.build(value, path))
        first: dict[Any, Node] = {}
        for key_node, value in node.value:
            if key_node.tag == _MERGE:
                continue
            key = self.build(key_node, path)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                self.problems.append(f"{path or '<root>'}: a key must be a plain scalar, got {type(key).__name__} ({_at(key_node)})")
                continue
            if key in first:
                self.problems.append(
                    f"{join_path(path, key)}: duplicate key ({_at(key_node)}; first at line {first[key].start_mark.line + 1}); keep one"
                )
                continue
            first[key] = key_node
            sub = join_path(path, key)
            self.positions[sub] = _mark(key_node)
            out[key] = self.build(value, sub)
        return out

    def _merged(self, node: MappingNode, path: str) -> list[Node]:
        """The mappings a ``<<`` key merges in (later keys of ``node`` override them)."""
        merged: list[Node] = []
        for key_node, value in node.value:
            if key_node.tag != _MERGE:
                continue
            items = value.value if isinstance(value, SequenceNode) else [value]
            for item in items:
                if not isinstance(item, MappingNode):
                    self.problems.append(f"{path or '<root>'}: '<<' merges mappings only ({_at(item)})")
                    continue
                merged.append(item)
        return merged[::-1]  # YAML: the first mapping listed wins, so it is applied last


def _mark(node: Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _at(node: Node) -> str:
    line, col = _mark(node)
    return f"line {line}, column {col}"


def _yaml_problem(exc: yaml.YAMLError, text: str) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    parts = [getattr(exc, "context", None), getattr(exc, "problem", None)]
    what = ", ".join(p for p in parts if p) or str(exc)
    if isinstance(exc, yaml.reader.ReaderError):
        line = text.count("\n", 0, exc.position) + 1
        where = f"line {line}: "
        what = f"{exc.reason} (#x{exc.character:04x})" if isinstance(exc.character, int) else str(exc.reason)
    return f"invalid YAML: {where}{_short(what)}"


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
