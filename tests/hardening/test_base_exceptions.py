"""Round 3, root cause 3: what a kernel file raises that is not an ``Exception`` is still its error.

``sys.exit()`` in a kernel, set-up or import ended kernbench with status 0
and no output (``run``, ``--explain``, ``compare``, ``sweep``); a
``GreenletExit`` silently ended a program and the run "succeeded"; other
``BaseException`` subclasses gave tracebacks, and an exception whose
``__str__`` raises crashed the error formatter. Each must be one ``error:``
line naming the user's line (the line that raised), with a non-zero status.
"""

from __future__ import annotations

import re

import pytest
from hardening_harness import invoke

from kernbench import cli

RAISES = {
    "sys.exit()": "sys.exit()",
    "sys.exit(0)": "sys.exit(0)",
    "GreenletExit": "raise greenlet.GreenletExit()",
    "KeyboardInterrupt of its own": "raise KeyboardInterrupt()",
    "a BaseException subclass": "raise Weird('odd')",
    "an Exception whose __str__ raises": "raise BadText()",
    "a BaseException whose __str__ raises": "raise BadTextBase()",
}
PLACES = ("import", "set-up", "kernel", "reference check", "option rules")

SOURCE = """\
import sys
import greenlet
from kernbench import Option, kernel, tl


class Weird(BaseException):
    pass


class BadText(Exception):
    def __str__(self):
        raise RuntimeError("no text")


class BadTextBase(BaseException):
    def __str__(self):
        raise ValueError("no text")


{at_import}


def work(n):
    tl.cycles(n)
    {in_kernel}


def check():
    {in_check}
    return 0.0


def rules(options, pes):
    {in_rules}
    return []


@kernel(options=[Option("n", int, 1, "cycles", low=1, high=9)], topology="cube1", check=rules)
def setup(rt, n):
    {in_setup}
    rt.launch(work, pes=[0], args=(n,))
    return check
"""


def write(tmp_path, raises: str, place: str) -> tuple[str, int]:
    """The kernel file, and the line that raises."""
    slots = {"at_import": "", "in_kernel": "pass", "in_check": "pass", "in_rules": "pass", "in_setup": "pass"}
    slot = {"import": "at_import", "set-up": "in_setup", "kernel": "in_kernel", "reference check": "in_check", "option rules": "in_rules"}
    slots[slot[place]] = raises
    text = SOURCE.format(**slots)
    path = tmp_path / "k.py"
    path.write_text(text)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.strip() == raises)
    return str(path), line


COMMANDS = {
    "run": lambda f: ["run", f],
    "run --explain": lambda f: ["run", f, "--explain"],
    "compare": lambda f: ["compare", f"{f} --n 1", f"{f} --n 2"],
    "sweep": lambda f: ["sweep", f, "--grid", "n=1,2", "--jobs", "1", "--no-cache"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("kind", list(RAISES))
def test_anything_a_kernel_file_raises_is_one_error_at_its_line(tmp_path, capsys, kind, place, command):
    path, line = write(tmp_path, RAISES[kind], place)
    got = invoke(cli.main, COMMANDS[command](path), capsys, trace_memory=False)
    assert got.status == 2, (got.status, got.out[-1000:], got.err[-2000:])
    assert "Traceback" not in got.err + got.out, got.err[-3000:]
    errors = [row for row in got.err.splitlines() if row.startswith("error:")]
    points = 2 if command == "sweep" and place != "import" else 1  # (a sweep says each failed point)
    assert 1 <= len(errors) <= points, got.err
    assert re.search(rf"k\.py:{line}\b", got.err), (line, got.err)
    name = {"GreenletExit": "GreenletExit", "a BaseException subclass": "Weird", "KeyboardInterrupt of its own": "KeyboardInterrupt"}
    assert name.get(kind, "") in got.err


def test_an_exception_whose_text_cannot_be_read_is_named_by_its_type():
    from kernbench.raised import described

    class Mute(Exception):
        def __str__(self):
            raise RuntimeError("no")

    class Huge(Exception):
        pass

    assert described(Mute()) == "Mute (its message could not be read: str() raised RuntimeError)"
    assert described(Huge("x" * 10_000)).startswith("Huge: xxx") and "10,000 characters" in described(Huge("x" * 10_000))


def test_a_real_interrupt_is_still_an_interrupt_not_the_users_error():
    from kernbench.errors import Interrupted
    from kernbench.limits import WallTimeExceeded
    from kernbench.raised import theirs

    assert not theirs(Interrupted()) and not theirs(WallTimeExceeded())
    assert theirs(SystemExit(0))


def test_the_same_file_raising_nothing_runs(tmp_path, capsys):
    """(the template every case above is built from: the error comes from the line that raises)"""
    path, _ = write(tmp_path, "pass", "set-up")
    got = invoke(cli.main, ["run", path], capsys, trace_memory=False)
    assert got.status == 0 and got.err == "", got.err
