"""Merge ``tools/mutate.py --json`` records into the before/after table of tools/mutation-results.md.

Usage::

    python tools/mutation_report.py --after A.json [A2.json ...] --before B.json [B2.json ...] > table.md

Later files override earlier ones per mutant id (re-runs of a few mutants);
a mutant that survived the first ``--after`` file survived the smaller suite
before too.
The "before" suite is the current suite less this branch's tests (see
``BRANCH_TESTS``): a mutant the *after* pass killed with a test that is not
one of them was killed by the suite before as well (same code, same test,
deterministic), so only mutants killed by a branch test need a run of their
own before; ``--before`` gives those runs. A mutant with neither is reported
as not measured.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from mutants import MUTANTS  # noqa: E402

#: tests this branch added or strengthened (prefixes of pytest node ids)
BRANCH_TESTS = (
    "tests/oracles",
    "tests/events/test_tracefile.py::test_any_byte_after_the_payload_is_reported_as_corrupt",
    "tests/kernels/test_gqa_decode.py::test_variant_matches_numpy",
)


def load(paths: list[str]) -> dict[str, dict]:
    """Records from ``--json`` files, or a run's progress lines (``  status  id  killer``) for one cut short."""
    out: dict[str, dict] = {}
    for p in paths:
        text = Path(p).read_text()
        if p.endswith(".json"):
            records = json.loads(text)
        else:
            found = (re.match(r"^  (\S+)\s+(\S+)  ?(.*)$", line) for line in text.splitlines())
            records = [{"id": m[2], "status": m[1], "killer": m[3].strip()} for m in found if m]
        for r in records:
            out[r["id"]] = r
    return out


def before_of(after: dict, before: dict[str, dict], first: dict[str, dict]) -> tuple[str, str]:
    if after["id"] in before:
        b = before[after["id"]]
        return b["status"], b["killer"]
    if after["status"] == "killed" and not after["killer"].startswith(BRANCH_TESTS):
        return "killed", "(same test as after)"
    if first.get(after["id"], {}).get("status") == "survived":
        return "survived", "(survived a larger suite: the first after pass)"
    if after["status"] in ("survived", "equivalent"):
        return after["status"], "(the suite before is a subset)"
    return "not measured", ""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--after", nargs="+", required=True)
    ap.add_argument("--before", nargs="*", default=[])
    args = ap.parse_args()
    after, before, first = load(args.after), load(args.before), load(args.after[:1])
    lines = ["| mutant | before | after | killed by (after) / note |", "|---|---|---|---|"]
    counts = {"before": {}, "after": {}}
    for m in MUTANTS:
        a = after.get(m.id)
        if a is None:
            continue
        b_status, _ = before_of(a, before, first)
        if m.equivalent and b_status == "survived":
            b_status = "equivalent"
        counts["after"][a["status"]] = counts["after"].get(a["status"], 0) + 1
        counts["before"][b_status] = counts["before"].get(b_status, 0) + 1
        note = a["killer"].replace("|", "\\|")
        lines.append(f"| `{m.id}` | {b_status} | {a['status']} | {note} |")
    print("\n".join(lines))
    print()
    for k, c in counts.items():
        print(f"- {k}: " + ", ".join(f"{v} {s}" for s, v in sorted(c.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
