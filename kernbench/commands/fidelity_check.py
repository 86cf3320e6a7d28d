"""``--check-fidelity``: is a verdict (compare's winner, a sweep's best point) stable up the ladder?

Each run is simulated again at the other levels of the model (``paper``, ``credit``,
``full``: ``docs/fidelity.md``); the verdict holds when every level picks the same
winner (compare) or the same best point (sweep). The per-level latencies are reported
with it, so a user sees by how much the levels disagree, not only whether.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kernbench.sim.fidelity import FIDELITIES

TIE_NS = 1e-6  # latencies this close are a tie


@dataclass(frozen=True, slots=True)
class LevelCompare:
    fidelity: str
    a_ns: float
    b_ns: float

    @property
    def winner(self) -> str:
        if abs(self.a_ns - self.b_ns) <= TIE_NS:
            return "tie"
        return "A" if self.a_ns < self.b_ns else "B"


def latency_at(kernel: str, options: Sequence[str], fidelity: str) -> float:
    """A run's latency as ``kernbench run KERNEL OPTIONS --fidelity FIDELITY`` computes it."""
    from kernbench.commands.run import limits_of, prepare

    _spec, ns, rt, _prepared, _params = prepare(kernel, [*options, "--fidelity", fidelity])
    return rt.run(limits=limits_of(ns)).latency_ns


def compare_levels(
    a: tuple[str, Sequence[str]], b: tuple[str, Sequence[str]], known: Mapping[str, tuple[float, float]]
) -> list[LevelCompare]:
    """Both sides at every level (``known``: levels already run, by name: (A ns, B ns))."""
    out = []
    for f in FIDELITIES:
        if f in known:
            a_ns, b_ns = known[f]
        else:
            a_ns, b_ns = latency_at(a[0], a[1], f), latency_at(b[0], b[1], f)
        out.append(LevelCompare(f, a_ns, b_ns))
    return out


def compare_verdict(levels: Sequence[LevelCompare]) -> tuple[bool, str]:
    """Whether the winner is the same at every level, and the sentence that says so."""
    winners = [lv.winner for lv in levels]
    if len(set(winners)) == 1:
        w = winners[0]
        return True, ("a tie at every level" if w == "tie" else f"{w} wins at every level: the verdict holds")
    said = ", ".join(f"{lv.winner} at {lv.fidelity}" for lv in levels)
    return False, f"the winner changes with the level ({said}): the verdict does not hold"


def compare_json(levels: Sequence[LevelCompare]) -> dict[str, object]:
    holds, said = compare_verdict(levels)
    return {
        "levels": [
            {"fidelity": lv.fidelity, "a_latency_ns": round(lv.a_ns, 6), "b_latency_ns": round(lv.b_ns, 6), "winner": lv.winner}
            for lv in levels
        ],
        "holds": holds,
        "verdict": said,
    }


def compare_text(levels: Sequence[LevelCompare]) -> str:
    lines = ["", "fidelity check (--check-fidelity): the same two runs at every level of the model", ""]
    lines.append(f"{'fidelity':<9}{'A ns':>14}{'B ns':>14}{'B − A':>10}  winner")
    for lv in levels:
        pct = 100.0 * (lv.b_ns - lv.a_ns) / lv.a_ns if lv.a_ns else 0.0
        lines.append(f"{lv.fidelity:<9}{lv.a_ns:>14,.3f}{lv.b_ns:>14,.3f}{pct:>+9.1f}%  {lv.winner}")
    lines.append("")
    lines.append(compare_verdict(levels)[1])
    return "\n".join(lines) + "\n"


def best_points(latencies: Mapping[str, Sequence[float | None]]) -> dict[str, int | None]:
    """Per level, the index of the point with the lowest latency (ties: the first; None: no point ran)."""
    out: dict[str, int | None] = {}
    for f, lat in latencies.items():
        ok = [(v, i) for i, v in enumerate(lat) if v is not None]
        out[f] = min(ok)[1] if ok else None
    return out


def sweep_verdict(best: Mapping[str, int | None], names: Sequence[str]) -> tuple[bool, str]:
    picks = list(best.values())
    if len(set(picks)) == 1 and picks[0] is not None:
        return True, f"the best point ({names[picks[0]]}) is the same at every level: the verdict holds"
    said = ", ".join(f"{names[i] if i is not None else 'none'} at {f}" for f, i in best.items())
    return False, f"the best point changes with the level ({said}): the verdict does not hold"
