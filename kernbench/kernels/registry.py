"""Kernels as the tools see them: a name, options, a set-up, and one way to declare them.

A kernel is declared where it is written, shipped or not, with
:func:`kernel` on its *set-up*: the function that deploys the tensors,
launches the kernel and returns the reference check::

    @kernel(options=[Option("tile", int, 512, "elements per load", low=1, high=65536)])
    def vector_add(rt, tile):
        ...                                   # rt.deploy(...), rt.launch(...)
        return lambda: float(max_abs_err)     # optional: compared after the run

The shipped kernels are the modules of this package (each declares its own;
nothing else lists them); a file of the user's is named on the command line
as ``path/to/file.py[:NAME]`` and read by :mod:`kernbench.kernels.files`.
Both end up as a :class:`KernelSpec`, and every command takes either.

Options are validated at this boundary, before a topology is compiled or a
tensor deployed: each :class:`Option` carries its range, and a kernel's
``check(params, pes)`` the rules between options and against the topology's
PE count; every problem names the option's flag (``--heads``), never a line
inside the kernel.
"""

from __future__ import annotations

import functools
import inspect
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kernbench.errors import KernbenchError
from kernbench.kernels.declared import DECLARED

if TYPE_CHECKING:
    from kernbench.runtime.api import RunResult, Runtime

Params = dict[str, Any]  # option name -> value, of the type its Option declares
Summary = dict[str, Any]  # kernel-specific figures of a run, as JSON writes them
OpLogEntry = dict[str, Any]  # one command of a PE's op log (RunResult.op_logs)

OPTION_TYPES = (int, float, str)
_NAME = re.compile(r"\A[a-z][a-z0-9_]*\Z")  # (\Z: "$" would take a name ending in a newline)
_KERNEL_NAME = re.compile(r"\A[A-Za-z][A-Za-z0-9_.-]*\Z")
#: options every kernel has already (``kernbench run``'s own); a kernel's may not take their names
RESERVED = frozenset(
    {
        "topology",
        "set",
        "json",
        "explain",
        "by",
        "speedups",
        "what_if",
        "timing",
        "trace",
        "perfetto",
        "max_commands_per_pe",
        "max_sim_ns",
        "max_wall_s",
        "no_data",
        "fidelity",
        "help",
        "list",
    }
)


@dataclass(frozen=True)
class Option:
    """One option of a kernel: ``--NAME`` on the command line, a keyword argument of its set-up.

    ``type`` is ``int``, ``float`` or ``str``; ``choices`` limits it to a
    list, ``low``/``high`` (inclusive) a number's range. ``only_with`` names
    the settings of other options under which this one does anything, as
    ``(option, value)`` pairs, any one of which will do: gemm-composite's
    ``tile_k`` is only the width of a tiled A's chunks, so it declares
    ``only_with=(("layout", "tiled"),)``, and ``--tile-k`` given with
    ``--layout naive`` is refused rather than ignored.
    """

    name: str
    type: type
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    low: float | None = None  # inclusive bounds of a number
    high: float | None = None
    only_with: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if not _NAME.match(self.name) or self.name in RESERVED:
            why = "is one of kernbench run's own options" if self.name in RESERVED else "must be lower_case_with_underscores"
            raise TypeError(f"Option {self.name!r}: the name {why}")
        if self.type not in OPTION_TYPES:
            raise TypeError(f"Option {self.name!r}: type must be int, float or str, not {self.type!r}")
        if not isinstance(self.help, str):
            raise TypeError(f"Option {self.name!r}: help is the text --help shows, not {type(self.help).__name__}")
        if self.choices is not None:
            object.__setattr__(self, "choices", tuple(self.choices))
        only_with = tuple(tuple(pair) for pair in self.only_with)
        if any(len(pair) != 2 or not isinstance(pair[0], str) for pair in only_with):
            raise TypeError(f"Option {self.name!r}: only_with is a sequence of (option name, value) pairs, not {self.only_with!r}")
        object.__setattr__(self, "only_with", only_with)
        if (problem := self.problem(self.default)) is not None:
            raise TypeError(f"Option {self.name!r}: its default fails its own range: {problem}")

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not acceptable for this option, or None."""
        if self.type is float and isinstance(value, (int, float)) and not math.isfinite(value):
            return f"{self.flag} {value!r}: must be a finite number"
        if self.choices is not None and value not in self.choices:
            return f"{self.flag} {value!r}: choose one of {', '.join(map(str, self.choices))}"
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            return f"{self.flag} {value!r}: must be in {self.range_text()}"
        return None

    def idle_problem(self, params: Params, flags: dict[str, str]) -> str | None:
        """Why this option, given on the command line, does nothing with the other options of ``params``
        (``flags``: each option's flag by name), or None when it is used."""
        if not self.only_with or any(params.get(name) == value for name, value in self.only_with):
            return None
        names = list(dict.fromkeys(name for name, _value in self.only_with))
        now = " ".join(f"{flags[name]} {params.get(name)}" for name in names)
        used = " or ".join(f"{flags[name]} {value}" for name, value in self.only_with)
        return f"{self.flag} does nothing with {now} (it is used only with {used}): leave it out"

    def range_text(self) -> str:
        """The accepted values as ``--help`` shows them: ``1..8192``, ``0..4,294,967,295``, ``≥ 0``, ``a, b, c`` or ``any``."""
        if self.choices is not None:
            return ", ".join(map(str, self.choices))
        if self.low is not None and self.high is not None:
            return f"{self.value_text(self.low)}..{self.value_text(self.high)}"
        if self.low is not None:
            return f"≥ {self.value_text(self.low)}"
        if self.high is not None:
            return f"≤ {self.value_text(self.high)}"
        return "any text" if self.type is str else "any number"

    def value_text(self, value: Any) -> str:
        """A value of this option as help and errors show it: an int option's numbers as integers, grouped
        by thousands from five digits on (``8192``, ``65,536``); a float's as ``%g``; text as written."""
        if self.type is int and isinstance(value, (int, float)) and float(value).is_integer():
            n = int(value)
            return f"{n:,}" if abs(n) >= 10_000 else str(n)
        if self.type is float and isinstance(value, (int, float)):
            return f"{value:g}"
        return str(value)


@dataclass
class Prepared:
    """What a set-up hands back: the reference check, the kernel's own figures, the variant it runs."""

    check: Callable[[], float | None] = lambda: None  # max |error| against the reference (None: no reference)
    summary: Callable[[RunResult], Summary] = field(default=lambda result: {})
    variant: str = ""

    def checked_error(self) -> float:
        """The max |error| of a kernel that has a reference check (a study's, a shipped kernel's)."""
        err = self.check()
        if err is None:
            raise ValueError("this kernel has no reference check")
        return err


#: what a set-up may return: nothing, the check alone, or a whole Prepared
SetupResult = Prepared | Callable[[], Any] | None


@dataclass(frozen=True)
class KernelSpec:
    name: str
    description: str
    params: tuple[Option, ...]
    prepare: Callable[[Runtime, Params], Prepared]
    default_topology: str = "cube1"
    check: Callable[[Params, int], list[str] | str | None] = field(default=lambda params, pes: [])
    source: str = ""  # the file that declares it, when it is not shipped (an absolute path)
    digest: str = ""  # a digest of that file (and what it imports beside it): results depend on it
    inputs: tuple[str, ...] = ()  # that file and what it imports beside it: no output may overwrite them
    setup: Callable[..., SetupResult] | None = field(default=None, compare=False)  # the declared function

    @property
    def ref(self) -> str:
        """How to name this kernel again, in another process too: its name, or ``FILE:NAME``."""
        return f"{self.source}:{self.name}" if self.source else self.name

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}

    def validate(self, params: dict[str, Any], pes: int, given: Iterable[str] = ()) -> None:
        """Every option's range, then that none of the options ``given`` (by name) does nothing with the
        others, then the rules between options on a topology of ``pes`` PEs; all problems in one error."""
        problems = [msg for p in self.params if (msg := p.problem(params.get(p.name, p.default)))]
        if not problems:
            full = dict(self.defaults(), **params)
            flags = {p.name: p.flag for p in self.params}
            named = set(given)
            problems = [msg for p in self.params if p.name in named and (msg := p.idle_problem(full, flags))]
        if not problems:
            problems = self._rules(dict(self.defaults(), **params), pes)
        if problems:
            raise KernbenchError(f"{self.name}: " + "; ".join(problems))

    def _rules(self, params: Params, pes: int) -> list[str]:
        """What the kernel's ``check`` says of ``params``: its problems as a list (a lone text is one,
        None or an empty list none). A kernel file's check that raises, or returns something else, is an
        error at its line in the file."""
        from pathlib import Path

        from kernbench.kernels.files import user_line
        from kernbench.raised import described, theirs

        where = f"{self.name}: its option rules {getattr(self.check, '__qualname__', 'check')}"
        try:
            found = self.check(params, pes)
        except BaseException as exc:
            if not self.source or not theirs(exc):
                raise
            raise KernbenchError(f"{where} raised {described(exc)}{user_line(exc, Path(self.source))}") from None
        if found is None or isinstance(found, str):
            return [found] if found else []
        if isinstance(found, (list, tuple)) and all(isinstance(p, str) for p in found):
            return list(found)
        raise KernbenchError(f"{where} returned {type(found).__name__}: return a list of problems (text), empty when there are none")


PACKAGE = __name__.rsplit(".", 1)[0]
#: the packages whose modules declare the shipped kernels: these bench kernels, and the transformer layers
SHIPPED_PACKAGES = (PACKAGE, "kernbench.layers")


def kernel(
    *,
    options: Iterable[Option] = (),
    topology: str = "cube1",
    name: str | None = None,
    description: str | None = None,
    check: Callable[[Params, int], list[str] | str | None] | None = None,
) -> Callable[[Callable[..., SetupResult]], Callable[..., SetupResult]]:
    """Declare a kernel by its set-up function ``setup(rt, **options)``.

    The set-up deploys the tensors on ``rt`` (a :class:`~kernbench.runtime.api.Runtime`),
    launches the kernel and returns its reference check: a function giving
    the max |error| of the output (called after the run), or ``None``, or a
    :class:`Prepared` for figures of its own. ``options`` become ``--flags``
    of every command and keyword arguments of the set-up; ``topology`` is
    the one used unless ``--topology`` says otherwise; ``name`` defaults to
    the function's (``vector_add`` → ``vector-add``), ``description`` to the
    first line of its docstring; ``check(params, pes)`` returns the problems
    of a combination of options on a topology of ``pes`` PEs, a list of texts
    (one text, or None, will do; checked before anything is deployed). The
    function is returned as it is.
    """
    opts = tuple(options)
    for arg, value, kind in (
        ("topology", topology, str),
        ("name", name, (str, type(None))),
        ("description", description, (str, type(None))),
    ):
        if not isinstance(value, kind) or (arg == "topology" and not value):
            raise TypeError(f"@kernel({arg}={value!r}): {arg} is {'a topology name or path' if arg == 'topology' else 'text'}")
    if check is not None and not callable(check):
        raise TypeError(f"@kernel(check={check!r}): check is a function check(params, pes) -> list of problems")

    def declare(setup: Callable[..., SetupResult]) -> Callable[..., SetupResult]:
        key = name or getattr(setup, "__name__", "").replace("_", "-")
        where = f"@kernel on {getattr(setup, '__qualname__', setup)!r}"
        if not _KERNEL_NAME.match(key):
            raise TypeError(f"{where}: {key!r} is not a kernel name (letters, digits, '-', '_', '.'; a letter first)")
        _check_options(where, setup, opts)
        doc = (inspect.getdoc(setup) or "").strip()
        spec = KernelSpec(
            name=key,
            description=description if description is not None else (doc.splitlines()[0] if doc else ""),
            params=opts,
            prepare=functools.partial(_prepare, setup),
            default_topology=topology,
            check=check or (lambda params, pes: []),
            setup=setup,
        )
        # A module run again (a notebook cell, runpy) declares its kernels again: the last declaration wins,
        # as for the functions themselves.
        DECLARED.setdefault(setup.__module__, {})[key] = spec
        return setup

    return declare


def _check_options(where: str, setup: Callable[..., Any], options: tuple[Option, ...]) -> None:
    """Every option is a keyword the set-up takes, after the runtime; names are unique."""
    if not callable(setup):
        raise TypeError(f"{where}: declare a function setup(rt, **options)")
    names = [o.name for o in options]
    if dup := sorted({n for n in names if names.count(n) > 1}):
        raise TypeError(f"{where}: option {', '.join(dup)} given twice")
    for o in options:
        if not isinstance(o, Option):
            raise TypeError(f"{where}: options must be Option(...), got {o!r}")
    by_name = {o.name: o for o in options}
    for o in options:
        for other, value in o.only_with:
            if other not in by_name or other == o.name:
                raise TypeError(f"{where}: option {o.name!r} is only_with {other!r}, which is not another option of this kernel")
            if (problem := by_name[other].problem(value)) is not None:
                raise TypeError(f"{where}: option {o.name!r} is only_with a value {other!r} cannot take: {problem}")
    try:
        inspect.signature(setup).bind(None, **{o.name: o.default for o in options})
    except TypeError as exc:
        raise TypeError(f"{where}: setup{inspect.signature(setup)} must take the runtime, then one keyword per option: {exc}") from None


def _prepare(setup: Callable[..., SetupResult], rt: Runtime, params: Params) -> Prepared:
    """Call a declared set-up and read what it returned."""
    out = setup(rt, **params)
    if out is None:
        return Prepared()
    if isinstance(out, Prepared):
        return out
    if callable(out):
        return Prepared(functools.partial(_max_error, out))
    raise TypeError(f"{setup.__qualname__} returned {type(out).__name__}: return the reference check (a function), a Prepared or None")


def _max_error(check: Callable[[], Any]) -> float | None:
    value = check()
    return None if value is None else float(value)


_loaded = False


def _load_all() -> None:
    """Import every module of this package: each declares its kernels."""
    global _loaded
    import importlib
    import pkgutil

    for name in SHIPPED_PACKAGES:
        package = importlib.import_module(name)
        for module in sorted(m.name for m in pkgutil.iter_modules(package.__path__)):
            importlib.import_module(f"{name}.{module}")
    _loaded = True


def shipped() -> dict[str, KernelSpec]:
    """The kernels declared by this package's modules (those imported so far)."""
    out: dict[str, KernelSpec] = {}
    for module, specs in DECLARED.items():
        if module.startswith(tuple(f"{name}." for name in SHIPPED_PACKAGES)):
            for name, spec in specs.items():
                if name in out and out[name].setup is not spec.setup:
                    raise TypeError(f"two shipped kernels are named {name!r} (one in {module})")
                out[name] = spec
    return out


def kernels() -> dict[str, KernelSpec]:
    """Every shipped kernel, by name."""
    # Not "if not shipped()": importing one kernel module directly declares its kernels and would hide the others.
    if not _loaded:
        _load_all()
    return dict(sorted(shipped().items()))


def _load_namesake(key: str) -> None:
    """Import the one shipped module named like the kernel (``gqa-decode``: ``kernbench.kernels.gqa_decode``), if any."""
    import importlib.util

    module = f"{PACKAGE}.{key.replace('-', '_')}"
    if re.fullmatch(r"[a-z0-9_]+", key.replace("-", "_")) and importlib.util.find_spec(module) is not None:
        importlib.import_module(module)


def get(name: str) -> KernelSpec:
    """A shipped kernel by name, or a kernel file's: ``path/to/file.py`` or ``path/to/file.py:NAME``."""
    from kernbench.kernels import files

    if files.is_file_ref(name):
        return files.get(name)
    key = name.replace("_", "-")
    if key not in shipped():
        _load_namesake(key)
    if key in (table := shipped()):
        return table[key]
    table = kernels()
    if key not in table:
        raise KernbenchError(f"unknown kernel {name!r}{_hint(name, list(table))}")
    return table[key]


def _hint(name: str, known: list[str]) -> str:
    from pathlib import Path

    if name.endswith(":") and Path(name[:-1]).suffix == ".py":
        return f"; after the colon name one of the kernels the file declares ({name}NAME), or leave the colon out"
    if Path(name).is_dir():
        files = sorted(p.name for p in Path(name).glob("*.py"))[:5]
        inside = f" ({', '.join(files)}{', …' if len(files) == 5 else ''})" if files else " (it holds no .py file)"
        return f"; {name} is a folder: name a kernel file in it{inside}"
    if name.endswith(".kbtrace"):
        return (
            f"; {name} is a saved trace, not a kernel: `kernbench-tui open {name}` shows it (r there re-times it, running its kernel "
            f"again once), and `kernbench compare {name} B` compares it with another run"
        )
    if Path(name).exists() or Path(name + ".py").exists():
        path = name if name.endswith(".py") else name + ".py"
        return f"; to run a kernel file, name it with its .py: {path}"
    key = name.replace("_", "-")
    guesses = suggest(key, known)
    if guesses and len(key) >= 3:  # a kernel's name part is as good a guess as another's prefix ("decode": decoder-layer, gqa-decode)
        guesses = sorted(set(guesses) | {k for k in known if key.lower() in k.lower()})
    hint = f" (did you mean {' or '.join(repr(g) for g in guesses)}?)" if guesses else ""
    return f"{hint}; `kernbench run --list` shows the shipped kernels, and a file of yours is named as path/to/file.py[:NAME]"


def suggest(name: str, known: list[str]) -> list[str]:
    """Names ``name`` may have meant: same but for case, a prefix of one, a part of one, or a close typo."""
    import difflib

    key = name.lower()
    matchers: tuple[Callable[[str], bool], ...] = (
        lambda k: k.lower() == key,
        lambda k: k.lower().startswith(key) or key.startswith(k.lower()),
        lambda k: key in k.lower(),
    )
    for match in matchers:
        hits = sorted(k for k in known if match(k))
        if key and hits:
            return hits
    return difflib.get_close_matches(key, known, n=2, cutoff=0.6)
