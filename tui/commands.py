"""Command palette entries (ctrl+p) for the debugger's actions."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from kernbench.errors import KernbenchError
from kernbench.events.perfetto import save_perfetto
from kernbench.events.store import EventStore
from kernbench.events.tracefile import TraceMetadata, save_trace

if TYPE_CHECKING:
    from kernbench_tui.screens.main import MainScreen, TimelineApp

Entry = tuple[str, str, Callable[[], object]]  # (name, help, what it does)
Writer = Callable[[Path, EventStore, TraceMetadata], None]


class DebuggerCommands(Provider):
    """Timeline moves, plus saving the run as a trace or Perfetto JSON."""

    @property
    def debugger(self) -> TimelineApp:
        """The app, as the debugger it is (``self.app`` is typed as any Textual app)."""
        return cast("TimelineApp", self.app)

    def _commands(self) -> list[Entry]:
        from kernbench_tui.screens.compare import CompareScreen
        from kernbench_tui.screens.main import MainScreen

        screen = self.screen
        if not isinstance(screen, MainScreen):
            return []
        entries = self._entries(screen)
        if isinstance(screen, CompareScreen):  # one run's commands (follow, probe, save) do not apply
            keep = {
                "Go to time…",
                "Next stall",
                "Previous stall",
                "Fit whole run",
                "Zoom in",
                "Zoom out",
                "Play / pause",
                "HBM channel lanes",
                "Help",
            }
            return [entry for entry in entries if entry[0] in keep]
        return entries

    def _entries(self, screen: MainScreen) -> list[Entry]:
        app = self.debugger
        stem = (app.metadata.kernel or "run").replace("/", "_")
        return [
            ("Go to time…", "jump the cursor to a typed time", screen.action_goto),
            ("Next stall", "cursor to the next dispatch stall", partial(screen.action_stall, 1)),
            ("Previous stall", "cursor to the previous dispatch stall", partial(screen.action_stall, -1)),
            ("Fit whole run", "zoom to show the whole run", screen.action_fit),
            ("Zoom in", "halve the visible window", screen.action_zoom_in),
            ("Zoom out", "double the visible window", screen.action_zoom_out),
            ("Follow live", "keep the cursor on the newest simulated time", screen.action_follow),
            ("Play / pause", "advance the cursor by Δt ten times a second", screen.action_play),
            ("HBM channel lanes", "show or hide each PE's pseudo-channel lanes (h)", screen.action_channels),
            ("Critical path", "show or hide the critical path on the lanes and panels (c)", screen.action_critical_path),
            ("Next path step", "cursor to the next step of the critical path (>)", partial(screen.action_path_step, 1)),
            ("Previous path step", "cursor to the previous step of the critical path (<)", partial(screen.action_path_step, -1)),
            ("Why panel", "the critical path step by step, with causes (6)", partial(screen.action_panel, "why")),
            ("Help", "keys and glyphs", screen.action_help),
            ("Probe: DMA hop-distance table", "latency by hop distance with path breakdowns", screen.action_probe),
            (
                f"Save trace to {stem}.kbtrace",
                "write the events so far as a trace file",
                partial(self._save, f"{stem}.kbtrace", save_trace),
            ),
            (f"Export Perfetto JSON to {stem}.json", "open it in ui.perfetto.dev", partial(self._save, f"{stem}.json", save_perfetto)),
        ]

    def _save(self, name: str, writer: Writer) -> None:
        """Write in a worker thread (a large run takes seconds to encode), saying so at the start and the end."""
        path = Path.cwd() / name
        app = self.app
        store, metadata = self.debugger.store, self.debugger.metadata
        app.notify(f"writing {path} ({len(store):,} events) …", timeout=4)

        def write() -> None:
            try:  # written whole or not at all (kernbench.outputs): a failure leaves an older file as it was
                writer(path, store, metadata)
            except (KernbenchError, OSError) as exc:
                app.call_from_thread(app.notify, str(exc), title="not saved", severity="error", timeout=10)
                return
            app.call_from_thread(app.notify, f"wrote {path}", timeout=4)

        app.run_worker(write, thread=True, name=f"save {name}", group="save")

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
