"""The drawing of a convergence map (a ``convergence-map`` result, :data:`stam.synthetic.convergence_map.MAP`).

The (gamma, lambda) plane on log axes, as the left panel of the admissible-region figure
(:mod:`stam.figures.admissible`): the region where ``K1 > 0`` (eq. k1) and ``[(L2*)^2 +
(L5*)^2] gamma^2 <= 1`` shaded and outlined, the paper's settings marked (``paper_stages()``), and
the curve ``gamma lambda = 1/sqrt(5)`` (the large-lambda limit of ``K1 > 0``:
``5 (gamma lambda)^2 + 4 gamma < 1`` at ``L2* = lambda``, ``l = -lambda``).  On top, each cell of a
map (format: :mod:`stam.synthetic.convergence_map`) coloured by its metric: synthetic maps by
``log10 E S_T`` (lower is better), digits maps by the validation accuracy with binary weights
(and, in a second row, the fraction of binary weights whose sign ever changed).  One panel per
beta.  Cells where some seed diverged carry an x; where all diverged, the cell is hatched and
has no colour; cells where Theorem conv's conditions hold (beta included) carry a star.

The experiment that makes a map is :mod:`stam.figures.map_experiment` (``stam map``); the figure kind
``map`` of the report is declared in :mod:`stam.figures.convergence_map`.  matplotlib is imported
only inside :func:`plot_map`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from stam.synthetic import convergence_map as CM
from stam.theory.numeric import GAMMA_LAMBDA_LIMIT

#: colour maps (perceptually uniform, colour-vision-deficiency safe)
CMAP_LOWER_BETTER = "cividis_r"
CMAP_HIGHER_BETTER = "cividis"
CMAP_FRACTION = "viridis"


def _safe(text) -> str:
    """Text for matplotlib: no mathtext from data (a ``$`` in a name would be parsed)."""
    return str(text).replace("$", r"\$")[:80]


def cell_edges(values: list[float]) -> np.ndarray:
    """Cell edges of a log grid: geometric midpoints, half a step beyond the ends."""
    v = np.log(np.asarray(values, dtype=float))
    if len(v) == 1:
        return np.exp(np.array([v[0] - math.log(2), v[0] + math.log(2)]))
    mid = (v[1:] + v[:-1]) / 2
    return np.exp(np.concatenate([[v[0] - (mid[0] - v[0])], mid, [v[-1] + (v[-1] - mid[-1])]]))


def cell_grid(rows: list[dict], beta: float, key: str):
    """(gammas, lams, values, diverged fraction, admissible) arrays of the rows at ``beta``."""
    sel = [r for r in rows if r["beta"] == beta]
    gammas = sorted({r["gamma"] for r in sel})
    lams = sorted({r["lam"] for r in sel})
    vals = np.full((len(lams), len(gammas)), np.nan)
    div = np.zeros_like(vals)
    adm = np.zeros(vals.shape, dtype=bool)
    present = np.zeros(vals.shape, dtype=bool)
    row_of, col_of = {v: i for i, v in enumerate(lams)}, {v: j for j, v in enumerate(gammas)}
    for r in sel:
        i, j = row_of[r["lam"]], col_of[r["gamma"]]
        v = r.get(key)
        vals[i, j] = np.nan if v is None else float(v)
        div[i, j] = r["diverged"] / r["seeds"]
        adm[i, j] = r["admissible"]
        present[i, j] = True
    return gammas, lams, vals, div, adm, present


def map_betas(data: dict) -> list[float]:
    """The betas of a map, ascending: one panel (and one table of `stam map`) each."""
    return sorted({r["beta"] for r in data["rows"]})


def _panel_rows(data: dict) -> list[tuple[str, str, str]]:
    """(row key, colour-bar label, colour map) of each row of panels for one map."""
    if data["source"] == "synthetic":
        out = [("metric", "log10 E S_T (lower is better)", CMAP_LOWER_BETTER)]
    else:
        out = [("metric", "validation accuracy (%), binary weights", CMAP_HIGHER_BETTER)]
    if any(r.get("sign_ever_changed") is not None for r in data["rows"]):
        out.append(("sign_ever_changed", "fraction of weights whose sign ever changed", CMAP_FRACTION))
    return out


def problem_name(data: dict) -> str:
    """The map's problem as every caption, title and summary names it: ``cifar10-vgg11-w0.125 (JPEG
    copy)`` where the network was trained on a JPEG copy of the data set."""
    jpeg = (data.get("data_source") or {}).get("kind") == "jpeg-copy"
    return f"{data['problem']}{' (JPEG copy)' if jpeg else ''}"


@dataclass
class _Row:
    """What the panels of one row (one map, one quantity, a panel per beta) share: the map, the
    quantity ``key`` and its colour map and scale (``norm`` of the ``transform``-ed values), the axes'
    limits, the (gamma, lambda) grid ``rg x rl`` of the admissible region (``region``, drawn where
    ``quad``: H = (lam/2)||x - y||^2), the paper's settings in ``groups`` and the ``regions`` files."""

    data: dict
    key: str
    cmap: str
    xlim: tuple
    ylim: tuple
    transform: Callable
    norm: object
    rg: np.ndarray
    rl: np.ndarray
    region: np.ndarray
    quad: bool
    groups: list
    regions: tuple


def _row(data: dict, key: str, cmap: str, nc, groups: list, regions) -> _Row:
    """The :class:`_Row` of ``data``'s quantity ``key``: the admissible figure's axes widened to the
    map's cells, the colour scale (log10 E S_T over its finite values for a synthetic map's metric,
    0-100% for an accuracy, 0-1 for a fraction), the region of ``nc`` on a 200 x 200 grid."""
    from matplotlib.colors import Normalize

    from stam.figures.admissible import region_gamma_lambda

    all_rows = data["rows"]
    ge, le = cell_edges(sorted({r["gamma"] for r in all_rows})), cell_edges(sorted({r["lam"] for r in all_rows}))
    xlim = (min(1e-4, ge[0]), max(10**1.5, ge[-1]))
    ylim = (min(1e-2, le[0]), max(10**1.5, le[-1]))
    vals_all = [r.get(key) for r in all_rows if r.get(key) is not None]
    if key == "metric" and data["source"] == "synthetic":
        transform = lambda v: np.log10(np.where(v > 0, v, np.nan))  # noqa: E731
        finite = [math.log10(v) for v in vals_all if v > 0]
        norm = Normalize(min(finite), max(finite)) if finite else Normalize(0, 1)
    else:  # an accuracy in percent, or a fraction of weights
        transform = lambda v: v  # noqa: E731
        norm = Normalize(0.0, 100.0 if key == "metric" else 1.0)
    rg = np.logspace(math.log10(xlim[0]), math.log10(xlim[1]), 200)
    rl = np.logspace(math.log10(ylim[0]), math.log10(ylim[1]), 200)
    region, _ = region_gamma_lambda(rg, rl, nc)
    # the region, the curve and the paper's settings are those of H = (lam/2)||x - y||^2
    return _Row(data, key, cmap, xlim, ylim, transform, norm, rg, rl, region, CM.is_quadratic(data), groups, regions)


def _draw_cells(ax, row: _Row, beta: float, drawn: dict):
    """The cells of ``row`` at ``beta`` coloured by their value; an x where some seed diverged,
    hatched where all did, a star where Theorem conv's conditions hold (``drawn`` notes which).
    Returns the mesh (for the colour bar)."""
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    from stam.figures.style import OKABE_ITO

    gammas, lams, vals, div, adm, present = cell_grid(row.data["rows"], beta, row.key)
    gx, lx = cell_edges(gammas), cell_edges(lams)
    shown = np.ma.masked_invalid(row.transform(vals))
    mesh = ax.pcolormesh(gx, lx, shown, cmap=row.cmap, norm=row.norm, shading="flat", edgecolors="white",
                         linewidth=0.3, zorder=2)
    hatched, some, stars = [], [], []  # each kind drawn once per panel (a map of many cells in seconds)
    for i, j in zip(*np.nonzero(present)):
        cx, cy = math.sqrt(gx[j] * gx[j + 1]), math.sqrt(lx[i] * lx[i + 1])
        if div[i, j] >= 1:
            hatched.append(Rectangle((gx[j], lx[i]), gx[j + 1] - gx[j], lx[i + 1] - lx[i]))
        elif div[i, j] > 0:
            some.append((cx, cy))
        if adm[i, j]:
            stars.append((cx, cy))
    drawn["all"] |= bool(hatched)
    drawn["some"] |= bool(some)
    drawn["theorem"] |= bool(stars)
    if hatched:
        ax.add_collection(PatchCollection(hatched, facecolor="white", edgecolor=OKABE_ITO["vermillion"], hatch="xx",
                                          linewidth=0, zorder=3))
    if some:
        ax.plot(*zip(*some), linestyle="none", marker="x", color=OKABE_ITO["vermillion"], markersize=7, mew=2, zorder=4)
    if stars:
        ax.plot(*zip(*stars), linestyle="none", marker="*", color="white", markeredgecolor="black", markersize=7,
                mew=0.5, zorder=4)
    return mesh


def _draw_theory(ax, row: _Row, legend: bool) -> None:
    """Over the cells of a map of H = (lam/2)||x - y||^2: the admissible region's outline, the curve
    gamma lambda = 1/sqrt(5), the paper's settings and the ``regions`` files' lines (labelled for the
    legend where ``legend``)."""
    from stam.figures.admissible import PRESET_MARKERS, draw_preset_group, draw_region_lines
    from stam.figures.style import ADMISSIBLE_COLOR

    RG, RL = np.meshgrid(row.rg, row.rl)
    ax.contour(RG, RL, row.region.astype(float), levels=[0.5], colors=[ADMISSIBLE_COLOR], linewidths=2, zorder=5)
    ax.plot(row.rg, GAMMA_LAMBDA_LIMIT / row.rg, color="black", linestyle="--", linewidth=1.2, zorder=5,
            label="\u03b3\u03bb = 1/\u221a5" if legend else "_nolegend_")
    for k, (glabel, members) in enumerate(row.groups):
        draw_preset_group(ax, members, glabel if legend else "_nolegend_", PRESET_MARKERS[k % len(PRESET_MARKERS)],
                          lambda st, i: st.lam)
    for lyap in row.regions:
        draw_region_lines(ax, lyap, *row.xlim, legend=legend)


def _dress(ax, row: _Row, beta: float) -> None:
    """Log axes at ``row``'s limits, their labels and the panel's title (the problem, the quantity, beta)."""
    data, key = row.data, row.key
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.minorticks_off()  # seven decades of minor ticks double the layout time and carry no labels
    ax.set_xlim(*row.xlim)
    ax.set_ylim(*row.ylim)
    ax.set_xlabel("\u03b3 (step size of the x- and u-steps)")
    ax.set_ylabel("\u03bb (coupling weight in H = \u03bb/2 \u2016x\u2212y\u2016\u00b2)" if row.quad
                  else "\u03bb (the problem's lam)")
    what = "stationarity" if key == "metric" and data["source"] == "synthetic" else (
        "accuracy" if key == "metric" else "sign changes")
    ax.set_title(f"{_safe(problem_name(data))}{'' if data['problem'].startswith(data['source']) else ' (' + data['source'] + ')'}, {what}, \u03b2 = {beta:g}", fontsize=9)
    ax.grid(True, which="major", alpha=0.25)


def _draw_panel(ax, row: _Row, beta: float, legend: bool, drawn: dict):
    """One panel: the region shaded (a quadratic H), the cells, the theory over them, the axes.
    Returns the cells' mesh."""
    from stam.figures.style import ADMISSIBLE_COLOR

    ax.set_visible(True)
    RG, RL = np.meshgrid(row.rg, row.rl)
    if row.quad:
        ax.contourf(RG, RL, row.region.astype(float), levels=[0.5, 1.5], colors=[ADMISSIBLE_COLOR], alpha=0.3)
    mesh = _draw_cells(ax, row, beta, drawn)
    if row.quad:
        drawn["region"] = True
        _draw_theory(ax, row, legend)
    _dress(ax, row, beta)
    return mesh


def _legend(fig, first, drawn: dict) -> None:
    """One legend under the panels, naming only what some panel draws (issue 37): the entries the
    first panel labelled, then the region, the theorem's cells and the diverged cells as drawn."""
    from stam.figures.style import ADMISSIBLE_COLOR, OKABE_ITO

    if drawn["region"]:
        first.fill_between([], [], color=ADMISSIBLE_COLOR, alpha=0.3,
                           label="K1 > 0 and [(L2*)\u00b2+(L5*)\u00b2]\u03b3\u00b2 \u2264 1 (outlined)")
    if drawn["theorem"]:
        first.plot([], [], linestyle="none", marker="*", color="white", markeredgecolor="black",
                   label="Theorem conv's conditions hold (\u03b2 \u2265 2K2/K1 too)")
    if drawn["some"]:
        first.plot([], [], linestyle="none", marker="x", color=OKABE_ITO["vermillion"], mew=2, label="some seeds diverged")
    if drawn["all"]:
        first.fill_between([], [], facecolor="white", edgecolor=OKABE_ITO["vermillion"], hatch="xx", linewidth=0,
                           label="all seeds diverged")
    handles, labels = first.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=min(len(handles), 3), fontsize=8, frameon=False)


def plot_map(maps: list[dict], nc=None, regions=()):
    """The figure of the module docstring: for each map one panel per quantity and beta, the panels of all maps
    in reading order on a grid of at most three columns with the fewest empty places, one legend under them
    naming what some panel draws; ``regions``: ``lyapunov-region`` results (``stam pep --region``) drawn as lines on
    the panels of maps with H = (lam/2)||x - y||^2 (:func:`stam.figures.admissible.draw_region_lines`)."""
    from stam.figures.admissible import NetworkConstants, group_stages, paper_stages
    from stam.figures.style import new_figure

    if not maps:
        raise ValueError("no convergence-map results given (stam map writes them)")
    nc = nc or NetworkConstants()
    groups = group_stages(paper_stages())
    layout = [(data, key, label, cmap) for data in maps for key, label, cmap in _panel_rows(data)]
    # the panels (one per quantity and beta) flow over a grid of at most 3 columns with the fewest empty places, so
    # that a map of one beta beside one of two leaves no empty half (issue 37)
    n_panels = sum(len(map_betas(data)) for data, *_ in layout)
    ncols = n_panels if n_panels <= 3 else min((3, 2), key=lambda c: (-n_panels % c, -c))
    grid_rows = -(-n_panels // ncols)
    fig, grid = new_figure(ncols, grid_rows, panel_size=(4.7, 5.0))
    for a in grid.flat:
        a.set_visible(False)
    place = iter(grid.flat)
    drawn = {"some": False, "all": False, "theorem": False, "region": False}  # what the legend may name
    for k, (data, key, label, cmap) in enumerate(layout):
        axes_row = [next(place) for _ in map_betas(data)]
        row = _row(data, key, cmap, nc, groups, regions)
        mesh = None
        for col, beta in enumerate(map_betas(data)):
            mesh = _draw_panel(axes_row[col], row, beta, col == 0 and k == 0, drawn)
        fig.colorbar(mesh, ax=axes_row, shrink=0.8, label=_safe(label)[:70])
    _legend(fig, grid.flat[0], drawn)
    for a in list(grid.flat):
        if not a.get_visible():
            fig.delaxes(a)
    title = "Convergence map over (\u03b3, \u03bb)" + (", with the theorem's region and the paper's settings"
                                                       if any(CM.is_quadratic(d) for d in maps) else "")
    fig.suptitle(title if ncols > 1 else title.replace(", with", ",\nwith"), fontsize=11)
    return fig


__all__ = ["plot_map", "problem_name", "cell_edges", "cell_grid", "map_betas", "CMAP_LOWER_BETTER", "CMAP_HIGHER_BETTER",
           "CMAP_FRACTION"]
