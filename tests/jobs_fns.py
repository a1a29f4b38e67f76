"""Job functions for tests/test_jobs.py.  Module-level, so that local worker processes and Dask
workers import them by name (as they would ``stam``'s own job functions).  Each call appends the
spec's ``x`` to the file ``spec["log"]`` (appends of one short line are atomic), so a test counts
what was computed, in whichever process it ran."""

from __future__ import annotations

import os
from pathlib import Path


def square(spec: dict) -> dict:
    """``{"y": x**2, "pair": (x, x + 0.5), "pid": ...}``; raises ValueError while the file
    ``spec["fail_if"]`` exists and KeyboardInterrupt while ``spec["stop_if"]`` exists."""
    x = spec["x"]
    with open(spec["log"], "a", encoding="utf-8") as f:
        f.write(f"{x}\n")
    if spec.get("fail_if") and Path(spec["fail_if"]).exists():
        raise ValueError(f"x = {x} is refused\nsecond line of the message")
    if spec.get("stop_if") and Path(spec["stop_if"]).exists():
        raise KeyboardInterrupt
    return {"y": x * x, "pair": (x, x + 0.5), "pid": os.getpid()}


def bad_result(spec: dict):
    """A result that cannot be stored: not a dict, or not JSON-able."""
    return [spec["x"]] if spec["what"] == "list" else {"s": {spec["x"]}}


def computed(log: Path) -> list[int]:
    """The x of every call logged in ``log``, in order (empty when none)."""
    return [int(line) for line in log.read_text().split()] if log.exists() else []


def slow_square(spec: dict) -> dict:
    """:func:`square` after ``spec["sleep"]`` seconds (so that two processes overlap)."""
    import time

    time.sleep(spec.get("sleep", 0.0))
    return square(spec)
