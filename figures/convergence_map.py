"""The convergence map figure and the command ``stam map``.

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
"""

from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path

import numpy as np

from stam.errors import UsageError
from stam.figures.declare import declare_figure
from stam.io import check_out_dir
from stam.synthetic import convergence_map as CM
from stam.synthetic.convergence_map import log_grid, write_map
from stam.theory.numeric import GAMMA_LAMBDA_LIMIT
from stam.userfile import accepts, build, guard, is_file_spec, load_object, split_spec

#: digits: a cell "trains" when its validation accuracy with binary weights reaches this
TRAINS_AT = 50.0  # percent
#: colour maps (perceptually uniform, colour-vision-deficiency safe)
CMAP_LOWER_BETTER = "cividis_r"
CMAP_HIGHER_BETTER = "cividis"
CMAP_FRACTION = "viridis"


def _safe(text) -> str:
    """Text for matplotlib: no mathtext from data (a ``$`` in a name would be parsed)."""
    return str(text).replace("$", r"\$")[:80]


def _edges(values: list[float]) -> np.ndarray:
    """Cell edges of a log grid: geometric midpoints, half a step beyond the ends."""
    v = np.log(np.asarray(values, dtype=float))
    if len(v) == 1:
        return np.exp(np.array([v[0] - math.log(2), v[0] + math.log(2)]))
    mid = (v[1:] + v[:-1]) / 2
    return np.exp(np.concatenate([[v[0] - (mid[0] - v[0])], mid, [v[-1] + (v[-1] - mid[-1])]]))


def _grid(rows: list[dict], beta: float, key: str):
    """(gammas, lams, values, diverged fraction, admissible) arrays of the rows at ``beta``."""
    sel = [r for r in rows if r["beta"] == beta]
    gammas = sorted({r["gamma"] for r in sel})
    lams = sorted({r["lam"] for r in sel})
    vals = np.full((len(lams), len(gammas)), np.nan)
    div = np.zeros_like(vals)
    adm = np.zeros(vals.shape, dtype=bool)
    present = np.zeros(vals.shape, dtype=bool)
    for r in sel:
        i, j = lams.index(r["lam"]), gammas.index(r["gamma"])
        v = r.get(key)
        vals[i, j] = np.nan if v is None else float(v)
        div[i, j] = r["diverged"] / r["seeds"]
        adm[i, j] = r["admissible"]
        present[i, j] = True
    return gammas, lams, vals, div, adm, present


def _betas(data: dict) -> list[float]:
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


def plot_map(maps: list[dict], nc=None, regions=()):
    """The figure of the module docstring: for each map one panel per quantity and beta, the panels of all maps
    in reading order on a grid of at most three columns with the fewest empty places, one legend under them
    naming what some panel draws; ``regions``: ``lyapunov-region`` results (``stam pep --region``) drawn as lines on
    the panels of maps with H = (lam/2)||x - y||^2 (:func:`stam.figures.admissible.draw_region_lines`)."""
    from matplotlib.colors import Normalize
    from matplotlib.patches import Rectangle

    from stam.figures.admissible import (
        PRESET_MARKERS,
        NetworkConstants,
        draw_preset_group,
        draw_region_lines,
        group_stages,
        paper_stages,
        region_gamma_lambda,
    )
    from stam.figures.style import ADMISSIBLE_COLOR, OKABE_ITO, new_figure

    if not maps:
        raise ValueError("no convergence-map results given (stam map writes them)")
    nc = nc or NetworkConstants()
    groups = group_stages(paper_stages())
    layout = [(data, key, label, cmap) for data in maps for key, label, cmap in _panel_rows(data)]
    # the panels (one per quantity and beta) flow over a grid of at most 3 columns with the fewest empty places, so
    # that a map of one beta beside one of two leaves no empty half (issue 37)
    n_panels = sum(len(_betas(data)) for data, *_ in layout)
    ncols = n_panels if n_panels <= 3 else min((3, 2), key=lambda c: (-n_panels % c, -c))
    grid_rows = -(-n_panels // ncols)
    fig, grid = new_figure(ncols, grid_rows, panel_size=(4.7, 5.0))
    for a in grid.flat:
        a.set_visible(False)
    place = iter(grid.flat)
    drawn = {"some": False, "all": False, "theorem": False, "region": False}  # what the legend may name
    for row, (data, key, label, cmap) in enumerate(layout):
        axes_row = [next(place) for _ in _betas(data)]
        all_rows = data["rows"]
        gam_all = sorted({r["gamma"] for r in all_rows})
        lam_all = sorted({r["lam"] for r in all_rows})
        ge, le = _edges(gam_all), _edges(lam_all)
        # the admissible figure's axes, widened to the map's cells
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
        quad = CM.is_quadratic(data)  # the region, the curve and the paper's settings are those of H = (lam/2)||x - y||^2
        mesh = None
        for col, beta in enumerate(_betas(data)):
            ax = axes_row[col]
            ax.set_visible(True)
            RG, RL = np.meshgrid(rg, rl)
            if quad:
                ax.contourf(RG, RL, region.astype(float), levels=[0.5, 1.5], colors=[ADMISSIBLE_COLOR], alpha=0.3)
            gammas, lams, vals, div, adm, present = _grid(all_rows, beta, key)
            gx, lx = _edges(gammas), _edges(lams)
            shown = np.ma.masked_invalid(transform(vals))
            mesh = ax.pcolormesh(gx, lx, shown, cmap=cmap, norm=norm, shading="flat", edgecolors="white",
                                 linewidth=0.3, zorder=2)
            for i in range(len(lams)):
                for j in range(len(gammas)):
                    if not present[i, j]:
                        continue
                    cx, cy = math.sqrt(gx[j] * gx[j + 1]), math.sqrt(lx[i] * lx[i + 1])
                    drawn["all"] |= bool(div[i, j] >= 1)
                    drawn["some"] |= bool(0 < div[i, j] < 1)
                    drawn["theorem"] |= bool(adm[i, j])
                    if div[i, j] >= 1:
                        ax.add_patch(Rectangle((gx[j], lx[i]), gx[j + 1] - gx[j], lx[i + 1] - lx[i], facecolor="white",
                                               edgecolor=OKABE_ITO["vermillion"], hatch="xx", linewidth=0, zorder=3))
                    elif div[i, j] > 0:
                        ax.plot([cx], [cy], marker="x", color=OKABE_ITO["vermillion"], markersize=7, mew=2, zorder=4)
                    if adm[i, j]:
                        ax.plot([cx], [cy], marker="*", color="white", markeredgecolor="black", markersize=7,
                                mew=0.5, zorder=4)
            if quad:
                drawn["region"] = True
                ax.contour(RG, RL, region.astype(float), levels=[0.5], colors=[ADMISSIBLE_COLOR], linewidths=2, zorder=5)
                ax.plot(rg, GAMMA_LAMBDA_LIMIT / rg, color="black", linestyle="--", linewidth=1.2, zorder=5,
                        label="\u03b3\u03bb = 1/\u221a5" if col == 0 and row == 0 else "_nolegend_")
                for k, (glabel, members) in enumerate(groups):
                    draw_preset_group(ax, members, glabel if col == 0 and row == 0 else "_nolegend_", PRESET_MARKERS[k % len(PRESET_MARKERS)],
                                lambda st, i: st.lam)
                for lyap in regions:
                    draw_region_lines(ax, lyap, *xlim, legend=col == 0 and row == 0)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.minorticks_off()  # seven decades of minor ticks double the layout time and carry no labels
            ax.set_xlim(*xlim)
            ax.set_ylim(*ylim)
            ax.set_xlabel("\u03b3 (step size of the x- and u-steps)")
            ax.set_ylabel("\u03bb (coupling weight in H = \u03bb/2 \u2016x\u2212y\u2016\u00b2)" if quad
                          else "\u03bb (the problem's lam)")
            what = "stationarity" if key == "metric" and data["source"] == "synthetic" else (
                "accuracy" if key == "metric" else "sign changes")
            ax.set_title(f"{_safe(problem_name(data))}{'' if data['problem'].startswith(data['source']) else ' (' + data['source'] + ')'}, {what}, \u03b2 = {beta:g}", fontsize=9)
            ax.grid(True, which="major", alpha=0.25)
        fig.colorbar(mesh, ax=axes_row, shrink=0.8, label=_safe(label)[:70])
    # one legend under the panels, naming only what some panel draws (issue 37)
    first = grid.flat[0]
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
    for a in list(grid.flat):
        if not a.get_visible():
            fig.delaxes(a)
    title = "Convergence map over (\u03b3, \u03bb)" + (", with the theorem's region and the paper's settings"
                                                       if any(CM.is_quadratic(d) for d in maps) else "")
    fig.suptitle(title if ncols > 1 else title.replace(", with", ",\nwith"), fontsize=11)
    return fig


# --- numbers in words -------------------------------------------------------------------------
def _side(row) -> bool:
    """Below the curve gamma lambda = 1/sqrt(5)?"""
    return row["gamma"] * row["lam"] < GAMMA_LAMBDA_LIMIT


def _good(data: dict, row) -> bool:
    """A cell that decreases (synthetic: no seed diverged and E S_T < E S_0) or trains
    (digits: validation accuracy >= TRAINS_AT)."""
    if row["metric"] is None or row["diverged"]:
        return False
    if data["source"] == "synthetic":
        s0 = row.get("S_0")
        return s0 is not None and row["metric"] < s0
    return row["metric"] >= TRAINS_AT


def summary(data: dict) -> dict:
    """Counts of cells: all, good (converge/train), diverged (some seed), admissible, per side
    of gamma lambda = 1/sqrt(5)."""
    out = {}
    for name, rows in (("all", data["rows"]), ("below", [r for r in data["rows"] if _side(r)]),
                       ("above", [r for r in data["rows"] if not _side(r)])):
        vals = [r["metric"] for r in rows if r["metric"] is not None]
        out[name] = dict(cells=len(rows), good=sum(_good(data, r) for r in rows),
                         diverged=sum(r["diverged"] > 0 for r in rows), admissible=sum(r["admissible"] for r in rows),
                         median=float(np.median(vals)) if vals else None)
    return out


def _word(data) -> str:
    return "decrease" if data["source"] == "synthetic" else "train"


def _num(data, v) -> str:
    if v is None:
        return "\u2013"
    return f"{v:.2g}" if data["source"] == "synthetic" else f"{v:.1f}%"


def _verb(data) -> str:
    return "decrease (no seed diverged and E S_T < E S_0)" if data["source"] == "synthetic" else (
        f"train (validation accuracy with binary weights \u2265 {TRAINS_AT:.0f}%)")


def _bn_words(data: dict) -> str:
    """A network map's evaluation protocol (``params.bn_images``; a map written before it was
    recorded evaluated with the statistics as trained)."""
    from stam.dnn.catalog import bn_protocol  # light: no torch

    return bn_protocol((data.get("params") or {}).get("bn_images"))


def map_caption(data: dict) -> str:
    """What the figure shows, with the numbers (plain text; the report escapes it)."""
    s = summary(data)
    budget = ", ".join(f"{k} = {v}" for k, v in data["budget"].items())
    seeds = sorted({r["seeds"] for r in data["rows"]})
    adm_good = sum(_good(data, r) for r in data["rows"] if r["admissible"])
    colour = ("Colour: log10 E S_T (lower is better)" if data["source"] == "synthetic"
              else "Colour: validation accuracy with binary weights, "
              + _bn_words(data)
              + ("; second row: fraction of binary weights whose sign ever changed"
                 if any(r.get("sign_ever_changed") is not None for r in data["rows"]) else ""))
    head = (f"Convergence map, {data['source']} {problem_name(data)} ({budget}, {'/'.join(map(str, seeds))} seeds; "
            f"{data.get('beta_rule_text') or data['beta_rule']['kind']}). Of {s['all']['cells']} (\u03b3, \u03bb, \u03b2) "
            f"cells, {s['all']['good']} {_verb(data)} and {s['all']['diverged']} have diverged seeds. ")
    if not CM.is_quadratic(data):
        return (head + f"{s['all']['admissible']} cells satisfy Theorem conv's conditions at the constants of the "
                f"problem's own H (\u2605), {adm_good} of them {_word(data)}. {colour}; x: some seeds diverged, hatched: all did.")
    return (head + f"Below \u03b3\u03bb = 1/\u221a5: {s['below']['good']} of {s['below']['cells']} cells {_word(data)}, "
            f"{s['below']['diverged']} have diverged seeds, median {data['metric']} {_num(data, s['below']['median'])}; "
            f"above it: {s['above']['good']} of {s['above']['cells']} {_word(data)}, {s['above']['diverged']} have "
            f"diverged seeds, median {_num(data, s['above']['median'])}. "
            f"{s['all']['admissible']} cells satisfy Theorem conv's conditions (\u2605), {adm_good} of them "
            f"{_word(data)}. {colour}; x: some seeds diverged, hatched: "
            "all did; shaded and outlined: K1 > 0 and [(L2*)\u00b2+(L5*)\u00b2]\u03b3\u00b2 \u2264 1; dashed: "
            "\u03b3\u03bb = 1/\u221a5; markers: the paper's settings (Table para, Section sub:3.3).")


def format_map(data: dict) -> str:
    """A text table per beta: lambda down, gamma across; metric, D (all seeds diverged),
    d (some did), * (Theorem conv's conditions hold)."""
    fmt = (lambda v: f"{v:.2e}") if data["source"] == "synthetic" else (lambda v: f"{v:.1f}%")
    lines = [f"{data['metric_label']}; D: all seeds diverged, d: some did, *: Theorem conv's conditions hold"]
    for beta in _betas(data):
        gammas, lams, vals, div, adm, present = _grid(data["rows"], beta, "metric")
        lines.append(f"beta = {beta:g}")
        corner = "lam \\ gamma"
        lines.append(f"{corner:>12}" + "".join(f"{g:>11.3g}" for g in gammas))
        for i in reversed(range(len(lams))):
            cells = []
            for j in range(len(gammas)):
                if not present[i, j]:
                    cell = "-"
                elif div[i, j] >= 1:
                    cell = "D"
                else:
                    cell = fmt(vals[i, j]) + ("d" if div[i, j] > 0 else "")
                cells.append(f"{cell + ('*' if adm[i, j] else ''):>11}")
            lines.append(f"{lams[i]:>12.3g}" + "".join(cells))
    return "\n".join(lines)


def summary_line(data: dict) -> str:
    s = summary(data)
    word = _word(data)
    good_admissible = sum(_good(data, r) for r in data["rows"] if r["admissible"])
    if not CM.is_quadratic(data):  # the curve gamma*lambda = 1/sqrt(5) belongs to H = (lambda/2)||x - y||^2
        return (f"map {problem_name(data)}: {s['all']['cells']} cells, {s['all']['good']} {word}, {s['all']['diverged']} with "
                f"diverged seeds, {s['all']['admissible']} satisfy Theorem conv at its H's constants "
                f"({good_admissible} of those {word})")
    return (f"map {problem_name(data)}: {s['all']['cells']} cells, {s['all']['good']} {word}, {s['all']['diverged']} with "
            f"diverged seeds ({s['below']['diverged']} of them below gamma*lambda = 1/sqrt(5)), median {data['metric']} "
            f"{_num(data, s['below']['median'])} below that curve and {_num(data, s['above']['median'])} above, "
            f"{s['all']['admissible']} satisfy Theorem conv ({good_admissible} of those {word})")


# --- the command ------------------------------------------------------------------------------


def _values(params, name: str, default) -> list[float]:
    """``--NAMEs`` (a list, parsed by :class:`stam.cliargs.ListArg`), else ``--NAME-range``
    (``(lo, hi, n)`` from :class:`stam.cliargs.RangeArg`) as its log grid, else ``default``'s."""
    listed, ranged = getattr(params, f"{name}s"), getattr(params, f"{name}_range")
    if listed is not None:
        return list(listed)
    return log_grid(*(ranged if ranged is not None else default))


def problem_name(data: dict) -> str:
    """The map's problem as every caption, title and summary names it: ``cifar10-vgg11-w0.125 (JPEG
    copy)`` where the network was trained on a JPEG copy of the data set."""
    jpeg = (data.get("data_source") or {}).get("kind") == "jpeg-copy"
    return f"{data['problem']}{' (JPEG copy)' if jpeg else ''}"


def digits_map(gammas, lams, betas, seeds: int = 3, epochs: int = 60, *, progress: bool = True,
               store=None, scheduler: str | None = None, workers: int = 1, batch_size: int = 32, task: dict | None = None,
               chunk: int = 64, spec: dict | None = None) -> dict:
    """The network map as a ``convergence-map`` result: STAM on ``task``
    (:func:`stam.dnn.sweep.task_spec`; default digits and the MLP) over the grid
    (:func:`stam.dnn.sweep.map_digits`: batched trainings as resumable jobs in ``store``), each
    cell flagged with Theorem conv's verdict; ``spec``: what every job shares (``stam map``: the
    parameters' :meth:`~stam.params.Params.spec`, :meth:`stam.figures.params.MapParams.network`)."""
    from stam.dnn.sweep import map_digits, task_spec  # late: tests put a stand-in into sys.modules

    task = task or task_spec()
    rows = map_digits(gammas, lams, betas, seeds, epochs, batch_size, store=store, scheduler=scheduler, workers=workers,
                      progress=progress, task=task, chunk=chunk, spec=spec)
    flags = CM.admissible_flags([r["gamma"] for r in rows], [r["lam"] for r in rows], [r["beta"] for r in rows])
    for r, ok in zip(rows, flags):
        r["admissible"] = ok
    rule, rule_text = CM.fixed_beta_rule(betas)
    width = "" if task["width"] == 1.0 else f"-w{task['width']:g}"
    from stam.dnn.sweep import data_source

    from stam.dnn.catalog import BN_IMAGES, bn_protocol

    bn_images = (spec or {}).get("bn_images", BN_IMAGES)
    return {"kind": CM.KIND, "source": task["dataset"], "problem": f"{task['dataset']}-{task['model']}{width}",
            "data_source": data_source(task),
            "metric": "val_acc_binary",
            "metric_label": f"validation accuracy with binary weights, {bn_protocol(bn_images)} (higher is better)",
            "beta_rule": rule, "beta_rule_text": rule_text, "budget": {"epochs": epochs},
            # the training seeds are 0 .. seeds - 1, so the first is recorded as the seed
            "params": dict(gammas=list(gammas), lams=list(lams), betas=list(betas), seeds=seeds, epochs=epochs, seed=0,
                           batch_size=batch_size, model=task["model"], width=task["width"], bn_images=bn_images),
            "rows": rows}


def read_region(path) -> dict:
    """``--region FILE``: a ``lyapunov-region`` result (``stam pep --region --out FILE``), read and checked by
    :func:`stam.figures.results.load_results` (one line naming what is wrong otherwise)."""
    from stam.figures.results import load_results

    results = load_results([path])
    regions = results["lyapunov-region"]
    if len(regions) != 1 or len(results.all()) != 1:
        kinds = ", ".join(sorted({r.kind for r in results.all()})) or "nothing"
        raise UsageError(f"--region {path}: expected one lyapunov-region file (stam pep --region --out FILE), got {kinds}")
    return regions[0].data


def write_outputs(result: dict, out, stem: str, regions=()) -> tuple[Path, Path, Path, Path]:
    """``out/stem.json``, ``.csv`` (:func:`stam.synthetic.convergence_map.write_map`) and the
    figure ``out/stem.png``, ``.pdf``, all or nothing (:func:`stam.io.staged`): the figure is drawn
    first and the four files are written into a stage inside ``out``, then moved into place
    together, so a map that cannot be drawn or written leaves an earlier map's files as they were;
    a killed earlier write's stage and temporaries are removed."""
    from stam.figures.style import save_figure
    from stam.io import staged

    fig = plot_map([result], regions=regions)
    with staged(out, last=(f"{stem}.json",)) as stage:  # the four files replace an earlier map's together
        write_map(result, stage, stem)
        save_figure(fig, stage / stem)
    return tuple(Path(out) / f"{stem}.{ext}" for ext in ("json", "csv", "png", "pdf"))


def _user_builder(spec: str, seed: int):
    """``lam -> problem`` from ``--problem FILE.py:NAME``: NAME must be a function taking ``lam``
    (and, where it accepts them, ``seed``); one line naming what is wrong otherwise."""
    from stam.synthetic.api import PROBLEM_METHODS, check_problem

    name, obj = load_object(spec)
    if not callable(obj) or not accepts(obj, "lam"):
        raise UsageError(f"--problem {spec!r}: the map varies lambda, so {name} must be a function taking lam= "
                         "(and optionally seed=) that returns the problem (stam.synthetic.api.compose)")
    make = lambda lam: build(spec, name, obj, PROBLEM_METHODS, offer=dict(lam=lam, seed=seed))  # noqa: E731
    with guard(spec):
        check_problem(make(1.0), f"--problem {spec!r}")  # errors (a failing call, a wrong value) now, before any work
    return make


def map_command(args) -> int:
    """``stam map``: the parameters of the command line, :func:`run`, the table on stdout."""
    from stam.dnn.params import refuse_data_dir
    from stam.figures.params import MapParams

    refuse_data_dir(args, args.dataset or "digits", synthetic=args.problem is not None)
    result, paths, elapsed = run(MapParams.from_args(args))
    print(format_map(result))
    print(summary_line(result) + f"; {elapsed:.1f} s")
    print(f"wrote {', '.join(map(str, paths[:3]))} and {paths[3]}")
    return 0


def run(params) -> tuple[dict, tuple, float]:
    """``stam map`` as a library call: validate everything, run the map, write JSON + CSV + PNG +
    PDF; returns the result, the four paths and the seconds it ran."""
    from stam.figures.params import (DIGITS_BETAS, DIGITS_SEEDS, SYNTHETIC_GROWTH, SYNTHETIC_SEED, SYNTHETIC_THREADS,
                                     SYNTHETIC_WORK_LIMIT)

    source = "synthetic" if params.problem is not None else (params.dataset or "digits")
    user = source == "synthetic" and is_file_spec(params.problem)
    if source == "synthetic" and not user and params.problem not in CM.MAP_PROBLEMS:
        raise UsageError(f"--problem {params.problem!r} is not a problem the map runs; known: {', '.join(CM.MAP_PROBLEMS)} "
                         "(the families with H = (lambda/2)||x - y||^2) or FILE.py:NAME (a function of lam)")
    if source == "synthetic":
        for flag in ("epochs", "batch_size", "model", "width", "bn_images"):
            if getattr(params, flag) is not None:
                raise UsageError(f"--{flag.replace('_', '-')} is for a network map (--dataset); the synthetic map takes --iterations")
        if params.scheduler is not None or params.workers != 1:
            flag = "--scheduler" if params.scheduler is not None else "--workers"
            raise UsageError(f"{flag} is for a network map (--dataset), whose trainings are jobs; the synthetic map runs "
                             "here, every seed batched")
    else:
        for flag in ("seed", "growth", "threads"):
            if getattr(params, flag) is not None:
                raise UsageError(f"--{flag} is for a synthetic map (--problem); a network map trains seeds 0..N-1 "
                                 "(--n-seeds N) as jobs")
    seed = SYNTHETIC_SEED if params.seed is None else params.seed
    growth = SYNTHETIC_GROWTH if params.growth is None else params.growth
    threads = SYNTHETIC_THREADS if params.threads is None else params.threads
    if source != "synthetic" and params.iterations is not None:
        raise UsageError("--iterations is for --problem binary; a network map takes --epochs")
    gammas = _values(params, "gamma", CM.DEFAULT_GAMMAS)
    lams = _values(params, "lam", CM.DEFAULT_LAMS)
    default_betas = CM.DEFAULT_BETAS if source == "synthetic" else DIGITS_BETAS
    betas = list(params.betas) if params.betas is not None else list(default_betas)
    if not growth > 1:
        raise UsageError(f"--growth {growth:g} must be > 1 (S_T > growth * S_0 counts as diverged)")
    out = check_out_dir(params.out, "--out")
    regions = [read_region(params.region)] if params.region is not None else []
    name = split_spec(params.problem)[1] if user else params.problem
    stem = f"map-{name}" if source == "synthetic" else f"map-{source}"
    build = _user_builder(params.problem, seed) if user else None
    start = time.perf_counter()
    if source == "synthetic":
        import torch

        cells = len(gammas) * len(lams) * len(betas) * (params.n_seeds or CM.DEFAULT_SEEDS)
        work = float(cells) * (params.iterations or CM.DEFAULT_ITERATIONS)
        default = float(CM.DEFAULT_GAMMAS[2] * CM.DEFAULT_LAMS[2] * len(CM.DEFAULT_BETAS) * CM.DEFAULT_SEEDS * CM.DEFAULT_ITERATIONS)
        if work > SYNTHETIC_WORK_LIMIT * default and not params.force:
            raise UsageError(f"{cells} runs (grid x betas x seeds) x {params.iterations or CM.DEFAULT_ITERATIONS} iterations are "
                             f"{work / default:.3g} times the default map's work, above the limit of {SYNTHETIC_WORK_LIMIT}; "
                             "lower them or add --force")
        torch.set_num_threads(threads)
        try:
            with guard(params.problem) if user else contextlib.nullcontext():
                result = CM.run_map(name, gammas, lams, betas, iterations=params.iterations or CM.DEFAULT_ITERATIONS,
                                    seeds=params.n_seeds or CM.DEFAULT_SEEDS, seed=seed, growth=growth,
                                    progress=params.progress, build=build)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    else:
        from stam.dnn import batched, sweep

        net = params.network()  # the data set's sweep defaults filled in: what every job trains, its spec()
        task = sweep.task_spec(net.dataset, net.model, net.width, net.data_dir)
        chunk = batched.runs_per_job(net.model, sweep.job_device())
        sweep.check_memory(task, net.batch_size, chunk, sweep.job_device(), params.force)  # before a model is built
        sweep.check_task(task)  # a missing or broken data set, a model that cannot take it: one line before any work
        from stam.dnn import epochs as ep

        cells = len(gammas) * len(lams) * len(betas) * (params.n_seeds or DIGITS_SEEDS)
        ep.check_work(float(cells) * net.epochs * sweep.train_size(task),
                      f"{cells} trainings (grid x seeds) x {net.epochs} epochs", params.force, cost=sweep.work_cost(task))
        result = digits_map(gammas, lams, betas, params.n_seeds or DIGITS_SEEDS, net.epochs,
                            progress=params.progress, store=out / "jobs", scheduler=params.scheduler, workers=params.workers,
                            batch_size=net.batch_size, task=task, chunk=chunk,
                            spec=net.spec())
    elapsed = time.perf_counter() - start
    result["params"]["seconds"] = round(elapsed, 2)
    return result, write_outputs(result, out, stem, regions), elapsed


def region_caption(region: dict) -> str:
    """What the lines of a ``lyapunov-region`` result on a map say, with its numbers (limits in gamma*lambda
    over the result's lambdas)."""
    from stam.figures.admissible import CLASS_NAMES

    rows = region["rows"]

    def span(values):
        values = [v for v in values if v is not None]
        return "none" if not values else (f"{min(values):.3g}" if f"{min(values):.3g}" == f"{max(values):.3g}"
                                          else f"{min(values):.3g}–{max(values):.3g}")

    paper = [r["paper"]["lo"] * r["lam"] if r["paper"]["lo"] is not None else None for r in rows]
    sampled = [r["sampled"]["lo"] * r["lam"] if r.get("sampled") and r["sampled"]["lo"] is not None else None for r in rows]
    refuted = [r["refuted"]["hi"] * r["lam"] if r["refuted"]["hi"] is not None else None for r in rows]
    convex = [r["convex"]["general"]["lo"] * r["lam"] if "convex" in r and r["convex"]["general"]["lo"] is not None else None
              for r in rows]
    text = (f"Lines (stam pep --region, {len(rows)} λ, L1 = 1): for {CLASS_NAMES[region.get('f_class', 'convex')]} "
            f"a potential of the paper's form certifies STAM up to γλ = {span(paper)} (solid; full gradient)")
    if any(v is not None for v in sampled):
        text += f" and {span(sampled)} with minibatches (dashed)"
    if any(v is not None for v in convex):
        text += f"; for convex F some one-step potential up to γλ = {span(convex)} (dotted)"
    text += (f"; from γλ = {span(refuted)} (dash-dotted) stam pep is unbounded under δ₀ + M₀'_T "
             "≤ 1, the finite-horizon M₀'_T (first T + 1 merits): no bound of Theorem conv's form with "
             "M₀'_T there; the printed theorem's M₀' is not refuted by it.")
    return text


def caption(results) -> str:
    """The caption of the figure kind ``map``: one sentence per map, and what the region's lines say."""
    text = " ".join(map_caption(r.data) for r in results["convergence-map"])
    if any(CM.is_quadratic(r.data) for r in results["convergence-map"]):
        text += "".join(" " + region_caption(r.data) for r in results["lyapunov-region"])
    return text


@declare_figure(
    "map", sources=("convergence-map", "lyapunov-region"), section="map", caption=caption,
    help="map (convergence-map files of stam map; a lyapunov-region file of stam pep --region adds its limits as lines)")
def draw(results, nc=None):
    """The figure kind ``map`` (:mod:`stam.figures.kinds`), with the lines of any ``lyapunov-region`` result."""
    return plot_map([r.data for r in results["convergence-map"]], nc, regions=[r.data for r in results["lyapunov-region"]])
