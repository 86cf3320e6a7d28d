"""A sweep's grid: ``--grid KEY=V1,V2,…`` flags become axes, their product the points.

A KEY is one of

* an option of the kernel (``context``, ``kv-heads`` or ``kv_heads``): each
  value is read with the option's type and checked against its choices and
  range (:class:`~kernbench.kernels.registry.Option`);
* ``topology``: a named topology or a YAML file;
* a topology key path as ``--set`` takes it (``sip.ucie.bw_gbps``,
  ``cube.links.4.prop_ns``): each value is read as YAML and checked against
  the schema field's type and range.

A bad key or value is one error naming its ``--grid`` flag, before anything
runs. Rules *between* values (a kernel that rejects a combination, a
topology cross-check) are checked per point when it runs.

Points are the product of the axes in the order the flags were given, the
first varying slowest; each point is the ``kernbench run`` arguments it
stands for (the fixed ones, then its own).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernbench.errors import KernbenchError, TopologyError
from kernbench.kernels.registry import KernelSpec, Option, suggest
from kernbench.printable import printable
from kernbench.topology.schema import Field, ListOf, MapOf, Section, validate
from kernbench.topology.spec import TOPOLOGY_SCHEMA, parse_override, resolve, source_file

TOPOLOGY_KEY = "topology"
MAX_POINTS = 100_000

#: A value's reader: its text → (the value, the ``kernbench run`` arguments that set it).
Reader = Callable[[str], tuple[Any, tuple[str, ...]]]


@dataclass(frozen=True, slots=True)
class Axis:
    """One ``--grid`` flag: the key (the column name) and its values, each with the run arguments it adds."""

    key: str
    values: tuple[Any, ...]
    args: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class Point:
    """One run of the sweep: its place in grid order, the value of each axis, the ``kernbench run`` arguments."""

    index: int
    values: tuple[tuple[str, Any], ...]
    argv: tuple[str, ...]

    def label(self) -> str:
        return ", ".join(f"{k}={show(v)}" for k, v in self.values)


def show(value: Any) -> str:
    """A swept value as text: a whole float as an integer (``64``, not ``64.0``: YAML reads ``64`` into a float field);
    a control character in it (a topology path may hold one) as its escape."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return printable(str(value))


def parse_axes(spec: KernelSpec, flags: Sequence[str], fixed: Iterable[str] = ()) -> list[Axis]:
    """Every ``--grid`` flag's axis; ``fixed`` are the keys already set by other flags (a key may not be both)."""
    axes: list[Axis] = []
    taken = {k: "another flag" for k in fixed}
    for text in flags:
        axis = parse_axis(spec, text)
        if axis.key in taken:
            raise KernbenchError(f"--grid {text}: {axis.key} is already set by {taken[axis.key]}; give it once")
        taken[axis.key] = f"--grid {text}"
        axes.append(axis)
    return axes


def parse_axis(spec: KernelSpec, text: str) -> Axis:
    if "=" not in text:
        raise KernbenchError(f"--grid {text}: expected KEY=V1,V2,… (e.g. --grid context=512,1024)")
    raw_key, raw_values = text.split("=", 1)
    key, read = reader(spec, raw_key.strip(), f"--grid {text}")
    texts = [v.strip() for v in raw_values.split(",")]
    if not all(texts):
        raise KernbenchError(f"--grid {text}: give one or more values separated by commas, none empty")
    read_values = [read(t) for t in texts]
    values = tuple(value for value, _ in read_values)
    for i, v in enumerate(values):
        if v in values[:i]:
            raise KernbenchError(f"--grid {text}: {v!r} is listed twice")
    return Axis(key, values, tuple(args for _, args in read_values))


def input_files(axes: Sequence[Axis]) -> list[Path | None]:
    """The files a sweep's grid reads: each ``topology`` value's (a YAML file, or the shipped one a name stands for)."""
    return [source_file(v) for a in axes if a.key == TOPOLOGY_KEY for v in a.values]


def option_key(name: str) -> str:
    """``--kv-heads`` / ``kv-heads`` / ``kv_heads`` → ``kv_heads``."""
    return name.lstrip("-").replace("-", "_")


def reader(spec: KernelSpec, key: str, flag: str) -> tuple[str, Reader]:
    """The column name ``key`` stands for and how to read its values; an unknown key is an error with a guess."""
    params = {p.name: p for p in spec.params}
    if option_key(key) in params:
        return option_key(key), _option_reader(params[option_key(key)], key)
    if key == TOPOLOGY_KEY:
        return key, _topology_reader
    node = schema_node(key)
    if isinstance(node, Field):
        return key, _field_reader(key, node)
    if node is not None:
        raise KernbenchError(
            f"{flag}: {key} is a section of the topology, not a value; sweep one of its keys, e.g. {leaf_paths(node, key)[0]}"
        )
    guesses = suggest(key, [*params, TOPOLOGY_KEY, *leaf_paths()])[:3]
    hint = f" (did you mean {' or '.join(repr(g) for g in guesses)}?)" if guesses else ""
    raise KernbenchError(
        f"{flag}: unknown key {key!r}{hint}; a key is an option of {spec.name} ({', '.join(params)}), "
        f"`{TOPOLOGY_KEY}`, or a topology key path as --set takes it (e.g. sip.ucie.bw_gbps)"
    )


_TYPE_NAMES = {int: "an integer", float: "a number"}


def _option_reader(prm: Option, key: str) -> Reader:
    def read(text: str) -> tuple[Any, tuple[str, ...]]:
        try:
            value = prm.type(text)
        except (TypeError, ValueError):
            raise KernbenchError(f"--grid {key}={text}: {prm.flag} takes {_TYPE_NAMES.get(prm.type, prm.type.__name__)}") from None
        problem = prm.problem(value)
        if problem:
            raise KernbenchError(f"--grid {key}={text}: {problem}")
        return value, (prm.flag, str(value))

    return read


def _topology_reader(text: str) -> tuple[Any, tuple[str, ...]]:
    try:
        resolve(text)
    except TopologyError as exc:
        raise KernbenchError(f"--grid {TOPOLOGY_KEY}={text}: {'; '.join(exc.problems)}") from None
    return text, ("--topology", text)


def _field_reader(key: str, field: Field) -> Reader:
    def read(text: str) -> tuple[Any, tuple[str, ...]]:
        try:
            _, raw = parse_override(f"{key}={text}")
        except TopologyError as exc:
            raise KernbenchError(f"--grid {key}={text}: {'; '.join(exc.problems)}") from None
        value, problems = validate(raw, field, key)
        if problems:
            raise KernbenchError(f"--grid {key}={text}: " + "; ".join(p.removeprefix(f"{key}: ") for p in problems))
        return value, ("--set", f"{key}={text}")

    return read


def schema_node(path: str) -> Any:
    """The topology schema's node at a ``--set``-style key path (a Field, a section, …) or None."""
    node: Any = TOPOLOGY_SCHEMA
    for part in path.split("."):
        node = _child(node, part)
        if node is None:
            return None
    return node


def _child(node: Any, part: str) -> Any:
    if isinstance(node, dict):
        node = Section(node)
    if isinstance(node, Section):
        return node.fields.get(part)
    if isinstance(node, ListOf):
        return node.item if part.isdigit() else None
    if isinstance(node, MapOf):
        return node.value
    return None  # a Field has no keys below it


def leaf_paths(node: Any = TOPOLOGY_SCHEMA, prefix: str = "") -> list[str]:
    """Every value's key path under ``node`` (a list item as ``0``, a free-form name as ``NAME``)."""
    if isinstance(node, Field):
        return [prefix]
    if isinstance(node, dict):
        node = Section(node)
    if isinstance(node, Section):
        children = list(node.fields.items())
    elif isinstance(node, ListOf):
        children = [("0", node.item)]
    else:
        children = [("NAME", node.value)]
    return [p for k, child in children for p in leaf_paths(child, f"{prefix}.{k}" if prefix else k)]


def grid_points(axes: Sequence[Axis], fixed_argv: Sequence[str]) -> list[Point]:
    """The product of the axes, first axis slowest; each point's arguments are ``fixed_argv`` then its own."""
    total = 1
    for axis in axes:
        total *= len(axis.values)
    if total > MAX_POINTS:
        sizes = " × ".join(str(len(a.values)) for a in axes)
        raise KernbenchError(f"--grid: {sizes} = {total:,} points; the limit is {MAX_POINTS:,} (split the sweep)")
    points = []
    for index, combo in enumerate(itertools.product(*(range(len(a.values)) for a in axes))):
        values = tuple((a.key, a.values[j]) for a, j in zip(axes, combo, strict=True))
        own = tuple(arg for a, j in zip(axes, combo, strict=True) for arg in a.args[j])
        points.append(Point(index, values, tuple(fixed_argv) + own))
    return points
