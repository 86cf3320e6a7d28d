"""A resolved topology written back as YAML (``kernbench topo show NAME --yaml``).

The document is the validated one: every key the schema knows, defaults
filled in, ``--set`` applied, one key per line in the schema's order (a list
of names stays on one line). It loads back (:func:`kernbench.topology.spec.load_spec`)
into the same graph. Each value keeps the part of its file comment that
marks it (``# [hw] 256 GB/s``), so ``topo show printed.yaml --params`` reads
the same provenance; a value the schema filled in says ``# schema default``,
one an override gave says so and what the file had. When anything was
overridden, ``name`` gains ``+set`` and ``description`` lists the overrides,
so a saved copy cannot pass for the original.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from kernbench.errors import TopologyError
from kernbench.topology import yamldoc
from kernbench.topology.params import Param
from kernbench.topology.provenance import MARKER
from kernbench.topology.schema import join_path
from kernbench.topology.spec import Resolved

INDENT = "  "
SET_SUFFIX = "+set"

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.+\-/]*$")


def title(resolved: Resolved) -> tuple[str, str]:
    """``(name, description)`` as printed: changed to say so when an override was applied."""
    name, description = str(resolved.spec["name"]), str(resolved.spec.get("description") or "")
    if not resolved.overrides:
        return name, description
    changes = "changed by " + ", ".join(f"--set {text}" for text in resolved.overrides)
    return name.removesuffix(SET_SUFFIX) + SET_SUFFIX, f"{description}; {changes}" if description else changes


def resolved_yaml(resolved: Resolved, params: Sequence[Param], origin: str) -> str:
    """The resolved document of ``resolved`` as YAML text; ``params`` are its :func:`~kernbench.topology.params.parameters`,
    ``origin`` the topology as the user named it."""
    name, description = title(resolved)
    spec = {**resolved.spec, "name": name, "description": description}
    command = ["kernbench", "topo", "show", origin, "--yaml", *(a for o in resolved.overrides for a in ("--set", o))]
    lines = ["# " + _comment_safe(shlex.join(command))]
    lines.append(
        "# the resolved topology: every key the schema knows, defaults filled in" + (", --set applied" if resolved.overrides else "")
    )
    comments = {p.key: _comment(p) for p in params}
    lines += _mapping(spec, "", 0, comments)
    return "\n".join(lines) + "\n"


def scalar(value: Any) -> str:
    """``value`` as YAML that :mod:`yamldoc` reads back as the same value (also how ``--params`` prints it)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(scalar(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{scalar(k)}: {scalar(v)}" for k, v in value.items()) + "}"
    if value is None:
        return "null"
    text = str(value)
    if _PLAIN.match(text) and _reads_back(text, text):
        return text
    quoted = _double_quoted(text)
    return quoted if _reads_back(quoted, text) else json.dumps(text)


def without_set(was: Param | None) -> str:
    """What a value given by ``--set`` would be without it (:attr:`Param.was`), in words."""
    if was is None:
        return "the file gives none"
    if was.source == "default":
        return f"schema default: {scalar(was.value)}"
    return f"file: {scalar(was.value)} ({was.source})"


def _reads_back(written: str, value: str) -> bool:
    try:
        back, _ = yamldoc.load(written, "<value>")
    except TopologyError:
        return False
    return isinstance(back, str) and back == value


def _double_quoted(text: str) -> str:
    """A YAML double-quoted scalar (JSON's escapes are YAML's too)."""
    return _escaped(json.dumps(text, ensure_ascii=False))


def _escaped(text: str) -> str:
    """``text`` with every character YAML will not carry as it is (controls, line separators, …) as ``\\uXXXX``."""
    return "".join(ch if _printable(ch) else (f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}") for ch in text)


def _printable(ch: str) -> bool:
    code = ord(ch)
    return 0x20 <= code < 0x7F or (code >= 0xA0 and not 0xD800 <= code < 0xE000 and ch not in "\u2028\u2029\ufeff\ufffe\uffff")


def _comment_safe(text: str) -> str:
    """``text`` on one comment line, carrying no ``[hw]``/``[cal]`` marker it does not mean."""
    return MARKER.sub(lambda m: m[1], _escaped(text))


def _comment(p: Param) -> str:
    if p.source == "default":
        return "schema default"
    if p.source == "--set":
        return _comment_safe(f"--set {p.set_by.split('=', 1)[0].strip()}; {without_set(p.was)}")
    if p.marked_by:
        return p.marked_by
    return p.comment if not MARKER.search(p.comment) else ""


def _line(indent: int, text: str, comment: str) -> str:
    return f"{INDENT * indent}{text}" + (f"  # {comment}" if comment else "")


def _mapping(node: Mapping[str, Any], path: str, indent: int, comments: Mapping[str, str]) -> list[str]:
    lines: list[str] = []
    for key, value in node.items():
        if value is None:
            continue  # an optional section the topology leaves out
        sub = join_path(path, key)
        head = f"{scalar(key)}:"
        if isinstance(value, Mapping) and value:
            lines.append(_line(indent, head, ""))
            lines += _mapping(value, sub, indent + 1, comments)
        elif isinstance(value, (list, tuple)) and any(isinstance(v, Mapping) for v in value):
            lines.append(_line(indent, head, ""))
            for i, item in enumerate(value):
                lines += _list_item(item, join_path(sub, i), indent + 1, comments)
        else:
            lines.append(_line(indent, f"{head} {scalar(value)}", comments.get(sub, "")))
    return lines


def _list_item(item: Mapping[str, Any], path: str, indent: int, comments: Mapping[str, str]) -> list[str]:
    lines = _mapping(item, path, indent + 1, comments) or [_line(indent + 1, "{}", "")]
    lines[0] = INDENT * indent + "- " + lines[0][len(INDENT) * (indent + 1) :]
    return lines
