"""Every parameter of a resolved topology, with its unit and where its value comes from.

One :class:`Param` per value the compiler reads (a list of router names is one
value; a list of links is one parameter per key of each link), keyed as
``--set`` takes it (``sip.ucie.bw_gbps``, ``cube.links[4].prop_ns``), in the
schema's order. ``source`` is

* ``hw`` / ``cal`` / ``hw+cal`` / ``unmarked``: the file gives the value;
  what its comment says (:mod:`kernbench.topology.provenance`);
* ``default``: the file leaves it out and the schema fills it in;
* ``--set``: an override gave it; ``was`` is what the file (or the schema)
  would have given, None when nothing would have.

``name`` and ``description`` are the topology's title, not parameters.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kernbench.topology.provenance import comment_of, marks, source_of
from kernbench.topology.schema import Field, ListOf, MapOf, Section, join_path, validate
from kernbench.topology.spec import TOPOLOGY_SCHEMA, Resolved, key_parts
from kernbench.topology.units import unit_of

TITLE_KEYS = ("name", "description")
SOURCES = ("hw", "cal", "hw+cal", "unmarked", "default", "--set")


@dataclass(frozen=True, slots=True)
class Param:
    key: str  # the key path, as --set takes it
    value: Any
    unit: str
    source: str  # one of SOURCES
    comment: str = ""  # the YAML comment on the value's line, as written
    marked_by: str = ""  # the part of it whose [hw]/[cal] marker reaches this key
    line: int | None = None  # of the key in the file
    help: str = ""  # what the schema says the value is
    set_by: str = ""  # the --set that gave the value
    was: Param | None = None  # for --set: the value without it

    def as_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"key": self.key, "value": self.value, "unit": self.unit, "source": self.source}
        doc.update({k: v for k, v in (("comment", self.comment), ("line", self.line), ("help", self.help)) if v})
        if self.source == "--set":
            doc["set"] = self.set_by
            doc["was"] = None if self.was is None else {"value": self.was.value, "source": self.was.source}
        return doc


def parameters(resolved: Resolved) -> list[Param]:
    """The rows of ``topo show --params``: every parameter of ``resolved.spec``."""
    base, _ = validate(resolved.doc, TOPOLOGY_SCHEMA)  # the file alone, defaults filled in
    reader = _FileReader(resolved, base)
    rows = []
    for path, key, value in leaves(resolved.spec):
        set_by = resolved.overridden(path)
        if set_by is None:
            rows.append(reader.param(path, key, value))
            continue
        was = reader.param(path, key, reader.values[path]) if path in reader.values else None
        rows.append(Param(path, value, _unit(key), "--set", help=field_help(path), set_by=set_by, was=was))
    return rows


def leaves(spec: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, str, Any]]:
    """``(key path, key, value)`` of every parameter under ``spec``, the title keys left out."""
    for key, value in spec.items():
        sub = join_path(path, key)
        if value is None or (not path and key in TITLE_KEYS):
            continue
        if isinstance(value, Mapping):
            yield from leaves(value, sub)
        elif isinstance(value, (list, tuple)) and any(isinstance(v, Mapping) for v in value):
            for i, item in enumerate(value):
                yield from leaves(item, join_path(sub, i))
        else:
            yield sub, str(key), value


def field_help(path: str) -> str:
    """The schema's description of the value at ``path`` ("" if it has none)."""
    node: Any = TOPOLOGY_SCHEMA
    for part in key_parts(path):
        if isinstance(node, dict):
            node = Section(node)
        if isinstance(node, Section):
            node = node.fields.get(part)
        elif isinstance(node, ListOf):
            node = node.item
        elif isinstance(node, MapOf):
            node = node.value
        else:
            return ""
    return node.help if isinstance(node, Field) else ""


def _unit(key: str) -> str:
    unit = unit_of(key)
    return unit.symbol if unit else ""


class _FileReader:
    """What the file says of each value: its line, its comment, the markers that reach it."""

    def __init__(self, resolved: Resolved, base: Mapping[str, Any]) -> None:
        self.positions = resolved.positions
        self.lines = resolved.text.splitlines()
        self.values: dict[str, Any] = {}
        self.keys_on_line: dict[int, list[str]] = defaultdict(list)
        for path, key, value in leaves(base):
            self.values[path] = value
            if path in self.positions:
                self.keys_on_line[self.positions[path][0]].append(key)

    def param(self, path: str, key: str, value: Any) -> Param:
        if path not in self.positions:
            return Param(path, value, _unit(key), "default", help=field_help(path))
        line = self.positions[path][0]
        comment = comment_of(self.lines[line - 1]) if line <= len(self.lines) else ""
        marked_by = marks(comment, self.keys_on_line[line]).get(key, ())
        return Param(
            path,
            value,
            _unit(key),
            source_of(marked_by),
            comment=comment,
            marked_by=" ".join(s.text for s in marked_by),
            line=line,
            help=field_help(path),
        )
