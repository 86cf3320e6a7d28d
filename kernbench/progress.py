"""Progress on stderr for long work: a sweep's bar with its ETA, a long run's simulated time and commands.

Drawn (by rich) only when stderr is a terminal — nothing in a pipe, a log file
or a test's capture — and cleared when the work ends, so what is left on the
screen and on stdout is the same with or without it.
"""

from __future__ import annotations

import sys
import threading
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


@contextmanager
def _live_after_a_while(text: Callable[[], str], refresh_per_second: float) -> Iterator[None]:
    """Show ``text()`` as one refreshed line on stderr once :data:`SHOW_RUN_AFTER_S` has passed, until the block ends."""
    from rich.live import Live
    from rich.text import Text

    class _Line:  # rich asks a renderable for its text at each refresh
        def __rich__(self) -> Text:
            return Text(text())

    live = Live(
        _Line(), console=_console(), refresh_per_second=refresh_per_second, transient=True, redirect_stdout=False, redirect_stderr=False
    )
    lock = threading.Lock()
    ended = False

    def start() -> None:
        with lock:
            if not ended:
                live.start()

    timer = threading.Timer(SHOW_RUN_AFTER_S, start)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            ended = True
            live.stop()


@contextmanager
def compare_progress(
    labels: list[str], enabled: bool, reached: Callable[[str], tuple[float, int]] = lambda label: (0.0, 0)
) -> Iterator[Callable[[str], None]]:
    """A ``done(label)`` to call as each side of a comparison is ready; while it runs, one line saying how
    each is doing (``compare · A done 1.2 s · B t=12,345.0 ns, 1,234 commands, 3.4 s``) when ``enabled``,
    after :data:`SHOW_RUN_AFTER_S`. ``reached(label)`` is a running side's simulated time and commands so far."""
    start = time.monotonic()
    finished: dict[str, float] = {}

    def done(label: str) -> None:
        finished.setdefault(label, time.monotonic() - start)

    if not enabled:
        yield done
        return

    def running(label: str, now: float) -> str:
        t_ns, commands = reached(label)
        so_far = f"t={t_ns:,.1f} ns, {commands:,} commands, " if commands else "starting, "
        return f"{label} {so_far}{now:.1f} s"

    def line() -> str:
        now = time.monotonic() - start
        return "compare · " + " · ".join(f"{lb} done {finished[lb]:.1f} s" if lb in finished else running(lb, now) for lb in labels)

    with _live_after_a_while(line, 2):
        yield done


@contextmanager
def working(label: str, enabled: bool) -> Iterator[None]:
    """``label · 2.3 s`` on stderr while a long step runs (an export, an attribution), shown after
    :data:`SHOW_RUN_AFTER_S` and cleared when it ends; nothing when not ``enabled``."""
    if not enabled:
        yield
        return
    start = time.monotonic()
    with _live_after_a_while(lambda: f"{label} · {time.monotonic() - start:.1f} s", 4):
        yield
