"""SIP › CUBE › PE tree with each PE's utilization, searchable by id."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Tree

from kernbench.events.timeline import TimelineModel, natural_key
from kernbench_tui.messages import PEsChosen


def _split(pe: str) -> tuple[str, str, str]:
    sip, cube, p = pe.split(".")
    return sip, f"{sip}.{cube}", pe


class PEPicker(Vertical):
    """Choose which PEs' lanes are shown: enter on a PE shows it, on a
    CUBE or SIP shows all of its PEs."""

    DEFAULT_CSS = """
    PEPicker { width: 24; border-right: vkey $foreground 20%; }
    PEPicker Input { height: 1; border: none; padding: 0 1; margin: 0; }
    PEPicker Tree { height: 1fr; padding: 0; }
    """

    def __init__(self, model: TimelineModel, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = model
        self._shown: tuple[tuple[str, ...], str, int] | None = None

    def compose(self) -> ComposeResult:
        yield Input(placeholder="p: search PE", id="pe-search")
        tree: Tree[list[str]] = Tree("PEs", id="pe-tree")
        tree.show_root = False
        tree.guide_depth = 2
        yield tree

    def rebuild(self, force: bool = False) -> None:
        """Refill the tree if the PE set, the search or the data changed.

        Utilization is the model's one definition (as in the lane title); while a
        run is live it is left out, since it would be of the part simulated so far.
        """
        needle = self.query_one("#pe-search", Input).value.strip().lower()
        pes = tuple(self.model.pes())
        live = bool(getattr(self.app, "running", False))
        key = (pes, needle, live, self.model.store.version if force else 0)
        if key == self._shown:
            return
        self._shown = key
        tree = self.query_one("#pe-tree", Tree)
        tree.clear()
        sips: dict[str, object] = {}
        cubes: dict[str, object] = {}
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
            util = "   …" if live else f"{self.model.pe_utilization(pe):4.0%}"
            cubes[cube].add_leaf(f"{pe.split('.')[2]:<5} {util}", data=[pe])

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.rebuild()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        needle = event.value.strip().lower()
        matches = sorted((p for p in self.model.pes() if needle in p.lower()), key=natural_key)
        if matches:
            self.post_message(PEsChosen(matches[:1]))
        self.query_one("#pe-tree", Tree).focus()

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        event.stop()
        if event.node.data:
            self.post_message(PEsChosen(list(event.node.data)))
