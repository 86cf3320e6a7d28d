"""SIP › CUBE › PE tree with each PE's utilization, searchable by id."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Input, Tree
from textual.widgets.tree import TreeNode

from kernbench.events.timeline import TimelineModel, natural_key
from kernbench_tui.messages import PEsChosen
from kernbench_tui.navigator import data_key
from kernbench_tui.pair import TimelinePair
from kernbench_tui.run_state import RunState


def _split(pe: str) -> tuple[str, str, str]:
    sip, cube, _pe = pe.split(".")
    return sip, f"{sip}.{cube}", pe


class PEPicker(Vertical):
    """Choose which PEs' lanes are shown: enter on a PE shows it, on a
    CUBE or SIP shows all of its PEs."""

    DEFAULT_CSS = """
    PEPicker { width: 24; border-right: vkey $foreground 20%; }
    PEPicker Input { height: 1; border: none; padding: 0 1; margin: 0; }
    PEPicker Tree { height: 1fr; padding: 0; }
    """

    run: reactive[RunState | tuple[RunState, ...] | None] = reactive(None, repaint=False, init=False)
    """The run (or both compared runs) whose PEs are listed, bound to the screen's: refilled when it changes."""

    def __init__(
        self, model: TimelineModel | TimelinePair, *, utilization: Callable[[str], str] | None = None, id: str | None = None
    ) -> None:
        """``utilization(pe)``: the text after each PE (default, for one run's model: its utilization, ``82%``)."""
        super().__init__(id=id)
        self.model = model
        if utilization is None:
            assert isinstance(model, TimelineModel), "a TimelinePair's picker is given its utilization text"
            utilization = lambda pe: f"{model.pe_utilization(pe):4.0%}"
        self.utilization = utilization
        self._shown: tuple[object, ...] | None = None

    def compose(self) -> ComposeResult:
        yield Input(placeholder="p: search PE", id="pe-search")
        tree: Tree[list[str]] = Tree("PEs", id="pe-tree")
        tree.show_root = False
        tree.guide_depth = 2
        yield tree

    def watch_run(self) -> None:
        self.rebuild()

    def rebuild(self) -> None:
        """Refill the tree if the PE set, the search or the finished data changed.

        Utilization is the model's one definition (as in the lane title); while a
        run is live it is left out, since it would be of the part simulated so far.
        """
        needle = self.query_one("#pe-search", Input).value.strip().lower()
        pes = tuple(self.model.pes())
        runs = self.run if isinstance(self.run, tuple) else (self.run,)  # compare binds both runs
        live = any(run is not None and run.running for run in runs)
        key = (pes, needle, live, None if live else data_key(self.model))
        if key == self._shown:
            return
        self._shown = key
        tree = self.query_one("#pe-tree", Tree)
        tree.clear()
        sips: dict[str, TreeNode[list[str]]] = {}
        cubes: dict[str, TreeNode[list[str]]] = {}
        members: dict[str, list[str]] = {}
        for pe in pes:
            if needle and needle not in pe.lower():
                continue
            sip, cube, _ = _split(pe)
            members.setdefault(sip, []).append(pe)
            members.setdefault(cube, []).append(pe)
        for pe in pes:
            if needle and needle not in pe.lower():
                continue
            sip, cube, _ = _split(pe)
            if sip not in sips:
                sips[sip] = tree.root.add(sip, data=members[sip], expand=True)
            if cube not in cubes:
                cubes[cube] = sips[sip].add(cube.split(".")[1], data=members[cube], expand=True)
            util = "   …" if live else self.utilization(pe)
            cubes[cube].add_leaf(Text(f"{pe.split('.')[2]:<5} {util}"), data=[pe])  # (Text: no markup to parse, 256 times)

    @on(Input.Changed, "#pe-search")
    def search_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.rebuild()

    @on(Input.Submitted, "#pe-search")
    def search_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        needle = event.value.strip().lower()
        matches = sorted((p for p in self.model.pes() if needle in p.lower()), key=natural_key)
        if matches:
            self.post_message(PEsChosen(matches[:1]))
        self.query_one("#pe-tree", Tree).focus()

    @on(Tree.NodeSelected, "#pe-tree")
    def node_selected(self, event: Tree.NodeSelected[list[str]]) -> None:
        event.stop()
        if event.node.data:
            self.post_message(PEsChosen(list(event.node.data)))
