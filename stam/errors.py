"""User errors: one line on stderr, exit status 2, no traceback (see ``stam.cli``); the
toolkit's fallbacks: one line ``stam: warning: ...`` on stderr (:func:`warn`)."""

from __future__ import annotations

import argparse
import contextlib
import math
import warnings


class StamWarning(RuntimeWarning):
    """A documented fallback of the toolkit (a cache that cannot be written, a compiled package
    that cannot be built or loaded): the work goes on another way.  The command line prints it as
    one line ``stam: warning: <message>`` (:func:`one_line_warnings`)."""


def first_line(text, limit: int = 300) -> str:
    """The first non-blank line of ``text`` (an exception's message may hold a compiler's command
    and its output), stripped, at most ``limit`` characters."""
    line = next((ln.strip() for ln in str(text).splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def warn(message: str, stacklevel: int = 2) -> None:
    """Warn of a fallback (:class:`StamWarning`) in one line (:func:`first_line` of ``message``)."""
    warnings.warn(first_line(message, 1000), StamWarning, stacklevel=stacklevel + 1)


def format_warning(message, category, filename, lineno, line=None) -> str:
    """A warning as the command line shows it: one line ``stam: warning: <message>`` (another
    library's warning with its category: ``stam: warning: UserWarning: ...``), never the file,
    line and source line of Python's default format."""
    kind = "" if issubclass(category, StamWarning) else f"{category.__name__}: "
    return f"stam: warning: {kind}{first_line(message, 1000)}\n"


@contextlib.contextmanager
def one_line_warnings():
    """Within the block, warnings that reach stderr are printed by :func:`format_warning` (what is
    recorded, by ``warnings.catch_warnings(record=True)`` or a test, is recorded as before)."""
    saved = warnings.formatwarning
    warnings.formatwarning = format_warning
    try:
        yield
    finally:
        warnings.formatwarning = saved


class UsageError(Exception):
    """A mistake in what the user asked for.  ``stam.cli`` prints ``stam: error: <message>``
    on one line and exits with status 2.  The message names the bad value and what is allowed."""


def _number(text: str, name: str = "value") -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not finite; a finite number is required")
    return value


def integer(text: str) -> int:
    """``text`` as an integer, or argparse's one-line error saying it is not one (the start of every
    integer type of the command lines)."""
    try:
        return int(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def finite_float(text: str) -> float:
    """argparse type: any finite real number."""
    return _number(text)


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} must be > 0")
    return value


def nonneg_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} must be >= 0")
    return value


#: the widest network a flag takes (``--width``, a channel-width multiplier; 1 = the paper's) and the
#: most epochs (``--epochs``; the paper trains 1000): the bounds of the flags and of the result files'
#: fields (``stam.results``: ``WIDTH``, ``EPOCHS``), declared once here, in the core
MAX_WIDTH = 64.0
MAX_EPOCHS = 10**6


def epochs_int(text: str) -> int:
    """argparse type: a number of epochs, an integer in [1, :data:`MAX_EPOCHS`]."""
    value = positive_int(text)
    if value > MAX_EPOCHS:
        raise argparse.ArgumentTypeError(f"{text}: at most {MAX_EPOCHS:,} epochs (the paper trains 1000)")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be an integer >= 1")
    return value


def batch_int(text: str) -> int:
    """argparse type: a batch size, an integer >= 2 (the models' BatchNorm needs two images per
    batch to train)."""
    value = positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"{text} must be an integer >= 2 (BatchNorm needs at least 2 images per batch)")
    return value


#: the most CPU threads a flag may ask torch for
MAX_THREADS = 1024


def threads_int(text: str) -> int:
    """argparse type: CPU threads, an integer from 1 to :data:`MAX_THREADS`."""
    value = positive_int(text)
    if value > MAX_THREADS:
        raise argparse.ArgumentTypeError(f"{text} threads: at most {MAX_THREADS}")
    return value


def seed_int(text: str) -> int:
    """argparse type: a random seed, an integer in [0, 2**63)."""
    value = integer(text)
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"{text} must be an integer in [0, 2**63)")
    return value


def require(condition: bool, message: str) -> None:
    """Raise :class:`UsageError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise UsageError(message)
