"""The run behind a view, as one value: live, done or failed, and how much has arrived.

The app computes a :class:`RunState` whenever its source reports something and
hands it down to the screen (a reactive attribute); widgets bound to it redraw
only when it differs from the one they drew.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernbench.events.tracefile import TraceMetadata


@dataclass(frozen=True, slots=True)
class RunState:
    metadata: TraceMetadata
    running: bool
    error: str | None
    n_events: int
    placeholder: str  # what the lanes say while there is nothing to draw ("" once there is)

    @property
    def status(self) -> str:
        """``✗ failed``, ``● live`` or ``■ done``."""
        if self.error is not None:
            return "✗ failed"
        return "● live" if self.running else "■ done"
