"""A small declarative schema for topology YAML, validated with key paths.

The schema is data: :class:`Field` leaves, ``dict`` sections, :class:`ListOf`
and :class:`MapOf` containers. :func:`validate` walks a loaded document and
returns *every* problem (``path: message``) instead of stopping at the first,
filling defaults on the way so the compiler sees a complete document.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Callable

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


_TYPE_NAMES = {float: "number", int: "integer", str: "string", bool: "boolean"}


def _type_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds)


def _coerce(value: Any, kind: type | tuple[type, ...]) -> tuple[Any, bool]:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        return value, False
    for k in kinds:
        if k is float and isinstance(value, (int, float)):
            return float(value), True
        if isinstance(value, k):
            return value, True
    return value, False


def _join(path: str, key: Any) -> str:
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
            problems.append(f"{path or '<root>'}: expected a list, got {doc!r}")
            return []
        if len(doc) < schema.min_len:
            problems.append(f"{path}: needs at least {schema.min_len} item(s), got {len(doc)}")
        return [_validate(v, schema.item, _join(path, i), problems) for i, v in enumerate(doc)]
    if isinstance(schema, MapOf):
        if not isinstance(doc, dict):
            problems.append(f"{path or '<root>'}: expected a mapping, got {doc!r}")
            return {}
        if len(doc) < schema.min_len:
            problems.append(f"{path}: needs at least {schema.min_len} entr(y/ies), got {len(doc)}")
        return {
            str(k): _validate(v, schema.value, _join(path, k), problems) for k, v in doc.items()
        }
    assert isinstance(schema, Field)
    value, ok = _coerce(doc, schema.kind)
    if not ok:
        problems.append(f"{path}: expected {_type_name(schema.kind)}, got {doc!r}")
        return doc
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
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        problems.append(f"{path or '<root>'}: expected a mapping, got {doc!r}")
        return {}
    out: dict[str, Any] = {}
    for key in doc:
        if key not in schema.fields:
            guess = difflib.get_close_matches(str(key), list(schema.fields), n=1, cutoff=0.6)
            hint = f" (did you mean {guess[0]!r}?)" if guess else ""
            known = ", ".join(sorted(schema.fields))
            problems.append(f"{_join(path, key)}: unknown key{hint}; known keys: {known}")
    for key, spec in schema.fields.items():
        sub = _join(path, key)
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
