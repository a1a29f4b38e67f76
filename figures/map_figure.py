"""The drawing of a convergence map (a ``convergence-map`` result, :data:`stam.synthetic.convergence_map.MAP`).

The (gamma, lambda) plane on log axes, as the left panel of the admissible-region figure
(:mod:`stam.figures.admissible`): the region where ``K1 > 0`` (eq. k1) and ``[(L2*)^2 +
(L5*)^2] gamma^2 <= 1`` shaded and outlined, the paper's settings marked (``paper_stages()``), and
the curve ``gamma lambda = 1/sqrt(5)`` (the large-lambda limit of ``K1 > 0``:
``5 (gamma lambda)^2 + 4 gamma < 1`` at ``L2* = lambda``, ``l = -lambda``).  On top, each cell of a
map (format: :mod:`stam.synthetic.convergence_map`) coloured by its metric: synthetic maps by
``log10 E S_T`` (lower is better), network maps in three rows by the validation accuracy with
binary weights, the same with the float weights x of eq. (algx) (a map written before it was
recorded: that row marked "not recorded") and the fraction of binary weights whose sign ever
changed.  One panel per beta.  A network map's colour scales are fitted to the data
(:func:`colour_limits`: each row's scale spans its cells' range over all betas, a little padding);
a panel of few cells writes each cell's value on it.  Cells where some seed diverged carry an x;
where all diverged, the cell is hatched and has no colour; cells where Theorem conv's conditions
hold (beta included) carry a star.  Beside the curve ``gamma lambda = 1/sqrt(5)`` the line
``gamma lambda = 1`` (:data:`PAPER_CLASS_GAMMA_LAMBDA`), up to which the paper's class is
certified.

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
from stam.theory.symbolic.numeric import GAMMA_LAMBDA_LIMIT

#: colour maps (perceptually uniform, colour-vision-deficiency safe)
CMAP_LOWER_BETTER = "cividis_r"
CMAP_HIGHER_BETTER = "cividis"
CMAP_FRACTION = "viridis"
#: ``gamma lambda`` up to which STAM is certified for the paper's class (any proper lsc F) with
#: H = (lambda/2)||x - y||^2: the paper's potential ``delta_t + M_t`` (Lemma conv-lemma) is
#: ``Phi(u^t, y^t) - G^inf + (gamma/2)(1 - gamma lambda)||r_t||^2``, bounded below exactly when
#: ``gamma lambda <= 1`` (:mod:`stam.theory.worstcase.templates`), and ``stam pep --region`` certifies it up
#: to gamma lambda = 0.99-1.00 at every lambda from 0.01 to 31.6
#: (``benchmarks/results/lyapunov_region.json``, docs/pep.md)
PAPER_CLASS_GAMMA_LAMBDA = 1.0
PAPER_CLASS_LABEL = "\u03b3\u03bb = 1: certified for the paper's class (lsc F) up to here"
#: a network map's colour scale: the data's range widened by this fraction of it on each side
COLOUR_PAD = 0.03
#: a panel of at most this many cells writes each cell's value on it
ANNOTATE_CELLS = 16


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


#: a network map's rows of panels: (row key, colour-bar label, colour map, title word)
NETWORK_ROWS = (("metric", "validation accuracy (%), binary weights", CMAP_HIGHER_BETTER, "binary accuracy"),
                ("val_acc_float", "validation accuracy (%), float weights", CMAP_HIGHER_BETTER, "float accuracy"),
                ("sign_ever_changed", "fraction of weights whose sign ever changed", CMAP_FRACTION, "sign changes"))


def recorded(data: dict, key: str) -> bool:
    """Whether some cell of the map holds ``key`` (a network map written before the float accuracy was
    recorded holds none)."""
    return any(r.get(key) is not None for r in data["rows"])


def _panel_rows(data: dict) -> list[tuple[str, str, str, str]]:
    """(row key, colour-bar label, colour map, title word) of each row of panels for one map: a synthetic
    map's E S_T (and sign changes where recorded); a network map's three rows of :data:`NETWORK_ROWS`, the
    float accuracy's drawn "not recorded" where the map does not hold it."""
    if data["source"] == "synthetic":
        out = [("metric", "log10 E S_T (lower is better)", CMAP_LOWER_BETTER, "stationarity")]
        return out + [row for row in NETWORK_ROWS[2:] if recorded(data, row[0])]
    return [row for row in NETWORK_ROWS if row[0] != "sign_ever_changed" or recorded(data, row[0])]


def colour_limits(data: dict, key: str) -> tuple[float, float]:
    """The colour scale of a network map's quantity ``key`` (an accuracy in percent, a fraction of weights):
    its cells' range over every beta, widened by :data:`COLOUR_PAD` of it on each side and kept within
    the quantity's bounds ([0, 100], [0, 1]); one value: that value +- 1% of the bounds' width; none: the bounds."""
    bounds = (0.0, 1.0) if key == "sign_ever_changed" else (0.0, 100.0)
    vals = [float(r[key]) for r in data["rows"] if r.get(key) is not None and math.isfinite(r[key])]
    if not vals:
        return bounds
    lo, hi = min(vals), max(vals)
    pad = COLOUR_PAD * (hi - lo) if hi > lo else 0.01 * (bounds[1] - bounds[0])
    return max(bounds[0], lo - pad), min(bounds[1], hi + pad)


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
    what: str
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
    recorded: bool = True


def _row(data: dict, key: str, cmap: str, what: str, nc, groups: list, regions) -> _Row:
    """The :class:`_Row` of ``data``'s quantity ``key`` (titled ``what``): the admissible figure's axes
    widened to the map's cells, the colour scale (log10 E S_T over its finite values for a synthetic map's
    metric; a network map's accuracy or a fraction of weights: :func:`colour_limits`, fitted to the data),
    the region of ``nc`` on a 200 x 200 grid."""
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
    else:  # an accuracy in percent, or a fraction of weights: the scale fitted to the data
        transform = lambda v: v  # noqa: E731
        norm = Normalize(*colour_limits(data, key))
    rg = np.logspace(math.log10(xlim[0]), math.log10(xlim[1]), 200)
    rl = np.logspace(math.log10(ylim[0]), math.log10(ylim[1]), 200)
    region, _ = region_gamma_lambda(rg, rl, nc)
    # the region, the curve and the paper's settings are those of H = (lam/2)||x - y||^2
    return _Row(data, key, cmap, what, xlim, ylim, transform, norm, rg, rl, region, CM.is_quadratic(data), groups, regions,
                recorded(data, key))


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
    if row.data["source"] != "synthetic" and np.count_nonzero(present) <= ANNOTATE_CELLS:
        _write_values(ax, row, mesh, gx, lx, vals)
    return mesh


def _write_values(ax, row: _Row, mesh, gx, lx, vals) -> None:
    """Each coloured cell's value written on it (an accuracy "55.6", a fraction "0.55"), upright, over the lines
    and markers, in black or white as the cell's colour is light or dark, outlined in the other."""
    from matplotlib import patheffects

    fmt = "{:.2f}" if row.key == "sign_ever_changed" else "{:.1f}"
    for i, j in zip(*np.nonzero(np.isfinite(vals))):
        r, g, b, _ = mesh.cmap(mesh.norm(vals[i, j]))
        light = 0.299 * r + 0.587 * g + 0.114 * b > 0.5
        ax.text(math.sqrt(gx[j] * gx[j + 1]), math.sqrt(lx[i] * lx[i + 1]), fmt.format(vals[i, j]), rotation=90,
                ha="center", va="center", fontsize=7, fontweight="bold", zorder=9, color="black" if light else "white",
                path_effects=[patheffects.withStroke(linewidth=1.5, foreground="white" if light else "black")])


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
    ax.plot(row.rg, PAPER_CLASS_GAMMA_LAMBDA / row.rg, color="black", linestyle=":", linewidth=1.6, zorder=5,
            label=PAPER_CLASS_LABEL if legend else "_nolegend_")
    for k, (glabel, members) in enumerate(row.groups):
        draw_preset_group(ax, members, glabel if legend else "_nolegend_", PRESET_MARKERS[k % len(PRESET_MARKERS)],
                          lambda st, i: st.lam)
    for lyap in row.regions:
        draw_region_lines(ax, lyap, *row.xlim, legend=legend)


def _dress(ax, row: _Row, beta: float) -> None:
    """Log axes at ``row``'s limits, their labels and the panel's title (the problem, the quantity, beta)."""
    data = row.data
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.minorticks_off()  # seven decades of minor ticks double the layout time and carry no labels
    ax.set_xlim(*row.xlim)
    ax.set_ylim(*row.ylim)
    ax.set_xlabel("\u03b3 (step size of the x- and u-steps)")
    ax.set_ylabel("\u03bb (coupling weight in H = \u03bb/2 \u2016x\u2212y\u2016\u00b2)" if row.quad
                  else "\u03bb (the problem's lam)")
    ax.set_title(f"{_safe(problem_name(data))}{'' if data['problem'].startswith(data['source']) else ' (' + data['source'] + ')'}, {row.what}, \u03b2 = {beta:g}", fontsize=9)
    ax.grid(True, which="major", alpha=0.25)
    lams = sorted({r["lam"] for r in data["rows"]})
    if len(lams) == 1:  # a strip: its gamma*lambda on a second axis above
        lam = lams[0]
        top = ax.secondary_xaxis("top", functions=(lambda g: g * lam, lambda v: v / lam))
        top.set_xlabel(f"\u03b3\u03bb (the strip's \u03bb = {lam:g})", fontsize=8)
        top.tick_params(labelsize=7)
        top.minorticks_off()


def _draw_panel(ax, row: _Row, beta: float, legend: bool, drawn: dict):
    """One panel: the region shaded (a quadratic H), the cells, the theory over them, the axes.
    Returns the cells' mesh."""
    from stam.figures.style import ADMISSIBLE_COLOR

    ax.set_visible(True)
    RG, RL = np.meshgrid(row.rg, row.rl)
    if row.quad:
        ax.contourf(RG, RL, row.region.astype(float), levels=[0.5, 1.5], colors=[ADMISSIBLE_COLOR], alpha=0.3)
    mesh = _draw_cells(ax, row, beta, drawn) if row.recorded else None
    if not row.recorded:
        ax.text(0.5, 0.5, f"{row.what}:\nnot recorded\n(this map's jobs predate it)", transform=ax.transAxes, ha="center",
                va="center", fontsize=10, zorder=7, bbox=dict(boxstyle="round", facecolor="white", edgecolor="grey"))
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


def _colour_bar(fig, row: _Row, mesh, axes_row, label: str) -> None:
    """The row's colour bar; a network map's says its scale is fitted to the data; a row not recorded keeps
    an empty place of the same width (so its panels line up with the others)."""
    from matplotlib.cm import ScalarMappable

    if not row.recorded:
        fig.colorbar(ScalarMappable(row.norm, row.cmap), ax=axes_row, shrink=0.8).ax.set_visible(False)
        return
    text = _safe(label)[:70]
    if row.data["source"] != "synthetic":
        digits = 2 if row.key == "sign_ever_changed" else 1
        text += f"\nscale fitted to the cells: {row.norm.vmin:.{digits}f}\u2013{row.norm.vmax:.{digits}f}"
    fig.colorbar(mesh, ax=axes_row, shrink=0.8, label=text)


def columns(widths: list[int]) -> int:
    """The columns (at most 3) of the grid that rows of panels of ``widths`` panels each flow over, in order:
    the fewest rows of panels broken over two lines of the grid (a colour bar belongs to one line), then the
    fewest empty places (issue 37), then the most columns."""
    def cost(c: int) -> tuple:
        pos = broken = 0
        for w in widths:
            broken += pos % c + w > c
            pos += w
        return broken, -pos % c, -c

    return min(range(1, min(3, sum(widths)) + 1), key=cost)


def plot_map(maps: list[dict], nc=None, regions=()):
    """The figure of the module docstring: for each map one panel per quantity and beta, the panels of all maps
    in reading order on a grid of at most three columns (:func:`columns`), one legend under them
    naming what some panel draws; ``regions``: ``lyapunov-region`` results (``stam pep --region``) drawn as lines on
    the panels of maps with H = (lam/2)||x - y||^2 (:func:`stam.figures.admissible.draw_region_lines`)."""
    from stam.figures.admissible import NetworkConstants, group_stages, paper_stages
    from stam.figures.style import new_figure

    if not maps:
        raise ValueError("no convergence-map results given (stam map writes them)")
    nc = nc or NetworkConstants()
    groups = group_stages(paper_stages())
    layout = [(data, *panel_row) for data in maps for panel_row in _panel_rows(data)]
    # the panels (one per quantity and beta) flow over a grid of at most 3 columns (:func:`columns`): each row of
    # panels on one line of the grid where it can be, then the fewest empty places (issue 37)
    widths = [len(map_betas(data)) for data, *_ in layout]
    n_panels, ncols = sum(widths), columns(widths)
    grid_rows = -(-n_panels // ncols)
    fig, grid = new_figure(ncols, grid_rows, panel_size=(4.7, 5.0))
    for a in grid.flat:
        a.set_visible(False)
    place = iter(grid.flat)
    drawn = {"some": False, "all": False, "theorem": False, "region": False}  # what the legend may name
    for k, (data, key, label, cmap, what) in enumerate(layout):
        axes_row = [next(place) for _ in map_betas(data)]
        row = _row(data, key, cmap, what, nc, groups, regions)
        mesh = None
        for col, beta in enumerate(map_betas(data)):
            mesh = _draw_panel(axes_row[col], row, beta, col == 0 and k == 0, drawn)
        _colour_bar(fig, row, mesh, axes_row, label)
    _legend(fig, grid.flat[0], drawn)
    for a in list(grid.flat):
        if not a.get_visible():
            fig.delaxes(a)
    title = "Convergence map over (\u03b3, \u03bb)" + (", with the theorem's region and the paper's settings"
                                                       if any(CM.is_quadratic(d) for d in maps) else "")
    fig.suptitle(title if ncols > 1 else title.replace(", with", ",\nwith"), fontsize=11)
    return fig


__all__ = ["plot_map", "columns", "problem_name", "cell_edges", "cell_grid", "map_betas", "colour_limits", "recorded",
           "CMAP_LOWER_BETTER", "CMAP_HIGHER_BETTER", "CMAP_FRACTION", "NETWORK_ROWS", "PAPER_CLASS_GAMMA_LAMBDA",
           "PAPER_CLASS_LABEL", "COLOUR_PAD", "ANNOTATE_CELLS"]
