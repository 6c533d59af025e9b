"""The ``gpukit`` command.

Each sub-command lives in its own module, listed in ``COMMANDS``, which defines
``register(subparsers)``; the parser it adds sets ``func(args) -> int``.
Modules import heavy libraries (numba, CuPy, torch) inside ``func`` only, so
``gpukit --help`` is instant on any machine.

Bad input never produces a traceback: a :class:`UserError` (or a parse error)
prints one line to stderr and exits with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
import tempfile

#: the core's sub-commands; each chapter with a ``cli`` module (``gpukit.<slug>.cli``, from
#: :data:`gpukit.results.CHAPTERS`) adds its own after these
COMMANDS = ["gpukit.doctor", "gpukit.record"]


def command_modules() -> list[str]:
    """Module path of each sub-command, in the order ``--help`` lists them."""
    from .results import CHAPTERS
    return COMMANDS + [f"{c.package}.cli" for c in CHAPTERS]


class UserError(Exception):
    """Bad input from the user: reported as one line, exit status 2."""

    def __init__(self, message: str, prog: str = "gpukit"):
        super().__init__(message)
        self.prog = prog


def check_output(path: str, suffixes: dict[str, str]) -> str:
    """An output file a command is about to write: its suffix is one of ``suffixes`` (suffix ->
    what such a file holds), its folder exists and can be written. Checked before any work, so
    bad input costs nothing; raises :class:`UserError` with one line otherwise."""
    if not path.lower().endswith(tuple(suffixes)):
        kinds = " or ".join(f"{s} ({what})" if len(suffixes) > 1 else s for s, what in suffixes.items())
        raise UserError(f"--out must name a {kinds} file, got {path!r}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UserError(f"cannot write {path!r}: folder {folder!r} does not exist")
    if os.path.isdir(path):
        raise UserError(f"cannot write {path!r}: it is a folder")
    try:  # the only sure test of writability is to write
        fd, probe = tempfile.mkstemp(suffix=".tmp", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UserError(f"cannot write {path!r}: {exc.strerror or exc}") from None
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise UserError(f"cannot write {path!r}: permission denied")
    return path


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        raise UserError(message, prog=self.prog)


def positive_int(text: str) -> int:
    """argparse type: a whole number > 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {value}")
    return value


def finite_float(text: str) -> float:
    """argparse type: a finite number (no nan, no inf)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gpukit", description="The GPU Survival Kit's command-line tools.")
    parser.add_argument("--version", action="version", version=f"gpukit {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in command_modules():
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name in (module, module.rpartition(".")[0]):  # a chapter with no command or no code
                continue
            raise
        mod.register(sub)
    return parser


def _version() -> str:
    from . import __version__
    return __version__


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = None
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return int(args.func(args) or 0)
    except UserError as exc:
        prog = exc.prog
        if prog == "gpukit" and getattr(args, "command", None):
            prog = f"gpukit {args.command}"
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("gpukit: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # never a traceback for the reader, unless asked for
        if os.environ.get("GPUKIT_DEBUG"):
            raise
        print(f"gpukit: error: {type(exc).__name__}: {exc} (set GPUKIT_DEBUG=1 for details)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    # Run through the imported module, not __main__, so that sub-commands raising
    # gpukit.cli.UserError are caught by this very except clause.
    from gpukit.cli import main as _main
    sys.exit(_main())
