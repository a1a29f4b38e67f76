"""What the registries of the toolkit share (problem families, algorithms, figure kinds): each is
a tuple of frozen declarations with a ``name``, looked up by :func:`lookup`."""

from __future__ import annotations

import importlib
from collections.abc import Sequence as _Sequence
from typing import Callable, Sequence, TypeVar

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


def declared(modules: Sequence[str], found: dict) -> tuple:
    """The declarations registered in ``found`` (name -> declaration, each with its ``module``) once
    ``modules`` are imported (importing them declares them), in the order of their modules in
    ``modules``, then of their declarations: how a registry declared at its definitions is read."""
    for module in modules:
        importlib.import_module(module)
    order = {m: i for i, m in enumerate(modules)}
    return tuple(sorted(found.values(), key=lambda d: order.get(d.module, len(order))))


class Names(_Sequence):
    """The names of a registry's declarations, read from ``find()`` (a function returning them) when first
    used, not when made: a command's ``choices`` (``stam plot KIND``) that lists what is declared where it is
    defined without importing those modules for ``stam --help``."""

    def __init__(self, find: Callable[[], Sequence]):
        self._find, self._names = find, None

    def _all(self) -> tuple:
        if self._names is None:
            self._names = tuple(d.name for d in self._find())
        return self._names

    def __getitem__(self, i):
        return self._all()[i]

    def __len__(self) -> int:
        return len(self._all())

    def __repr__(self) -> str:
        return f"Names({', '.join(self._all())})"


__all__ = ["lookup", "load", "declared", "Names"]
