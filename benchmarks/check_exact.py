"""Exactness fingerprint of every shipped kernel (test size, tests/shipped.py) and the GQA default:
latency and a sha256 of the recorded event stream (every field, in order), for the full run and for
replays under three overrides and one work scale, recorded and not. Prints JSON; compare two outputs.

    python benchmarks/check_exact.py > /tmp/before.json
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import shipped

from kernbench.analysis.whatif import parse_what_ifs, retime
from kernbench.commands.run import prepare

PARAMS = ("pe.attrs.math_elems_per_cycle=16", "pe.attrs.tcm_bw_gbps=1024", "pe.attrs.pe_cost_model.byte_cycles_recip=0.25")
SLOTS = ("t_ns", "kind", "component", "end_ns", "corr_id", "label", "value", "detail", "seq", "pred", "src")


def digest(events) -> str:
    h = hashlib.sha256()
    for e in events:
        h.update(repr(tuple(getattr(e, s) for s in SLOTS)).encode())
    return h.hexdigest()[:16]


def fingerprint(res) -> dict:
    return {
        "latency": repr(res.latency_ns),
        "events": digest(res.events) if res.events is not None else None,
        "n": len(res.events) if res.events is not None else None,
        "commands": res.total_commands,
        "busy": repr(sorted((p, sorted(b.items())) for p, b in res.engine_busy_ns.items())),
        "stall": repr(sorted(res.stall_ns_by_reason.items())),
        "dispatch": repr(res.total_dispatch_cycles),
    }


def one(name: str, argv: list[str]) -> dict:
    _s, _n, rt, _p, _pa = prepare(name, argv)
    base = rt.run(record=True)
    out = {"run": fingerprint(base)}
    for change in PARAMS:
        rec = rt.replay(base, overrides=[change], record=True)
        plain = rt.replay(base, overrides=[change])
        out[change] = fingerprint(rec)
        out[change + " plain"] = repr(plain.latency_ns)
    for w in ("engine:PE_GEMM*0.5", "engine:PE_CPU*0.5"):
        try:
            r = retime(rt, base, parse_what_ifs([w], base)).result
            out[w] = fingerprint(r)
        except Exception as exc:
            out[w] = f"error {type(exc).__name__}: {exc}"
    return out


def main() -> None:
    names = sys.argv[1:] or shipped.names()
    out = {}
    for name in names:
        out[name] = one(name, shipped.argv(name))
        print(name, out[name]["run"]["latency"], file=sys.stderr)
    if not sys.argv[1:]:
        out["gqa-decode default"] = one("gqa-decode", [])
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
