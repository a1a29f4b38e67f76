"""The registry of figure kinds: each figure declares here its name, the result kinds it is drawn
from, the report section it belongs to, its caption and the function that draws it.  ``stam plot``
(its choices and help), ``stam report`` (which figure goes where, and which data files it links)
read them from here.  This module imports no matplotlib: the drawing functions are named as
``"module:function"`` and imported when a figure is drawn.

To add a figure: write ``draw(results, nc) -> matplotlib Figure`` in a module of
:mod:`stam.figures` (raise ``ValueError`` when the results hold nothing to draw) and add one
:class:`FigureKind` to :data:`FIGURES`.
"""

from __future__ import annotations

from dataclasses import dataclass

from stam.registry import load, lookup


@dataclass(frozen=True)
class FigureKind:
    """A figure: ``sources`` are the result kinds (:data:`stam.figures.results.SCHEMAS`) it reads,
    ``section`` the report section (:data:`stam.figures.report.SECTIONS`) it is shown in,
    ``caption`` its caption (``{nc}`` is replaced by the constants it assumes) or
    ``"module:function"`` computing it from the results, ``draw`` the ``"module:function"`` that
    draws it, ``help`` one line for ``stam plot --help``."""

    name: str
    sources: tuple
    section: str
    draw: str
    caption: str
    help: str

    def _load(self, ref: str):
        return load(ref)

    def figure(self, results, nc=None):
        """The matplotlib figure for ``results`` (a :class:`stam.figures.results.ResultSet`)."""
        return self._load(self.draw)(results, nc)

    def caption_for(self, results, nc) -> str:
        if self.caption.startswith("stam."):
            return self._load(self.caption)(results)
        return self.caption.replace("{nc}", nc.describe() if nc is not None else "")

    def source_results(self, results) -> list:
        return [r for kind in self.sources for r in results[kind]]


FIGURES = (
    FigureKind(
        "admissible", ("lyapunov-region",), "admissible", "stam.figures.admissible:draw",
        "The (\u03b3, \u03bb) and (\u03b3, \u03b2) planes for H = \u03bb/2\u2016x\u2212y\u2016\u00b2: shaded where "
        "the theorem's conditions hold; markers and arrows: the paper's settings and schedules "
        "(Table para, Section sub:3.3). Constants not known for a network: {nc}. With a lyapunov-region file "
        "(stam pep --region): hatched blue where a Lyapunov function certifies STAM for the file's class (lines: the "
        "paper-form limit, with minibatches dashed, convex F dotted), hatched orange where stam pep is unbounded "
        "under \u03b4\u2080 + M\u2080'_T \u2264 1 (a bound of the theorem's form with M\u2080'_T is refuted there, not "
        "the printed one with M\u2080').",
        "admissible (no results needed; a lyapunov-region file of stam pep --region adds the certified and "
        "refuted zones)"),
    FigureKind(
        "rates", ("synthetic-rates", "pep-sweep"), "rates", "stam.figures.rates:draw",
        "min_t E S_t against T (log-log), mean over seeds with their spread shaded, the bound of Theorem "
        "conv, a reference slope \u22121/2, and the exact worst case (PEP) where given, under "
        "\u03b4\u2080 + M\u2080'_T \u2264 1 (M\u2080'_T: the first T + 1 merits, at most the paper's M\u2080', so the "
        "worst case bounds the one under the printed normalisation and a worst case below the bound holds for the "
        "printed theorem).",
        "rates (synthetic-rates and pep-sweep files)"),
    FigureKind(
        "map", ("convergence-map", "lyapunov-region"), "map", "stam.figures.convergence_map:draw",
        "stam.figures.convergence_map:caption",
        "map (convergence-map files of stam map; a lyapunov-region file of stam pep --region adds its limits as lines)"),
    FigureKind(
        "tuning-curves", ("tune",), "tuning", "stam.figures.tuning:draw", "stam.figures.tuning:caption",
        "tuning-curves (tune files of stam tune: expected best validation accuracy against the number of trials)"),
    FigureKind(
        "training", ("train-run",), "training", "stam.figures.training:draw_training",
        "Train accuracy and test accuracy (binary and float weights) per epoch; one line per algorithm, "
        "STAM presets share STAM's colour.",
        "training (stam train folders)"),
    FigureKind(
        "practice", ("train-run",), "practice", "stam.figures.training:draw_practice",
        "STAM's stationarity proxies per epoch (log axes) beside the O(1/\u221aT) shape; shaded epochs: the "
        "(\u03b3, \u03bb, \u03b2) in force satisfied the theorem's conditions.",
        "practice (stam train folders)"),
)

#: the names ``stam plot KIND`` takes
NAMES = tuple(f.name for f in FIGURES)


def figure_kind(name: str) -> FigureKind:
    """The figure kind called ``name``; ``KeyError`` naming the known ones."""
    return lookup(FIGURES, name, "figure kind")


__all__ = ["FigureKind", "FIGURES", "NAMES", "figure_kind"]
