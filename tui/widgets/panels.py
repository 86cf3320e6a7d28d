"""The panels under the lanes: what is true at the cursor.

Each panel is bound to the screen's ``view`` and draws, in ``render``, the
plain lines ``text(nav)`` returns: O(what it lists), the same without colour,
and only when it is on screen (a hidden tab is drawn when it is shown).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from rich.text import Text
from textual.dom import DOMNode
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import TabbedContent

from kernbench.events.timeline import TimelineModel
from kernbench.events.types import Event, EventKind
from kernbench.topology.ids import pe_of
from kernbench_tui.navigator import AnyNavigator, ViewState
from kernbench_tui.source_view import NO_SOURCE, by_source, file_lines, heat, line_key
from kernbench_tui.timefmt import format_ns
from kernbench_tui.why import PATH_MARK, WhyPath, step_lane, top_causes
from kernbench_tui.widgets.sparkline import sparkline


def _fit(s: str, width: int) -> str:
    return s if len(s) <= width else s[: max(0, width - 1)] + "…"


def short_edge(edge: str, width: int) -> str:
    """``sip0.cube0.hbm.pc0->sip0.cube0.r0`` → ``sip0.cube0 hbm.pc0->r0``;
    cut from the left (the destination end matters most) if still too long."""
    a, sep, b = edge.partition("->")
    if sep:
        pa, pb = a.split("."), b.split(".")
        common = 0
        while common < min(len(pa), len(pb)) - 1 and pa[common] == pb[common]:
            common += 1
        if common:
            edge = f"{'.'.join(pa[:common])} {'.'.join(pa[common:])}->{'.'.join(pb[common:])}"
    return edge if len(edge) <= width else "…" + edge[len(edge) - width + 1 :]


def path_marks(nav: AnyNavigator) -> WhyPath | None:
    """The critical path when the panels mark it (``c`` on), else None."""
    return nav.why if nav.overlay else None


def _mark(on_path: bool) -> str:
    return f"{PATH_MARK} " if on_path else "  "


def panel_area(widget: Widget) -> tuple[int, int]:
    """(width, height) a panel may fill: its tab pane, less tabs and padding."""
    node: DOMNode | None = widget
    while node is not None and not isinstance(node, TabbedContent):
        node = node.parent
    if node is None or not node.size.height:
        return 78, 8
    return max(20, node.size.width - 2), max(1, node.size.height - 2)


class Panel(Widget):
    DEFAULT_CSS = """
    Panel { height: 1fr; padding: 0 1; }
    """

    view: reactive[ViewState | None] = reactive(None, repaint=False)

    def __init__(self, nav: AnyNavigator, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.nav = nav
        self._shown = False

    def watch_view(self) -> None:
        # Only a shown panel redraws for a new view; a hidden tab is drawn when it is shown.
        # (Refreshing a hidden widget makes Textual map the whole screen again, ~3 ms a key.)
        if self._shown:
            self.refresh()

    def on_show(self) -> None:
        self._shown = True
        self.refresh()

    def on_hide(self) -> None:
        self._shown = False

    def render(self) -> Text:
        return Text(no_wrap=True) if self.view is None else self.text(self.nav, *panel_area(self))

    def text(self, nav: AnyNavigator, width: int, height: int) -> Text:
        """The panel's lines for ``nav``'s cursor and window, fitted to ``width`` × ``height``."""
        raise NotImplementedError


class FifoPanel(Panel):
    """Deepest FIFOs at the cursor, with the depth over the visible window.

    A run that publishes no queue depths still shows where traffic went:
    the busiest links over the window, with their occupancy along it.
    """

    def text(self, nav: AnyNavigator, width: int, height: int) -> Text:
        model, rows = nav.model, height - 1
        t = nav.cursor_ns
        over = model.deepest_fifos_over(nav.t0, nav.t1, k=max(rows, 1) * 4)
        spark_w = max(8, min(40, width // 3))
        name_w = max(12, min(36, width - spark_w - 14))
        why = path_marks(nav)
        if why is not None:  # a column for the path's mark
            name_w -= 2
        text = Text(no_wrap=True)
        if not over:
            self._show_links(nav, text, width, rows, spark_w, name_w)
            return text
        now = {f.edge: f.depth for f in model.deepest_fifos_at(t, k=max(rows, 1) * 4)}
        ranked = sorted(over, key=lambda f: (-now.get(f.edge, 0.0), -f.depth, f.edge))[: max(rows, 0)]
        head = f"{'FIFO (edge)':<{name_w}} {'now':>5} {'max':>5}  depth over window (flits)"
        text.append(_fit(("  " if why else "") + head, width) + "\n", style="bold")
        for f in ranked:
            series = model.fifo_series(f.edge, nav.t0, nav.t1, spark_w)
            depth = now.get(f.edge, 0.0)
            if why is not None:
                text.append(_mark(f.edge in why.edges), style="bold yellow")
            text.append(f"{short_edge(f.edge, name_w):<{name_w}} {depth:>5.0f} {f.depth:>5.0f}  ")
            text.append(sparkline(series.tolist(), f.depth), style="yellow" if depth else "dim")
            text.append("\n")
        return text

    def _show_links(self, nav: AnyNavigator, text: Text, width: int, rows: int, spark_w: int, name_w: int) -> None:
        model = nav.model
        busiest = model.busiest_over(EventKind.EDGE_BUSY, nav.t0, nav.t1, k=max(rows, 0))
        if not busiest:
            text.append("no FIFO holds flits and no link is busy in the visible window")
            return
        why = path_marks(nav)
        head = f"{'busiest link (no queue depths)':<{name_w}} {'now':>5} {'busy':>5}  occupancy over window"
        text.append(_fit(("  " if why else "") + head, width) + "\n", style="bold")
        for f in busiest:
            cells = model.lane_cells(f.edge, nav.t0, nav.t1, spark_w, kinds=[EventKind.EDGE_BUSY])
            active = model.active_spans(f.edge, nav.cursor_ns, kinds=[EventKind.EDGE_BUSY])
            if why is not None:
                text.append(_mark(f.edge in why.edges), style="bold yellow")
            text.append(f"{short_edge(f.edge, name_w):<{name_w}} {'busy' if active else '-':>5} {f.depth:>5.0%}  ")
            text.append(sparkline(cells.busy.tolist(), 1.0), style="yellow" if active else "dim")
            text.append("\n")


class StallsPanel(Panel):
    """Dispatch stalls of the shown PEs at the cursor: reason, duration, what on."""

    def text(self, nav: AnyNavigator, width: int, height: int) -> Text:
        model = nav.model
        t = nav.cursor_ns
        stalls = model.stalls_at(t, nav.pes or None)
        text = Text(no_wrap=True)
        text.append(_fit(f"{'PE':<16} {'reason':<22} {'waits on':<18} {'since':>9} {'lasts':>9}", width) + "\n", style="bold")
        for s in stalls[: max(1, height - 2)]:
            mark = "▸" if nav.selected is not None and (nav.selected.t_ns, nav.selected.seq) == (s.t_ns, s.seq) else " "
            line = (
                f"{mark}{pe_of(s.component) or s.component:<15} {_fit(s.label, 22):<22} {_fit(s.detail, 18):<18} "
                f"{format_ns(s.t_ns):>9} {format_ns(s.duration_ns):>9}"
            )
            text.append(_fit(line, width) + "\n", style="red" if mark == " " else "bold red")
        if not stalls:
            text.append("no shown PE is stalled at the cursor\n")
        nxt = nav.stall_start(+1)
        if nxt is not None:
            text.append(f"next stall on the shown PEs starts at {format_ns(nxt)}  (n / N: next / previous)", style="dim")
        return text


class LoadsPanel(Panel):
    """Lazy loads in flight at the cursor."""

    def text(self, nav: AnyNavigator, width: int, height: int) -> Text:
        model = nav.model
        t = nav.cursor_ns
        pes = set(nav.pes)
        loads = [ld for ld in model.loads_in_flight(t) if not pes or pe_of(ld.component) in pes]
        hw = max(10, min(28, width - 62))
        why = path_marks(nav)
        mark_w = 2 if why is not None else 0  # a column for the path's mark
        text = Text(no_wrap=True)
        head = f"{'handle':<{hw}} {'PE':<16} {'bytes':>8} {'issued':>9} {'done':>11} {'waited at':>10}"
        text.append(_fit(" " * mark_w + head, width) + "\n", style="bold")
        for ld in loads[: max(1, height - 2)]:
            done = f"{format_ns(ld.complete_ns)}" if ld.complete_ns is not None else "pending"
            waited = format_ns(ld.waited_at_ns) if ld.waited_at_ns is not None else "-"
            line = (
                f"{_fit(ld.handle, hw):<{hw}} {pe_of(ld.component) or ld.component:<16} {ld.size_bytes:>8.0f} "
                f"{format_ns(ld.issued_ns):>9} {done:>11} {waited:>10}"
            )
            if why is not None:
                text.append(_mark(ld.corr_id in why.corr_ids), style="bold yellow")
            text.append(_fit(line, width - mark_w) + "\n")
        if not loads:
            text.append("no lazy load in flight at the cursor\n")
        else:
            text.append(f"{len(loads)} in flight", style="dim")
        return text


class DetailsPanel(Panel):
    """Everything about the selected span (click one, or n / N to a stall)."""

    def text(self, nav: AnyNavigator, width: int, height: int) -> Text:
        e = nav.selected
        text = Text(no_wrap=True)
        if e is None:
            text.append("no span selected — click a span in the lanes, or press n for the next stall")
            return text
        rows = [
            ("kind", e.kind.name),
            ("component", e.component),
            ("label", e.label or "-"),
            ("start", format_ns(e.t_ns)),
        ]
        if e.is_span:
            rows += [("end", format_ns(e.end_ns)), ("duration", format_ns(e.duration_ns))]
        rows += [("value", f"{e.value:g}"), ("detail", e.detail or "-"), ("corr_id", str(e.corr_id))]
        if e.kind == EventKind.STALL:
            rows[2] = ("reason", e.label)
            rows[-2] = ("waits on", e.detail or "-")
        half = (len(rows) + 1) // 2
        for i in range(half):
            left = f"{rows[i][0]:>10}: {rows[i][1]}"
            right = f"{rows[i + half][0]:>10}: {rows[i + half][1]}" if i + half < len(rows) else ""
            text.append(_fit(f"{left:<40}{right}", width) + "\n")
        self._related(nav, e, text, width)
        return text

    def _related(self, nav: AnyNavigator, e: Event, text: Text, width: int) -> None:
        """What else the same request (corr_id) caused: kinds, span, the hops' path."""
        rows = nav.model.rows_with_corr(e.corr_id)
        if len(rows) <= 1:
            return
        store = nav.model.store
        kinds = store.col("kind")[rows]
        counts = ", ".join(f"{int(n)} {EventKind(int(k)).name.lower()}" for k, n in zip(*np.unique(kinds, return_counts=True), strict=True))
        t0 = float(store.col("t_ns")[rows].min())
        t1 = float(store.col("end_ns")[rows].max())
        text.append(_fit(f"{'request':>10}: corr_id {e.corr_id}, {format_ns(t0)} → {format_ns(t1)}", width) + "\n", style="dim")
        text.append(_fit(f"{'caused':>10}: {counts}", width) + "\n", style="dim")
        hops = rows[kinds == int(EventKind.EDGE_BUSY)]
        if len(hops):
            seen: dict[str, int] = {}
            for c in store.col("component")[hops].tolist():
                name = store.components[c]
                seen[name] = seen.get(name, 0) + 1
            path = "  ".join(short_edge(name, 60) + (f" ×{n}" if n > 1 else "") for name, n in seen.items())
            text.append(_fit(f"{'path':>10}: {path}", width) + "\n", style="dim")


class WhyPanel(Panel):
    """The critical path, step by step: when, how long, where, why; the step at the cursor marked ``▸``.

    Computed once per recording, when first asked for (``c``, ``>`` / ``<``, or
    this tab); until then ``status`` says what is happening.
    """

    status = reactive("", repaint=False)
    """Why there is no path to list yet (computing, still running, none in this recording)."""

    def watch_status(self) -> None:
        if self._shown:
            self.refresh()

    def text(self, nav: AnyNavigator, width: int, height: int) -> Text:
        text = Text(no_wrap=True)
        why = nav.why
        if why is None:
            text.append(self.status or "press c to compute the critical path", style="italic")
            return text
        totals = " · ".join(f"{cause} {share:.0%}" for cause, share in top_causes(why))
        pes = ", ".join(pe.rsplit(".", 1)[-1] for pe in why.pes())
        text.append(
            _fit(f"critical path {format_ns(why.latency_ns)} in {len(why.steps)} steps (PEs {pes}): {totals}", width) + "\n", style="bold"
        )
        where_w = min(24, max(len(step_lane(s)) for s in why.steps))
        text.append(
            _fit(f"  {'#':>3} {'start':>9} {'took':>9} {'share':>5}  {'where':<{where_w}} what  [why then]", width) + "\n", style="bold"
        )
        rows = max(1, height - 3)
        cur = why.current(nav.why_step, nav.cursor_ns)
        first = min(max(0, cur - rows // 2), max(0, len(why.steps) - rows))
        for i in range(first, min(len(why.steps), first + rows)):
            text.append(_fit(why_row(why, i, where_w, i == cur), width) + "\n", style="bold reverse" if i == cur else "")
        text.append(_fit(f"> / <: next / previous step · c: {'hide' if nav.overlay else 'show'} the path on the lanes", width), style="dim")
        return text


def why_row(why: WhyPath, i: int, where_w: int, current: bool) -> str:
    """One step of the path as the Why panel lists it."""
    step = why.steps[i]
    share = step.ns / why.latency_ns if why.latency_ns else 0.0
    if step.transfer:
        what = f"{step.what}: " + " · ".join(f"{cause} {format_ns(ns)}" for cause, ns in step.parts())
    else:
        what = f"{step.cause}: {step.what}"
    lane = step_lane(step)
    where = lane if len(lane) <= where_w else "…" + lane[len(lane) - where_w + 1 :]
    return (
        f"{'▸' if current else ' '} {i + 1:>3} {format_ns(step.start_ns):>9} {format_ns(step.ns):>9} {share:>5.1%}"
        f"  {where:<{where_w}} {what}  [{step.via}]"
    )


class SourcePanel(Panel):
    """The kernel's source with the critical path's time per line (the heat column).

    It follows the cursor: the line the shown PEs last issued a command from
    at the cursor is marked ``▸`` and kept in sight, and each line's "by
    cursor" column is its path time from 0 to the cursor; the selected span's line
    (or the one ``j`` / ``k`` chose) is highlighted, and ``enter`` selects its
    next command on the timeline. The heat is the critical path's nanoseconds
    on that line's commands (the path is walked when the tab is first shown).
    """

    status = reactive("", repaint=False)
    """Why there is no heat to show yet (the path is being computed, the run still going)."""

    def watch_status(self) -> None:
        if self._shown:
            self.refresh()

    def text(self, nav: AnyNavigator, width: int, height: int) -> Text:
        text = Text(no_wrap=True)
        index = nav.sources()
        if not index.lines:
            text.append(NO_SOURCE, style="italic")
            return text
        at_cursor = index.line_at(nav.cursor_ns, nav.pes)
        chosen = nav.source_current()
        file = (chosen or at_cursor or "").rpartition(":")[0] or index.files()[0]
        lines = file_lines(file)
        why = nav.why
        hot = heat(by_source(why.attribution)) if why is not None else {}
        until = nav.path_lines()
        total = why.latency_ns if why is not None else 0.0
        top = max((lc.ns for lc in hot.values()), default=0.0)
        chosen_n = int(chosen.rpartition(":")[2]) if chosen and chosen.startswith(file + ":") else 0
        cursor_n = int(at_cursor.rpartition(":")[2]) if at_cursor and at_cursor.startswith(file + ":") else 0
        here = f"line {cursor_n} at the cursor" if cursor_n else "no command of this file at the cursor"
        path = (
            f"critical path {format_ns(total)}" if why is not None else (self.status or "the heat shows once the critical path is computed")
        )
        text.append(_fit(f"{os.path.basename(file)} · {here} · {path}", width) + "\n", style="bold")
        text.append(_fit(f"  {'line':>5} {'path ns':>9} {'share':>6} {'':8} {'by cursor':>9}  code", width) + "\n", style="bold")
        rows = max(1, height - 3)
        if not lines:
            text.append(_fit(f"(cannot read {file})", width) + "\n", style="italic")
            return text
        focus = chosen_n or cursor_n or 1
        first = min(max(1, focus - rows // 2), max(1, len(lines) - rows + 1))
        for n in range(first, min(len(lines), first + rows - 1) + 1):
            lc = hot.get(line_key(file, n))
            issued = line_key(file, n) in index.lines
            ns = f"{lc.ns:>9,.1f}" if lc is not None else (f"{'·':>9}" if issued else " " * 9)
            share = f"{lc.ns / total:>6.1%}" if lc is not None and total > 0 else " " * 6
            bar = _bar(lc.ns / top if lc is not None and top > 0 else 0.0, 8)
            so_far = f"{until.ns_until(line_key(file, n), nav.cursor_ns):>9,.1f}" if lc is not None and until is not None else " " * 9
            mark = "▸" if n == cursor_n else " "
            line = f"{mark} {n:>5} {ns} {share} {bar} {so_far}  {lines[n - 1]}"
            style = "bold reverse" if n == chosen_n else ("bold" if n == cursor_n else ("" if issued else "dim"))
            text.append(_fit(line, width) + "\n", style=style)
        count = len(index.lines[line_key(file, chosen_n)].rows) if chosen_n and line_key(file, chosen_n) in index.lines else 0
        hint = (
            f"j / k: line · enter: select its next command ({count} from line {chosen_n})"
            if count
            else "j / k: line · enter: select its next command"
        )
        text.append(_fit(hint + (" · esc: follow the cursor" if nav.source_line else ""), width), style="dim")
        return text


def _bar(fraction: float, width: int) -> str:
    """A horizontal bar of ``fraction`` of ``width`` cells, in eighths."""
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    full, part = divmod(eighths, 8)
    return ("█" * full + (" ▏▎▍▌▋▊▉"[part] if part else "")).ljust(width)


class PairPanel(Panel):
    """A panel for each of two runs, stacked under their labels, at the one shared cursor."""

    def __init__(self, nav: AnyNavigator, inner: type[Panel], sides: Sequence[tuple[str, TimelineModel]], *, id: str | None = None) -> None:
        super().__init__(nav, id=id)
        self._inner = inner(nav)  # never mounted: only its text() is used, once per side
        self.sides = sides

    def text(self, nav: AnyNavigator, width: int, height: int) -> Text:
        out = Text(no_wrap=True)
        each = max(2, height // len(self.sides) - 1)
        for label, model in self.sides:
            out.append(_fit(label, width) + "\n", style="bold underline")
            lines = self._inner.text(replace(nav, model=model, selected=None), width, each).split("\n")
            for line in lines[:each]:
                out.append_text(line)
                out.append("\n")
        return out
