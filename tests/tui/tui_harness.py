"""Helpers for driving the app headless and reading its screen as text."""

from __future__ import annotations

import html
import re
from functools import lru_cache
from pathlib import Path

from textual.widgets import Input

from kernbench.events.store import EventStore
from kernbench.events.tracefile import TraceMetadata
from kernbench_tui.app import KernbenchApp
from kernbench_tui.demo import DemoParams, demo_events
from kernbench_tui.sources import StoreSource

SNAPSHOT_DIR = Path(__file__).resolve().parents[2] / "snapshots" / "tui"


@lru_cache(maxsize=4)
def demo_trace(n_pes: int = 4, tiles: int = 12) -> tuple[tuple, TraceMetadata]:
    events, meta = demo_events(DemoParams(n_pes=n_pes, tiles=tiles))
    return tuple(events), meta


def demo_app(n_pes: int = 4, tiles: int = 12) -> KernbenchApp:
    events, meta = demo_trace(n_pes, tiles)
    return KernbenchApp(StoreSource(EventStore.from_events(events), meta))


async def settle(app: KernbenchApp, pilot) -> None:
    """Wait for the source worker and every pending refresh."""
    await app.workers.wait_for_complete()
    await pilot.pause()
    for inp in app.screen.query(Input):
        inp.cursor_blink = False
    await pilot.pause()


# Rich's SVG export (what App.export_screenshot returns) places each run of text
# at x = cell * CELL_PX on the line its clip path names.
CELL_PX = 20 * 0.61
_SVG_TEXT = re.compile(r'<text [^>]*?x="([0-9.e+-]+)"[^>]*?clip-path="url\(#[^)]*-line-(\d+)\)">(.*?)</text>')


def screen_text(app: KernbenchApp) -> str:
    """The rendered screen as plain text lines (trailing spaces removed).

    Read from the public ``App.export_screenshot()``: every text run of the
    SVG goes back to its line and cell, so no private Textual API is involved.
    """
    from rich.cells import cell_len

    width, height = app.size
    rows = [[" "] * width for _ in range(height)]
    for x, y, escaped in _SVG_TEXT.findall(app.export_screenshot()):
        row, col = rows[int(y)], round(float(x) / CELL_PX)
        for ch in html.unescape(escaped).replace("\xa0", " "):
            if col < width:
                row[col] = ch
            for extra in range(1, cell_len(ch)):  # a wide character covers the next cell
                if col + extra < width:
                    row[col + extra] = ""
            col += cell_len(ch)
    return "\n".join("".join(row).rstrip() for row in rows) + "\n"


def sync(fn):
    """Run an async test body with asyncio.run (no pytest plugin needed)."""
    import asyncio
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))

    return wrapper


async def press(app: KernbenchApp, pilot, key) -> None:
    """A key name, or ("goto", t_ns) to jump directly, or ("type", text) to
    fill the focused input at once (typing itself is covered by key tests)."""
    if isinstance(key, tuple):
        what, arg = key
        if what == "goto":
            app.main.go_to(float(arg))
        elif what == "type":
            app.focused.value = arg
        await pilot.pause()
        return
    await pilot.press(key)
