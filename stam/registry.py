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


def handler(ref: str):
    """A subcommand handler that imports ``"module:function"`` only when the command runs (so that
    registering the subcommands, ``stam --help`` included, imports nothing heavy)."""

    def run(args):
        return load(ref)(args)

    run.__qualname__ = f"handler({ref!r})"
    return run


__all__ = ["lookup", "load", "handler"]
