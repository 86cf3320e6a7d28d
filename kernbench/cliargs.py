"""Command-line parsing that ends a mistake with one line.

:class:`OptionParser` is argparse's parser whose errors are a
:class:`~kernbench.errors.KernbenchError` (printed as one ``error: …`` line,
exit status 2) naming the option and, where argparse knows them, the valid
choices — never the usage block argparse prints by default. Subcommand
parsers made from one inherit it.
"""

from __future__ import annotations

import argparse
import re
from typing import NoReturn

from kernbench.errors import KernbenchError


class OptionParser(argparse.ArgumentParser):
    """An option error is a :class:`KernbenchError` (one line, exit 2), not usage text and ``SystemExit``."""

    def error(self, message: str) -> NoReturn:
        raise KernbenchError(f"{self.prog}: {message} (see `{self.prog} --help`)")


def description(doc: str | None) -> str:
    """A module docstring's first line as ``--help`` shows it: without the ````kernbench run KERNEL````:
    that the usage line says already, and without reST's double backticks."""
    first = (doc or "").strip().split("\n", 1)[0]
    text = re.sub(r"^``[^`]+``:\s*", "", first).replace("``", "`")
    return text[:1].upper() + text[1:]
