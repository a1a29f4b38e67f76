"""The registry of figure kinds.  Each figure is declared where it is drawn: its draw function
``(results, nc) -> matplotlib Figure`` carries :func:`declare_figure` with the figure's name, the
result kinds it is drawn from, the report section it belongs to, its caption (a text, or a
function of the results defined beside it) and one line of help (:mod:`stam.figures.declare`).
:func:`figure_kinds` (and the views :data:`FIGURES`, :data:`NAMES`) finds them by importing the
modules of :data:`MODULES` (which import the declaration, never this module), in that order, then
in the order of their declarations; that is the order of ``stam plot --help`` and of the report.  ``stam plot`` (its choices and help) and ``stam report`` (which figure goes
where, and which data files it links) read them from here.

The figure modules import matplotlib only inside the functions that draw
(:func:`stam.figures.style.new_figure`), so finding the figure kinds, and ``stam plot --help``,
import no matplotlib; this module imports none of them until a figure kind is asked for.

To add a figure: write ``draw(results, nc) -> matplotlib Figure`` in a module of :data:`MODULES`
(raise ``ValueError`` when the results hold nothing to draw) and put
``@declare_figure(name, sources=..., section=..., caption=..., help=...)``
(from :mod:`stam.figures.declare`) on it; a new module is added to :data:`MODULES` once.
"""

from __future__ import annotations

from stam.figures.declare import DECLARED, FigureKind
from stam.registry import declared, lookup

#: the modules that declare figure kinds, in the order of the report (they import
#: :mod:`stam.figures.declare`, never this module: no cycle, string imports counted)
MODULES = ("stam.figures.admissible", "stam.figures.rates", "stam.figures.convergence_map", "stam.figures.band",
           "stam.figures.tuning", "stam.figures.training", "stam.figures.methods")


def figure_kinds() -> tuple:
    """Every declared figure kind (their modules, :data:`MODULES`, imported now), in the order of
    their modules in :data:`MODULES`, then of their declarations."""
    return declared(MODULES, DECLARED)


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


__all__ = [ "FIGURES", "MODULES", "NAMES", "figure_kind", "figure_kinds"]
