"""The ``r`` prompt: re-time the open run under what-if changes, and the comparison it opens.

The prompt takes one or more changes in ``kernbench run --what-if`` syntax,
separated by spaces (``pe.attrs.tcm_bw_gbps=1024``, ``line:42*0.5``,
``line:FILE.py:42*0.5``, ``engine:PE_GEMM*0.5``; :mod:`kernbench.analysis.whatif`).
Enter re-times the run's recorded commands in a worker (the kernel's Python
does not run again; a live run's child process does the work), then the
run and its re-timing open side by side on one time axis — the compare view
``kernbench-tui run … --what-if`` opens — with both latencies and the
difference in the header. A change that cannot be parsed or applied, or a
run that cannot be re-timed honestly (a kernel that read simulated time),
is one line in the prompt. Escape cancels; in the comparison ``r`` re-times
the original run under other changes and escape goes back.
"""

from __future__ import annotations

import gc
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Static
from textual.worker import get_current_worker

from kernbench.errors import KernbenchError
from kernbench.events.timeline import TimelineModel
from kernbench.events.tracefile import Trace
from kernbench.printable import printable
from kernbench_tui.compared import ComparedRuns, side_of
from kernbench_tui.screens.help import COMPARE_KEYS
from kernbench_tui.sources import Retimer

RETIMING = "re-timing…"
EXAMPLES = "e.g. pe.attrs.tcm_bw_gbps=1024  line:42*0.5  engine:PE_GEMM*0.5"

#: the compare keys where run A can be re-timed (``run … --what-if``), and those of a what-if's comparison
RETIME_A_KEYS = [*COMPARE_KEYS[:-2], ("r", "what if …: re-time the original run (A) under other changes"), *COMPARE_KEYS[-2:]]
WHAT_IF_KEYS = [*RETIME_A_KEYS[:-2], ("escape", "back to the run"), *RETIME_A_KEYS[-2:]]


@dataclass(frozen=True)
class WhatIfAnswer:
    """The changes as given and the run re-timed under them."""

    changes: tuple[str, ...]
    trace: Trace


class CollectionsHeld:
    """Python's full garbage collections, held off from Enter until the comparison is drawn.

    A full collection walks every object the debugger holds (its widgets, its
    run's tables): a tenth of a second or more, and building the comparison
    allocates enough to set one off. The objects alive at Enter are set aside
    (``gc.freeze``) and given back once the comparison has been drawn, the
    re-timing refused or cancelled: the collection happens after the user sees the
    answer, not before. Nothing is left frozen (a second hold while one is on
    does nothing; :meth:`release` is safe to call twice)."""

    held = False

    @classmethod
    def hold(cls) -> None:
        if not cls.held:
            cls.held = True
            gc.freeze()

    @classmethod
    def release(cls) -> None:
        if cls.held:
            cls.held = False
            gc.unfreeze()


def _import_parser() -> None:
    """What reads a change (``kernbench.analysis.whatif`` and the command types it names): imported while
    the user types, not after Enter (the screen its answer opens is the host's to import:
    :meth:`WhatIfHost.prepare_what_if`)."""
    import kernbench.analysis.whatif  # noqa: F401


def changes_of(text: str) -> list[str]:
    """The prompt's text as changes: split like a shell line (a quoted FILE may hold spaces), each checked
    as ``--what-if`` checks it before a run (a line is checked against the run when re-timed)."""
    from kernbench.analysis.whatif import parse_what_ifs
    from kernbench.errors import RetimeError

    try:
        changes = shlex.split(text)
    except ValueError as exc:
        raise RetimeError(f"what if {text!r}: {exc}") from None
    if not changes:
        raise RetimeError(f"give one or more changes, {EXAMPLES}")
    parse_what_ifs(changes, None)
    return changes


class Retimed(Message):
    def __init__(self, answer: WhatIfAnswer) -> None:
        super().__init__()
        self.answer = answer


class Refused(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class WhatIfPrompt(ModalScreen[WhatIfAnswer | None]):
    """Returns the re-timed run, or None if cancelled. ``retimer``: what re-times the run, or the one line
    saying why this run cannot be re-timed (the prompt shows it, and takes no changes)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "cancel"),
        Binding("q", "quit", "quit", show=False),  # (while re-timing: the input, which takes q, is disabled)
    ]
    DEFAULT_CSS = """
    WhatIfPrompt { align: center middle; }
    WhatIfPrompt > Vertical {
        width: 110; max-width: 100%; height: auto; border: round $accent; background: $panel; padding: 0 1;
    }
    WhatIfPrompt #what-if-message { color: $error; }
    WhatIfPrompt #what-if-message.-busy { color: $text; text-style: bold; }
    WhatIfPrompt #what-if-message.-note { color: $text-muted; }
    """

    def __init__(self, retimer: Retimer | str, value: str = "") -> None:
        super().__init__()
        self.retimer = retimer
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"what if … (re-time this run; changes as for --what-if, separated by spaces)\n{EXAMPLES}")
            yield Input(value=self.value, placeholder="KEY.PATH=VALUE  line:N*F  line:FILE.py:N*F  engine:KIND*F", id="what-if-input")
            yield Static("", id="what-if-message")

    def on_mount(self) -> None:
        if isinstance(self.retimer, str):
            self.query_one(Input).disabled = True
            self._say(self.retimer)
        else:
            if note := getattr(self.retimer, "note", ""):  # (a saved trace: what its first what-if will run)
                self._say(note, note=True)
            self.run_worker(_import_parser, thread=True, group="what-if-import", name="what-if parser import")

    @property
    def busy(self) -> bool:
        return self.query_one("#what-if-message", Static).has_class("-busy")

    def _say(self, text: str, busy: bool = False, note: bool = False) -> None:
        message = self.query_one("#what-if-message", Static)
        message.update(printable(text))
        message.set_class(busy, "-busy")
        message.set_class(note, "-note")

    @on(Input.Submitted, "#what-if-input")
    def submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if isinstance(self.retimer, str) or self.busy:
            return
        try:
            changes = changes_of(event.value)
        except KernbenchError as exc:
            self._say(str(exc))
            return
        self.query_one(Input).disabled = True
        self._say(getattr(self.retimer, "busy_text", "") or RETIMING, busy=True)  # (a saved trace's first: its kernel runs again)
        CollectionsHeld.hold()  # released once the comparison is drawn (WhatIfScreen), or below if none opens
        self._retime(self.retimer, tuple(changes))

    @work(thread=True, exclusive=True, group="what-if", name="what-if re-timing")
    def _retime(self, retimer: Retimer, changes: tuple[str, ...]) -> None:
        """Worker body: re-time off the UI thread; a refusal is one line (never a traceback)."""
        try:
            message: Message = Retimed(WhatIfAnswer(changes, retimer.retime(changes)))
        except KernbenchError as exc:
            message = Refused(str(exc))
        except Exception as exc:  # a bug in re-timing must not take the debugger down
            message = Refused(f"{type(exc).__name__}: {exc}")
        if not get_current_worker().is_cancelled:  # (escape while re-timing: nobody waits for it)
            self.post_message(message)

    @on(Retimed)
    def retimed(self, message: Retimed) -> None:
        self.dismiss(message.answer)

    @on(Refused)
    def refused(self, message: Refused) -> None:
        CollectionsHeld.release()
        self._say(message.text)
        field = self.query_one(Input)
        field.disabled = False
        field.focus()

    def action_cancel(self) -> None:
        self.workers.cancel_group(self, "what-if")
        CollectionsHeld.release()
        self.dismiss(None)

    def action_quit(self) -> None:
        CollectionsHeld.release()
        self.app.exit()


def what_if_runs(
    a_text: str, original: Trace, answer: WhatIfAnswer, pes: Sequence[str] = (), a_model: TimelineModel | None = None
) -> ComparedRuns:
    """The run (A) and its re-timing (B) on one axis, the whole of it in view (the PEs ``pes`` shown, if given);
    ``a_model``: the model already over the run's store (its answers are reused: a PE's utilization, …)."""
    b_text = f"what if {', '.join(answer.changes)} (re-timed)"
    runs = ComparedRuns([side_of("A", a_text, original, a_model), side_of("B", b_text, answer.trace)])
    runs.nav.pes = list(pes)
    runs.arrived()
    runs.nav.default_dt()
    runs.nav.cursor_ns = runs.nav.start_ns
    return runs


class WhatIfHost(Protocol):
    """The debugger app, which shows a what-if's comparison over its main screen (the screen showing it
    subclasses the compare screen, which subclasses the main screen: the app, not the main screen, imports it)."""

    def prepare_what_if(self) -> None:
        """Import the comparison's screen off the UI thread while the user types (~10 ms, once)."""

    def push_what_if(self, runs: ComparedRuns, retimer: Retimer, changes: Sequence[str]) -> None: ...
