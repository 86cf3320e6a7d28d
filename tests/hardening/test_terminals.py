"""§7: the debugger needs a real terminal and says so in one line otherwise; NO_COLOR is honoured
everywhere (the debugger renders every screen without colour, kernbench prints no colour codes)."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time

import pytest
from hardening_harness import HANG_BOUND_S, assert_failed_cleanly, child_env, spawn

from kernbench.events.store import EventStore
from kernbench.events.tracefile import save_trace
from kernbench_tui.demo import DemoParams, demo_events

APP_COMMANDS = [[], ["open", "good.kbtrace"], ["run", "gemm-composite"], ["demo"]]
COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-9]|4[0-9]|9[0-7]|10[0-7])(?:;[0-9;]*)?m")


@pytest.fixture
def folder(tmp_path):
    events, meta = demo_events(DemoParams(n_pes=2, tiles=3))
    save_trace(tmp_path / "good.kbtrace", EventStore.from_events(events), meta)
    return tmp_path


def run_in_pty(argv: list[str], env: dict[str, str], cwd, timeout_s: float = 30) -> tuple[int, bytes, float]:
    """stdin, stdout and stderr on a pseudo-terminal, as a person at a terminal runs it."""
    master, slave = pty.openpty()
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, close_fds=True)
    os.close(slave)
    out = b""
    while time.monotonic() - t0 < timeout_s:
        ready, _, _ = select.select([master], [], [], 0.5)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)
    os.close(master)
    return proc.returncode, out, time.monotonic() - t0


@pytest.mark.parametrize("argv", APP_COMMANDS, ids=lambda a: " ".join(a) or "default")
def test_with_stdout_not_a_terminal_the_debugger_says_so_and_exits(folder, argv):
    got = spawn("kernbench_tui.cli", argv, cwd=folder, env=child_env(TERM="xterm-256color"), timeout_s=30)
    assert_failed_cleanly(
        got, 2, r"^error: kernbench-tui needs an interactive terminal \((stdout|stdin) is not a terminal\)", max_seconds=10, max_mib=300
    )
    assert "\x1b" not in got.out + got.err and got.err.count("\n") == 1


@pytest.mark.parametrize("term", ["dumb", "unknown", ""])
@pytest.mark.parametrize("argv", APP_COMMANDS[1:2] + APP_COMMANDS[3:], ids=lambda a: " ".join(a))
def test_a_terminal_that_cannot_draw_the_app_is_refused_in_one_line(folder, term, argv):
    env = child_env()
    env.pop("TERM", None)
    if term:
        env["TERM"] = term
    status, out, seconds = run_in_pty([sys.executable, "-m", "kernbench_tui.cli", *argv], env, folder)
    text = out.decode("utf-8", "replace")
    assert status == 2, text
    assert f"TERM={term or '(unset)'} cannot show a full-screen app" in text
    assert "\x1b" not in text and "Traceback" not in text and seconds < HANG_BOUND_S  # (wall time: a hang bound only)


def test_the_probe_prints_plain_text_anywhere(folder):
    got = spawn("kernbench_tui.cli", ["probe", "--topology", "cube1"], cwd=folder, env=child_env(TERM="dumb"))
    assert got.status == 0 and "PE → local HBM" in got.out and "\x1b" not in got.out


@pytest.mark.parametrize("argv", [["run", "gemm-composite"], ["topo", "show", "cube1"], ["run", "--list"]])
def test_no_color_means_no_colour_codes_from_kernbench(folder, argv):
    status, out, _ = run_in_pty([sys.executable, "-m", "kernbench.cli", *argv], child_env(TERM="xterm-256color", NO_COLOR="1"), folder)
    assert status == 0, out
    assert not COLOUR.search(out.decode("utf-8", "replace")), out[:500]


@pytest.mark.parametrize("size", [(120, 36), (80, 24), (60, 20)])
def test_the_debugger_draws_every_screen_with_no_color(monkeypatch, size):
    import asyncio

    monkeypatch.setenv("NO_COLOR", "1")
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tui"))
    from tui_harness import demo_app, screen_text, settle

    async def walk():
        app = demo_app()
        async with app.run_test(size=size) as pilot:
            await settle(app, pilot)
            texts = [screen_text(app)]
            for keys in (["n", "5"], ["1"], ["3"], ["4"], ["question_mark"], ["escape", "g"], ["escape", "p"]):
                for key in keys:
                    await pilot.press(key)
                await pilot.pause()
                texts.append(screen_text(app))
            return texts

    texts = asyncio.run(walk())
    assert all(t.strip() for t in texts)
    assert "? help" in texts[0] and "q quit" in texts[0]
