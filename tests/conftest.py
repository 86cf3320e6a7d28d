"""Shared fixtures: the shipped topologies, compiled once per session (graphs are immutable)."""

import os
import signal

import pytest

# Deterministic TUI rendering for every test that imports textual, whichever folder is collected first.
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

# The interrupt tests press Ctrl-C as a user at a terminal would. A test command started as a
# background job of a script (``pytest &`` without job control) ignores SIGINT, and every command
# the tests spawn would inherit that and run on: Python's own handler, as in a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

from hypothesis import settings

from kernbench.topology.compile import load_topology

# No per-example deadline anywhere: on a shared 2-core CI machine one slow example is load,
# not a bug (a deadline failure under load once passed for a mutant's kill).
settings.register_profile("kernbench", deadline=None)
settings.load_profile("kernbench")


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker more than the machine has cores (``--maxprocesses`` still caps it). About a
    sixth of the suite's test time is spent waiting, not computing (a wall-time limit running out, a signal
    sent once a child is up, a debugger's pilot pausing): with one worker per core that core then idles. On
    2 cores the idle suite took 4:57–5:08 with 2 workers and 4:33 with 3, the same CPU either way."""
    return (os.cpu_count() or 1) + 1


def pytest_configure(config):
    """The commands the tests spawn (about a thousand processes) import kernbench from this checkout
    (``child_env``): its bytecode is written once here, so no process compiles the package again. A
    machine that sets PYTHONDONTWRITEBYTECODE keeps Python from writing it as it imports; each spawned
    command then compiled every module it imported (0.08 s of a small run's 0.3 s of CPU). Once, in the
    controller: files already compiled are only looked at."""
    if hasattr(config, "workerinput"):
        return
    import compileall
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for package in ("kernbench", "tui", "probes"):
        if (root / package).is_dir():
            compileall.compile_dir(root / package, quiet=2)


@pytest.fixture(scope="session")
def cube1():
    return load_topology("cube1")


@pytest.fixture(scope="session")
def sip2x2():
    return load_topology("sip2x2")


@pytest.fixture(scope="session")
def paper():
    return load_topology("paper")
