"""The engine lanes: one row per engine of each shown PE, drawn with the Line API.

Two fixed rows carry the time axis (tick labels, then ticks with the cursor
``▼``); below, per PE a title row and one row per engine. Each lane row is
sampled into cells by :meth:`TimelineModel.lane_cells` and cached keyed by
everything it depends on (lane, window, width, store version, selection), so
moving the cursor only re-styles one column.

Glyphs differ per state so the view reads without colour:

====  ====================================================
 █    busy (command / dispatch) for most of the cell
 ▓    explicit CPU work (``tl.cycles``)
 ▒    stalled (STALL or LOAD_WAIT) for most of the cell
 ▌    busy for part of the cell
 ░    stalled for part of the cell
 ▏    one span narrower than the cell
 ▚    several spans narrower than the cell
====  ====================================================

Compared runs (``kernbench-tui compare``) are *sides*: per shown PE the
title and lanes of run A, then of run B, under the one axis; a PE that a run
lacks gets one line saying so.

With ``c`` the critical path is drawn over the lanes: a cell the path
covers shows ``━`` (or its command name, underlined) on a highlighted
background, brighter on the step the Why panel is on; each PE's title says
how much of the path it carries.

A run of busy cells long enough shows its command name. With ``h`` each
shown PE also gets one row per pseudo-channel of its own HBM slice (the
channels' bursts, ``pcN``), so a channel that drains alone stands out.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kernbench.events.timeline import LaneCells, TimelineModel
from kernbench.events.types import Event, EventKind
from kernbench.topology.ids import pe_of
from kernbench_tui.messages import SpanSelected
from kernbench_tui.navigator import AnyNavigator, ViewState
from kernbench_tui.timefmt import format_in, format_ns, nice_step, unit_for
from kernbench_tui.why import PATH_MARK

GUTTER = 9
AXIS_ROWS = 2
CHANNEL_COLOR = "gold1"
_STALLISH = (int(EventKind.STALL), int(EventKind.LOAD_WAIT))

ENGINE_COLORS = {
    "cpu": "green3",
    "sched": "cyan",
    "dma.rd": "dodger_blue1",
    "dma.wr": "medium_purple1",
    "fetch": "light_sky_blue1",
    "store": "sky_blue2",
    "gemm": "orange1",
    "math": "orchid",
    "ipcq": "aquamarine1",
}
KIND_COLORS = {
    int(EventKind.STALL): "red1",
    int(EventKind.LOAD_WAIT): "magenta",
    int(EventKind.CPU_WORK): "yellow",
}


PATH_COLORS = {1: "yellow1", 2: "dark_orange"}  # on the critical path; on the Why panel's step


@lru_cache(maxsize=256)
def _style(color: str, text: bool, selected: bool, path: int = 0) -> Style:
    style = Style(color="black", bgcolor=color, bold=True) if text else Style(color=color)
    if selected:
        style += Style(underline=True, bold=True, bgcolor="grey35")
    if path:
        style += Style(color="black", bgcolor=PATH_COLORS[path], bold=True, underline=text)
    return style


class Row(NamedTuple):
    """One row under the axis: a PE's title (``lane`` None) or one of its lanes, in run ``side``."""

    side: int
    pe: str
    lane: str | None
    missing: bool = False  # that run has no such PE: the title says so and no lanes follow


def engine_of(lane: str) -> str:
    """``"sip0.cube0.pe3.dma.rd"`` → ``"dma.rd"``; a channel ``"sip0.cube0.hbm.pc26"`` → ``"pc26"``."""
    pe = pe_of(lane)
    return lane[len(pe) + 1 :] if pe else lane.rpartition(".")[2]


def cell_glyph(busy: float, count: int, kind: int) -> str:
    """The character for one sampled cell (see the module table)."""
    if count == 0:
        return " "
    stalled = kind in _STALLISH
    if busy >= 0.75:
        if stalled:
            return "▒"
        return "▓" if kind == int(EventKind.CPU_WORK) else "█"
    if busy >= 0.25:
        return "░" if stalled else "▌"
    return "▚" if count > 1 else "▏"


class LanesView(ScrollView, can_focus=True):
    """All engine lanes of the shown PEs, with the time axis and cursor."""

    DEFAULT_CSS = """
    LanesView {
        overflow-x: hidden;
        overflow-y: auto;
        scrollbar-size-vertical: 1;
        background: $surface;
    }
    LanesView:focus { background-tint: $foreground 3%; }
    """

    view: reactive[ViewState | None] = reactive(None, repaint=False)
    """The navigator's state (bound to the screen's): a new one lays out the rows and redraws."""
    placeholder = reactive("", repaint=False)
    """Shown under the axis while no PE can be drawn (a run still preparing)."""
    side_notes: reactive[tuple[str, ...]] = reactive(())
    """Per side, why a shown PE has no lanes there (default: it is not in that run)."""

    def __init__(self, nav: AnyNavigator, *, sides: Sequence[tuple[str, TimelineModel]] = (), id: str | None = None) -> None:
        """``sides``: (label, model) of each run drawn under the one axis; default the navigator's model alone."""
        super().__init__(id=id)
        self.nav = nav
        self.sides = list(sides) or [("", nav.model)]
        self._cache: dict[tuple[object, ...], list[Segment]] = {}
        self._rows: list[Row] = []

    # ------------------------------------------------------------ layout
    @property
    def n_cells(self) -> int:
        return max(1, self.scrollable_content_region.width - GUTTER)

    def watch_view(self) -> None:
        self._layout_rows()

    def watch_placeholder(self) -> None:
        self._layout_rows()

    def _layout_rows(self) -> None:
        """Re-read the rows to draw; the lines themselves are drawn when the screen next paints."""
        self._rows = [row for pe in self.nav.pes for side in range(len(self.sides)) for row in self._pe_rows(side, pe)]
        rows = AXIS_ROWS + len(self._rows)
        if not self.nav.pes and self.placeholder:
            rows += 1
        relayout = rows != self.virtual_size.height
        self.virtual_size = Size(self.scrollable_content_region.width, rows)
        if len(self._cache) > 2048:
            self._cache.clear()
        self.refresh(layout=relayout)

    def _pe_rows(self, side: int, pe: str) -> list[Row]:
        """A PE's title row, then its lanes; only the title (saying why) where that run lacks the PE."""
        model = self.sides[side][1]
        if len(self.sides) > 1 and pe not in model.pes():
            return [Row(side, pe, None, missing=True)]
        lanes = model.lanes_of(pe) + (model.channels_of(pe) if self.nav.channels else [])
        return [Row(side, pe, lane) for lane in (None, *lanes)]

    def on_resize(self, event: events.Resize) -> None:
        self._cache.clear()
        self._layout_rows()

    def show_lane(self, lane: str) -> None:
        """Scroll (once the rows are laid out) so that ``lane`` and its PE's title are in view."""

        def scroll() -> None:
            for i, row in enumerate(self._rows):
                if row.lane == lane:
                    title = next(j for j in range(i, -1, -1) if self._rows[j].lane is None)
                    visible = self.scrollable_content_region.height - AXIS_ROWS
                    top = int(self.scroll_offset.y)
                    if not (top <= title and i < top + visible):
                        self.scroll_to(y=min(title, i - visible + 1) if i - title >= visible else title, animate=False)
                    return

        self.call_after_refresh(scroll)

    def row_target(self, y: int) -> Row | None:
        """The row under widget row ``y`` (None on the axis or below the last row)."""
        if y < AXIS_ROWS:
            return None
        r = y - AXIS_ROWS + int(self.scroll_offset.y)
        if not 0 <= r < len(self._rows):
            return None
        return self._rows[r]

    def time_at(self, x: int) -> float:
        n = self.n_cells
        return self.nav.t0 + (x - GUTTER + 0.5) * self.nav.width_ns / n

    def cursor_col(self) -> int | None:
        nav = self.nav
        if not (nav.t0 <= nav.cursor_ns <= nav.t1) or nav.width_ns <= 0:
            return None
        return min(self.n_cells - 1, int((nav.cursor_ns - nav.t0) / nav.width_ns * self.n_cells))

    # ------------------------------------------------------------ drawing
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if y == 0:
            return self._axis_labels(width)
        if y == 1:
            return self._axis_ticks(width)
        row = self.row_target(y)
        if row is None:
            if y == AXIS_ROWS and self.placeholder and not self.nav.pes:
                text = f"{'':<{GUTTER}}{self.placeholder}"
                return Strip([Segment(text[:width].ljust(width), Style(italic=True))], width)
            return Strip.blank(width, Style())  # a style, not None: NO_COLOR's filter needs one
        if row.lane is None:
            return self._title_row(row, width)
        return self._lane_row(self.sides[row.side][1], row.lane, width)

    def _ticks(self) -> tuple[float, list[tuple[int, float]]]:
        nav, n = self.nav, self.n_cells
        step = nice_step(nav.width_ns * 12 / max(n, 1))
        first = (nav.t0 // step) * step
        ticks = []
        t = first
        while t <= nav.t1:
            col = round(float((t - nav.t0) / nav.width_ns * n))
            if 0 <= col < n:
                ticks.append((col, t))
            t += step
        return step, ticks

    def _axis_labels(self, width: int) -> Strip:
        step, ticks = self._ticks()
        unit, scale = unit_for(max(abs(self.nav.t0), abs(self.nav.t1), step))
        chars = [" "] * width
        head = f"t ({unit})"[: GUTTER - 1]
        chars[: len(head)] = head
        last_end = GUTTER
        for col, t in ticks:
            text = format_in(t, "", scale, step)
            x = GUTTER + col
            if x >= last_end and x + len(text) <= width:
                chars[x : x + len(text)] = text
                last_end = x + len(text) + 1
        return Strip([Segment("".join(chars), Style(dim=True))], width)

    def _axis_ticks(self, width: int) -> Strip:
        _, ticks = self._ticks()
        n = self.n_cells
        row = ["─"] * n
        for col, _t in ticks:
            row[col] = "┴"
        cur = self.cursor_col()
        now = format_ns(self.nav.cursor_ns, self.nav.width_ns / max(self.n_cells, 1))
        segs = [Segment(f"{now[: GUTTER - 1]:<{GUTTER}}", Style(bold=True))]
        if cur is None:
            segs.append(Segment("".join(row), Style(dim=True)))
        else:
            segs.append(Segment("".join(row[:cur]), Style(dim=True)))
            segs.append(Segment("▼", Style(bold=True, color="yellow")))
            segs.append(Segment("".join(row[cur + 1 :]), Style(dim=True)))
        return Strip(segs, width).adjust_cell_length(width)

    def _title_row(self, row: Row, width: int) -> Strip:
        label, model = self.sides[row.side]
        pe = f"{label} {row.pe}" if label else row.pe
        if row.missing:
            notes = self.side_notes
            why = (notes[row.side] if row.side < len(notes) else "") or f"not in run {label}"
            text = f"  {pe}  — {why}"
            return Strip([Segment(text[:width].ljust(width), Style(dim=True, italic=True))], width)
        util = model.pe_utilization(row.pe)
        cpu = model.lane_state(f"{row.pe}.cpu", self.nav.cursor_ns)
        if cpu.status == "stalled" and cpu.event is not None:
            what = f"  cpu stalled: {cpu.event.label}" + (f" ({cpu.event.detail})" if cpu.event.detail else "")
        elif cpu.status == "busy" and cpu.event is not None:
            what = f"  cpu {cpu.event.kind.name.lower()}: {cpu.event.label}"
        else:
            what = "  cpu idle"
        path = self.nav.why
        if self.nav.overlay and path is not None and len(self.sides) == 1:
            what += f"  {PATH_MARK} path {format_ns(path.ns_on(row.pe))} here"
        text = f"▾ {pe}  util {util:4.0%}{what}"
        return Strip([Segment(text[:width].ljust(width), Style(bold=True))], width)

    def _lane_segments(self, model: TimelineModel, lane: str) -> list[Segment]:
        nav, n = self.nav, self.n_cells
        sel = nav.selected
        sel_key = (sel.t_ns, sel.seq) if sel is not None and sel.component == lane else None
        path = self._path_cells(lane)
        key = (lane, nav.t0, nav.t1, n, id(model.store), model.store.version, sel_key, path)
        cached = self._cache.get(key)
        if cached is None:
            cells = model.lane_cells(lane, nav.t0, nav.t1, n)
            cached = self._cache[key] = self._draw_cells(model, lane, cells, sel if sel_key else None, path)
        return cached

    def _path_cells(self, lane: str) -> tuple[int, ...] | None:
        """Per cell 0 (off the path), 1 (on it) or 2 (on the Why panel's step); None without the overlay."""
        nav, n = self.nav, self.n_cells
        why = nav.why
        if not nav.overlay or why is None or len(self.sides) > 1 or lane not in why.lanes:
            return None
        on = why.cells(lane, nav.t0, nav.t1, n)
        cur = why.current(nav.why_step, nav.cursor_ns)
        mine = why.step_cells(cur, lane, nav.t0, nav.t1, n) if cur >= 0 else [False] * n
        return tuple(2 if m else int(o) for o, m in zip(on, mine, strict=True))

    def _draw_cells(
        self, model: TimelineModel, lane: str, cells: LaneCells, selected: Event | None, path: tuple[int, ...] | None = None
    ) -> list[Segment]:
        channel = pe_of(lane) is None  # a pseudo-channel lane: its label is the slice, the same on every span
        base = ENGINE_COLORS.get(engine_of(lane), CHANNEL_COLOR if channel else "white")
        strings = model.store.strings
        n = len(cells.busy)
        busy, count, starts = cells.busy.tolist(), cells.count.tolist(), cells.starts.tolist()
        kinds, labels = cells.kind.tolist(), cells.label.tolist()
        chars = [cell_glyph(busy[i], count[i], kinds[i]) for i in range(n)]
        colors = [KIND_COLORS.get(kinds[i], base) for i in range(n)]
        text_cell = [False] * n
        i = 0
        while i < n and not channel:  # write command names over long enough busy runs
            if busy[i] < 0.75 or labels[i] < 0:
                i += 1
                continue
            j = i + 1
            while j < n and busy[j] >= 0.75 and labels[j] == labels[i] and kinds[j] == kinds[i] and starts[j] == 0:
                j += 1
            name = strings[labels[i]]
            if j - i >= 3 and name:
                for k, ch in enumerate(name[: j - i - 1]):
                    chars[i + k] = ch
                    text_cell[i + k] = True
            i = j
        sel_lo = sel_hi = -1
        if selected is not None:
            nav = self.nav
            sel_lo = int((max(selected.t_ns, nav.t0) - nav.t0) / nav.width_ns * n)
            sel_hi = max(sel_lo, int((min(selected.end_ns, nav.t1) - nav.t0) / nav.width_ns * n) - 1)
        on_path = path or (0,) * n
        for i in range(n):
            if on_path[i] and not text_cell[i]:
                chars[i] = PATH_MARK
        segments: list[Segment] = []
        run_key: tuple[str, bool, bool, int] | None = None
        run_chars: list[str] = []
        for i in range(n):
            key = (colors[i], text_cell[i], sel_lo <= i <= sel_hi and count[i] > 0, on_path[i])
            if key != run_key:
                if run_key is not None:
                    segments.append(Segment("".join(run_chars), _style(*run_key)))
                run_key, run_chars = key, []
            run_chars.append(chars[i])
        if run_key is not None:
            segments.append(Segment("".join(run_chars), _style(*run_key)))
        return segments

    def _lane_row(self, model: TimelineModel, lane: str, width: int) -> Strip:
        engine = engine_of(lane)
        sel = self.nav.selected
        marker = "▸" if sel is not None and sel.component == lane else " "
        gutter = Segment(f"{marker}{engine:<{GUTTER - 2}} ", Style(dim=marker == " "))
        strip = Strip([gutter, *self._lane_segments(model, lane)])
        cur = self.cursor_col()
        if cur is not None:
            x = GUTTER + cur
            left, mid, right = strip.divide([x, x + 1, width])[:3]
            mid = mid.apply_style(Style(reverse=True))
            strip = Strip.join([left, mid, right])
        return strip.adjust_cell_length(width)

    # ------------------------------------------------------------ mouse
    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.x < GUTTER:
            return
        row = self.row_target(offset.y)
        if row is None or row.lane is None:
            return
        t = self.time_at(offset.x)
        cell_ns = self.nav.width_ns / self.n_cells
        span = self.sides[row.side][1].span_near(row.lane, t, cell_ns)
        if span is not None:
            self.post_message(SpanSelected(span, t))
