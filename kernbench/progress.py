"""Progress on stderr for long work: a sweep's bar with its ETA, a long run's simulated time and commands.

Drawn (by rich) only when stderr is a terminal — nothing in a pipe, a log file
or a test's capture — and cleared when the work ends, so what is left on the
screen and on stdout is the same with or without it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console

#: A single run shows its progress only once it has taken this long.
SHOW_RUN_AFTER_S = 1.0


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed
        return False


def _console() -> Console:
    return Console(file=sys.stderr, highlight=False, markup=False, emoji=False)


@contextmanager
def run_progress(label: str, enabled: bool) -> Iterator[Callable[[float, int], None] | None]:
    """A ``progress(t_ns, commands)`` callback for :meth:`Runtime.run` (None when not ``enabled``).

    Nothing is drawn during the first :data:`SHOW_RUN_AFTER_S`; after that
    one line says how far the simulation has got, until the run ends.
    """
    if not enabled:
        yield None
        return
    from rich.live import Live
    from rich.text import Text

    live = Live(console=_console(), auto_refresh=False, transient=True, redirect_stdout=False, redirect_stderr=False)
    start = time.monotonic()
    shown = False

    def progress(t_ns: float, commands: int) -> None:
        nonlocal shown
        elapsed = time.monotonic() - start
        if elapsed < SHOW_RUN_AFTER_S:
            return
        if not shown:
            live.start()
            shown = True
        live.update(Text(f"{label} · simulated t={t_ns:,.1f} ns · {commands:,} commands · {elapsed:,.1f} s"), refresh=True)

    try:
        yield progress
    finally:
        if shown:
            live.stop()


@contextmanager
def sweep_progress(label: str, total: int, enabled: bool) -> Iterator[Callable[[], None]]:
    """An ``advance()`` to call once per finished point; a bar with count, elapsed time and ETA when ``enabled``."""
    if not enabled or total <= 0:
        yield lambda: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=_console(),
        transient=True,
        redirect_stdout=False,
        redirect_stderr=False,
    )
    with bar:
        task = bar.add_task(label, total=total)
        yield lambda: bar.advance(task)
