"""The key footer, rebuilt once per change of the keys rather than once per notice of it.

Textual's :class:`~textual.widgets.Footer` rebuilds all its keys (a widget
each, styled one by one) after every ``bindings_updated`` signal of its screen.
A screen that is being composed sends several before its first frame — one
per focus change and binding check as its widgets mount — so the compare
screen's footer was rebuilt eight times before it was first drawn, a good
part of the time a what-if's comparison takes to appear. This one shows its
screen's keys from its first frame (Textual's waits for the first notice, so
its keys came a frame after the screen), and rebuilds once after the last of
a burst, and only if the keys it shows changed: the keys are the same.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer as TextualFooter


class Footer(TextualFooter):
    class KeysShown(Message):
        """The footer has been rebuilt with its screen's keys (it draws them in the next frame)."""

    _rebuild_pending = False
    _shown: tuple[object, ...] | None = None  # the keys last built, as the footer shows them

    def __init__(self) -> None:
        super().__init__()
        self.set_reactive(TextualFooter._bindings_ready, True)  # the keys in the first frame, not a frame later

    def compose(self) -> ComposeResult:
        self._shown = self._keys()
        yield from super().compose()

    def _keys(self) -> tuple[object, ...]:
        """What the footer shows: each shown binding's key, action, text and state."""
        return tuple(
            (b.key, b.action, b.description, b.group, enabled, tooltip)
            for _node, b, enabled, tooltip in self.screen.active_bindings.values()
            if b.show
        )

    def bindings_changed(self, screen: Screen[object]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen or self._rebuild_pending:
            return
        self._rebuild_pending = True
        self.call_after_refresh(self._rebuild)

    async def _rebuild(self) -> None:
        self._rebuild_pending = False
        if not self.is_attached:  # (its screen went away before the refresh came)
            return
        keys = self._keys()
        if keys != self._shown:  # (a notice that changed nothing the footer shows: a focus move within the view)
            self._shown = keys
            await self.recompose()
        self.post_message(self.KeysShown())
