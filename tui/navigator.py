"""Cursor, visible window and selection — the debugger's state, without Textual.

Every key of the main screen is one method here, so the moves are testable
(and benchmarkable) without a terminal. Times are simulated nanoseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernbench.events.timeline import TimelineModel
from kernbench.events.types import Event, EventKind

MIN_WINDOW_NS = 1.0
ZOOM_FACTOR = 2.0
PAN_FRACTION = 0.25
DT_STEPS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 1e6)


def data_key(model) -> tuple[tuple[int, int], ...]:
    """(identity, version) of each store behind ``model`` (a TimelinePair has two): changes with new events."""
    stores = getattr(model, "stores", None) or (model.store,)
    return tuple((id(s), s.version) for s in stores)


@dataclass(frozen=True, slots=True)
class ViewState:
    """Everything a drawing of the navigator depends on, as one value.

    Two equal states draw the same screen, so a view that keeps the last one
    it drew can skip a redraw that would change nothing.
    """

    cursor_ns: float
    t0: float
    t1: float
    dt_ns: float
    pes: tuple[str, ...]
    selected: Event | None
    follow: bool
    channels: bool
    data: tuple[tuple[int, int], ...]  # (identity, version) of each store drawn: new events redraw


@dataclass
class Navigator:
    """The view over a :class:`TimelineModel` (or a :class:`~kernbench_tui.pair.TimelinePair`
    of two runs): where the cursor is, what is visible."""

    model: TimelineModel
    pes: list[str] = field(default_factory=list)
    cursor_ns: float = 0.0
    t0: float = 0.0
    t1: float = 1.0
    dt_ns: float = 10.0
    selected: Event | None = None
    follow: bool = False
    channels: bool = False  # also show each shown PE's HBM pseudo-channels as lanes

    def toggle_channels(self) -> None:
        """Show / hide the HBM pseudo-channel lanes of the shown PEs (``h``)."""
        self.channels = not self.channels

    def state(self) -> ViewState:
        """The view state now (compare with an earlier one to see whether anything moved)."""
        return ViewState(self.cursor_ns, self.t0, self.t1, self.dt_ns, tuple(self.pes), self.selected,
                         self.follow, self.channels, data_key(self.model))

    def lanes(self, pe: str) -> list[str]:
        """The lanes drawn for ``pe``: its engines, then (``h``) its slice's channels."""
        lanes = self.model.lanes_of(pe)
        return lanes + self.model.channels_of(pe) if self.channels else lanes

    # ----------------------------------------------------------- bounds
    @property
    def start_ns(self) -> float:
        return min(self.model.start_ns, 0.0)

    @property
    def end_ns(self) -> float:
        return max(self.model.end_ns, self.start_ns + MIN_WINDOW_NS)

    @property
    def width_ns(self) -> float:
        return self.t1 - self.t0

    def show_pes(self, pes: list[str]) -> None:
        """Show these PEs' lanes (the picker's choice)."""
        self.pes = list(pes)

    def ensure_pes(self) -> None:
        """Show the first PE once one exists (and drop PEs that vanished)."""
        known = self.model.pes()
        self.pes = [p for p in self.pes if p in known]
        if not self.pes and known:
            self.pes = [known[0]]

    # ----------------------------------------------------------- cursor
    def set_cursor(self, t_ns: float) -> None:
        self.cursor_ns = min(max(t_ns, self.start_ns), self.end_ns)
        self._keep_cursor_visible()

    def _keep_cursor_visible(self) -> None:
        w = self.width_ns
        if self.cursor_ns < self.t0:
            self.t0, self.t1 = self.cursor_ns - 0.1 * w, self.cursor_ns + 0.9 * w
        elif self.cursor_ns > self.t1:
            self.t0, self.t1 = self.cursor_ns - 0.9 * w, self.cursor_ns + 0.1 * w

    def _scope_change(self, direction: int, kind: int | None = None, starts_only: bool = False) -> float | None:
        found: list[float] = []
        scopes = self.pes or [None]
        for pe in scopes:
            fn = self.model.next_change if direction > 0 else self.model.prev_change
            t = fn(self.cursor_ns, pe=pe, kind=kind, starts_only=starts_only)
            if t is not None:
                found.append(t)
        if not found:
            return None
        return min(found) if direction > 0 else max(found)

    def next_event(self) -> bool:
        """Move to the next change on the shown PEs (``.``)."""
        return self._jump(self._scope_change(+1))

    def prev_event(self) -> bool:
        """Move to the previous change on the shown PEs (``,``)."""
        return self._jump(self._scope_change(-1))

    def _jump(self, t: float | None) -> bool:
        if t is None:
            return False
        self.follow = False
        self.set_cursor(t)
        return True

    def select(self, event: Event, at_ns: float) -> None:
        """Select ``event`` (a clicked span) and put the cursor where it was clicked."""
        self.selected = event
        self.goto(at_ns)

    def step(self, direction: int) -> None:
        """Move by ±Δt (``]`` / ``[``)."""
        self.follow = False
        self.set_cursor(self.cursor_ns + direction * self.dt_ns)

    def goto(self, t_ns: float) -> None:
        self.follow = False
        self.set_cursor(t_ns)

    def stall_start(self, direction: int = +1) -> float | None:
        """When the next (previous) stall on the shown PEs starts; no move."""
        return self._scope_change(direction, kind=EventKind.STALL, starts_only=True)

    def next_stall(self, direction: int = +1) -> Event | None:
        """Move to the start of the next (previous) stall and select it."""
        t = self.stall_start(direction)
        if t is None:
            return None
        self._jump(t)
        stalls = self.model.stalls_at(t, self.pes or None)
        starting = [s for s in stalls if s.t_ns == t] or stalls
        self.selected = starting[0] if starting else None
        return self.selected

    def change_dt(self, direction: int) -> None:
        """Make Δt one 1-2-5 step larger or smaller (``+`` / ``-``)."""
        i = min(range(len(DT_STEPS)), key=lambda k: abs(DT_STEPS[k] - self.dt_ns))
        self.dt_ns = DT_STEPS[min(max(i + direction, 0), len(DT_STEPS) - 1)]

    # ----------------------------------------------------------- window
    def zoom(self, factor: float) -> None:
        """Zoom around the cursor (factor > 1 zooms in: ``w``; < 1 out: ``s``)."""
        w = max(self.width_ns / factor, MIN_WINDOW_NS)
        w = min(w, 2 * (self.end_ns - self.start_ns))
        frac = (self.cursor_ns - self.t0) / self.width_ns if self.width_ns > 0 else 0.5
        frac = min(max(frac, 0.0), 1.0)
        self.t0 = self.cursor_ns - frac * w
        self.t1 = self.t0 + w

    def pan(self, direction: int) -> None:
        """Shift the window by a quarter of its width (``a`` / ``d``)."""
        shift = direction * PAN_FRACTION * self.width_ns
        self.t0 += shift
        self.t1 += shift

    def fit(self) -> None:
        """Show the whole run (``f``)."""
        self.t0, self.t1 = self.start_ns, self.end_ns
        if self.t1 - self.t0 < MIN_WINDOW_NS:
            self.t1 = self.t0 + MIN_WINDOW_NS

    def stop_following(self) -> None:
        self.follow = False

    def follow_live(self) -> None:
        """Keep the cursor on the newest simulated time (``F``)."""
        self.follow = True
        self.on_new_events()

    def on_new_events(self) -> None:
        """Called after events were appended (live runs)."""
        self.ensure_pes()
        if self.follow:
            self.fit()
            self.cursor_ns = self.model.end_ns

    def play_tick(self) -> bool:
        """Advance by Δt while playing; False once the end is reached."""
        if self.cursor_ns >= self.model.end_ns:
            return False
        self.set_cursor(self.cursor_ns + self.dt_ns)
        return True

    def default_dt(self) -> None:
        """A Δt of about one cell at the fitted zoom of an 100-cell view."""
        span = self.end_ns - self.start_ns
        self.dt_ns = min(DT_STEPS, key=lambda d: abs(d - span / 100))
