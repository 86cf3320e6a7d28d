"""Command palette entries (ctrl+p) for the debugger's actions."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from textual.command import DiscoveryHit, Hit, Hits, Provider

from kernbench.errors import KernbenchError
from kernbench.events.perfetto import save_perfetto
from kernbench.events.tracefile import save_trace


class DebuggerCommands(Provider):
    """Timeline moves, plus saving the run as a trace or Perfetto JSON."""

    def _commands(self):
        from kernbench_tui.screens.compare import CompareScreen
        from kernbench_tui.screens.main import MainScreen

        screen = self.screen
        if not isinstance(screen, MainScreen):
            return []
        entries = self._entries()
        if isinstance(screen, CompareScreen):  # one run's commands (follow, probe, save) do not apply
            keep = {"Go to time…", "Next stall", "Previous stall", "Fit whole run", "Zoom in", "Zoom out",
                    "Play / pause", "HBM channel lanes", "Help"}
            return [entry for entry in entries if entry[0] in keep]
        return entries

    def _entries(self):
        screen = self.screen
        app = self.app
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
            ("Help", "keys and glyphs", screen.action_help),
            ("Probe: DMA hop-distance table", "latency by hop distance with path breakdowns", screen.action_probe),
            (f"Save trace to {stem}.kbtrace", "write the events so far as a trace file",
             partial(self._save, f"{stem}.kbtrace", save_trace)),
            (f"Export Perfetto JSON to {stem}.json", "open it in ui.perfetto.dev",
             partial(self._save, f"{stem}.json", save_perfetto)),
        ]

    def _save(self, name: str, writer) -> None:
        path = Path.cwd() / name
        try:  # written whole or not at all (kernbench.outputs): a failure leaves an older file as it was
            writer(path, self.app.store, self.app.metadata)
        except KernbenchError as exc:
            self.app.notify(str(exc), title="not saved", severity="error", timeout=10)
            return
        self.app.notify(f"wrote {path}", timeout=4)

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
