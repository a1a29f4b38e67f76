"""The registry of figure kinds.  Each figure is declared where it is drawn: its draw function
``(results, nc) -> matplotlib Figure`` carries :func:`declare_figure` with the figure's name, the
result kinds it is drawn from, the report section it belongs to, its caption (a text, or a
function of the results defined beside it) and one line of help.  :func:`figure_kinds` (and the
views :data:`FIGURES`, :data:`NAMES`) finds them by importing the modules of :data:`MODULES`, in
that order, then in the order of their declarations; that is the order of ``stam plot --help``
and of the report.  ``stam plot`` (its choices and help) and ``stam report`` (which figure goes
where, and which data files it links) read them from here.

The figure modules import matplotlib only inside the functions that draw
(:func:`stam.figures.style.new_figure`), so finding the figure kinds, and ``stam plot --help``,
import no matplotlib; this module imports none of them until a figure kind is asked for.

To add a figure: write ``draw(results, nc) -> matplotlib Figure`` in a module of :data:`MODULES`
(raise ``ValueError`` when the results hold nothing to draw) and put
``@declare_figure(name, sources=..., section=..., caption=..., help=...)`` on it; a new module is
added to :data:`MODULES` once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from stam.registry import declared, lookup

#: the modules that declare figure kinds, in the order of the report
MODULES = ("stam.figures.admissible", "stam.figures.rates", "stam.figures.convergence_map", "stam.figures.band",
           "stam.figures.tuning", "stam.figures.training")


@dataclass(frozen=True)
class FigureKind:
    """A figure: ``sources`` are the result kinds (:data:`stam.figures.results.SCHEMAS`) it reads,
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


_DECLARED: dict[str, FigureKind] = {}


def declare_figure(name: str, *, sources: tuple, section: str, caption, help: str):
    """Declare the decorated function ``(results, nc) -> matplotlib Figure`` as the
    :class:`FigureKind` ``name`` (returned unchanged); a name declared twice is an error."""

    def register(draw):
        module = draw.__module__
        known = _DECLARED.get(name)
        if known is not None and known.module != module:
            raise ValueError(f"figure kind {name!r} is declared twice: in {known.module} and in {module}")
        _DECLARED[name] = FigureKind(name, tuple(sources), section, draw, caption, help, module)
        return draw

    return register


def figure_kinds() -> tuple:
    """Every declared figure kind (their modules, :data:`MODULES`, imported now), in the order of
    their modules in :data:`MODULES`, then of their declarations."""
    return declared(MODULES, _DECLARED)


def figure_kind(name: str) -> FigureKind:
    """The figure kind called ``name``; ``KeyError`` naming the known ones."""
    return lookup(figure_kinds(), name, "figure kind")


def __getattr__(attr: str):
    """:data:`FIGURES` (every figure kind, :func:`figure_kinds`) and :data:`NAMES` (the names
    ``stam plot KIND`` takes), found when first read."""
    if attr == "FIGURES":
        return figure_kinds()
    if attr == "NAMES":
        return tuple(f.name for f in figure_kinds())
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


__all__ = ["FigureKind", "FIGURES", "MODULES", "NAMES", "declare_figure", "figure_kind", "figure_kinds"]
