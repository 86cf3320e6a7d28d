"""A corpus of hostile and careless kernel files, run through the command line and classified (issue 25).

    python tools/hostile_kernels.py                    # every case, one at a time; counts by class
    python tools/hostile_kernels.py --only hang --list # the cases of one class, not run
    python tools/hostile_kernels.py --sample 12        # a fixed sample (every n-th case), as the test runs
    python tools/hostile_kernels.py --json out.json    # keep every verdict

Each case is a folder of the user's (a kernel file ``k.py``, sometimes helpers
beside it) and one command of ``kernbench`` (or ``kernbench-tui``) as a user
would type it there, with ``--max-wall-s 3``. The command runs as a child
(``python -P -m``: the case's folder is not on its path, as for the console
script) under an address-space limit and a hard time bound, its peak RSS
sampled. The outcome is one of:

    correct          the result the case's construction fixes (a latency of N ns for tl.cycles(N) on cube1)
    clean error      a non-zero status with ``error:`` lines only (a case that must be refused)
    traceback        a Python traceback (or a fatal error) reached the user
    hang             still running at the hard bound (HARD_BOUND_S)
    blow-up          peak RSS past MAX_RSS_MIB, where kernbench, not the user's own code, allocated it
    silent wrong     exit 0 where an error was due, or a latency other than the one constructed
    unclear error    a non-zero status without an ``error:`` line
    refused          a correct file refused (an error where a result was due)
    lost file        a file of the case's folder changed or went away

Classes (``--only``): hang, crash, memory, base-exception, options, declaration, parse, data-loss,
odd-but-legal, shadowing. Runs with the standard library only (it drives the installed commands).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MIB = 2**20
HARD_BOUND_S = 60  # a hang, not a slow run: the limit in every command is 3 s (plus 2 s grace, 5 s last resort)
ADDRESS_SPACE_MIB = 3072  # the child's limit: a user's own runaway allocation meets MemoryError here
MAX_RSS_MIB = 1024  # past this, a case whose memory kernbench should have refused first is a blow-up
LIMIT = ["--max-wall-s", "3"]

CORRECT, CLEAN = "correct", "clean error"
TRACEBACK, HANG, BLOWUP, WRONG, UNCLEAR, REFUSED, LOST = (
    "traceback",
    "hang",
    "blow-up",
    "silent wrong",
    "unclear error",
    "refused",
    "lost file",
)
VERDICTS = (CORRECT, CLEAN, TRACEBACK, HANG, BLOWUP, WRONG, UNCLEAR, REFUSED, LOST)
FAILURES = (TRACEBACK, HANG, BLOWUP, WRONG, UNCLEAR, REFUSED, LOST)


@dataclass
class Case:
    cls: str
    name: str
    files: dict[str, str]
    argv: list[str]
    expect: str | float  # "error", "ok" (any success), or the latency in ns a success must report
    user_alloc: bool = False  # the user's own code allocates the memory (judged on the error, not the RSS)
    module: str = "kernbench.cli"
    stdout_json: bool = False  # the latency is read from the JSON on stdout
    owner: str = ""  # another helper of this session fixes this case's hole (issue 25 item 4: coll; dtypes: ops)


# --- building kernel files ---------------------------------------------------------------------------

HEAD = "import sys, os, signal, time, threading\nimport numpy as np\nfrom kernbench import Option, kernel, tl\n"


def ind(code: str, by: int = 4) -> str:
    return "".join((" " * by + line if line.strip() else line) for line in code.splitlines(keepends=True))


def kfile(
    *,
    top: str = "",
    setup: str = "",
    work: str = "tl.cycles(n)\n",
    check: str = "",
    rules: str = "",
    options: str = 'Option("n", int, 1, "cycles", low=1, high=1000)',
    decorator: str = 'topology="cube1"',
    launch: str = "rt.launch(work, pes=[0], args=(n,))\n",
    params: str = "n",
) -> str:
    body = setup + launch + (f"return lambda: {check}" if check else "")
    return (
        HEAD
        + top
        + "\n\ndef work(n):\n"
        + ind(work)
        + "\n\ndef rules(o, pes):\n"
        + ind(rules + "return []\n")
        + f"\n\n@kernel(options=[{options}], check=rules, {decorator})\n"
        + f"def setup(rt, {params}):\n"
        + ind(body)
        + "\n"
    )


def run(*extra: str) -> list[str]:
    return ["run", "k.py", *LIMIT, *extra]


PLACES = {
    "import": lambda code: kfile(top=code),
    "set-up": lambda code: kfile(setup=code),
    "kernel": lambda code: kfile(work=code + "tl.cycles(n)\n"),
    "check": lambda code: kfile(check=f"(exec({code!r}), 0.0)[1]\n"),
    "rules": lambda code: kfile(rules=code),
}


def commands() -> dict[str, list[str]]:
    return {
        "run": run(),
        "explain": run("--explain"),
        "sweep": ["sweep", "k.py", "--grid", "n=1,2", "--jobs", "1", "--no-cache", *LIMIT],
        "sweep-j2": ["sweep", "k.py", "--grid", "n=1,2", "--jobs", "2", "--no-cache", *LIMIT],
        "compare": ["compare", "k.py --n 1 --max-wall-s 3", "k.py --n 2 --max-wall-s 3"],
    }


# --- the classes --------------------------------------------------------------------------------------


def hangs() -> Iterator[Case]:
    bodies = {
        "loop": "while True:\n    pass\n",
        "swallow": "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass\n",
        "alarm-ignored": "signal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass\n",
        "alarm-handler": "signal.signal(signal.SIGALRM, lambda *a: None)\nwhile True:\n    pass\n",
        "sleep": "time.sleep(10**6)\n",
        "event-wait": "threading.Event().wait()\n",
        "lock-twice": "l = threading.Lock()\nl.acquire()\nl.acquire()\n",
        "c-loop": "x = sum(range(10**15))\n",
        "switch-interval": "sys.setswitchinterval(1e6)\nwhile True:\n    pass\n",
        "finally-loop": "try:\n    while True:\n        pass\nfinally:\n    while True:\n        pass\n",
    }
    cmds = commands()
    for body_name, body in bodies.items():
        for place, make in PLACES.items():
            if place == "check" and body_name in ("swallow", "finally-loop", "lock-twice"):
                code = kfile(check="(lambda: [None for _ in iter(int, 1)])()\n")  # (an endless comprehension)
            else:
                code = make(body)
            for cmd in ("run", "sweep-j2", "compare") if body_name in ("loop", "swallow", "c-loop") else ("run",):
                yield Case("hang", f"{body_name}@{place}/{cmd}", {"k.py": code}, cmds[cmd], "error")
    for place in ("import", "set-up"):
        yield Case(
            "hang",
            f"loop@{place}/tui",
            {"k.py": PLACES[place]("while True:\n    pass\n")},
            ["run", "k.py", *LIMIT],
            "error",
            module="kernbench_tui.cli",
        )
    # a receive nobody sends to; a wait on it: a deadlock, named
    yield Case(
        "hang", "recv-never-sent", {"k.py": kfile(work="tl.wait(tl.recv_async(1, (4, 4)))\n", decorator='topology="cube1"')}, run(), "error"
    )


EXCEPTIONS = {
    "zero-division": "1 / 0",
    "index": "[][1]",
    "key": "{}['k']",
    "attribute": "None.x",
    "type": "len(5)",
    "value": "int('x')",
    "assert": "assert False, 'no'",
    "name": "undefined_name",
    "import": "import no_such_module_here",
    "recursion": "(lambda f: f(f))(lambda f: f(f))",
    "overflow": "2.0 ** 100000",
    "unicode": "b'\\xff'.decode('utf-8')",
    "stop-iteration": "next(iter([]))",
    "os-error": "open('/no/such/file')",
    "memory-error": "(_ for _ in ()).throw(MemoryError('pretend'))",
    "not-implemented": "(_ for _ in ()).throw(NotImplementedError)",
    "huge-message": "(_ for _ in ()).throw(ValueError('x' * 10**6))",
    "newline-message": "(_ for _ in ()).throw(ValueError('line one\\nerror: forged\\n\\x1b[31mred'))",
    "bad-str": "(_ for _ in ()).throw(type('E', (Exception,), {'__str__': lambda s: 1 / 0})())",
    "bad-repr-and-str": "(_ for _ in ()).throw(type('E', (Exception,), {'__str__': lambda s: None, '__repr__': lambda s: 1 / 0})())",
}


def crashes() -> Iterator[Case]:
    cmds = commands()
    for name, expr in EXCEPTIONS.items():
        for place, make in PLACES.items():
            code = make(f"{expr}\n") if place != "check" else kfile(check=f"{expr}\n")
            for cmd in ("run", "explain", "sweep", "compare") if name in ("zero-division", "bad-str", "recursion") else ("run",):
                yield Case("crash", f"{name}@{place}/{cmd}", {"k.py": code}, cmds[cmd], "error")
    odd_returns = {
        "check-nan": "float('nan')",
        "check-inf": "float('inf')",
        "check-text": "'small'",
        "check-list": "[1, 2]",
        "check-complex": "1j",
        "check-array": "np.ones(3)",
        "check-huge-int": "10**400",
    }
    for name, value in odd_returns.items():
        yield Case("crash", name, {"k.py": kfile(check=f"{value}\n")}, run(), "error")
    setups = {
        "setup-returns-int": "return 5\n",
        "setup-generator": "yield 1\n",
        "setup-launches-nothing": "return None\n",
    }
    for name, body in setups.items():
        yield Case("crash", name, {"k.py": kfile(setup=body, launch="")}, run(), "error")
    kernels = {
        "kernel-generator": "yield 1\n",
        "kernel-async": None,
        "kernel-bad-tl-arg": "tl.cycles('many')\n",
        "kernel-negative-cycles": "tl.cycles(-5)\n",
        "kernel-nan-cycles": "tl.cycles(float('nan'))\n",
        "kernel-inf-cycles": "tl.cycles(float('inf'))\n",
        "kernel-load-nothing": "tl.load(None)\n",
        "kernel-store-nothing": "tl.store(None, None)\n",
        "kernel-tl-outside": None,
        "kernel-send-to-nobody": "tl.send(7, tl.zeros((4, 4)))\n",
        "kernel-send-float-pe": "tl.send(1.5, tl.zeros((4, 4)))\n",
        "kernel-recv-negative": "tl.recv_async(0, (-4, 4))\n",
        "kernel-program-id-call": "tl.program_id(5)\n",
        "kernel-composite-junk": "tl.composite([1, 2, 3])\n",
        "kernel-full-bad-shape": "tl.full((1.5, 2), 0.0)\n",
        "kernel-full-negative": "tl.full((-1, 2), 0.0)\n",
        "kernel-zeros-bad-dtype": "tl.zeros((2, 2), dtype='nonsense')\n",
    }
    owners = {"kernel-recv-negative": "coll", "kernel-send-float-pe": "coll"}
    for name, body in kernels.items():
        if name == "kernel-async":
            code = kfile().replace("def work(n):", "async def work(n):")
        elif name == "kernel-tl-outside":
            code = kfile(top="tl.cycles(1)\n")
        else:
            code = kfile(work=body)
        yield Case("crash", name, {"k.py": code}, run(), "error", owner=owners.get(name, ""))
    launches = {
        "launch-print": "rt.launch(print, pes=[0])\n",
        "launch-len": "rt.launch(len, pes=[0])\n",
        "launch-lambda-args": "rt.launch(lambda: None, pes=[0], args=(1,))\n",
        "launch-bad-pe": "rt.launch(work, pes=[999], args=(n,))\n",
        "launch-negative-pe": "rt.launch(work, pes=[-1], args=(n,))\n",
        "launch-float-pe": "rt.launch(work, pes=[0.5], args=(n,))\n",
        "launch-no-pes": "rt.launch(work, pes=[], args=(n,))\n",
        "launch-twice-one-pe": "rt.launch(work, pes=[0], args=(n,))\nrt.launch(work, pes=[0], args=(n,))\n",
        "launch-string-pes": "rt.launch(work, pes='0', args=(n,))\n",
        "launch-object": "rt.launch(object(), pes=[0])\n",
    }
    for name, line in launches.items():
        yield Case("crash", name, {"k.py": kfile(launch=line)}, run(), "error", owner="coll" if name == "launch-twice-one-pe" else "")


def memory() -> Iterator[Case]:
    ours = {  # kernbench must refuse these before allocating
        "tl-full-huge": "tl.full((60000, 60000), 1.0)\n",
        "tl-zeros-huge": "tl.zeros((100000, 100000))\n",
        "tl-zeros-huge-f64": "tl.zeros((30000, 30000), dtype=np.float64)\n",
        "tl-full-3d": "tl.full((1000, 1000, 1000), 0.0)\n",
        "tl-zeros-many-dims": "tl.zeros((10,) * 12)\n",
    }
    for name, body in ours.items():
        yield Case("memory", name, {"k.py": kfile(work=body)}, run(), "error")
    setups = {
        "deploy-huge": "rt.deploy(np.zeros((1, 1), np.float32).repeat(1, 0).reshape(1, 1))\nrt.empty((100000, 100000))\n",
        "empty-huge": "rt.empty((200000, 200000))\n",
        "empty-huge-f32": "rt.empty((100000, 100000), np.float32)\n",
        "empty-negative": "rt.empty((-5, 5))\n",
        "empty-float-shape": "rt.empty((2.5, 5))\n",
        "deploy-object": "rt.deploy(np.array([object()] * 4))\n",
        "deploy-strings": "rt.deploy(np.array(['a', 'b']))\n",
        "deploy-none": "rt.deploy(None)\n",
        "deploy-huge-broadcast": "rt.deploy(np.broadcast_to(np.float32(1), (20000, 20000)))\n",
    }
    for name, body in setups.items():
        if name == "deploy-huge-broadcast":
            # Legal: 763 MiB of float16 fits the 6 GiB HBM slice, so it runs (1 ns). Judged on memory: the
            # stored array once (~810 MiB peak), not plus a full-size check mask (1195 MiB: a blow-up until
            # kernbench/dtypes.py checked in blocks). Its limit is 30 s: it takes ~3 s idle, 35 s at load 11.
            yield Case("memory", name, {"k.py": kfile(setup=body)}, run("--max-wall-s", "30"), 1.0)
            continue
        owner = "ops" if name in ("deploy-object", "deploy-strings", "deploy-none") else ""
        yield Case("memory", name, {"k.py": kfile(setup=body)}, run(), "error", owner=owner)
    for name, body in {"deploy-list": "rt.deploy([1, 2, 3])\n", "deploy-0d": "rt.deploy(np.float32(3))\n"}.items():
        yield Case("memory", name, {"k.py": kfile(setup=body)}, run(), 1.0)  # (array-like: taken as numpy takes it)
    users = {  # the user's own code allocates: judged on a clean error (MemoryError at the address-space limit)
        "list-growth": "x = []\nwhile True:\n    x.append(bytearray(10**7))\n",
        "bytes-huge": "b = bytes(10**11)\n",
        "numpy-huge": "a = np.ones((10**5, 10**5))\n",
        "string-huge": "s = 'x' * 10**11\n",
    }
    for name, body in users.items():
        for place in ("import", "set-up", "kernel"):
            yield Case("memory", f"{name}@{place}", {"k.py": PLACES[place](body)}, run(), "error", user_alloc=True)


BASE = {
    "sys-exit": "sys.exit()",
    "sys-exit-0": "sys.exit(0)",
    "sys-exit-3": "sys.exit(3)",
    "sys-exit-text": "sys.exit('bye')",
    "os-exit": None,
    "greenlet-exit": "import greenlet; raise greenlet.GreenletExit()",
    "keyboard-interrupt": "raise KeyboardInterrupt()",
    "generator-exit": "raise GeneratorExit()",
    "own-base": "raise type('Own', (BaseException,), {})()",
    "own-base-bad-str": "raise type('Own', (BaseException,), {'__str__': lambda s: 1 / 0})()",
    "system-exit-subclass": "raise type('Quit', (SystemExit,), {})(0)",
}


def base_exceptions() -> Iterator[Case]:
    cmds = commands()
    for name, stmt in BASE.items():
        if stmt is None:
            continue
        for place, make in PLACES.items():
            code = make(stmt + "\n") if place != "check" else kfile(check=f"exec({stmt!r})\n")
            for cmd in ("run", "explain", "sweep", "compare"):
                yield Case("base-exception", f"{name}@{place}/{cmd}", {"k.py": code}, cmds[cmd], "error")


def options() -> Iterator[Case]:
    bad_declared = {
        "nan-default": 'Option("n", float, float("nan"), "x")',
        "inf-default": 'Option("n", float, float("inf"), "x")',
        "low-above-high": 'Option("n", int, 5, "x", low=10, high=1)',
        "reserved-name": 'Option("topology", str, "a", "x")',
        "bad-name": 'Option("N-N", int, 1, "x")',
        "bad-type": 'Option("n", list, [], "x")',
        "choice-missing-default": 'Option("n", int, 5, "x", choices=(1, 2))',
        "only-with-self": 'Option("n", int, 1, "x", only_with=(("n", 1),))',
        "only-with-junk": 'Option("n", int, 1, "x", only_with=5)',
        "help-not-text": 'Option("n", int, 1, None)',
        "duplicate": 'Option("n", int, 1, "x"), Option("n", int, 2, "y")',
        "not-an-option": '"n"',
        "default-wrong-type": 'Option("n", int, "five", "x")',
    }
    for name, decl in bad_declared.items():
        yield Case("options", f"declared-{name}", {"k.py": kfile(options=decl)}, run(), "error")
    helps = {
        "percent": 'Option("n", int, 1, "100% of it, %d %s %(prog)s", low=1, high=9)',
        "braces": 'Option("n", int, 1, "{n} {}", low=1, high=9)',
        "newlines": 'Option("n", int, 1, "one\\ntwo\\x1b[31m", low=1, high=9)',
        "unicode": 'Option("n", int, 1, "größe ≤ 9 ✓", low=1, high=9)',
        "huge": 'Option("n", int, 1, "x" * 100000, low=1, high=9)',
    }
    for name, decl in helps.items():
        yield Case("options", f"help-{name}", {"k.py": kfile(options=decl)}, ["run", "k.py", "--help"], "ok")
    floaty = 'Option("n", float, 1.0, "x")'
    work = "tl.cycles(int(n) if n == n and abs(n) < 1e6 else 1)\n"
    for value in ("nan", "-nan", "inf", "-inf", "1e309", "NaN", "Infinity"):
        for cmd in ("run", "sweep"):
            argv = run(f"--n={value}") if cmd == "run" else ["sweep", "k.py", "--grid", f"n={value},1", "--no-cache", "--jobs", "1", *LIMIT]
            yield Case("options", f"float-{value}/{cmd}", {"k.py": kfile(options=floaty, work=work)}, argv, "error")
    ranged = 'Option("n", int, 1, "x", low=1, high=1000)'
    for value in ("0", "1001", "-1", "1.5", "1e3", "0x10", "", "10**3", "99999999999999999999999"):
        yield Case("options", f"int-{value!r}", {"k.py": kfile(options=ranged)}, run(f"--n={value}"), "error")
    for value in (" 5", "５", "+5", "05"):  # (what Python's int() takes: the value 5, as the user wrote it)
        yield Case("options", f"int-{value!r}", {"k.py": kfile(options=ranged)}, run(f"--n={value}"), 5.0)
    yield Case("options", "unknown-flag", {"k.py": kfile()}, run("--nn", "3"), "error")
    yield Case("options", "flag-twice", {"k.py": kfile()}, run("--n", "3", "--n", "4"), 4.0, stdout_json=False)
    texts = 'Option("n", str, "a", "x", choices=("a", "b"))'
    for value in ("c", "", "A", "a\n"):
        yield Case("options", f"choice-{value!r}", {"k.py": kfile(options=texts, work="tl.cycles(1)\n")}, run(f"--n={value}"), "error")
    rules = {
        "returns-int": "return 5\n",
        "returns-none-list": "return [None]\n",
        "returns-bytes": "return [b'x']\n",
        "raises": "raise ValueError('rule broke')\n",
        "returns-problem": "return ['n is odd'] if o['n'] % 2 else []\n",
    }
    for name, body in rules.items():
        yield Case("options", f"rules-{name}", {"k.py": kfile(rules=body)}, run("--n", "3"), "error")
    for i in range(20):  # a range of good values: each must be the value's latency
        n = 1 + 49 * i
        yield Case("options", f"good-{n}", {"k.py": kfile()}, run("--n", str(n)), float(n))


def declarations() -> Iterator[Case]:
    decorators = {
        "topology-int": "topology=5",
        "topology-empty": 'topology=""',
        "topology-missing": 'topology="no-such-topology"',
        "topology-path-missing": 'topology="/no/such.yaml"',
        "name-int": 'topology="cube1", name=7',
        "name-bad": 'topology="cube1", name="1 two"',
        "name-newline": 'topology="cube1", name="x\\n"',
        "description-int": 'topology="cube1", description=5',
    }
    for name, deco in decorators.items():
        yield Case("declaration", name, {"k.py": kfile(decorator=deco)}, run(), "error")
    yield Case("declaration", "check-not-callable", {"k.py": kfile().replace("check=rules", "check=3")}, run(), "error")
    yield Case("declaration", "setup-wrong-signature", {"k.py": kfile(params="m")}, run(), "error")
    yield Case("declaration", "no-declaration", {"k.py": HEAD + "def work():\n    tl.cycles(1)\n"}, run(), "error")
    yield Case("declaration", "empty-file", {"k.py": ""}, run(), "error")
    yield Case(
        "declaration",
        "two-kernels-unnamed",
        {"k.py": kfile() + kfile().split("\n\n", 1)[1].replace("def setup", "def setup2")},
        run(),
        "error",
    )
    yield Case("declaration", "decorator-on-class", {"k.py": HEAD + "@kernel()\nclass K:\n    pass\n"}, run(), "error")
    yield Case("declaration", "decorator-on-lambda", {"k.py": HEAD + "x = kernel()(lambda rt: None)\n"}, run(), "error")
    yield Case("declaration", "kernel-called-bare", {"k.py": HEAD + "@kernel\ndef setup(rt):\n    pass\n"}, run(), "error")
    for ref in ("k.py:nope", "k.py:", "k.py:1x", "missing.py", "k.pyc", "", " ", "-k.py", "k.py\n", "./", "k.py/.."):
        yield Case("declaration", f"ref-{ref!r}", {"k.py": kfile()}, ["run", ref, *LIMIT], "error")
    yield Case("declaration", "new-kernel-newline", {"keep.txt": "x"}, ["new", "kernel", "x\n"], "error")
    yield Case("declaration", "new-kernel-dots", {"keep.txt": "x"}, ["new", "kernel", "../x"], "error")
    yield Case("declaration", "new-kernel-keyword", {"keep.txt": "x"}, ["new", "kernel", "class"], "error")
    yield Case("declaration", "new-kernel-numpy", {"keep.txt": "x"}, ["new", "kernel", "numpy"], "error")


def parse() -> Iterator[Case]:
    texts = {
        "nested-parens": "x = " + "(" * 300 + "1" + ")" * 300 + "\n",
        "nested-unary": "x = " + "-" * 100000 + "1\n",
        "long-sum": "x = 1" + "+1" * 200000 + "\n",
        "nested-lists": "x = " + "[" * 5000 + "]" * 5000 + "\n",
        "nested-blocks": "".join(" " * i + "if True:\n" for i in range(120)) + " " * 120 + "pass\n",
        "null-byte": "x = 1\x00\n",
        "bad-utf8": None,
        "bom": "\ufeffx = 1\n",
        "tabs-spaces": "if True:\n\tx = 1\n        y = 2\n",
        "syntax": "def (:\n",
        "unterminated": "x = '''\n",
        "huge-line": "x = " + "1" * 500000 + "\n",
        "latin1-coding": "# -*- coding: latin-1 -*-\nx = 'é'\n",
        "bad-coding": "# -*- coding: nonsense -*-\nx = 1\n",
        "deep-fstring": "x = f'{" * 100 + "1" + "}'" * 100 + "\n",
    }
    for name, text in texts.items():
        files = {"k.py": HEAD + (text or "")}
        if name == "bad-utf8":
            files = {"k.py": HEAD + "x = '\udcff'\n"}
        yield Case("parse", name, files, run(), "error")
    yield Case("parse", "over-1MiB", {"k.py": HEAD + "#" + "x" * (1 << 20) + "\n"}, run(), "error")
    yield Case("parse", "a-folder", {"k.py/inner": "x"}, run(), "error")


def data_loss() -> Iterator[Case]:
    helper_places = {
        "beside-at-import": ({"helper.py": "C = 1\n"}, "from helper import C\n", "", "helper.py"),
        "beside-in-setup": ({"helper.py": "C = 1\n"}, "", "from helper import C\n", "helper.py"),
        "package-at-import": ({"pkg/__init__.py": "C = 1\n"}, "from pkg import C\n", "", "pkg/__init__.py"),
        "package-in-setup": ({"pkg/__init__.py": "", "pkg/sub.py": "C = 1\n"}, "", "from pkg.sub import C\n", "pkg/sub.py"),
        "package-in-kernel": ({"pkg/__init__.py": "", "pkg/deep.py": "C = 1\n"}, "", "", "pkg/deep.py"),
        "the-file-itself": ({}, "", "", "k.py"),
    }
    for name, (helpers, top, setup, target) in helper_places.items():
        work = "from pkg.deep import C\ntl.cycles(n)\n" if name == "package-in-kernel" else "tl.cycles(n)\n"
        files = {"k.py": kfile(top=top, setup=setup, work=work), **helpers}
        for flag in ("--trace", "--perfetto"):
            for cmd in ("run", "explain"):
                yield Case(
                    "data-loss", f"{name}{flag}/{cmd}", files, run(*(["--explain"] if cmd == "explain" else []), flag, target), "error"
                )
            yield Case(
                "data-loss",
                f"{name}{flag}/compare",
                files,
                ["compare", f"k.py --n 1 {flag} {target}", "k.py --n 2"],
                "error",
            )
        yield Case(
            "data-loss", f"{name}/partial", files, run("--max-commands-per-pe", "0", "--trace", target.replace(".py", ".partial.py")), "ok"
        )
    for name, out in (("sweep-out-the-file", "k.py"), ("sweep-out-helper", "helper.py")):
        files = {"k.py": kfile(setup="from helper import C\n"), "helper.py": "C = 1\n"}
        yield Case("data-loss", name, files, ["sweep", "k.py", "--grid", "n=1,2", "--no-cache", "--out", out, *LIMIT], "error")
    yield Case(
        "data-loss", "trace-the-topology", {"k.py": kfile(), "t.yaml": "x: 1\n"}, run("--topology", "t.yaml", "--trace", "t.yaml"), "error"
    )
    yield Case(
        "data-loss",
        "trace-over-symlink-to-file",
        {"k.py": kfile(), "link.kbtrace": "@symlink k.py"},
        run("--trace", "link.kbtrace"),
        "error",
    )
    yield Case(
        "data-loss", "perfetto-over-hardlink", {"k.py": kfile(), "hard.json": "@hardlink k.py"}, run("--perfetto", "hard.json"), "error"
    )
    yield Case("data-loss", "new-over-the-file", {"k.py": kfile()}, ["new", "kernel", "k"], "error")


def odd_but_legal() -> Iterator[Case]:
    """Files that are careless or strange but correct: each must give the latency its construction fixes."""
    for i in range(25):
        n = 7 + 31 * i
        yield Case("odd-but-legal", f"cycles-loop-{n}", {"k.py": kfile(work=f"for _ in range({n}):\n    tl.cycles(1)\n")}, run(), float(n))
    yield Case(
        "odd-but-legal", "main-guard", {"k.py": kfile() + "\nif __name__ == '__main__':\n    raise SystemExit('not run')\n"}, run(), 1.0
    )
    yield Case("odd-but-legal", "prints-at-import", {"k.py": kfile(top="print('hello from the kernel file')\n")}, run(), 1.0)
    yield Case("odd-but-legal", "prints-in-kernel", {"k.py": kfile(work="print('x')\ntl.cycles(n)\n")}, run(), 1.0)
    yield Case("odd-but-legal", "writes-stderr", {"k.py": kfile(setup="sys.stderr.write('careful\\n')\n")}, run(), 1.0)
    yield Case(
        "odd-but-legal",
        "catches-exception",
        {"k.py": kfile(work="try:\n    1 / 0\nexcept Exception:\n    pass\ntl.cycles(n)\n")},
        run(),
        1.0,
    )
    yield Case("odd-but-legal", "sleeps-briefly", {"k.py": kfile(setup="time.sleep(0.2)\n")}, run(), 1.0)
    yield Case(
        "odd-but-legal",
        "threads-in-setup",
        {"k.py": kfile(setup="t = threading.Thread(target=lambda: None)\nt.start()\nt.join()\n")},
        run(),
        1.0,
    )
    yield Case(
        "odd-but-legal", "alarm-ignored-but-quick", {"k.py": kfile(top="signal.signal(signal.SIGALRM, signal.SIG_IGN)\n")}, run(), 1.0
    )
    yield Case("odd-but-legal", "sigint-ignored", {"k.py": kfile(top="signal.signal(signal.SIGINT, signal.SIG_IGN)\n")}, run(), 1.0)
    yield Case("odd-but-legal", "explain-cycles-only", {"k.py": kfile()}, run("--explain", "--n", "9"), 9.0)
    yield Case(
        "odd-but-legal",
        "helper-in-package",
        {
            "k.py": kfile(setup="from pkg.h import C\n", work="from pkg.h import C\ntl.cycles(C)\n"),
            "pkg/__init__.py": "",
            "pkg/h.py": "C = 42\n",
        },
        run(),
        42.0,
    )
    yield Case(
        "odd-but-legal",
        "helper-named-like-stdlib-unused",
        {"k.py": kfile(), "json.py": "raise RuntimeError('no')\n", "logging.py": "raise RuntimeError('no')\n"},
        run(),
        1.0,
    )
    yield Case("odd-but-legal", "recursion-limit-raised", {"k.py": kfile(top="sys.setrecursionlimit(100000)\n")}, run(), 1.0)
    yield Case("odd-but-legal", "gc-disabled", {"k.py": kfile(top="import gc\ngc.disable()\n")}, run(), 1.0)
    yield Case("odd-but-legal", "unicode-everywhere", {"k.py": kfile(top="ÄÖÜ = 'größe'\n", setup="π = 3\n")}, run(), 1.0)
    yield Case("odd-but-legal", "cwd-changed", {"k.py": kfile(setup="os.chdir('/')\n")}, run(), 1.0)
    yield Case("odd-but-legal", "env-changed", {"k.py": kfile(top="os.environ['PYTHONSAFEPATH'] = ''\n")}, run(), 1.0)
    yield Case("odd-but-legal", "stdout-closed-by-user", {"k.py": kfile(setup="sys.stdout = open(os.devnull, 'w')\n")}, run(), "ok")
    for n in (1, 5, 250):
        yield Case(
            "odd-but-legal",
            f"sweep-latency-{n}",
            {"k.py": kfile()},
            ["sweep", "k.py", "--grid", f"n={n}", "--no-cache", "--json", *LIMIT],
            float(n),
            stdout_json=True,
        )


def shadowing() -> Iterator[Case]:
    names = (
        "logging",
        "queue",
        "json",
        "threading",
        "pickle",
        "selectors",
        "signal",
        "tempfile",
        "socket",
        "select",
        "subprocess",
        "random",
    )
    cmds = commands()
    for name in names:
        files = {"k.py": kfile(), f"{name}.py": f"raise RuntimeError('the folder\\'s {name}.py was imported')\n"}
        for cmd in ("run", "sweep-j2", "compare"):
            yield Case("shadowing", f"{name}.py/{cmd}", files, cmds[cmd], 1.0 if cmd == "run" else "ok")


CLASSES = {
    "hang": hangs,
    "crash": crashes,
    "memory": memory,
    "base-exception": base_exceptions,
    "options": options,
    "declaration": declarations,
    "parse": parse,
    "data-loss": data_loss,
    "odd-but-legal": odd_but_legal,
    "shadowing": shadowing,
}


def corpus(only: str | None = None) -> list[Case]:
    return [case for cls, make in CLASSES.items() if only in (None, cls) for case in make()]


# --- running one case ---------------------------------------------------------------------------------


@dataclass
class Result:
    case: Case
    verdict: str
    status: int | None
    seconds: float
    peak_mib: float
    detail: str


def _materialize(folder: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if text.startswith("@symlink "):
            path.symlink_to(text.split(" ", 1)[1])
        elif text.startswith("@hardlink "):
            os.link(folder / text.split(" ", 1)[1], path)
        else:
            path.write_bytes(text.encode("utf-8", "surrogateescape"))


def _snapshot(folder: Path) -> dict[str, str]:
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            out[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _peak(pid: int, peak: list[int], done: threading.Event) -> None:
    while not done.is_set():
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak[0] = max(peak[0], int(line.split()[1]))
        except (OSError, ValueError):
            return
        done.wait(0.02)


def run_case(case: Case, root: Path, python: str) -> Result:
    folder = root / f"{case.cls}-{hashlib.sha256(case.name.encode()).hexdigest()[:10]}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    _materialize(folder, case.files)
    before = _snapshot(folder)
    env = dict(os.environ, XDG_CACHE_HOME=str(folder / ".cache"), TERM="dumb", COLUMNS="100")
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [python, "-P", "-m", case.module, *case.argv],
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        resource.prlimit(proc.pid, resource.RLIMIT_AS, (ADDRESS_SPACE_MIB * MIB, ADDRESS_SPACE_MIB * MIB))
    except (OSError, ValueError):
        pass
    peak, done = [0], threading.Event()
    sampler = threading.Thread(target=_peak, args=(proc.pid, peak, done), daemon=True)
    sampler.start()
    hung = False
    try:
        out, err = proc.communicate(timeout=HARD_BOUND_S)
    except subprocess.TimeoutExpired:
        hung = True
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            proc.kill()
        out, err = proc.communicate()
    done.set()
    seconds = time.monotonic() - t0
    try:
        os.killpg(proc.pid, 9)  # (anything of it left in its session)
    except OSError:
        pass
    text_err = err.decode("utf-8", "replace")
    text_out = out.decode("utf-8", "replace")
    verdict, detail = _classify(case, proc.returncode, text_out, text_err, hung, peak[0] / 1024, before, _snapshot(folder))
    shutil.rmtree(folder, ignore_errors=True)
    return Result(case, verdict, proc.returncode, seconds, peak[0] / 1024, detail)


def _classify(case: Case, status: int, out: str, err: str, hung: bool, peak_mib: float, before: dict[str, str], after: dict[str, str]):
    if hung:
        return HANG, f"still running after {HARD_BOUND_S} s"
    changed = [name for name, digest in before.items() if after.get(name) != digest]
    if changed:
        return LOST, f"changed or gone: {', '.join(changed)}"
    if "Traceback (most recent call last)" in err or "Fatal Python error" in err or "Traceback (most recent call last)" in out:
        return TRACEBACK, err[-400:]
    if peak_mib > MAX_RSS_MIB and not case.user_alloc:
        return BLOWUP, f"peak RSS {peak_mib:.0f} MiB"
    if case.expect == "error":
        if status == 0:
            return WRONG, f"exit 0 where an error was due; stderr {err[-200:]!r}"
        lines = [row for row in err.splitlines() if row.strip()]
        if lines and lines[0].startswith("error:"):
            return CLEAN, lines[0][:200]
        if status == -9 and any(row.startswith("error:") for row in lines):
            return CLEAN, lines[-1][:200]  # (the reaper's line, then SIGKILL)
        return UNCLEAR, f"status {status}; stderr {err[-300:]!r}"
    if status != 0:
        return REFUSED, f"status {status}: {err[-300:]!r}"
    if isinstance(case.expect, float):
        got = _latency(out, case.stdout_json)
        if got is None or abs(got - case.expect) > 1e-6 * max(1.0, case.expect):
            return WRONG, f"latency {got} ns, constructed {case.expect} ns"
    return CORRECT, ""


def _latency(out: str, is_json: bool) -> float | None:
    if is_json:
        try:
            doc = json.loads(out)
        except ValueError:
            return None
        rows = doc if isinstance(doc, list) else [doc]
        return float(rows[0]["latency_ns"]) if rows and "latency_ns" in rows[0] else None
    for line in out.splitlines():
        if line.startswith("latency"):
            try:
                return float(line.split()[1].replace(",", ""))
            except (IndexError, ValueError):
                return None
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", choices=sorted(CLASSES), help="one class")
    p.add_argument("--sample", type=int, default=0, help="a fixed sample of about N cases (every k-th), not all")
    p.add_argument("--list", action="store_true", help="list the cases, run nothing")
    p.add_argument("--json", metavar="FILE", help="write every verdict here")
    p.add_argument("--python", default=sys.executable, help="the interpreter whose kernbench runs the cases")
    args = p.parse_args(argv)
    cases = corpus(args.only)
    if args.sample:
        step = max(1, len(cases) // args.sample)
        cases = cases[::step][: args.sample]
    if args.list:
        for case in cases:
            print(f"{case.cls}\t{case.name}\t{' '.join(case.argv)!r}")
        print(f"{len(cases)} cases")
        return 0
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        for i, case in enumerate(cases, 1):
            r = run_case(case, Path(tmp), args.python)
            results.append(r)
            flag = "" if r.verdict in (CORRECT, CLEAN) else "  <-- "
            print(
                f"[{i}/{len(cases)}] {r.verdict:13} {case.cls}/{case.name} ({r.seconds:.1f} s, {r.peak_mib:.0f} MiB){flag}{r.detail[:160] if flag else ''}",
                flush=True,
            )
    print()
    print(summary(results))
    theirs = [r for r in results if r.verdict in FAILURES and r.case.owner]
    if theirs:
        print("\nof the failures, holes another helper of this session fixes:")
        for r in theirs:
            print(f"  {r.case.owner}: {r.case.cls}/{r.case.name}: {r.verdict}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                [
                    {
                        "owner": r.case.owner,
                        "class": r.case.cls,
                        "case": r.case.name,
                        "argv": r.case.argv,
                        "verdict": r.verdict,
                        "status": r.status,
                        "seconds": round(r.seconds, 2),
                        "peak_mib": round(r.peak_mib),
                        "detail": r.detail,
                    }
                    for r in results
                ],
                indent=1,
            )
        )
    return 1 if any(r.verdict in FAILURES for r in results) else 0


def summary(results: list[Result]) -> str:
    by_class: dict[str, Counter[str]] = {}
    for r in results:
        by_class.setdefault(r.case.cls, Counter())[r.verdict] += 1
    total = Counter(r.verdict for r in results)
    head = f"{'class':16}" + "".join(f"{v:>15}" for v in VERDICTS) + f"{'cases':>8}"
    rows = [head]
    for cls, counts in by_class.items():
        rows.append(f"{cls:16}" + "".join(f"{counts.get(v, 0):>15}" for v in VERDICTS) + f"{sum(counts.values()):>8}")
    rows.append(f"{'all':16}" + "".join(f"{total.get(v, 0):>15}" for v in VERDICTS) + f"{len(results):>8}")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
