"""What the registries of the toolkit share (problem families, algorithms, figure kinds): each is
a tuple of frozen declarations with a ``name``, looked up by :func:`lookup`."""

from __future__ import annotations

import importlib
from typing import Sequence, TypeVar

T = TypeVar("T")


def lookup(items: Sequence[T], name: str, what: str) -> T:
    """The item of ``items`` called ``name``; ``KeyError`` naming the known ones."""
    for item in items:
        if item.name == name:
            return item
    raise KeyError(f"unknown {what} {name!r}; choose one of: {', '.join(i.name for i in items)}")


def load(ref: str):
    """The object a ``"module:attribute"`` reference names (imported now, not when declared)."""
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)


__all__ = ["lookup", "load"]
