"""The command line's one vocabulary (docs/contributing.md, "flags: one meaning, one spelling"):
the one parser of lists (:class:`ListArg`, ``A,B,C``) and the one parser of ranges
(:class:`RangeArg`, ``LO:HI:N``), and the flags every command spells the same way
(:func:`add_out`: ``-o/--out``; :func:`add_n_seeds`: ``--n-seeds``, a count).

Both parsers are argparse types: a bad value is one line naming the flag,
``stam CMD: error: argument --FLAG: 'TEXT': what is wrong; give what is allowed, e.g. EXAMPLE``,
exit status 2, before any work.  ``tests/test_cli_vocabulary.py`` walks every command's parser and
holds each flag to this vocabulary.
"""

from __future__ import annotations

import argparse
import math
from typing import Callable, Sequence

from stam.errors import positive_int
from stam.params import add_field, arg


class ListArg:
    """argparse type: comma-separated values (``0.1,1,10``), each through ``item`` (an argparse
    type, e.g. :func:`stam.errors.positive_float`); spaces around an item are dropped; an empty list
    or an empty item is an error.  ``what``: the allowed values in words (``numbers > 0``);
    ``example``: a valid value; ``unique``: repeated values kept once (first order);
    ``sort``: sorted and unique; ``none``: a word that means the empty list (``--keep-float none``);
    ``into``: the container returned (``list``, or ``tuple``)."""

    def __init__(self, item: Callable[[str], object], what: str, example: str, *, unique: bool = False,
                 sort: bool = False, none: str | None = None, into: type = list):
        self.item, self.what, self.example = item, what, example
        self.unique, self.sort, self.none, self.into = unique, sort, none, into

    def _give(self) -> str:
        alt = f" (or {self.none})" if self.none else ""
        return f"give comma-separated {self.what}{alt}, e.g. {self.example}"

    def __call__(self, text: str) -> list:
        text = str(text)
        if self.none is not None and text.strip() == self.none:
            return self.into()
        parts = [p.strip() for p in text.split(",")]
        if not any(parts):
            raise argparse.ArgumentTypeError(f"{text!r} is empty; {self._give()}")
        values = []
        for p in parts:
            if not p:
                raise argparse.ArgumentTypeError(f"{text!r} has an empty item; {self._give()}")
            try:
                values.append(self.item(p))
            except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
                raise argparse.ArgumentTypeError(f"{text!r}: {exc or repr(p)}; {self._give()}") from None
        if self.sort:
            return self.into(sorted(set(values)))
        return self.into(dict.fromkeys(values) if self.unique else values)


def choice(names: Sequence[str]) -> Callable[[str], str]:
    """An item type for :class:`ListArg`: one of ``names``."""
    def item(text: str) -> str:
        if text not in names:
            raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(names)}")
        return text
    return item


def text_item(text: str) -> str:
    """An item type for :class:`ListArg`: any text (checked by the command, e.g. a problem's name)."""
    return text


def log_grid(lo: float, hi: float, n: int) -> list[float]:
    """``n`` values from ``lo`` to ``hi``, geometrically spaced, increasing (``n = 1``: ``[lo]``); a ValueError
    where the range holds fewer than ``n`` such floating-point values."""
    if not (0 < lo <= hi and math.isfinite(hi)) or n < 1:
        raise ValueError(f"need 0 < LO <= HI and N >= 1, got {lo}, {hi}, {n}")
    if n == 1 or lo == hi:
        return [float(lo)]
    r = math.log(hi / lo) / (n - 1)
    grid = [float(lo * math.exp(r * i)) if 0 < i < n - 1 else float(lo if i == 0 else hi) for i in range(n)]
    if any(a >= b for a, b in zip(grid, grid[1:])):
        raise ValueError(f"{lo!r}..{hi!r} holds fewer than {n} distinct floating-point values spaced geometrically; "
                         "give a wider range or fewer points")
    return grid


class RangeArg:
    """argparse type: ``LO:HI:N``, N values from LO to HI geometrically spaced (a log grid, :func:`log_grid`), with
    finite LO, HI > 0, LO <= HI and ``min_points <= N <= max_points``; returns ``(lo, hi, n)``."""

    def __init__(self, example: str, *, max_points: int, min_points: int = 1, bounds: tuple[float, float] | None = None):
        self.example, self.min_points, self.max_points, self.bounds = example, min_points, max_points, bounds

    def __call__(self, text: str) -> tuple[float, float, int]:
        text = str(text)
        give = f"give LO:HI:N, N values from LO to HI geometrically spaced, e.g. {self.example}"
        parts = text.split(":")
        if len(parts) != 3:
            raise argparse.ArgumentTypeError(f"{text!r} is not LO:HI:N; {give}")
        try:
            lo, hi, n = float(parts[0]), float(parts[1]), int(parts[2])
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: LO and HI must be numbers and N an integer; {give}") from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo > 0 and hi > 0):
            raise argparse.ArgumentTypeError(f"{text!r}: LO and HI must be finite numbers > 0 (a log grid); {give}")
        if lo > hi:
            raise argparse.ArgumentTypeError(f"{text!r}: the range is inverted (LO = {lo:g} > HI = {hi:g}); {give}")
        if self.bounds is not None and not (self.bounds[0] <= lo and hi <= self.bounds[1]):
            raise argparse.ArgumentTypeError(f"{text!r}: outside [{self.bounds[0]:g}, {self.bounds[1]:g}]; give values of "
                                             "ordinary size")
        if not self.min_points <= n <= self.max_points:
            raise argparse.ArgumentTypeError(f"{text!r}: N = {n} points; N must be between {self.min_points} and "
                                             f"{self.max_points}")
        try:
            log_grid(lo, hi, n)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None
        return lo, hi, n


def out_name(text: str) -> str:
    """argparse type of ``-o/--out``: any path but the empty one (which would silently be the
    working folder: give ``.`` for that)."""
    if text == "":
        raise argparse.ArgumentTypeError("an empty name; give a folder or a file name ('.' for the working folder)")
    return text


def out_arg(default: str | None = None, metavar: str = "DIR", help: str = "output folder", **kw):
    """``-o/--out``: where a command writes (a folder or a file, as ``metavar`` says), a field of
    an experiment's parameters (:func:`stam.params.arg`); never empty (:func:`out_name`)."""
    return arg("-o", "--out", type=out_name, default=default, metavar=metavar, help=help, **kw)


def add_out(parser, default: str | None = None, metavar: str = "DIR", help: str = "output folder", **kw) -> None:
    """:func:`out_arg`, added to ``parser`` (the destination ``out``)."""
    add_field(parser, "out", out_arg(default, metavar, help, **kw))


def n_seeds_arg(default: int | None, help: str, old: str | None = "--seeds", job: bool = False):
    """``--n-seeds N``, a count of seeds (a list of seeds is ``--seeds``), a field ``n_seeds`` of an
    experiment's parameters; ``old``: the earlier spelling of the count, kept hidden for one release."""
    return arg("--n-seeds", type=positive_int, default=default, metavar="N", help=help, old=(old,) if old else (), job=job)


def add_n_seeds(parser, default: int | None, help: str, old: str | None = "--seeds") -> None:
    """:func:`n_seeds_arg`, added to ``parser`` (the destination ``n_seeds``)."""
    add_field(parser, "n_seeds", n_seeds_arg(default, help, old))
