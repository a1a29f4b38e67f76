"""The one command-line entry point, ``stam``, with subcommands.

Each area registers its own subcommands through a ``register(subparsers)`` function in a
light module (``stam.theory.cli``, ...).  Registering imports nothing heavy: every handler
imports what it needs when it runs, so ``stam stepsize`` never imports torch.

A user's mistake (:class:`stam.errors.UsageError`, or a bad flag) is printed as one line
``stam: error: ...`` and exits with status 2; Ctrl-C exits with 130; output piped into a reader that
stops early (``stam ... | head -1``) ends quietly with status 141 (128 + SIGPIPE, what a shell reports
for a command ended by a closed pipe); an operating-system failure while reading or writing (a full
disk, a file removed under it) is one line ``stam: error: ...`` with status 1; so is running out of
memory.  A warning (a documented fallback: :class:`stam.errors.StamWarning`) is one line
``stam: warning: ...``.  Anything else is a bug in stam: one line ``stam: internal error: ...`` with status 1 (the
environment variable ``STAM_TRACEBACK=1`` lets the traceback through).  None shows a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Sequence

from stam import __version__
from stam.errors import UsageError, one_line_warnings

#: Modules that contribute subcommands, in the order ``stam --help`` lists them.
#: (Each registers its own commands; ``stam --help`` lists them.)
COMMAND_MODULES = ("stam.figures.cli", "stam.theory.cli", "stam.synthetic.cli", "stam.dnn.cli", "stam.theory.pep_cli")

#: What the command line hands an area's ``register`` beside the subparsers: one area's declaration that another's
#: command takes, as a ``"module:function"`` reference (imported when that command is built).  The paper's STAM
#: presets ``{"paper-our1": (lam, gamma, beta), ...}`` are declared with the networks
#: (:func:`stam.dnn.presets.paper_presets`) and taken by ``stam synthetic run --preset``: wired here, above both
#: areas, so that synthetic imports nothing of dnn.
WIRING = {"stam.synthetic.cli": {"paper_presets": "stam.dnn.presets:paper_presets"}}


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad flag gives one line (``stam: error: ...``) and status 2.

    Built when needed: ``add_parser(name, help=..., build=FUNCTION)`` gives a subcommand whose arguments
    ``FUNCTION(parser)`` adds only when that subcommand is parsed or its help shown (its imports with it), and a
    ``description`` may be a function, called when the help is shown; so ``stam --help`` builds and imports none
    of the subcommands (no numpy), and ``stam plot --help`` alone finds the figure kinds."""

    def __init__(self, *args, build=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._build = build

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")

    def complete(self) -> "_Parser":
        """Add the arguments the ``build`` function gives (once) and compute a callable description."""
        if self._build is not None:
            build, self._build = self._build, None
            build(self)
        if callable(self.description):
            self.description = self.description()
        return self

    def parse_known_args(self, args=None, namespace=None):
        self.complete()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self.complete()
        return super().format_usage()

    def format_help(self) -> str:
        self.complete()
        return super().format_help()


def build_parser(lazy: bool = False) -> argparse.ArgumentParser:
    """``stam``'s parser.  ``lazy`` (what :func:`main` uses): each subcommand is built when it is parsed or its
    help is shown; otherwise every one is built now, for code that reads the parser tree."""
    parser = _Parser(
        prog="stam",
        description="Reference toolkit for STAM: theory, synthetic experiments, binary-weight networks, figures.",
    )
    parser.add_argument("--version", action="version", version=f"stam {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub, **WIRING.get(name, {}))
    if not lazy:
        _complete_all(parser)
    return parser


def _complete_all(parser: argparse.ArgumentParser) -> None:
    if isinstance(parser, _Parser):
        parser.complete()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _complete_all(child)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(lazy=True)
    args = parser.parse_args(argv)
    handler = getattr(args, "func", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        with one_line_warnings():
            result = handler(args)
    except UsageError as exc:
        print(f"stam: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stam: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return 141
    except OSError as exc:  # not the user's mistake, but no traceback either
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"stam: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except MemoryError:
        print("stam: error: out of memory; give smaller sizes", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug in stam: one line, the traceback on request
        if os.environ.get("STAM_TRACEBACK"):
            raise
        first = (str(exc).splitlines() or [""])[0]
        print(f"stam: internal error: {type(exc).__name__}: {first} (a bug in stam, please report it; "
              "STAM_TRACEBACK=1 shows the traceback)", file=sys.stderr)
        return 1
    try:  # a reader that went away after the last line is still a broken pipe
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        return 141
    return int(result or 0)


def console_main() -> int:
    """The ``stam`` command (``[project.scripts]`` and ``python -m stam``): :func:`main`, then every object still
    alive frozen (``gc.freeze``), so that the interpreter's last garbage collection on exit skips them: once torch
    is imported that collection walks its whole module graph, 0.3-0.4 s of every process on a 2-core Xeon.  Only the
    process's entry point does this; code calling :func:`main` in-process keeps its collector as it was."""
    code = main()
    import gc

    gc.freeze()
    return code


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null, so that the interpreter's final flush
    raises nothing (the recipe of the Python docs, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (captured)
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
