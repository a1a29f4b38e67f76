"""``stam map``, the convergence map, as one unit: its parameters (:class:`MapParams`, the command's
flags), its run (:func:`make_map`, a library call taking them and returning a :class:`MapRun`), the map of a
network (:func:`digits_map`) and the result in words (:func:`format_map`, the table ``stam map`` prints;
:func:`summary_line`; :func:`map_caption`, the figure's caption).

The result is a ``convergence-map`` file, its type :data:`stam.synthetic.convergence_map.MAP`
(declared beside the synthetic evaluator :func:`stam.synthetic.convergence_map.run_map`, which writes
through it); a network map's trainings are the jobs of :func:`stam.dnn.sweep.map_digits`.  The figure
written beside it is drawn by :func:`stam.figures.map_figure.plot_map`; the report's figure kind ``map``
is :mod:`stam.figures.convergence_map`.  Imports no numpy, torch or matplotlib at module level, so that
``stam map --help`` stays light.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from stam.cliargs import ListArg, RangeArg, n_seeds_arg, out_arg
from stam.datasets import DATASET_NAMES
from stam.dnn.catalog import BN_AUGMENT, BN_IMAGES, VAL_FRACTION, sweep_settings
from stam.dnn.params import bn_augment_arg, bn_images_arg, data_dir_arg, model_arg, width_arg
from stam.errors import UsageError, batch_int, epochs_int, positive_float, positive_int, seed_int, threads_int
from stam.io import check_out_dir
from stam.jobs import scheduler_arg, workers_arg
from stam.params import Params, arg
from stam.synthetic import families as FAM  # the synthetic map's defaults (light)
from stam.userfile import accepts, build, guard, is_file_spec, load_object, split_spec

#: the most points a --gamma-range or --lam-range of ``stam map`` may ask for
MAX_POINTS = 200
#: ``stam map``'s value lists (sorted, each value once) and ranges
#: the values a map's grid may take (gamma, lambda, beta): its axes are logarithmic, and values beyond
#: these make the runs and the axes leave floating point (a gamma of 1e308, 1e-320)
GRID_LIMITS = (1e-12, 1e12)


def grid_float(text: str) -> float:
    """argparse type: a number > 0 within :data:`GRID_LIMITS`."""
    v = positive_float(text)
    if not GRID_LIMITS[0] <= v <= GRID_LIMITS[1]:
        raise argparse.ArgumentTypeError(f"{v:g} is outside [{GRID_LIMITS[0]:g}, {GRID_LIMITS[1]:g}]; give values of ordinary size")
    return v


GRID_LIST = ListArg(grid_float, "numbers > 0 within [1e-12, 1e12]", "0.1,1,10", sort=True)
MAP_RANGE = RangeArg("0.001:30:8", max_points=MAX_POINTS, bounds=GRID_LIMITS)

#: The default digits map: 64 cells (the 8 x 8 default grid) x 3 seeds x 60 epochs
#: (:data:`stam.dnn.catalog.SWEEP_DEFAULTS`), at one beta:
#: ``beta = 20``, i.e. the y-step eq. (algy) with step 1/beta = 0.05, the learning rate at which
#: plain SGD trains this MLP in a few epochs (so beta does not hold the map back).
DIGITS_SEEDS = 3
DIGITS_BETAS = (20.0,)
#: the most work a synthetic map does without --force: this many times the default map's (runs x iterations)
SYNTHETIC_WORK_LIMIT = 50
#: a synthetic map's defaults where a flag is not given
SYNTHETIC_SEED, SYNTHETIC_THREADS = 0, 1


def _range(r) -> str:
    return f"{r[0]:g}:{r[1]:g}:{r[2]}"


@dataclass(frozen=True)
class MapParams(Params):
    """``stam map``'s parameters: the source (``problem`` or ``dataset``), the grid, the budget,
    where it writes and how it runs."""

    problem: str | None = arg("--problem", default=None, metavar="NAME|FILE.py:NAME", exclusive="source",
                              help="synthetic problem family (binary), or a function of lam= in a Python file returning a "
                              "problem")
    dataset: str | None = arg("--dataset", choices=DATASET_NAMES, default=None, exclusive="source", job=True,
                              help="real data: digits (the default when --problem is not given), cifar10 or cifar100")
    gammas: list | None = arg("--gammas", type=GRID_LIST, default=None, metavar="G1,G2,...", exclusive="gamma",
                              help=f"gamma values (default: --gamma-range {_range(FAM.MAP_GAMMAS)})")
    gamma_range: tuple | None = arg("--gamma-range", type=MAP_RANGE, default=None, metavar="LO:HI:N", exclusive="gamma",
                                    help="N gammas from LO to HI, geometrically spaced")
    lams: list | None = arg("--lams", type=GRID_LIST, default=None, metavar="L1,L2,...", exclusive="lam",
                            help=f"lambda values (default: --lam-range {_range(FAM.MAP_LAMS)})")
    lam_range: tuple | None = arg("--lam-range", type=MAP_RANGE, default=None, metavar="LO:HI:N", exclusive="lam",
                                  help="N lambdas from LO to HI, geometrically spaced")
    betas: list | None = arg("--betas", type=GRID_LIST, default=None, metavar="B1,B2,...",
                             help=f"beta values, one panel each (default: synthetic {','.join(f'{b:g}' for b in FAM.MAP_BETAS)}; "
                             f"digits {','.join(f'{b:g}' for b in DIGITS_BETAS)})")
    iterations: int | None = arg("--iterations", type=positive_int, default=None,
                                 help=f"synthetic: STAM iterations T (default {FAM.MAP_ITERATIONS})")
    epochs: int | None = arg("--epochs", type=epochs_int, default=None, job=True,
                             help="network: training epochs (default 60 digits, 10 CIFAR)")
    force: bool = arg("--force", action="store_true", default=False,
                      help="work above the limit: network, 10 times the paper's run in image passes; synthetic, "
                      f"{SYNTHETIC_WORK_LIMIT} times the default map's iterations")
    batch_size: int | None = arg("--batch-size", type=batch_int, default=None, job=True,
                                 help="network: batch size (default 32 digits, 128 CIFAR)")
    model: str | None = model_arg()
    width: float | None = width_arg()
    data_dir: str = data_dir_arg()
    bn_images: int | None = bn_images_arg(default=None, job=True)
    bn_augment: bool | None = bn_augment_arg(default=None, job=True)
    n_seeds: int | None = n_seeds_arg(None, f"seeds per cell (default: {FAM.MAP_SEEDS} synthetic, {DIGITS_SEEDS} digits)")
    seed: int | None = arg("--seed", type=seed_int, default=None,
                           help=f"synthetic: seed of the instance and of the sampling (default {SYNTHETIC_SEED})")
    growth: float | None = arg("--growth", type=positive_float, default=None,
                               help=f"synthetic: a seed with S_T > GROWTH * S_0 counts as diverged (default {FAM.MAP_GROWTH:g})")
    threads: int | None = arg("--threads", type=threads_int, default=None,
                              help=f"synthetic: torch CPU threads (default {SYNTHETIC_THREADS})")
    out: str = out_arg(default="results/map", help="output folder (default results/map)")
    region: str | None = arg("--region", metavar="FILE.json", default=None,
                             help="a lyapunov-region file of stam pep --region (e.g. benchmarks/results/lyapunov_region.json): "
                             "its limits (certified for the paper's class, full and minibatch gradients; convex F; refuted) "
                             "drawn as lines")
    progress: bool = arg("--no-progress", action="store_false", default=True, help="no progress bar")
    scheduler: str | None = scheduler_arg()  # a network map's trainings are jobs in DIR/jobs, here or on a Dask cluster
    workers: int = workers_arg()
    # library-only: the validation split of every training of a network map (part of every job)
    val_fraction: float = arg(default=VAL_FRACTION, job=True)
    split_seed: int = arg(default=0, job=True)

    def network(self) -> "MapParams":
        """A network map's parameters as its jobs train: the data set (digits where not given) and, where a
        flag is not given, the data set's sweep defaults (:data:`stam.dnn.catalog.SWEEP_DEFAULTS`: model,
        width, batch size, epochs).  Every job of the map is its :meth:`spec` (the fields marked ``job``:
        what is trained on what, how long) and its cell (:func:`stam.dnn.sweep.map_digits`)."""
        dataset = self.dataset or "digits"
        d = sweep_settings(dataset, self)
        return dataclasses.replace(self, dataset=dataset, **dict(d, width=float(d["width"])), data_dir=str(self.data_dir),
                                   bn_images=BN_IMAGES if self.bn_images is None else self.bn_images,
                                   bn_augment=BN_AUGMENT if self.bn_augment is None else self.bn_augment)


# --- the result in words ---------------------------------------------------------------------
#: digits: a cell "trains" when its validation accuracy with binary weights reaches this
TRAINS_AT = 50.0  # percent


def _side(row) -> bool:
    """Below the curve gamma lambda = 1/sqrt(5)?"""
    from stam.theory.symbolic.numeric import GAMMA_LAMBDA_LIMIT

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
    import numpy as np

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
    from stam.dnn.catalog import bn_augmented, bn_protocol  # light: no torch

    prm = data.get("params") or {}
    return bn_protocol(prm.get("bn_images"), None, bn_augmented({**prm, "dataset": data.get("source")}))


def _network_colours(data: dict) -> str:
    """What a network map's three rows of panels colour (:data:`stam.figures.map_figure.NETWORK_ROWS`), each on
    its own scale fitted to the data."""
    from stam.figures.map_figure import recorded

    flips = recorded(data, "sign_ever_changed")
    return ("Colour, first row: validation accuracy with binary weights, " + _bn_words(data) + "; second row: "
            + ("the same with the float weights x at the same epochs" if recorded(data, "val_acc_float")
               else "the float weights' accuracy, not recorded (this map's jobs predate it)")
            + ("; third row: fraction of binary weights whose sign ever changed" if flips else "")
            + "; each row's colour scale spans its cells' range over the betas (fitted to the data, not 0-100%)")


def map_caption(data: dict) -> str:
    """What the figure shows, with the numbers (plain text; the report escapes it)."""
    from stam.figures.map_figure import problem_name
    from stam.synthetic.convergence_map import is_quadratic

    s = summary(data)
    budget = ", ".join(f"{k} = {v}" for k, v in data["budget"].items())
    seeds = sorted({r["seeds"] for r in data["rows"]})
    adm_good = sum(_good(data, r) for r in data["rows"] if r["admissible"])
    colour = ("Colour: log10 E S_T (lower is better)" if data["source"] == "synthetic" else _network_colours(data))
    head = (f"Convergence map, {data['source']} {problem_name(data)} ({budget}, {'/'.join(map(str, seeds))} seeds; "
            f"{data.get('beta_rule_text') or data['beta_rule']['kind']}). Of {s['all']['cells']} (\u03b3, \u03bb, \u03b2) "
            f"cells, {s['all']['good']} {_verb(data)} and {s['all']['diverged']} have diverged seeds. ")
    if not is_quadratic(data):
        return (head + f"{s['all']['admissible']} cells satisfy Theorem conv's conditions at the constants of the "
                f"problem's own H (\u2605), {adm_good} of them {_word(data)}. {colour}; x: some seeds diverged, hatched: all did.")
    return (head + f"Below \u03b3\u03bb = 1/\u221a5: {s['below']['good']} of {s['below']['cells']} cells {_word(data)}, "
            f"{s['below']['diverged']} have diverged seeds, median {data['metric']} {_num(data, s['below']['median'])}; "
            f"above it: {s['above']['good']} of {s['above']['cells']} {_word(data)}, {s['above']['diverged']} have "
            f"diverged seeds, median {_num(data, s['above']['median'])}. "
            f"{s['all']['admissible']} cells satisfy Theorem conv's conditions (\u2605), {adm_good} of them "
            f"{_word(data)}. {colour}; x: some seeds diverged, hatched: "
            "all did; shaded and outlined: K1 > 0 and [(L2*)\u00b2+(L5*)\u00b2]\u03b3\u00b2 \u2264 1; dashed: "
            "\u03b3\u03bb = 1/\u221a5; dotted: \u03b3\u03bb = 1, up to which the paper's class (any proper lsc F) is "
            "certified (the paper's potential \u03b4 + M is bounded below exactly there); markers: the paper's settings "
            "(Table para, Section sub:3.3).")


def format_map(data: dict) -> str:
    """A text table per beta: lambda down, gamma across; metric, D (all seeds diverged),
    d (some did), * (Theorem conv's conditions hold)."""
    from stam.figures.map_figure import cell_grid, map_betas

    fmt = (lambda v: f"{v:.2e}") if data["source"] == "synthetic" else (lambda v: f"{v:.1f}%")
    lines = [f"{data['metric_label']}; D: all seeds diverged, d: some did, *: Theorem conv's conditions hold"]
    for beta in map_betas(data):
        gammas, lams, vals, div, adm, present = cell_grid(data["rows"], beta, "metric")
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
    """The map in one line (``stam map``'s last line but one, the demo's headline)."""
    from stam.figures.map_figure import problem_name
    from stam.synthetic.convergence_map import is_quadratic

    s = summary(data)
    word = _word(data)
    good_admissible = sum(_good(data, r) for r in data["rows"] if r["admissible"])
    if not is_quadratic(data):  # the curve gamma*lambda = 1/sqrt(5) belongs to H = (lambda/2)||x - y||^2
        return (f"map {problem_name(data)}: {s['all']['cells']} cells, {s['all']['good']} {word}, {s['all']['diverged']} with "
                f"diverged seeds, {s['all']['admissible']} satisfy Theorem conv at its H's constants "
                f"({good_admissible} of those {word})")
    return (f"map {problem_name(data)}: {s['all']['cells']} cells, {s['all']['good']} {word}, {s['all']['diverged']} with "
            f"diverged seeds ({s['below']['diverged']} of them below gamma*lambda = 1/sqrt(5)), median {data['metric']} "
            f"{_num(data, s['below']['median'])} below that curve and {_num(data, s['above']['median'])} above, "
            f"{s['all']['admissible']} satisfy Theorem conv ({good_admissible} of those {word})")



# --- the run ---------------------------------------------------------------------------------
def _values(params, name: str, default) -> list[float]:
    """``--NAMEs`` (a list, parsed by :class:`stam.cliargs.ListArg`), else ``--NAME-range``
    (``(lo, hi, n)`` from :class:`stam.cliargs.RangeArg`) as its log grid, else ``default``'s."""
    from stam.cliargs import log_grid

    listed, ranged = getattr(params, f"{name}s"), getattr(params, f"{name}_range")
    if listed is not None:
        return list(listed)
    return log_grid(*(ranged if ranged is not None else default))


def digits_map(params: MapParams, gammas, lams, betas, *, store=None, task: dict | None = None, chunk: int = 64) -> dict:
    """The network map of ``params`` (:class:`MapParams`; its data set, model, width, batch size and epochs as
    :meth:`MapParams.network` resolves them, its seeds, its ``progress``, ``scheduler`` and ``workers``) on the grid
    ``gammas`` x ``lams`` x ``betas`` as a ``convergence-map`` result: STAM on ``task``
    (:func:`stam.dnn.sweep.task_spec`; default: the one of the parameters) over the grid
    (:func:`stam.dnn.sweep.map_digits`: batched trainings, ``chunk`` runs a job, as resumable jobs in ``store``),
    each cell flagged with Theorem conv's verdict; every job shares the parameters'
    :meth:`~stam.params.Params.spec`."""
    from stam.dnn.sweep import map_digits, task_spec  # late: tests put a stand-in into sys.modules
    from stam.synthetic import convergence_map as CM

    net = params.network()
    seeds, epochs, batch_size, spec = params.n_seeds or DIGITS_SEEDS, net.epochs, net.batch_size, net.spec()
    task = task or task_spec(net.dataset, net.model, net.width, net.data_dir)
    rows = map_digits(gammas, lams, betas, seeds, epochs, batch_size, store=store, scheduler=params.scheduler,
                      workers=params.workers, progress=params.progress, task=task, chunk=chunk, spec=spec)
    flags = CM.admissible_flags([r["gamma"] for r in rows], [r["lam"] for r in rows], [r["beta"] for r in rows])
    for r, ok in zip(rows, flags):
        r["admissible"] = ok
    rule, rule_text = CM.fixed_beta_rule(betas)
    width = "" if task["width"] == 1.0 else f"-w{task['width']:g}"
    from stam.dnn.sweep import data_source

    from stam.dnn.catalog import BN_IMAGES, bn_augmented, bn_protocol

    bn_images, bn_augment = spec.get("bn_images", BN_IMAGES), bn_augmented({**spec, **task})
    return {"kind": CM.KIND, "source": task["dataset"], "problem": f"{task['dataset']}-{task['model']}{width}",
            "data_source": data_source(task),
            "metric": "val_acc_binary",
            "metric_label": f"validation accuracy with binary weights, {bn_protocol(bn_images, None, bn_augment)} (higher is better)",
            "beta_rule": rule, "beta_rule_text": rule_text, "budget": {"epochs": epochs},
            # the training seeds are 0 .. seeds - 1, so the first is recorded as the seed
            "params": dict(gammas=list(gammas), lams=list(lams), betas=list(betas), seeds=seeds, epochs=epochs, seed=0,
                           batch_size=batch_size, model=task["model"], width=task["width"], bn_images=bn_images,
                           **({"bn_augment": True} if bn_augment else {})),
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
    from stam.figures.map_figure import plot_map
    from stam.figures.style import save_figure
    from stam.io import staged
    from stam.synthetic.convergence_map import write_map

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


class MapRun(NamedTuple):
    """What :func:`make_map` returns: the ``convergence-map`` result (as written to ``paths[0]``), the four
    files written (``.json``, ``.csv``, ``.png``, ``.pdf``) and the seconds the map ran."""

    result: dict
    paths: tuple
    seconds: float


@dataclass(frozen=True)
class _Plan:
    """What a map of ``params`` runs, resolved and checked before any work (:func:`plan`)."""

    source: str  # "synthetic" or a data set
    user: bool  # a user's problem, --problem FILE.py:NAME
    name: str | None  # the problem's name (synthetic)
    gammas: list
    lams: list
    betas: list
    out: Path
    stem: str
    regions: list
    seed: int
    growth: float
    threads: int
    build: object  # a user's problem: lam -> problem (:func:`_user_builder`); None otherwise


def _refuse_other_flags(params: MapParams, source: str) -> None:
    """A flag of the other kind of map (network or synthetic) is an error, not ignored."""
    if source == "synthetic":
        for field, flag in (("epochs", "--epochs"), ("batch_size", "--batch-size"), ("model", "--model"), ("width", "--width"),
                            ("bn_images", "--bn-images"), ("bn_augment", "--bn-unaugmented")):
            if getattr(params, field) is not None:
                raise UsageError(f"{flag} is for a network map (--dataset); the synthetic map takes --iterations")
        if params.scheduler is not None or params.workers != 1:
            flag = "--scheduler" if params.scheduler is not None else "--workers"
            raise UsageError(f"{flag} is for a network map (--dataset), whose trainings are jobs; the synthetic map runs "
                             "here, every seed batched")
    else:
        for flag in ("seed", "growth", "threads"):
            if getattr(params, flag) is not None:
                raise UsageError(f"--{flag} is for a synthetic map (--problem); a network map trains seeds 0..N-1 "
                                 "(--n-seeds N) as jobs")


def plan(params: MapParams) -> _Plan:
    """The map of ``params``, every flag checked (one line naming the bad one) and the defaults of its
    source filled in; reads the --region file and loads a user's problem (--problem FILE.py:NAME), writes nothing."""
    source = "synthetic" if params.problem is not None else (params.dataset or "digits")
    user = source == "synthetic" and is_file_spec(params.problem)
    if source == "synthetic" and not user and params.problem not in FAM.MAP_NAMES:
        raise UsageError(f"--problem {params.problem!r} is not a problem the map runs; known: {', '.join(FAM.MAP_NAMES)} "
                         "(the families with H = (lambda/2)||x - y||^2) or FILE.py:NAME (a function of lam)")
    _refuse_other_flags(params, source)
    seed = SYNTHETIC_SEED if params.seed is None else params.seed
    growth = FAM.MAP_GROWTH if params.growth is None else params.growth
    threads = SYNTHETIC_THREADS if params.threads is None else params.threads
    if source != "synthetic" and params.iterations is not None:
        raise UsageError("--iterations is for --problem binary; a network map takes --epochs")
    gammas = _values(params, "gamma", FAM.MAP_GAMMAS)
    lams = _values(params, "lam", FAM.MAP_LAMS)
    default_betas = FAM.MAP_BETAS if source == "synthetic" else DIGITS_BETAS
    betas = list(params.betas) if params.betas is not None else list(default_betas)
    if not growth > 1:
        raise UsageError(f"--growth {growth:g} must be > 1 (S_T > growth * S_0 counts as diverged)")
    out = check_out_dir(params.out, "--out")
    regions = [read_region(params.region)] if params.region is not None else []
    name = split_spec(params.problem)[1] if user else params.problem
    stem = f"map-{name}" if source == "synthetic" else f"map-{source}"
    make = _user_builder(params.problem, seed) if user else None  # the user's file loaded and its problem checked
    return _Plan(source, user, name, gammas, lams, betas, out, stem, regions, seed, growth, threads, make)


def _synthetic_map(params: MapParams, p: _Plan) -> dict:
    """The synthetic map (:func:`stam.synthetic.convergence_map.run_map`), refused above its work limit."""
    import torch

    from stam.synthetic import convergence_map as CM

    cells = len(p.gammas) * len(p.lams) * len(p.betas) * (params.n_seeds or FAM.MAP_SEEDS)
    work = float(cells) * (params.iterations or FAM.MAP_ITERATIONS)
    default = float(FAM.MAP_GAMMAS[2] * FAM.MAP_LAMS[2] * len(FAM.MAP_BETAS) * FAM.MAP_SEEDS * FAM.MAP_ITERATIONS)
    if work > SYNTHETIC_WORK_LIMIT * default and not params.force:
        raise UsageError(f"{cells} runs (grid x betas x seeds) x {params.iterations or FAM.MAP_ITERATIONS} iterations are "
                         f"{work / default:.3g} times the default map's work, above the limit of {SYNTHETIC_WORK_LIMIT}; "
                         "lower them or add --force")
    torch.set_num_threads(p.threads)
    try:
        with guard(params.problem) if p.user else contextlib.nullcontext():
            return CM.run_map(CM.SyntheticMap(p.name, p.gammas, p.lams, p.betas, iterations=params.iterations or FAM.MAP_ITERATIONS,
                                              seeds=params.n_seeds or FAM.MAP_SEEDS, seed=p.seed, growth=p.growth,
                                              build=p.build), progress=params.progress)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _network_map(params: MapParams, p: _Plan) -> dict:
    """The network map (:func:`digits_map`): its task, memory and work checked before any training."""
    from stam.dnn import epochs as ep
    from stam.dnn import sweep
    from stam.dnn.compiled import runs_per_job

    net = params.network()  # the data set's sweep defaults filled in: what every job trains, its spec()
    task = sweep.task_spec(net.dataset, net.model, net.width, net.data_dir)
    chunk = runs_per_job(net.model, sweep.job_device())
    sweep.check_memory(task, net.batch_size, chunk, sweep.job_device(), params.force)  # before a model is built
    sweep.check_task(task)  # a missing or broken data set, a model that cannot take it: one line before any work
    cells = len(p.gammas) * len(p.lams) * len(p.betas) * (params.n_seeds or DIGITS_SEEDS)
    ep.check_work(float(cells) * net.epochs * sweep.train_size(task),
                  f"{cells} trainings (grid x seeds) x {net.epochs} epochs", params.force, cost=sweep.work_cost(task))
    return digits_map(params, p.gammas, p.lams, p.betas, store=p.out / "jobs", task=task, chunk=chunk)


def make_map(params: MapParams) -> MapRun:
    """``stam map`` as a library call: validate everything (:func:`plan`), run the map (synthetic or a
    network), write JSON + CSV + PNG + PDF (:func:`write_outputs`); returns the result, the four paths and
    the seconds it ran (:class:`MapRun`, a tuple of the three)."""
    p = plan(params)
    start = time.perf_counter()
    if p.source == "synthetic":
        result = _synthetic_map(params, p)
    else:
        result = _network_map(params, p)
    elapsed = time.perf_counter() - start
    result["params"]["seconds"] = round(elapsed, 2)
    return MapRun(result, write_outputs(result, p.out, p.stem, p.regions), elapsed)


__all__ = ["MapParams", "MapRun", "make_map", "plan", "digits_map", "write_outputs", "read_region", "format_map",
           "summary_line", "summary", "map_caption", "TRAINS_AT", "MAX_POINTS", "GRID_LIMITS", "grid_float", "GRID_LIST",
           "MAP_RANGE", "DIGITS_SEEDS", "DIGITS_BETAS", "SYNTHETIC_SEED", "SYNTHETIC_THREADS",
           "SYNTHETIC_WORK_LIMIT"]
