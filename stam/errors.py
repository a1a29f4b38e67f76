"""User errors: one line on stderr, exit status 2, no traceback (see ``stam.cli``)."""

from __future__ import annotations

import argparse
import math


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


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
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
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"{text} must be an integer in [0, 2**63)")
    return value


def require(condition: bool, message: str) -> None:
    """Raise :class:`UsageError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise UsageError(message)
