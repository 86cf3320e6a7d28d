"""Cursor, visible window and selection — the debugger's state, without Textual.

Every key of the main screen is one method here, so the moves are testable
(and benchmarkable) without a terminal. Times are simulated nanoseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kernbench.events.timeline import TimelineModel
from kernbench.events.types import Event, EventKind
from kernbench.topology.ids import pe_of
from kernbench_tui.pair import TimelinePair
from kernbench_tui.source_view import PathLines, SourceIndex, file_lines, line_key
from kernbench_tui.why import WhyPath, step_pe

# What a navigator moves over: one run's model, or two runs' as one (``kernbench-tui compare``).
Model = TypeVar("Model", TimelineModel, TimelinePair)

MIN_WINDOW_NS = 1.0
ZOOM_FACTOR = 2.0
PAN_FRACTION = 0.25
DT_STEPS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 1e6)


def data_key(model: TimelineModel | TimelinePair) -> tuple[tuple[int, int], ...]:
    """(identity, version) of each store behind ``model`` (a TimelinePair has two): changes with new events."""
    stores = model.stores if isinstance(model, TimelinePair) else (model.store,)
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
    why: WhyPath | None = None  # the critical path, once computed (compared by identity)
    overlay: bool = False  # the path drawn over the lanes and marked in the panels (``c``)
    why_step: int = -1  # the path step the Why panel is on (``>`` / ``<``); -1: none
    source_line: str | None = None  # the Source view's chosen line (``j`` / ``k``); None: it follows the cursor


@dataclass
class Navigator(Generic[Model]):
    """The view over a :class:`TimelineModel` (or a :class:`~kernbench_tui.pair.TimelinePair`
    of two runs): where the cursor is, what is visible."""

    model: Model
    pes: list[str] = field(default_factory=list)
    cursor_ns: float = 0.0
    t0: float = 0.0
    t1: float = 1.0
    dt_ns: float = 10.0
    selected: Event | None = None
    follow: bool = False
    channels: bool = False  # also show each shown PE's HBM pseudo-channels as lanes
    why: WhyPath | None = None  # the recording's critical path, once computed (the screen computes it)
    overlay: bool = False  # draw the path over the lanes, mark it in the panels (``c``)
    why_step: int = -1  # the path step last jumped to (``>`` / ``<``); -1: none
    source_line: str | None = None  # ``file:line`` the Source view's ``j`` / ``k`` chose; None: the line at the cursor
    _sources: tuple[object, SourceIndex] | None = field(default=None, repr=False)
    _path_lines: tuple[WhyPath, PathLines] | None = field(default=None, repr=False)

    def toggle_channels(self) -> None:
        """Show / hide the HBM pseudo-channel lanes of the shown PEs (``h``)."""
        self.channels = not self.channels

    def state(self) -> ViewState:
        """The view state now (compare with an earlier one to see whether anything moved)."""
        return ViewState(
            self.cursor_ns,
            self.t0,
            self.t1,
            self.dt_ns,
            tuple(self.pes),
            self.selected,
            self.follow,
            self.channels,
            data_key(self.model),
            self.why,
            self.overlay,
            self.why_step,
            self.source_line,
        )

    # ----------------------------------------------------------- critical path
    def set_path(self, why: WhyPath, overlay: bool = True) -> None:
        """The critical path is known: keep it, and (``overlay``) draw it."""
        self.why = why
        self.overlay = overlay

    # ----------------------------------------------------------- source lines
    def sources(self) -> SourceIndex:
        """The recording's commands by source line (built once per version of the store)."""
        key = data_key(self.model)
        if self._sources is None or self._sources[0] != key:
            store = getattr(self.model, "store", None)
            index = SourceIndex.of(store) if store is not None else SourceIndex({}, {}, {})
            self._sources = (key, index)
        return self._sources[1]

    def path_lines(self) -> PathLines | None:
        """The critical path per source line (once the path is known), for the time up to the cursor."""
        why = self.why
        if why is None:
            return None
        if self._path_lines is None or self._path_lines[0] is not why:
            self._path_lines = (why, PathLines.of(why.attribution))
        return self._path_lines[1]

    def source_current(self) -> str | None:
        """The line the Source view is on: the one ``j`` / ``k`` chose, else the selected span's command's,
        else the line the shown PEs last issued a command from at the cursor."""
        if self.source_line is not None:
            return self.source_line
        index = self.sources()
        return index.line_of(self.selected) or index.line_at(self.cursor_ns, self.pes)

    def source_move(self, direction: int) -> bool:
        """Move the Source view's line up (-1) or down (+1) in its file (``k`` / ``j``)."""
        index = self.sources()
        cur = self.source_current()
        if cur is None:
            files = index.files()
            if not files:
                return False
            first = min(lc.line for lc in index.lines.values() if lc.file == files[0])
            self.source_line = line_key(files[0], first)
            return True
        file, _, n = cur.rpartition(":")
        last = max(len(file_lines(file)), int(n))
        self.source_line = line_key(file, min(max(1, int(n) + direction), last))
        return True

    def source_follow(self) -> None:
        """The Source view follows the cursor again."""
        self.source_line = None

    def select_line_command(self) -> tuple[int, int] | None:
        """Select the next command (after the cursor) the Source view's line issued, put the cursor at its start
        and show its PE (``enter``); again for the one after. ``(its number, how many)``; None when the line issued none."""
        key = self.source_current()
        index = self.sources()
        hit = None if key is None else index.next_command(key, self.cursor_ns, self.selected)
        if key is None or hit is None:
            return None
        row, i = hit
        store = getattr(self.model, "store", None)
        assert store is not None  # (a line with commands: a single run's store)
        event = store.event(row)
        self.source_line = key
        self.selected = event
        self.follow = False
        self.show_range(event.t_ns, event.end_ns)
        self.cursor_ns = event.t_ns
        pe = pe_of(event.component)
        if pe is not None and pe not in self.pes:
            self.pes.append(pe)
        return i + 1, len(index.lines[key].rows)

    def toggle_overlay(self) -> None:
        """Draw / stop drawing the critical path over the lanes (``c``, once it is known)."""
        self.overlay = not self.overlay and self.why is not None

    def path_step(self, direction: int) -> bool:
        """Go to the next (previous) step of the critical path (``>`` / ``<``).

        The cursor goes to the step's start, the window moves to show the step
        (all of it if it fits), and the step's PE is shown if it was not.
        """
        why = self.why
        target = None if why is None else why.next_step(self.why_step, self.cursor_ns, direction)
        if why is None or target is None:
            return False
        step = why.steps[target]
        self.why_step = target
        self.follow = False
        self.show_range(step.start_ns, step.end_ns)
        self.cursor_ns = step.start_ns
        pe = step_pe(step)
        if pe is not None and pe not in self.pes:
            self.pes.append(pe)
        return True

    def show_range(self, t0: float, t1: float) -> None:
        """Move the window (same width) the least that shows ``[t0, t1]``; its start if it does not fit."""
        w = self.width_ns
        if t1 - t0 > w:
            self.t0, self.t1 = t0 - 0.05 * w, t0 + 0.95 * w
        elif t0 < self.t0:
            self.t0, self.t1 = t0 - 0.05 * w, t0 + 0.95 * w
        elif t1 > self.t1:
            self.t0, self.t1 = t1 + 0.05 * w - w, t1 + 0.05 * w

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
        scopes: Sequence[str | None] = self.pes or [None]
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
        """Select ``event`` (a clicked span) and put the cursor where it was clicked (the Source view follows it)."""
        self.selected = event
        self.source_line = None
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


#: A navigator over either model, as the widgets shown on both screens (main, compare) take it.
#: Not the union of the two: the compare screen hands each side's panel its own model with
#: ``dataclasses.replace(nav, model=…)``, a change of type parameter mypy cannot follow; each
#: widget asks only what its model answers (tests/tui drives both screens).
AnyNavigator = Navigator[Any]
