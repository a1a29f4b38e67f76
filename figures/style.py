"""One look for every figure: the Okabe-Ito colour-blind-safe palette, one fixed colour per
algorithm (the single mapping used by all figures), and saving as PNG (150 dpi) and PDF.

Figures are built on :class:`matplotlib.figure.Figure` directly (Agg canvas, no pyplot, no
global state), so rendering works headless and many figures can be made in one process.
matplotlib is imported by the functions that draw (:func:`new_figure`, :func:`log_axes`), not when
this module is, so that the figure kinds (:mod:`stam.figures.kinds`) are found without it.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

from stam.dnn import catalog
from stam.io import atomic_path
from stam.synthetic import methods

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Okabe & Ito (2008), "Color universal design": distinguishable under the common colour-vision deficiencies.
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
}
GREY = "#7F7F7F"

#: Everything figures draw as an algorithm, as declared where it is defined: the network
#: algorithms (:data:`stam.dnn.catalog.ALGORITHMS`) and the synthetic comparison's methods
#: (:data:`stam.synthetic.methods.REGISTRY`), each with its label, colour and marker.
DECLARED = {**{m.name: m for m in methods.REGISTRY}, **{a.name: a for a in catalog.ALGORITHMS}}

#: THE colour of each algorithm, in every figure.  STAM's parameter presets (Our1, Our2, ...)
#: are one algorithm: they share STAM's colour and differ by line style and marker.
ALGO_COLORS = {name: OKABE_ITO[d.color] for name, d in DECLARED.items()}
#: A marker per algorithm too, so that curves that coincide stay distinguishable.
ALGO_MARKERS = {name: d.marker for name, d in DECLARED.items()}
#: Display names (as the paper writes them).
ALGO_NAMES = {name: d.label for name, d in DECLARED.items()}

#: Theory elements (not algorithms).
BOUND_COLOR = OKABE_ITO["black"]  # the theorem's right-hand side, dashed
REFERENCE_COLOR = GREY  # reference slopes, dotted
PEP_COLOR = OKABE_ITO["vermillion"]  # exact worst case (performance estimation)
ADMISSIBLE_COLOR = OKABE_ITO["bluish_green"]  # where the theorem's conditions hold
PAPER_COLOR = OKABE_ITO["vermillion"]  # the paper's parameter settings

#: Line style and marker per STAM preset (colour stays STAM's).
_PRESET_STYLES = [("-", "o"), ("--", "s"), ("-.", "^"), (":", "D"), ((0, (5, 1, 1, 1)), "v")]

DPI = 150


def _normal(name) -> str:
    return str(name).strip().lower().replace("_", "-").replace(" ", "-")


_BY_LABEL = {_normal(d.label): name for name, d in DECLARED.items()}


def canonical_algo(name: str) -> str:
    """The declared name (a key of ``ALGO_COLORS``) of an algorithm name as a producer wrote it
    or its label (case, ``_`` and spaces aside; a STAM variant such as ``stam-our1`` is STAM)."""
    key = _normal(name)
    key = _BY_LABEL.get(key, key)
    if key.startswith("stam") and key not in ALGO_COLORS:
        return "stam"
    return key


def algo_color(name: str) -> str:
    """The fixed colour of an algorithm; an unknown name gets grey (never a colour of another)."""
    return ALGO_COLORS.get(canonical_algo(name), GREY)


def run_label(algo: str, preset: str | None = None, label: str | None = None) -> str:
    """How the paper names a run: the label the run was given (``stam train --label``, or its
    preset's: ``Our3``, ``BC``, ...), else ``Our1`` for STAM with preset our1, ``BC`` for bc, ..."""
    if label:
        return str(label)
    key = canonical_algo(algo)
    if key == "stam" and preset and str(preset).lower() not in ("", "default", "stam"):
        p = str(preset)
        if p.lower().startswith("our"):
            return "Our" + p[3:]
        return f"STAM ({p})"
    return ALGO_NAMES.get(key, str(algo))


def plain_text(obj, _depth: int = 0):
    """``obj`` (a string, or lists and dicts of them, e.g. a parsed result file) with every ``$``
    written ``\\$``: matplotlib then draws the text as typed instead of parsing it as mathtext
    (``Text`` turns ``\\$`` back into ``$`` outside math), so a label from a file can neither
    crash a figure (``$\\notacommand{$``) nor change how it looks.  Figures get their data
    through this; text meant as math is written in the figure code itself."""
    if isinstance(obj, str):
        return obj.replace("$", r"\$")
    if _depth > 16:  # figures draw nothing nested this deep; a hostile file could nest thousands
        return obj
    if isinstance(obj, dict):
        return {k: plain_text(v, _depth + 1) for k, v in obj.items()}
    if isinstance(obj, list):
        return [plain_text(v, _depth + 1) for v in obj]
    return obj


def run_style(algo: str, label: str, stam_labels: list[str] | None = None) -> dict:
    """matplotlib keyword arguments (color, linestyle, marker, label) for one run.

    ``stam_labels`` is the sorted list of the STAM runs' labels in the figure (Our1, Our3, ...),
    so that each keeps one line style within a figure."""
    key = canonical_algo(algo)
    style = {"color": algo_color(key), "linestyle": "-", "marker": ALGO_MARKERS.get(key), "label": label}
    if key == "stam" and stam_labels and label in stam_labels and len(stam_labels) > 1:
        ls, marker = _PRESET_STYLES[stam_labels.index(label) % len(_PRESET_STYLES)]
        style.update(linestyle=ls, marker=marker)
    return style


def new_figure(ncols: int = 1, nrows: int = 1, panel_size: tuple[float, float] = (5.2, 3.9), **kwargs):
    """A figure with an ``nrows x ncols`` grid of axes (always a 2-D array), constrained layout."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(panel_size[0] * ncols, panel_size[1] * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **kwargs)
    return fig, axes


def save_figure(fig: Figure, stem: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``stem.png`` (150 dpi) and ``stem.pdf`` atomically; return both paths.  The layout
    is computed once, for the PNG, and frozen for the PDF (it is the same page); the page is
    cut to what is drawn (``bbox_inches="tight"``), so a long colour-bar label or legend below a
    single panel is never clipped at the edge."""
    stem = Path(stem)
    paths = []
    for ext in ("png", "pdf"):
        path = stem.with_name(stem.name + "." + ext)
        with atomic_path(path, suffix="." + ext) as tmp:
            fig.savefig(tmp, format=ext, dpi=DPI, bbox_inches="tight", pad_inches=0.08)
        fig.set_layout_engine("none")
        paths.append(path)
    return paths[0], paths[1]


def log_axes(ax, x: bool = True, y: bool = True) -> None:
    """Log scales with readable ticks: an axis spanning less than two decades gets ticks at
    1, 2, 5 x 10^k (1, 2, 3, 4, 5, 6, 8 x 10^k for short spans) written as plain numbers, instead of
    matplotlib's "2 x 10^0" minor labels."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    for on, axis, set_scale, minpos in ((x, ax.xaxis, ax.set_xscale, ax.dataLim.minposx),
                                        (y, ax.yaxis, ax.set_yscale, ax.dataLim.minposy)):
        if not on or not math.isfinite(minpos):  # no positive value to draw (e.g. every one null): stay linear
            continue
        set_scale("log")
        lo, hi = sorted(axis.get_view_interval())
        if not (lo > 0 and hi / lo < 100):
            continue
        for mantissas in ((1, 2, 3, 4, 5, 6, 8), (1, 2, 5), (1, 3)):
            ticks = [m * 10.0**k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
                     for m in mantissas if lo <= m * 10.0**k <= hi]
            if len(ticks) <= 7:
                break
        axis.set_major_locator(FixedLocator(ticks))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())


def legend_below(ax, ncol: int = 1, wrap: int | None = None, **kwargs) -> None:
    """The legend under the axes, where it never covers data (constrained layout makes room); ``wrap``: labels
    broken into lines of at most that many characters, so that a long one does not widen the panel's column.  No
    legend where nothing drawn has a label (a run of one epoch draws no proxy line): matplotlib would warn."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    if wrap:
        import textwrap

        kwargs.update(handles=handles, labels=[textwrap.fill(label, wrap) for label in labels])
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=ncol, fontsize=7, frameon=False, **kwargs)
