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


def declared(modules: Sequence[str], found: dict) -> tuple:
    """The declarations registered in ``found`` (name -> declaration, each with its ``module``) once
    ``modules`` are imported (importing them declares them), in the order of their modules in
    ``modules``, then of their declarations: how a registry declared at its definitions is read."""
    for module in modules:
        importlib.import_module(module)
    order = {m: i for i, m in enumerate(modules)}
    return tuple(sorted(found.values(), key=lambda d: order.get(d.module, len(order))))


__all__ = ["lookup", "load", "handler", "declared"]
