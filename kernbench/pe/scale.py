"""Scaled work, for what-if re-timing: a source line's commands, or an engine, taking ``f`` × their time.

``kernbench run K --what-if 'line:42*0.5'`` re-times the recorded command log
(:meth:`kernbench.runtime.api.Runtime.replay`) with every command that line
issued doing its PE work in half the time; ``engine:PE_GEMM*0.5`` does the
same for every command's time on an engine. A :class:`WorkScale` is what the
PE model consults for it, at the two places a PE's time is decided:

* PE_CPU's charge for a command (its dispatch, or a ``tl.cycles``);
* an engine lane's service time (PE_SCHEDULER's hand-off, FETCH/STORE,
  PE_GEMM, PE_MATH), for the command whose ``corr_id`` holds the lane.

A line's factor applies to the commands whose source site holds that line
in any frame — the line itself, or a call through which a helper issued
them — and multiplies with the engine's factor. Transfers (DMA, IPCQ) are
timed by the network flit by flit, not by a service time of their own:
they are re-timed but never scaled; to ask what faster memory or links
would give, change their parameters (``--what-if sip.attrs.…=…``).

With nothing to scale (:data:`NO_SCALE`) no lookup is made.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernbench.events.source import parse_site
from kernbench.events.types import ENGINE_TABLE

#: engines that cannot be scaled, and why
UNSCALABLE: dict[str, str] = {
    "PE_DMA": "a DMA transfer is timed by the network (links, HBM channels), not by a service time of its own",
    "PE_IPCQ": "an IPCQ message is timed by the network (links), not by a service time of its own",
}
#: engine kind of a PE lane (by the lane's name in its component id), for ``engine:KIND``: every lane whose
#: work can be scaled (events.types' one table)
LANE_ENGINES: dict[str, str] = {e.lane: e.block for e in ENGINE_TABLE if e.block not in UNSCALABLE}


@dataclass
class WorkScale:
    """Factors by source line (``file:line``, matched against every frame of a command's site)
    and by engine kind (:data:`LANE_ENGINES`' values)."""

    lines: dict[str, float] = field(default_factory=dict)
    engines: dict[str, float] = field(default_factory=dict)
    _of_src: dict[str, float] = field(default_factory=dict, repr=False)
    _of_corr: dict[int, float] = field(default_factory=dict, repr=False)

    @property
    def active(self) -> bool:
        return bool(self.lines or self.engines)

    def of_src(self, src: str) -> float:
        """The line factor of a command issued at ``src`` (1.0 when none of its frames is scaled)."""
        f = self._of_src.get(src)
        if f is None:
            f = 1.0
            if self.lines:
                for where in dict.fromkeys(fr.where for fr in parse_site(src)):
                    f *= self.lines.get(where, 1.0)
            self._of_src[src] = f
        return f

    def of_command(self, corr: int, src: str) -> float:
        """A command is dispatched as ``corr``: its line factor is remembered for its engine time; the
        factor of its dispatch charge (line × PE_CPU)."""
        f = self.of_src(src)
        if f != 1.0:
            self._of_corr[corr] = f
        return f * self.engines.get("PE_CPU", 1.0)

    def of_cpu_work(self, src: str) -> float:
        """The factor of a ``tl.cycles`` issued at ``src``."""
        if not self.active:
            return 1.0
        return self.of_src(src) * self.engines.get("PE_CPU", 1.0)

    def of_lane(self, engine: str, corr: int) -> float:
        """The factor of command ``corr``'s time on a lane of kind ``engine``."""
        return self._of_corr.get(corr, 1.0) * self.engines.get(engine, 1.0)


NO_SCALE = WorkScale()
