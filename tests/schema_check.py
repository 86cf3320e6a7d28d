"""Hold an output to the JSON Schema in docs/run-record.schema.json (a definition of it by name)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "docs" / "run-record.schema.json"


@cache
def _validator(definition: str) -> jsonschema.Draft202012Validator:
    doc = json.loads(SCHEMA_PATH.read_text())
    return jsonschema.Draft202012Validator({**doc, "$ref": f"#/$defs/{definition}"})


def check(doc: Any, definition: str = "run_record") -> None:
    """Raise (naming every departure) unless ``doc`` is a valid ``definition``: run_record, sweep_row, compare."""
    errors = sorted(_validator(definition).iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, f"not a {definition}: " + "; ".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)
