"""The run record: what every command says about one run, in one shape.

:func:`record` is the one producer: ``kernbench run --json`` prints one
(built by :meth:`RunResult.run_record <kernbench.runtime.api.RunResult.run_record>`,
which sums the result's per-PE accounting); ``kernbench sweep --json`` gives
one per point (lists left out, with its swept values as ``point``), its
table and CSV rows that record flattened (:func:`flatten`) after the swept
values; ``kernbench compare --json`` gives one per side (``a``, ``b``, read
from a run or from a trace file alike,
:meth:`RunSummary.as_json <kernbench.analysis.summary.RunSummary.as_json>`)
and their differences; the probe's JSON uses the same names for what it
shares (``topology``, ``timing``, ``latency_ns``). :data:`FIELDS` is the one
definition: each field with its type, unit and meaning; ``docs/output.md``'s
table (:func:`markdown`) and ``docs/run-record.schema.json``
(:func:`json_schema`) are written from it, and the tests hold every output
to the schema.

Any other top-level key of a record is a figure of the kernel's own (its
set-up's ``Prepared.summary``: ``cmds_per_tile``, ``model_ns``, …), a number
or short text.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

SCHEMA = "kernbench.run/1"
#: ``kernbench compare --json``'s object: ``{"schema", "a", "b", "delta"}``, each side a run record
COMPARE_SCHEMA = "kernbench.compare/1"
#: where the JSON Schema of every record lives (written from :func:`json_schema`; a test keeps it equal)
SCHEMA_FILE = "docs/run-record.schema.json"


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # JSON type: string, integer, number, object; "|null" when it may be absent in meaning
    unit: str
    meaning: str

    def problem(self, value: Any) -> str | None:
        """Why ``value`` does not fit this field, or None."""
        kinds = self.type.split("|")
        if value is None:
            return None if "null" in kinds else f"{self.name} is null"
        ok = {
            "string": isinstance(value, str),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "number": isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value),
            "object": isinstance(value, dict),
        }
        if not any(ok.get(k, False) for k in kinds):
            return f"{self.name} is {value!r}, not {self.type}"
        if isinstance(value, dict) and self.unit and any(not _number(v) for v in value.values()):
            return f"{self.name} holds a value that is not a number of {self.unit}"
        return None


FIELDS: tuple[Field, ...] = (
    Field("schema", "string", "", f"the record's shape and version, `{SCHEMA}`"),
    Field("kernel", "string", "", "the kernel's name (`gqa-decode`; a kernel file's declared name)"),
    Field("kernel_file", "string|null", "", "the file that declares the kernel (an absolute path); null for a shipped kernel"),
    Field("topology", "string", "", "the topology's name as compiled (after `--set`)"),
    Field("timing", "string", "", "the engine's mode: `fast` or `oracle` (the same result, at another cost)"),
    Field("fidelity", "string", "", "the model's level: `paper` (default), `credit` or `full` (docs/fidelity.md)"),
    Field("variant", "string", "", 'the form the kernel ran in (gqa-decode: `primitive`, `opt3`, `opt2`), or ""'),
    Field("params", "object", "", "every option of the kernel by name, defaults filled in"),
    Field(
        "overrides",
        "object|null",
        "",
        "the `--set` overrides the topology was resolved with, by key path as given (`sip.ucie.bw_gbps`) to the value as read; "
        "`{}` when none; null when a trace did not keep them",
    ),
    Field(
        "topology_digest",
        "string|null",
        "",
        "SHA-256 (64 hex digits) of the resolved topology, `name` and `description` left out (kernbench.topology.digest): "
        "equal digests, equal hardware parameters; null when a trace did not keep it",
    ),
    Field("latency_ns", "number", "ns", "simulated time from the first command to the last one's completion"),
    Field("pes", "integer", "PEs", "PEs that ran a program"),
    Field("commands", "integer", "commands", "commands PE_CPUs dispatched, summed over PEs"),
    Field("dispatch_cycles", "number", "cycles", "PE_CPU dispatch cost (ADR-0064: FIXED + logical_bytes × R per command), summed over PEs"),
    Field(
        "max_abs_err",
        "number|null",
        "",
        "largest |output − numpy reference| the kernel's check found; null when it has no check, when the run held no data "
        "(`--no-data`), or when a trace did not keep it",
    ),
    Field(
        "data",
        "string",
        "",
        "`held`: tensors held values and the check ran; `none`: a `--no-data` run (`Runtime(data=False)`), timing only — "
        "the same commands and latency, loads gave zeros, no reference check",
    ),
    Field("stall_ns", "number", "ns", "time PE_CPUs spent stalled (lazy-load waits, a full scheduler queue, receives), summed over PEs"),
    Field("stall_ns_by_reason", "object", "ns", "the same by reason (`lazy load`, `queue full`, `recv wait`, …)"),
    Field(
        "engine_busy_ns",
        "object",
        "ns",
        "per engine (`cpu`, `sched`, `dma.rd`, `dma.wr`, `fetch`, `store`, `gemm`, `math`, `ipcq`): busy time summed over PEs",
    ),
    Field("engine_util_pct", "object", "%", "per engine: busy time over latency × PEs"),
    Field(
        "attribution",
        "object|null",
        "",
        "with `--explain`: the critical path's nanoseconds `by_cause` and `by_component_kind` (each sums to latency_ns), "
        "the `top` components, the path's time per source line (`by_line`) and function (`by_function`) of the kernel's "
        "files (each sums to latency_ns) and the `path` itself (see docs/critical-path.md, docs/lines.md)",
    ),
    Field(
        "what_if",
        "object|null",
        "",
        "with `--what-if`: the `changes`, the re-timed `latency_ns`, `delta_ns`, and the time `by_cause` and `by_line` "
        "before and after (docs/lines.md)",
    ),
    Field(
        "speedups",
        "object|null",
        "",
        "with `--explain --speedups`: per top line of the critical path (`lines`), the run's gain in ns if its work took "
        "no time and half its time, found by re-timing (docs/lines.md)",
    ),
)
NAMES = tuple(f.name for f in FIELDS)
#: what says which run it was rather than what it measured (a sweep row's swept values say it there)
CONTEXT = ("schema", "kernel", "kernel_file", "topology", "timing", "fidelity", "variant", "params", "overrides", "topology_digest", "data")


#: analyses a record holds only when asked for (null otherwise; a sweep row leaves them out then)
OPTIONAL_ANALYSES = ("attribution", "what_if", "speedups")


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def record(
    *,
    kernel: str,
    kernel_file: str | None,
    topology: str,
    timing: str,
    variant: str,
    params: Mapping[str, Any],
    overrides: Mapping[str, Any] | None,
    topology_digest: str | None,
    latency_ns: float,
    pes: int,
    commands: int,
    dispatch_cycles: float,
    max_abs_err: float | None,
    stall_ns_by_reason: Mapping[str, float],
    engine_busy_ns: Mapping[str, float],
    attribution: Mapping[str, Any] | None = None,
    figures: Mapping[str, Any] | None = None,
    fidelity: str = "paper",
    what_if: Mapping[str, Any] | None = None,
    speedups: Mapping[str, Any] | None = None,
    data: str = "held",
) -> dict[str, Any]:
    """A run record, its numbers rounded as every output shows them (ns to 1e-6, percents to 1e-3)."""
    span = latency_ns * pes
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "kernel": kernel,
        "kernel_file": kernel_file,
        "topology": topology,
        "timing": timing,
        "fidelity": fidelity,
        "variant": variant,
        "params": dict(params),
        "overrides": dict(overrides) if overrides is not None else None,
        "topology_digest": topology_digest,
        "latency_ns": round(latency_ns, 6),
        "pes": pes,
        "commands": commands,
        "dispatch_cycles": round(dispatch_cycles, 6),
        "max_abs_err": max_abs_err,
        "data": data,
        "stall_ns": round(sum(stall_ns_by_reason.values()), 6),
        "stall_ns_by_reason": {k: round(v, 6) for k, v in sorted(stall_ns_by_reason.items())},
        "engine_busy_ns": {e: round(v, 6) for e, v in engine_busy_ns.items()},
        "engine_util_pct": {e: round(100.0 * v / span if span > 0 else 0.0, 3) for e, v in engine_busy_ns.items()},
        "attribution": dict(attribution) if attribution is not None else None,
        "what_if": dict(what_if) if what_if is not None else None,
        "speedups": dict(speedups) if speedups is not None else None,
    }
    for key, value in (figures or {}).items():
        if key in out:
            raise ValueError(f"the kernel's figure {key!r} has the name of a run-record field")
        out[key] = value
    return out


def flatten(rec: Mapping[str, Any]) -> dict[str, Any]:
    """A record's measurements as one flat row (a sweep's): nested objects as ``parent.key`` columns,
    lists left out; the context (:data:`CONTEXT`: which kernel, topology, options) left out, as the
    sweep and the row's swept values say it, and absent analyses (``attribution``, ``what_if``, ``speedups``) too."""
    return dict(_flat(rec, "", top=True))


def _flat(obj: Mapping[str, Any], prefix: str, top: bool = False) -> Iterator[tuple[str, Any]]:
    for key, value in obj.items():
        if top and (key in CONTEXT or (key in OPTIONAL_ANALYSES and value is None)):
            continue
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _flat(value, name + ".")
        elif not isinstance(value, (list, tuple)):
            yield name, value


def without_lists(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` with every list left out, at any depth (a sweep's record: the attribution's ``top`` and ``path`` go)."""
    return {k: without_lists(v) if isinstance(v, Mapping) else v for k, v in obj.items() if not isinstance(v, (list, tuple))}


def problems(rec: Mapping[str, Any]) -> list[str]:
    """Where ``rec`` departs from :data:`FIELDS` (every field present and of its type; figures scalar)."""
    found = [f"{name} is missing" for name in NAMES if name not in rec]
    found += [p for f in FIELDS if f.name in rec and (p := f.problem(rec[f.name]))]
    found += [f"{k} (a kernel figure) is not a number or text" for k, v in rec.items() if k not in NAMES and not _scalar(v)]
    if rec.get("schema") not in (None, SCHEMA):
        found.append(f"schema is {rec.get('schema')!r}, not {SCHEMA!r}")
    return found


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, bool, int)) or (isinstance(v, float) and math.isfinite(v))


def figure_problems(figures: Any) -> list[str]:
    """Why a kernel's figures (its ``Prepared.summary``) cannot join its run record: not a mapping of
    names to numbers or text, or a name that is a record field's."""
    if not isinstance(figures, Mapping):
        return [f"returned {type(figures).__name__}, not a dict of figures by name"]
    found = [f"{k!r} has the name of a run-record field" for k in figures if k in NAMES]
    found += [f"{k!r} is not a text" for k in figures if not isinstance(k, str)]
    found += [f"{k!r} is {type(v).__name__}, not a finite number or text" for k, v in figures.items() if not _scalar(v)]
    return found


def markdown() -> str:
    """The fields as a Markdown table (docs/output.md's)."""
    lines = ["| field | type | unit | meaning |", "|---|---|---|---|"]
    lines += [f"| `{f.name}` | {f.type.replace('|', ' or ')} | {f.unit or '—'} | {f.meaning.replace('|', chr(92) + '|')} |" for f in FIELDS]
    return "\n".join(lines) + "\n"


# --- the JSON Schema (docs/run-record.schema.json) ------------------------------------------

_JSON_TYPES = {"string": "string", "integer": "integer", "number": "number", "object": "object", "null": "null"}
_NUMBERS = {"type": "object", "additionalProperties": {"type": "number"}}
_SCALAR = {"type": ["number", "string", "boolean", "null"]}
#: what a field's object holds, where that is more than "an object"
_OBJECTS: dict[str, dict[str, Any]] = {
    "params": {"type": "object", "additionalProperties": _SCALAR},
    "overrides": {"type": "object"},
    "attribution": {
        "type": "object",
        "required": ["by_cause", "by_component_kind"],
        "properties": {
            "by_cause": _NUMBERS,
            "by_component_kind": _NUMBERS,
            "top": {"type": "array", "items": {"type": "object"}},
            "path": {"type": "array", "items": {"type": "object"}},
        },
    },
}


def _field_schema(f: Field) -> dict[str, Any]:
    kinds = [_JSON_TYPES[k] for k in f.type.split("|")]
    if "object" in kinds:
        body = dict(_OBJECTS.get(f.name, _NUMBERS if f.unit else {"type": "object"}))
        if "null" in kinds:
            return {"description": f.meaning, "anyOf": [body, {"type": "null"}]}
        return {"description": f.meaning, **body}
    out: dict[str, Any] = {"description": f.meaning, "type": kinds[0] if len(kinds) == 1 else kinds}
    if f.name == "schema":
        out["const"] = SCHEMA
    if f.name == "topology_digest":
        out["pattern"] = "^[0-9a-f]{64}$"
    return out


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of every record kernbench prints for scripts: ``run_record``
    (``kernbench run --json``; a compare side adds ``side``), ``sweep_row`` (a point of ``sweep --json``
    / ``--out FILE.json``: a run record with its swept values as ``point``, or a failed point), and
    ``compare`` (``kernbench compare --json``). The document validates a run record at its root."""
    fields = {"type": "object", "required": list(NAMES), "properties": {f.name: _field_schema(f) for f in FIELDS}}
    point = {"type": "object", "description": "the point's swept values, by --grid key", "additionalProperties": _SCALAR}
    figures = {"unevaluatedProperties": _SCALAR}  # (any other key: a figure of the kernel's own, a number or text)
    level_ns = {"type": "object", "additionalProperties": {"type": ["number", "null"]}}
    fidelity_row = {
        "type": "object",
        "description": "with --check-fidelity: the point's latency at every level of the model, and the levels at which it is the best point",
        "required": ["latency_ns", "best_at"],
        "properties": {"latency_ns": level_ns, "best_at": {"type": "array", "items": {"type": "string"}}},
        "additionalProperties": False,
    }
    fidelity_compare = {"type": "object", "description": "with --check-fidelity: both sides at every level and whether the winner holds"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://kernbench.invalid/run-record.schema.json",
        "title": f"kernbench run record ({SCHEMA})",
        "description": "Generated from kernbench.record.FIELDS (kernbench.record.json_schema()); docs/output.md explains it.",
        "$ref": "#/$defs/run_record",
        "$defs": {
            "fields": fields,
            "run_record": {"allOf": [{"$ref": "#/$defs/fields"}], **figures},
            "sweep_row": {
                "oneOf": [
                    {
                        "allOf": [{"$ref": "#/$defs/fields"}],
                        "required": ["point"],
                        "properties": {"point": point, "fidelity_check": fidelity_row},
                        **figures,
                    },
                    {
                        "type": "object",
                        "description": "a point that failed: its one-line error",
                        "required": ["schema", "kernel", "point", "error"],
                        "properties": {
                            "schema": {"const": SCHEMA},
                            "kernel": {"type": "string"},
                            "point": point,
                            "error": {"type": "string"},
                        },
                        "additionalProperties": False,
                    },
                ]
            },
            "compare_side": {
                "allOf": [{"$ref": "#/$defs/fields"}],
                "required": ["side"],
                "properties": {"side": {"type": "string", "description": "the side as written: a trace's path or the run"}},
                **figures,
            },
            "compare": {
                "type": "object",
                "required": ["schema", "a", "b", "delta"],
                "properties": {
                    "schema": {"const": COMPARE_SCHEMA},
                    "a": {"$ref": "#/$defs/compare_side"},
                    "b": {"$ref": "#/$defs/compare_side"},
                    "delta": {"type": "object", "description": "B − A of the numbers, under the record's names, with latency_pct"},
                    "fidelity_check": fidelity_compare,
                },
                "additionalProperties": False,
            },
        },
    }


def json_schema_text() -> str:
    """:func:`json_schema` as the file holds it."""
    import json

    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
