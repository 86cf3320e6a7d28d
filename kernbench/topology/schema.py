"""A small declarative schema for topology YAML, validated with key paths.

The schema is data: :class:`Field` leaves, ``dict`` sections, :class:`ListOf`
and :class:`MapOf` containers. :func:`validate` walks a loaded document and
returns *every* problem (``path: message``) instead of stopping at the first,
filling defaults on the way so the compiler sees a complete document.
"""

from __future__ import annotations

import difflib
import math
import reprlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernbench.printable import printable

_MISSING = object()


@dataclass(frozen=True)
class Field:
    """A scalar leaf: its type, default (absent ⇒ required) and range check."""

    kind: type | tuple[type, ...]
    default: Any = _MISSING
    check: Callable[[Any], str | None] | None = None
    help: str = ""

    @property
    def required(self) -> bool:
        return self.default is _MISSING


@dataclass(frozen=True)
class ListOf:
    item: Any
    default: Any = _MISSING
    min_len: int = 0


@dataclass(frozen=True)
class MapOf:
    """A mapping with free-form keys (names the user chooses)."""

    value: Any
    default: Any = _MISSING
    min_len: int = 0


@dataclass(frozen=True)
class Section:
    """A mapping with fixed keys; ``optional`` sections may be absent."""

    fields: dict[str, Any] = field(default_factory=dict)
    optional: bool = False


def positive(v: float) -> str | None:
    return None if v > 0 else f"must be > 0 (got {v!r})"


def non_negative(v: float) -> str | None:
    return None if v >= 0 else f"must be >= 0 (got {v!r})"


def positive_int(v: int) -> str | None:
    return None if v >= 1 else f"must be >= 1 (got {v!r})"


def power_of_two(v: int) -> str | None:
    return None if v >= 1 and (v & (v - 1)) == 0 else f"must be a power of two (got {v!r})"


def between(lo: float, hi: float) -> Callable[[float], str | None]:
    """``lo <= v <= hi``: every number has a range, so no value can be absurd (1e30, 1e-30)."""

    def check(v: float) -> str | None:
        if lo <= v <= hi:
            return None
        bound = f">= {lo:g}" if v < lo else f"<= {hi:g}"
        return f"must be {bound} (got {_show(v)}; the range is {lo:g}..{hi:g})"

    return check


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 60
_REPR.maxlist = _REPR.maxdict = 4
_REPR.maxlevel = 2


def _show(value: Any) -> str:
    """A value as an error shows it: short, whatever its size (a list of a million items prints as a few)."""
    return _REPR.repr(value)


_TYPE_NAMES = {float: "number", int: "integer", str: "string", bool: "boolean"}


def _type_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds)


def _coerce(value: Any, kind: type | tuple[type, ...]) -> tuple[Any, str | None]:
    """``(value as kind, problem or None)``. Numbers must be finite; a whole float (``1e3``) is an integer."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    expected = f"expected {_type_name(kind)}, got {_show(value)}"
    if isinstance(value, bool) and bool not in kinds:
        return value, expected
    if isinstance(value, float) and not math.isfinite(value) and (float in kinds or int in kinds):
        return value, f"must be a finite number (got {_show(value)})"
    for k in kinds:
        if k is float and isinstance(value, (int, float)):
            try:
                return float(value), None
            except OverflowError:  # an integer beyond any float
                return value, f"must be a finite number (got {_show(value)})"
        if k is int and isinstance(value, float) and value.is_integer():
            return int(value), None
        if isinstance(value, k):
            return value, None
    return value, expected


def _text_problem(text: str) -> str | None:
    """A string of the topology is plain text: no control character (an escape sequence in a name
    would reach the terminal of whoever prints it)."""
    shown = printable(text)
    return None if shown == text else f"holds a control character: '{shown}'; write plain text"


def join_path(path: str, key: Any) -> str:
    """The key path of ``key`` under ``path``: ``cube.links[4].prop_ns``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def validate(doc: Any, schema: Any, path: str = "") -> tuple[Any, list[str]]:
    """Validate ``doc`` against ``schema``; return (filled document, problems)."""
    problems: list[str] = []
    out = _validate(doc, schema, path, problems)
    return out, problems


def _validate(doc: Any, schema: Any, path: str, problems: list[str]) -> Any:
    if isinstance(schema, dict):
        schema = Section(schema)
    if isinstance(schema, Section):
        return _validate_section(doc, schema, path, problems)
    if isinstance(schema, ListOf):
        if not isinstance(doc, list):
            problems.append(f"{path or '<root>'}: expected a list, got {_show(doc)}")
            return []
        if len(doc) < schema.min_len:
            problems.append(f"{path}: needs at least {schema.min_len} item(s), got {len(doc)}")
        return [_validate(v, schema.item, join_path(path, i), problems) for i, v in enumerate(doc)]
    if isinstance(schema, MapOf):
        if not isinstance(doc, dict):
            problems.append(f"{path or '<root>'}: expected a mapping, got {_show(doc)}")
            return {}
        if len(doc) < schema.min_len:
            problems.append(f"{path}: needs at least {schema.min_len} entr(y/ies), got {len(doc)}")
        for k in doc:
            if isinstance(k, str) and (problem := _text_problem(k)):
                problems.append(f"{join_path(path, printable(k))}: the name {problem}")
        return {str(k): _validate(v, schema.value, join_path(path, k), problems) for k, v in doc.items()}
    assert isinstance(schema, Field)
    value, problem = _coerce(doc, schema.kind)
    if problem:
        problems.append(f"{path}: {problem}")
        return doc
    if isinstance(value, str) and (problem := _text_problem(value)):
        problems.append(f"{path}: {problem}")
        return value
    if schema.check is not None:
        msg = schema.check(value)
        if msg:
            problems.append(f"{path}: {msg}")
    return value


def _default_of(spec: Any) -> Any:
    if isinstance(spec, dict):
        spec = Section(spec)
    if isinstance(spec, Section):
        if not all(_has_default(v) for v in spec.fields.values()):
            return None  # an optional section the document leaves out
        return {k: _default_of(v) for k, v in spec.fields.items()}
    return spec.default


def _has_default(spec: Any) -> bool:
    if isinstance(spec, dict):
        spec = Section(spec)
    if isinstance(spec, Section):
        return spec.optional or all(_has_default(v) for v in spec.fields.values())
    return spec.default is not _MISSING


def _validate_section(doc: Any, schema: Section, path: str, problems: list[str]) -> Any:
    if doc is None and schema.optional:
        return None  # an optional section written as null is left out
    if not isinstance(doc, dict):
        what = "null (a section cannot be emptied; set its keys instead)" if doc is None else _show(doc)
        problems.append(f"{path or '<root>'}: expected a mapping, got {what}")
        return {}
    out: dict[str, Any] = {}
    for key in doc:
        if key not in schema.fields:
            guess = difflib.get_close_matches(str(key), list(schema.fields), n=1, cutoff=0.6)
            hint = f" (did you mean {guess[0]!r}?)" if guess else ""
            known = ", ".join(sorted(schema.fields))
            problems.append(f"{join_path(path, _show(key) if not isinstance(key, str) else key)}: unknown key{hint}; known keys: {known}")
    for key, spec in schema.fields.items():
        sub = join_path(path, key)
        if key in doc:
            out[key] = _validate(doc[key], spec, sub, problems)
        elif _has_default(spec):
            default = _default_of(spec)
            if isinstance(default, (dict, list)) and default:
                default = _validate(default, spec, sub, problems)
            out[key] = default
        else:
            problems.append(f"{sub}: required key is missing")
    return out
