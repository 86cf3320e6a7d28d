"""The key footer, rebuilt once per change of the keys rather than once per notice of it.

Textual's :class:`~textual.widgets.Footer` rebuilds all its keys (a widget
each, styled one by one) after every ``bindings_updated`` signal of its screen.
A screen that is being composed sends several before its first frame — one
per focus change and binding check as its widgets mount — so the compare
screen's footer was rebuilt eight times before it was first drawn, a good
part of the time a what-if's comparison takes to appear. This one rebuilds
once after the last of a burst: the keys it shows are the same.
"""

from __future__ import annotations

from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer as TextualFooter


class Footer(TextualFooter):
    class KeysShown(Message):
        """The footer has been rebuilt with its screen's keys (it draws them in the next frame)."""

    _rebuild_pending = False

    def bindings_changed(self, screen: Screen[object]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen or self._rebuild_pending:
            return
        self._rebuild_pending = True
        self.call_after_refresh(self._rebuild)

    async def _rebuild(self) -> None:
        self._rebuild_pending = False
        await self.recompose()
        self.post_message(self.KeysShown())
