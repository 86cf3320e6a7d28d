"""The Probe screen: the hop-distance DMA table with each case's path breakdown.

Runs ``kernbench_probes.dma`` (in a worker thread) on the trace's topology when it
names a known one, else on the paper topology, and shows the same text
``kernbench-tui probe --breakdown`` prints.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from kernbench.errors import KernbenchError


def probe_text(topology: str | None) -> str:
    """The probe report for ``topology`` (None or unknown: the paper's)."""
    from kernbench.topology.compile import load_topology
    from kernbench_probes.dma import breakdowns, run_probe
    from kernbench_probes.render import render_text

    note = ""
    try:
        graph = load_topology(topology or None, [])
    except KernbenchError:
        graph = load_topology(None, [])
        note = f"(topology {topology!r} of this trace is not a known topology; probing the default)\n\n"
    result = run_probe(graph)
    return note + render_text(result, breakdowns(graph, result))


class ProbeScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "back"),
        Binding("P", "app.pop_screen", "back", show=False),
        Binding("q", "app.pop_screen", "back", show=False),
    ]
    DEFAULT_CSS = """
    ProbeScreen VerticalScroll { padding: 0 1; }
    ProbeScreen #probe-text { width: auto; }
    """

    def __init__(self, topology: str | None) -> None:
        super().__init__()
        self.topology = topology

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static("running the DMA probe…", id="probe-text")
        yield Footer()

    def on_mount(self) -> None:
        self.run_worker(self._probe, thread=True, exclusive=True, name="probe")

    def _probe(self) -> None:
        try:
            text = probe_text(self.topology)
        except KernbenchError as exc:
            text = f"probe failed: {exc}"
        self.app.call_from_thread(self._show, text)

    def _show(self, text: str) -> None:
        self.query_one("#probe-text", Static).update(text)
