"""How a figure kind is declared: :class:`FigureKind` and the decorator :func:`declare_figure` that
a module of figures puts on its draw function.  The modules of figures import this module; the
module that finds them, :mod:`stam.figures.kinds`, imports those modules (so neither names the
other back: no import cycle, as ``tests/test_layering.py`` reads them, string imports included)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class FigureKind:
    """A figure: ``sources`` are the result kinds (:func:`stam.figures.results.kinds`) it reads,
    ``section`` the report section (:data:`stam.figures.report.SECTIONS`) it is shown in,
    ``caption`` its caption (``{nc}`` is replaced by the constants it assumes) or a function
    computing it from the results, ``draw`` the function that draws it, ``help`` one line for
    ``stam plot --help``, ``module`` the module that declares it."""

    name: str
    sources: tuple
    section: str
    draw: Callable
    caption: str | Callable
    help: str
    module: str = field(default="", compare=False)

    def figure(self, results, nc=None):
        """The matplotlib figure for ``results`` (a :class:`stam.figures.results.ResultSet`)."""
        return self.draw(results, nc)

    def caption_for(self, results, nc) -> str:
        if callable(self.caption):
            return self.caption(results)
        return self.caption.replace("{nc}", nc.describe() if nc is not None else "")

    def source_results(self, results) -> list:
        return [r for kind in self.sources for r in results[kind]]


#: every figure kind declared so far (its module imported), by name
DECLARED: dict[str, FigureKind] = {}


def declare_figure(name: str, *, sources: tuple, section: str, caption, help: str):
    """Declare the decorated function ``(results, nc) -> matplotlib Figure`` as the
    :class:`FigureKind` ``name`` (returned unchanged); a name declared twice is an error."""

    def register(draw):
        module = draw.__module__
        known = DECLARED.get(name)
        if known is not None and known.module != module:
            raise ValueError(f"figure kind {name!r} is declared twice: in {known.module} and in {module}")
        DECLARED[name] = FigureKind(name, tuple(sources), section, draw, caption, help, module)
        return draw

    return register


__all__ = ["FigureKind", "DECLARED", "declare_figure"]
