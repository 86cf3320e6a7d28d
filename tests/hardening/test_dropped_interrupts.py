"""§6: a Ctrl-C whose exception Python drops (it landed in a ``__del__`` or a weakref callback, as
importlib's module locks have) still ends the command: at the next PE_CPU step of a run, at the
run's end, before outputs are renamed into place, or at the command's end — never a run to the end
with status 0."""

from __future__ import annotations

import os
import signal
import sys

import numpy as np
import pytest

from kernbench import Runtime, tl
from kernbench.errors import Interrupted
from kernbench.exit_codes import guarded
from kernbench.interrupts import PENDING, interrupts_raise
from kernbench.outputs import write_all_atomic


class _Dropper:
    """Sends this process ``signum`` from its ``__del__``; the handler runs inside it, so Python drops what it raises."""

    def __init__(self, signum: int) -> None:
        self.signum = signum

    def __del__(self) -> None:
        os.kill(os.getpid(), self.signum)
        for _ in range(10_000):  # the handler runs between two of these bytecodes
            pass


@pytest.fixture
def dropped(monkeypatch):
    """``drop(signum)``: an interrupt whose exception is dropped; the test checks it was."""
    seen: list[type[BaseException]] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_type))

    def drop(signum: int = signal.SIGINT) -> None:
        _Dropper(signum)  # (garbage at once: __del__ runs here)
        assert seen and issubclass(seen[-1], KeyboardInterrupt), "the interrupt's first raise was dropped"

    return drop


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_command_that_dropped_an_interrupt_ends_with_its_status_not_0(dropped, capsys, signum):
    ran_on = []

    def body() -> int:
        dropped(signum)
        ran_on.append("after")  # the drop let the body go on: only its end can stop it
        return 0

    assert guarded(body, "error: ") == 128 + signum
    assert ran_on == ["after"]
    assert capsys.readouterr().err == f"interrupted ({signal.Signals(signum).name}); no output was written\n"
    assert PENDING == [], "nothing pending once the command has ended"


PROGRESS: list[int] = []


def _drops_at_its_third_command(x):
    for i in range(50):
        PROGRESS.append(i)
        if i == 3:
            _Dropper(signal.SIGINT)
        tl.cycles(100)
    tl.load(x)


def test_a_run_stops_at_the_next_pe_step_after_a_dropped_interrupt(dropped):
    PROGRESS.clear()
    rt = Runtime("cube1")
    rt.launch(_drops_at_its_third_command, pes=[0], args=(rt.deploy(np.ones((8, 8), np.float16), pe=0),))
    with interrupts_raise(), pytest.raises(Interrupted) as info:
        rt.run()
    assert info.value.signum == signal.SIGINT and info.value.t_ns is not None
    assert PROGRESS == [0, 1, 2, 3], "the command issued after the drop was the last"


def test_outputs_are_not_renamed_into_place_after_a_dropped_interrupt(dropped, tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"before")

    def write(f) -> None:
        f.write(b"new")
        dropped()

    with interrupts_raise(), pytest.raises(Interrupted):
        write_all_atomic([(target, write)])
    assert target.read_bytes() == b"before"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"], "no temporary file left"


def test_outside_a_command_nothing_is_pending_and_the_handlers_are_back():
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with interrupts_raise():
        assert signal.getsignal(signal.SIGINT) is not before[0]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert PENDING == []


def test_an_interrupt_during_the_renames_waits_for_the_last_and_the_line_names_what_was_written(monkeypatch, capsys, tmp_path):
    """The race CI met: a Ctrl-C landing just after ``out.kbtrace`` was renamed into place ended the command with
    "no output was written" beside a complete file. The renames are one step now, and the line says what is there."""
    import kernbench.outputs

    first, second = tmp_path / "a.kbtrace", tmp_path / "b.json"
    renamed: list[str] = []
    real_replace = os.replace

    def replace_then_signal(src, dst) -> None:
        real_replace(src, dst)
        renamed.append(os.path.basename(dst))
        if len(renamed) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # (its handler runs at the next bytecode: inside the renames)

    monkeypatch.setattr(kernbench.outputs.os, "replace", replace_then_signal)

    def body() -> int:
        write_all_atomic([(first, lambda f: f.write(b"A")), (second, lambda f: f.write(b"B"))])
        raise AssertionError("the held interrupt is raised once the renames are done")

    assert guarded(body, "error: ") == 130
    assert renamed == ["a.kbtrace", "b.json"], "both renamed: all or none"
    assert (first.read_bytes(), second.read_bytes()) == (b"A", b"B")
    assert capsys.readouterr().err == f"interrupted (SIGINT); {first} and {second} were written before it\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.kbtrace", "b.json"], "no temporary file left"


def test_a_caches_entries_are_not_named_as_the_commands_output(capsys, tmp_path):
    from kernbench.outputs import write_text_atomic

    def body() -> int:
        write_text_atomic(tmp_path / "entry.json", "{}", announce=False)
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10_000):
            pass
        return 0

    assert guarded(body, "error: ") == 130
    assert capsys.readouterr().err == "interrupted (SIGINT); no output was written\n"
