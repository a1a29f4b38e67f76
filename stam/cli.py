"""The one command-line entry point, ``stam``, with subcommands.

Each area registers its own subcommands through a ``register(subparsers)`` function in a
light module (``stam.theory.cli``, ...).  Registering imports nothing heavy: every handler
imports what it needs when it runs, so ``stam stepsize`` never imports torch.

A user's mistake (:class:`stam.errors.UsageError`, or a bad flag) is printed as one line
``stam: error: ...`` and exits with status 2; Ctrl-C exits with 130; neither shows a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from stam import __version__
from stam.errors import UsageError

#: Modules that contribute subcommands, in the order ``stam --help`` lists them.
COMMAND_MODULES = (
    "stam.figures.cli",    # demo, report, plot
    "stam.theory.cli",     # paper-check, stepsize
    "stam.synthetic.cli",  # synthetic run|compare|sweep
    "stam.dnn.cli",        # train, table
    "stam.theory.pep_cli",  # pep
)


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad flag gives one line (``stam: error: ...``) and status 2."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="stam",
        description="Reference toolkit for STAM: theory, synthetic experiments, binary-weight networks, figures.",
    )
    parser.add_argument("--version", action="version", version=f"stam {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "func", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        result = handler(args)
    except UsageError as exc:
        print(f"stam: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stam: interrupted", file=sys.stderr)
        return 130
    return int(result or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
