"""PE_CPU dispatch cost (ADR-0064): ``FIXED(type) + logical_bytes × R``.

The formula lives here once; both execution paths (live and replay) and
every test read it through :class:`DispatchCostModel`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kernbench.errors import CompositeCapError
from kernbench.pe.commands import CompositeCmd, PeCommand, PeCpuOverheadCmd


@dataclass(frozen=True, slots=True)
class DispatchCostModel:
    clock_freq_ghz: float = 1.0
    fixed_per_cmd_cycles: float = 40.0
    fixed_per_single_op_cmd_cycles: float = 8.0
    byte_cycles_recip: float = 0.0625
    max_composite_logical_bytes: int = 1024

    @classmethod
    def from_attrs(cls, attrs: Mapping[str, Any]) -> DispatchCostModel:
        """From a PE node's attrs: ``clock_freq_ghz`` and the ``pe_cost_model`` block (D4)."""
        knobs = dict(attrs.get("pe_cost_model") or {})
        model = cls(clock_freq_ghz=attrs.get("clock_freq_ghz", 1.0), **knobs)
        # one object per set of knobs, in every PE and run: what a command's dispatch is kept against (PE_CPU)
        return _MODELS.setdefault(model, model)

    def fixed_cycles(self, cmd: PeCommand) -> float:
        """D8: composites pay the control-path FIXED, every single-op command the light one."""
        if isinstance(cmd, CompositeCmd):
            return self.fixed_per_cmd_cycles
        return self.fixed_per_single_op_cmd_cycles

    def dispatch_cycles(self, cmd: PeCommand) -> float:
        """D1; ``PeCpuOverheadCmd`` is cycles-explicit and bypasses the formula (D5)."""
        if isinstance(cmd, PeCpuOverheadCmd):
            return cmd.cycles
        return self.fixed_cycles(cmd) + cmd.logical_bytes * self.byte_cycles_recip

    def cycles_to_ns(self, cycles: float) -> float:
        return cycles / self.clock_freq_ghz

    def check_composite(self, cmd: CompositeCmd) -> None:
        """D7: reject an over-cap composite at emit time, with its size and the cap."""
        size = cmd.logical_bytes
        if size > self.max_composite_logical_bytes:
            raise CompositeCapError(
                f"CompositeCmd of {len(cmd.ops)} op(s) is {size} logical bytes, over the "
                f"descriptor cap max_composite_logical_bytes={self.max_composite_logical_bytes}; "
                "split the recipe into smaller composites (ADR-0064 D7)"
            )


_MODELS: dict[DispatchCostModel, DispatchCostModel] = {}
