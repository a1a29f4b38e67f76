"""``stam tune``: an equal-budget comparison of STAM, BC, BR, PSGD and float SGD on any data set
and model (digits and the MLP by default; CIFAR-10 with a VGG-11 of any width).

The protocol follows the external-tuning rules of AlgoPerf and DeepOBS:

1. **Search spaces as data.** Each algorithm declares its search space beside its preset
   (``search_spaces`` in ``presets.json``): log-uniform ranges for its step sizes and couplings,
   each containing the paper's setting.
2. **The same budget for everyone.** Every algorithm gets the same number of trials, drawn
   quasi-randomly (scrambled Sobol, :class:`scipy.stats.qmc.Sobol`, mapped to the log ranges),
   all with the same training seed (``tune_seed``) and the same epochs.
3. **Selection on validation data.** A trial's score is its best validation accuracy with binary
   weights over the epochs (float weights for the float baseline); the best trial of each
   algorithm is chosen by that score.  Trials never read the test set.
4. **Fresh seeds for the numbers.** The chosen configuration is re-run with ``seeds`` fresh
   training seeds (new initial weights and minibatch orders; the validation split stays, as in
   AlgoPerf).  Each run's test accuracy is read at its own validation-selected epoch; the table
   gives mean +- std and a 95% t-interval of these.
5. **The paper's settings, labelled.** The paper's presets (Our1-3, BC, BR, PSGD, Float of Table
   para, their 1000-epoch schedules scaled onto the run) are run on the same fresh seeds and
   reported in rows labelled "paper setting (not tuned)".

Every trial batch and every final run is a job of :func:`stam.jobs.run_jobs`, stored in
``OUT/jobs/`` as it finishes: an interrupted tuning resumes without re-running finished jobs, and
``--scheduler`` sends the jobs to a Dask distributed cluster.  The trials of one algorithm run as
one batched computation (:func:`stam.dnn.batched.train_batched`).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

from stam.dnn import presets
from stam.dnn import catalog
from stam.dnn.catalog import DATASETS, MODELS, algorithm
from stam.dnn.params import TuneParams
from stam.dnn.sweep import check_job, data_source, run_job
from stam.dnn.table import mean_std
from stam.errors import UsageError
from stam.io import atomic_write_text, provenance, staged
from stam.jobs import run_jobs
from stam.datasets import CLASSES, DATA_SOURCE
from stam.results import (COUNT, DICT, DICT_OR_NULL, EPOCHS, WIDTH, FRAC_OR_NULL, LIST, LIST_OR_NULL, NAME, NONEMPTY_LIST, NONNEG_OR_NULL, PCT_OR_NULL, POS, POSINT,
                          POSINT_OR_NULL, PROVENANCE, STR, ResultType, Schema, at_most, holds)

#: fresh seeds of the final runs start here (the trials use ``tune_seed``, default 0)
FINAL_SEED0 = 1000
#: the most trials per algorithm (each a Sobol point drawn before any work)
MAX_TRIALS = 1 << 16


def search_space(algo: str, spaces: dict | None = None) -> dict:
    """The search space of ``algo`` from ``spaces`` (default: ``presets.json``), validated
    (one-line errors): each coordinate a log-uniform range of a hyperparameter, or of a
    ``monomial`` of them (:func:`coordinates`), the coordinates together determining the
    hyperparameters they name."""
    spaces = presets.table().get("search_spaces", {}) if spaces is None else spaces
    if algo not in spaces:
        known = ", ".join(k for k in spaces if not k.startswith("_"))
        raise UsageError(f"unknown algorithm {algo!r} for tuning; choose from {known}")
    space = spaces[algo]
    if not isinstance(space, dict) or not space:
        raise UsageError(f"the search space of {algo} is empty; give it at least one range in presets.json")
    allowed = presets.ALGO_HYPER[algo]
    number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)  # noqa: E731  (true is not 1)
    for key, dim in space.items():
        if not isinstance(dim, dict):
            raise UsageError(f"search space of {algo}: {key} must be {{'log_uniform': [low, high]}}, got {dim!r}")
        mono = dim.get("monomial")
        if mono is None and key not in allowed:
            raise UsageError(f"search space of {algo}: {key!r} is not one of its hyperparameters ({', '.join(allowed)}); "
                             "a coordinate of another name needs a 'monomial' {hyperparameter: exponent}")
        if mono is not None and not (isinstance(mono, dict) and mono and all(h in allowed and number(e) and e != 0
                                                                             for h, e in mono.items())):
            raise UsageError(f"search space of {algo}: {key}'s monomial must map hyperparameters of {algo} "
                             f"({', '.join(allowed)}) to exponents other than 0, got {mono!r}")
        if dim.get("decay") is not None and len(coordinates({key: dim})[key]) != 1:
            raise UsageError(f"search space of {algo}: {key} has a decay but is not a single hyperparameter")
        bounds = dim.get("log_uniform")
        lo, hi = bounds if isinstance(bounds, (list, tuple)) and len(bounds) == 2 else (None, None)
        if not (number(lo) and number(hi) and 0 < lo <= hi < math.inf):
            raise UsageError(f"search space of {algo}: {key} needs 'log_uniform': [low, high] with 0 < low <= high, got {dim}")
    _inverse(algo, space)  # the coordinates determine the hyperparameters
    return space


def coordinates(space: dict) -> dict[str, dict[str, float]]:
    """Each coordinate of a search space as the monomial it is, ``{coordinate: {hyperparameter:
    exponent}}``: a coordinate named by a hyperparameter is that hyperparameter (``{key: 1}``)."""
    return {key: dict(dim.get("monomial") or {key: 1.0}) for key, dim in space.items()}


def _inverse(algo: str, space: dict):
    """``(hyperparameters, A^-1)`` with ``A`` the exponents of the coordinates (rows) in the
    hyperparameters (columns, the algorithm's order): log h = A^-1 log c.  A usage error unless the
    coordinates are as many as the hyperparameters they name and independent."""
    import numpy as np

    mono = coordinates(space)
    hypers = [h for h in presets.ALGO_HYPER[algo] if any(h in m for m in mono.values())]
    A = np.array([[float(m.get(h, 0.0)) for h in hypers] for m in mono.values()])
    if A.shape[0] != A.shape[1] or np.linalg.matrix_rank(A) < len(hypers):
        raise UsageError(f"search space of {algo}: its coordinates {', '.join(mono)} do not determine its hyperparameters "
                         f"{', '.join(hypers)} (as many independent coordinates as hyperparameters are needed)")
    return hypers, np.linalg.inv(A)


def to_hyper(algo: str, space: dict, point: dict) -> dict[str, float]:
    """The hyperparameters of ``algo`` at ``point`` (coordinate -> value) of its search space."""
    import numpy as np

    hypers, inv = _inverse(algo, space)
    logs = inv @ np.log([float(point[k]) for k in space])
    if not all(-700 < v < 700 for v in logs):  # exp would leave the floating-point numbers
        raise UsageError(f"search space of {algo}: the point {point} gives a hyperparameter beyond floating point "
                         f"({', '.join(f'{h} = e^{v:.4g}' for h, v in zip(hypers, logs))}); narrow its ranges")
    return {h: float(math.exp(v)) for h, v in zip(hypers, logs)}


def to_coordinates(space: dict, hyper: dict) -> dict[str, float]:
    """The coordinates of a search space at the hyperparameters ``hyper`` (each monomial evaluated)."""
    return {k: math.prod(float(hyper[h]) ** e for h, e in m.items()) for k, m in coordinates(space).items()}


def _unit_points(dims: int, n: int, seed: int):
    from scipy.stats import qmc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Sobol's balance warning for n not a power of 2
        return qmc.Sobol(dims, scramble=True, seed=seed).random(n)


def _point(space: dict, row) -> dict:
    """A point of the unit cube mapped onto the log ranges of ``space``."""
    out = {}
    for key, u in zip(space, row):
        lo, hi = space[key]["log_uniform"]
        out[key] = math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))
    return out


def step_schedule(name: str) -> dict | None:
    """The shape ``stam tune --schedule NAME`` gives every algorithm's step (``presets.json``'s
    ``step_schedules``; None: constant)."""
    known = presets.step_schedules()
    if name not in known:
        raise UsageError(f"--schedule {name!r}: choose one of {', '.join(known)}")
    return known[name]


def recipe(name: str) -> dict:
    """``{algo: {hyperparameter: constant}}`` of ``stam tune --recipe NAME`` (``presets.json``'s ``recipes``)."""
    known = presets.recipes()
    if name not in known:
        raise UsageError(f"--recipe {name!r}: choose one of {', '.join(known)}")
    return known[name]


def sample_trials(algo: str, n: int, seed: int = 0, spaces: dict | None = None, schedule: str = "constant",
                  recipe_name: str = "none") -> list[dict]:
    """``n`` configurations (hyperparameter -> preset override) from ``algo``'s search space,
    scrambled Sobol points mapped onto the log ranges of its coordinates (the first ``n`` of a
    base-2 sequence) and back to its own hyperparameters (:func:`to_hyper`; 4 significant digits).
    ``schedule``: the step's shape (:func:`step_schedule`), put on the algorithm's step
    (:attr:`stam.dnn.catalog.Algorithm.step`) as a ``warmup_cosine`` piece starting at the sampled
    value; ``recipe_name``: constants added to every trial (:func:`recipe`)."""
    if n < 1:
        raise UsageError(f"--trials {n}: the budget must be at least 1 trial per algorithm")
    space = search_space(algo, spaces)
    shape = step_schedule(schedule)
    fixed = recipe(recipe_name).get(algo, {})
    mono = coordinates(space)
    decays = {next(iter(mono[k])): space[k]["decay"] for k in space if space[k].get("decay")}
    step, power = algorithm(algo).step
    order = presets.ALGO_HYPER[algo]
    trials = []
    for row in _unit_points(len(space), n, seed):
        hyper = to_hyper(algo, space, _point(space, row))
        trial = {}
        for key in sorted(hyper, key=order.index):
            value = float(f"{hyper[key]:.4g}")
            if key in decays:
                trial[key] = [{"from": 1, "value": value, "decay": decays[key]}]
            elif shape and key == step:
                trial[key] = [{"from": 1, "value": value, "warmup_cosine": {**shape, "power": power}}]
            else:
                trial[key] = value
        if shape and not isinstance(trial.get(step), list) or shape and "decay" in trial[step][0]:
            raise UsageError(f"--schedule {schedule} shapes {algo}'s step {step}, which its search space does not sample "
                             "as a constant; add it to the space")
        clash = sorted(set(fixed) & set(trial))
        if clash:
            raise UsageError(f"--recipe {recipe_name} fixes {', '.join(clash)} of {algo}, which its search space samples")
        trials.append({**trial, **fixed})
    return trials


# --------------------------------------------------------------------------- search difficulty

#: a map cell (or a trial) "works" when its score reaches this fraction of the best one
WORKING_LEVEL = 0.9


def find_probability(p: float | None, n: int) -> float | None:
    """The probability that ``n`` independent uniform trials land at least once in a part of
    volume fraction ``p`` of the space: ``1 - (1 - p)^n``."""
    return None if p is None else 1.0 - (1.0 - p) ** n


def map_fraction(map_result: dict, algo: str, spaces: dict | None = None, level: float = WORKING_LEVEL,
                 samples: int = 4096, seed: int = 0) -> dict | None:
    """The fraction of ``algo``'s search space in the working region of a network map (a
    ``convergence-map`` result of ``stam map --dataset``, its rows (gamma, lam, beta, metric)): a
    cell works when its metric (validation accuracy) reaches ``level`` of the map's best; a point
    of the space (one of ``samples`` scrambled Sobol points) works when the map's cell nearest to it
    in the logarithms of the space's coordinates works, over the coordinates the map varies (a
    coordinate the map holds fixed, e.g. the step 1/beta of a map at one beta, is assumed not to
    matter: listed in ``held``).  ``outside``: the fraction of points beyond the range of the map's
    cells in some varied coordinate (the nearest cell is then an extrapolation).  None when the
    map's hyperparameters are not the algorithm's (the map is STAM's)."""
    import numpy as np

    space = search_space(algo, spaces)
    mono = coordinates(space)
    rows = [r for r in map_result.get("rows", []) if r.get("metric") is not None]
    if not rows or not all(h in ("gamma", "lam", "beta") for m in mono.values() for h in m):
        return None
    cells = np.log([[v for v in to_coordinates(space, r).values()] for r in rows])
    varied = [j for j in range(cells.shape[1]) if np.ptp(cells[:, j]) > 1e-9]
    keys = list(space)
    best = max(r["metric"] for r in rows)
    works = np.array([r["metric"] >= level * best for r in rows])
    pts = np.log([[v for v in to_coordinates(space, to_hyper(algo, space, _point(space, row))).values()]
                  for row in _unit_points(len(space), samples, seed)])
    if not varied:
        inside = np.ones(len(pts), dtype=bool)
        hit = np.full(len(pts), bool(works.any()))
    else:
        a, b = cells[:, varied], pts[:, varied]
        nearest = np.concatenate([np.argmin(((b[i : i + 256, None, :] - a[None, :, :]) ** 2).sum(-1), axis=1)
                                  for i in range(0, len(b), 256)])  # in slices: memory of 256 x cells, not samples x cells
        hit = works[nearest]
        inside = np.all((b >= a.min(0) - 1e-9) & (b <= a.max(0) + 1e-9), axis=1)
    held = {keys[j]: float(math.exp(cells[0, j])) for j in range(len(keys)) if j not in varied}
    return {"fraction": float(hit.mean()), "outside": float(1 - inside.mean()), "level": level,
            "cells_working": int(works.sum()), "cells": len(rows), "held": held}


def trial_fraction(result_algos: list, level: float = WORKING_LEVEL) -> dict[str, dict]:
    """Each algorithm's share of trials that work (score at least ``level`` of the best score of any
    trial of any algorithm; with halving, the first rung's scores, which every trial has at the same
    epochs): an estimate, from the tuning itself, of the fraction of its space that trains."""
    def first(t):
        return t.get("rung_scores", [t.get("score")])[0]

    scores = [first(t) for a in result_algos for t in a["trials"] if first(t) is not None]
    if not scores:
        return {a["algo"]: {"fraction": None, "level": level} for a in result_algos}
    bar = level * max(scores)
    return {a["algo"]: {"fraction": sum(first(t) is not None and first(t) >= bar for t in a["trials"]) / len(a["trials"]),
                        "level": level, "bar": bar} for a in result_algos if a["trials"]}


def search_difficulty(result_algos: list, trials: int, spaces: dict | None = None, map_result: dict | None = None) -> dict:
    """``{algo: {"trials": {...}, "map": {...} or None}}``: the fraction of each algorithm's space that
    works, estimated from the tuning's trials (:func:`trial_fraction`) and, given a map, from it
    (:func:`map_fraction`), each with ``find``, the probability that ``trials`` trials find it
    (:func:`find_probability`)."""
    out = {}
    own = trial_fraction(result_algos)
    for a in result_algos:
        entry = {"trials": {**own.get(a["algo"], {"fraction": None}),
                            "find": find_probability(own.get(a["algo"], {}).get("fraction"), trials)}}
        m = map_fraction(map_result, a["algo"], spaces) if map_result else None
        entry["map"] = None if m is None else {**m, "find": find_probability(m["fraction"], trials)}
        out[a["algo"]] = entry
    return out


def difficulty_lines(result: dict) -> list[str]:
    """:func:`search_difficulty` of a tuning result in words, one line per algorithm."""
    diff = result.get("search_difficulty") or {}
    n = result["params"]["trials"]
    lines = []
    for a in result["algorithms"]:
        d = diff.get(a["algo"])
        if not d:
            continue
        t = d["trials"]
        part = [f"{a['label']}: " + ("no scored trial" if t.get("fraction") is None else
                f"{100 * t['fraction']:.0f}% of its trials reach {100 * t['level']:.0f}% of the best trial's score "
                f"({counted(n, 'trials')} {'finds' if n == 1 else 'find'} that region with probability {100 * t['find']:.0f}%)")]
        m = d.get("map")
        if m:
            part.append(f"the map puts {100 * m['fraction']:.0f}% of its space in the working region "
                        f"({m['cells_working']} of {m['cells']} cells; {100 * m['outside']:.0f}% of the space beyond the map), "
                        f"found by {counted(n, 'trials')} with probability {100 * m['find']:.0f}%")
        lines.append("; ".join(part))
    return lines


def read_map(path: str | None, map_type=None) -> dict | None:
    """``--map FILE``: a network map (``stam map --dataset``), read through its result type ``map_type``
    (``convergence-map``, declared by the synthetic map, a peer of this package: the caller above both gives
    it, the command line :mod:`stam.dnn.cli`)."""
    if path is None:
        return None
    from stam.results import read_json

    if map_type is None:
        raise ValueError("a --map is read through its result type: give map_type (the convergence map's, "
                         "as the command line does)")
    kind = read_json(Path(path))
    kind = kind.get("kind") if isinstance(kind, dict) else None
    if kind != map_type.name:
        raise UsageError(f"--map {path}: not a map of stam map (its kind is {kind!r}, not {map_type.name!r})")
    obj = map_type.read(Path(path))
    if not str(obj.get("metric", "")).startswith("val_acc"):
        raise UsageError(f"--map {path}: a map of STAM on a network (stam map --dataset) is needed; this one's metric is "
                         f"{obj.get('metric')!r}")
    return obj


# --------------------------------------------------------------------------- successive halving

def halving_rungs(trials: int, epochs: int, eta: int) -> list[tuple[int, int]]:
    """Successive halving's rungs ``[(trials, epochs), ...]``: rung ``k`` of ``K`` trains
    ``ceil(trials / eta^k)`` trials for ``floor(epochs / eta^(K-k))`` epochs (the last the full
    ``epochs``), with ``K`` the most promotions that leave at least one trial and one epoch.  Each
    rung retrains its trials from scratch at its own epochs (its schedules scaled onto them)."""
    if eta < 2:
        raise UsageError(f"--halving {eta}: the reduction factor must be at least 2 (0 = no halving)")
    K = 0
    while eta ** (K + 1) <= trials and eta ** (K + 1) <= epochs:
        K += 1
    return [(math.ceil(trials / eta**k), max(1, epochs // eta ** (K - k))) for k in range(K + 1)]


def promote(scores: list, keep: int) -> list[int]:
    """The indices of the ``keep`` best ``scores`` (validation accuracies; None or non-finite last,
    ties to the earlier trial), in index order."""
    key = lambda i: (-(scores[i]) if scores[i] is not None and math.isfinite(scores[i]) else math.inf, i)  # noqa: E731
    return sorted(sorted(range(len(scores)), key=key)[:keep])


# --------------------------------------------------------------------------- the protocol

#: Below any of these a tuning compares nothing: its headline and table say so in the line itself
#: (a judgement, stated: fewer epochs than 5 leave every algorithm in its first transient, fewer
#: than 4 trials do not explore a search space, fewer than 3 seeds give no spread).
MIN_BUDGET = {"epochs": 5, "trials": 4, "seeds": 3}


def counted(n, noun: str) -> str:
    """``"1 epoch"``, ``"2 epochs"``: ``n`` and ``noun`` (a plural in s) agreeing."""
    return f"{n} {noun[:-1] if n == 1 else noun}"


def budget_note(params: dict) -> str | None:
    """``None`` when the budget of a tuning (its ``params``: epochs, trials, seeds) can compare
    algorithms (:data:`MIN_BUDGET`), else the words that say it cannot."""
    small = [counted(params[k], k) for k in MIN_BUDGET if params.get(k, MIN_BUDGET[k]) < MIN_BUDGET[k]]
    if not small:
        return None
    need = ", ".join(f"{v} {k}" for k, v in MIN_BUDGET.items())
    return f"smoke-test budget ({', '.join(small)}; comparisons need at least {need}): these numbers compare nothing"


def summarise(values: list[float], bounds: tuple[float, float] = (0.0, 100.0)) -> dict:
    """mean, std (n-1), and the 95% t-interval of the mean of ``values`` (finite ones), clipped
    to ``bounds`` (an accuracy lies in [0, 100]).  No interval from fewer than 3 distinct values
    (two seeds of equal accuracy would give a zero-width one): ``ci95`` is then None."""
    from scipy import stats

    v = [float(x) for x in values if x is not None and math.isfinite(x)]
    n = len(v)
    if n == 0:
        return {"n": 0, "mean": None, "std": None, "ci95": None}
    mean, std = mean_std(v)
    if n == 1:
        return {"n": 1, "mean": mean, "std": None, "ci95": None}
    if len(set(v)) < 3:
        return {"n": n, "mean": mean, "std": std, "ci95": None}
    half = float(stats.t.ppf(0.975, n - 1)) * std / math.sqrt(n)
    return {"n": n, "mean": mean, "std": std, "ci95": [max(bounds[0], mean - half), min(bounds[1], mean + half)]}


def expected_best(scores: list, k: int) -> float:
    """Expected best validation score of ``k`` trials drawn (with replacement) from the trials run
    (Dodge et al. 2019, "Show your work", eq. (1)): with the ``n`` scores sorted,
    ``sum_i v_(i) [(i/n)^k - ((i-1)/n)^k]``.  A trial without a finite score (diverged from the
    first epoch) counts as 0."""
    v = sorted(float(x) if x is not None and math.isfinite(x) else 0.0 for x in scores)
    n = len(v)
    if n == 0 or k < 1:
        raise ValueError(f"expected_best needs at least one score and k >= 1, got {n} scores and k = {k}")
    return sum(x * ((i / n) ** k - ((i - 1) / n) ** k) for i, x in enumerate(v, start=1))


#: the terms of :func:`expected_best` that :func:`expected_best_curve` leaves out weigh at most
#: ``exp(-CURVE_TAIL)`` of the largest score in all (telescoping: ``(1 - C/k)^k <= e^-C``)
CURVE_TAIL = 50.0


def expected_best_curve(scores: list) -> list[float]:
    """:func:`expected_best` of ``scores`` for every budget ``k = 1, ..., n``, in ``O(n log n)``
    (100,000 trials: about a second; the sum for each ``k`` over all ``n`` scores was ``O(n^2)``, hours):
    for ``k`` the weights ``(i/n)^k - ((i-1)/n)^k`` of the scores ranked below ``n (1 - C/k)``
    telescope to at most ``(1 - C/k)^k <= e^-C`` (:data:`CURVE_TAIL` = C), so only the top
    ``C n / k`` scores are summed, an error of at most ``e^-50`` times the largest score."""
    import numpy as np

    v = np.sort(np.array([float(x) if x is not None and math.isfinite(x) else 0.0 for x in scores], dtype=np.float64))
    n = len(v)
    if n == 0:
        raise ValueError("expected_best_curve needs at least one score")
    logp = np.log(np.arange(1, n + 1) / n)  # log(i/n), i = 1..n
    curve = []
    for k in range(1, n + 1):
        lo = max(0, int(n - math.ceil(CURVE_TAIL * n / k)) - 1)  # the first index summed (0-based)
        upper = np.exp(k * logp[lo:])
        lower = np.exp(k * logp[lo - 1:-1]) if lo > 0 else np.concatenate(([0.0], upper[:-1]))
        curve.append(float(np.dot(v[lo:], upper - lower)))
    return curve


def tuning_curves(result: dict) -> dict[str, list[float]]:
    """Each algorithm's expected best validation accuracy after 1, 2, ..., n trials
    (:func:`expected_best` over its trials, :func:`expected_best_curve`): the comparison at every
    budget, not only at the one run."""
    return {a["label"]: expected_best_curve([t["score"] for t in a["trials"]]) for a in result["algorithms"] if a["trials"]}


def _paper_presets(algo: str, dataset: str = "digits") -> list[str]:
    """The paper's presets of ``algo`` (Table para; CIFAR-100's own variants only on CIFAR-100)."""
    mine = [n for n, e in presets.table()["presets"].items() if e["algo"] == algo]
    own = [n for n in mine if n.endswith("cifar100")]
    return own if dataset == "cifar100" and own else [n for n in mine if not n.endswith("cifar100")]


def result_stem(dataset: str) -> str:
    """The file name (without suffix) of a tuning result: ``tune-DATASET``."""
    return f"tune-{dataset}"


def out_path(params: TuneParams) -> Path:
    """Where a tuning writes: ``--out``, by default ``tune-DATASET`` (:func:`result_stem`)."""
    return Path(params.out if params.out is not None else result_stem(params.dataset))


def read_spaces(space_file: str | None) -> dict | None:
    """The search spaces of ``--space-file`` (None: ``presets.json``'s), one-line errors."""
    if space_file is None:
        return None
    import json

    from stam.io import read_input_text

    text = read_input_text(Path(space_file), f"--space-file {space_file}")
    try:
        spaces = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise UsageError(f"--space-file {space_file}: not a readable JSON file ({type(exc).__name__})") from None
    if not isinstance(spaces, dict):
        raise UsageError(f"--space-file {space_file}: expected an object algorithm -> search space")
    return spaces


def run(params: TuneParams, *, map_type=None) -> tuple[dict, Path]:
    """``stam tune`` as a library call: every usage error (the search spaces, the plan, the data
    set, the model, the split, the work limit) before any work, then :func:`tune`; returns the
    result and the path of its JSON file.  ``map_type``: the result type of ``params.map``
    (:func:`read_map`), needed when a map is given."""
    from stam.dnn import batched
    from stam.dnn import epochs as ep
    from stam.dnn.sweep import check_memory, check_task, job_device, train_size, work_cost
    from stam.io import check_out_dir

    spaces = read_spaces(params.space_file)
    read_map(params.map, map_type)  # a bad --map is a usage error before any work
    out = out_path(params)
    check_out_dir(out, "--out")
    task = params.task()
    chunk = batched.runs_per_job(params.model, job_device())
    plan(params, chunk, spaces)  # every usage error before any work
    check_memory(task, params.batch_size, chunk, job_device(), params.force)  # before a model is built
    check_task(task, params.val_fraction, params.split_seed)  # the data set, the model, the split: one line before any work
    n_train = train_size(task)
    rungs = halving_rungs(params.trials, params.epochs, params.halving) if params.halving else [(params.trials, params.epochs)]
    trial_epochs = sum(n * e for n, e in rungs)  # per algorithm
    runs = len(params.algos) * (trial_epochs / params.epochs + params.n_seeds * 2)  # trials, fresh seeds, the paper rows at most
    what = (f"{params.trials} trials" if not params.halving else
            f"{params.trials} trials halved by {params.halving} ({trial_epochs} trial epochs)")
    ep.check_work(float(runs) * params.epochs * n_train, f"{len(params.algos)} algorithms x ({what} + "
                  f"{params.n_seeds} seeds) x {params.epochs} epochs", params.force, cost=work_cost(task))
    result = tune(params, chunk=chunk, spaces=spaces, map_type=map_type)
    return result, out / (result_stem(params.dataset) + ".json")


def _label(algo: str) -> str:
    return algorithm(algo).label


def plan(params: TuneParams, chunk: int, spaces: dict | None = None) -> dict:
    """The whole protocol as data: the trial configurations of every algorithm and the job specs
    of the trial stage (chunks of at most ``chunk`` trials, one batched training each), each job's
    spec the parameters' :meth:`~stam.params.Params.spec` (what is trained on what, how long).
    With ``--halving ETA`` the jobs are those of the first rung (:func:`halving_rungs`; the later
    rungs follow from its results, :func:`tune`) and ``rungs`` lists every rung."""
    algos, trials, seeds, tune_seed = params.algos, params.trials, params.n_seeds, params.tune_seed
    if trials < 1:
        raise UsageError(f"--trials {trials}: the budget must be at least 1 trial per algorithm")
    if trials > MAX_TRIALS:
        raise UsageError(f"--trials {trials}: at most {MAX_TRIALS} trials per algorithm (scrambled Sobol points are drawn for each)")
    if seeds < 2:
        raise UsageError(f"--n-seeds {seeds}: at least 2 fresh seeds are needed for a spread (5 or more recommended)")
    base = params.spec()
    rungs = halving_rungs(trials, params.epochs, params.halving) if params.halving else None
    out = {"base": base, "trials": {}, "jobs": [], "rungs": rungs}
    for algo in algos:
        cfgs = sample_trials(algo, trials, tune_seed, spaces, params.schedule, params.recipe)
        out["trials"][algo] = cfgs
        if rungs:
            out["jobs"] += rung_jobs(algo, cfgs, list(range(trials)), 0, rungs[0][1], base, tune_seed, chunk)
            continue
        for i in range(0, trials, chunk):
            part = cfgs[i : i + chunk]
            out["jobs"].append({"stage": "trial", "algo": algo, "first": i, "overrides": part,
                                "seeds": [tune_seed] * len(part), "test": False, **base})
    return out


def rung_jobs(algo: str, cfgs: list, alive: list[int], rung: int, epochs: int, base: dict, seed: int, chunk: int) -> list[dict]:
    """The jobs of one rung of successive halving: the trials ``alive`` (indices into ``cfgs``) of
    ``algo`` trained for ``epochs``, at most ``chunk`` to a job; each spec ``{**base, <the cell>}``
    with the rung's epochs."""
    return [{"stage": "trial", "algo": algo, "rung": rung, "trials": alive[i : i + chunk],
             "overrides": [cfgs[j] for j in alive[i : i + chunk]], "seeds": [seed] * len(alive[i : i + chunk]),
             "test": False, **base, "epochs": epochs} for i in range(0, len(alive), chunk)]


def _trial_stage(params: TuneParams, p: dict, chunk: int, store: Path) -> dict[str, list[dict]]:
    """Each algorithm's trials, one row per trial (:func:`stam.dnn.sweep.run_job`'s) in the order of
    ``p["trials"]``: the plan's jobs, or, with halving, rung after rung, each rung's best trials
    (on validation accuracy only, :func:`promote`) retrained for the next rung's epochs; a row then
    also has ``rung`` (the last it reached), ``epochs`` (its score's) and ``rung_scores``."""
    run = dict(scheduler=params.scheduler, workers=params.workers, progress=params.progress, check=check_job)
    if not p["rungs"]:
        results = run_jobs(run_job, p["jobs"], store, desc="tune: trials", **run)
        _raise_errors(p["jobs"], results)
        return {algo: [r for spec, res in zip(p["jobs"], results) if spec["algo"] == algo for r in res["rows"]]
                for algo in p["trials"]}
    rows = {algo: [None] * len(cfgs) for algo, cfgs in p["trials"].items()}
    alive = {algo: list(range(len(cfgs))) for algo, cfgs in p["trials"].items()}
    for k, (n_k, e_k) in enumerate(p["rungs"]):
        if k == 0:
            specs = p["jobs"]
        else:
            alive = {algo: [idx[i] for i in promote([rows[algo][j]["score"] for j in idx], n_k)] for algo, idx in alive.items()}
            specs = [job for algo, idx in alive.items()
                     for job in rung_jobs(algo, p["trials"][algo], idx, k, e_k, p["base"], params.tune_seed, chunk)]
        results = run_jobs(run_job, specs, store, desc=f"tune: rung {k + 1}/{len(p['rungs'])} ({n_k} trials x {counted(e_k, 'epochs')})",
                           **run)
        _raise_errors(specs, results)
        for spec, res in zip(specs, results):
            for j, row in zip(spec["trials"], res["rows"]):
                before = rows[spec["algo"]][j]
                rows[spec["algo"]][j] = {**row, "rung": k, "epochs": e_k,
                                         "rung_scores": (before["rung_scores"] if before else []) + [row["score"]]}
    return rows


def tune(params: TuneParams, *, chunk: int = 16, spaces: dict | None = None, map_type=None) -> dict:
    """Run the protocol of the module docstring with ``params`` (what is trained on what: its
    ``task()``, default digits and the MLP); returns (and writes ``OUT/tune-DATASET.json`` and
    ``.md``) the result.  ``chunk``: the most runs one job trains at once; ``spaces``: search
    spaces instead of ``presets.json``'s."""
    algos, trials, seeds, tune_seed, paper = params.algos, params.trials, params.n_seeds, params.tune_seed, params.paper
    scheduler, workers, progress = params.scheduler, params.workers, params.progress
    out_dir = out_path(params)
    store = out_dir / "jobs"
    task = params.task()
    p = plan(params, chunk, spaces)
    base = p["base"]
    map_result = read_map(params.map, map_type)
    trial_rows = _trial_stage(params, p, chunk, store)
    algorithms = []
    finals = []
    fresh = [FINAL_SEED0 + k for k in range(seeds)]
    for algo in algos:
        rows = trial_rows[algo]
        trials_out = [{"overrides": ov, **{k: r[k] for k in ("score", "selected_epoch", "diverged_epoch")},
                       **{k: r[k] for k in ("score_as_trained", "sign_ever", "rung", "epochs", "rung_scores") if k in r}}
                      for ov, r in zip(p["trials"][algo], rows)]
        top = max((t.get("rung", 0) for t in trials_out), default=0)  # with halving, only the last rung's scores compete
        scored = [t for t in trials_out if t["score"] is not None and math.isfinite(t["score"]) and t.get("rung", 0) == top]
        best = max(scored, key=lambda t: t["score"]) if scored else None
        algorithms.append({"algo": algo, "label": _label(algo), "space": search_space(algo, spaces), "trials": trials_out, "best": best})
        if best is not None:
            finals.append({"stage": "final", "algo": algo, "overrides": [best["overrides"]] * seeds, "seeds": fresh,
                           "test": True, **base})
    paper_rows = []
    if paper:
        for algo in algos:
            for name in _paper_presets(algo, task["dataset"]):
                finals.append({"stage": "paper", "algo": algo, "preset": name, "overrides": [{}] * seeds, "seeds": fresh,
                               "test": True, **base})
    parts = [(k, {**spec, "overrides": spec["overrides"][i : i + chunk], "seeds": spec["seeds"][i : i + chunk]})
             for k, spec in enumerate(finals) for i in range(0, seeds, chunk)]  # at most ``chunk`` runs per job
    part_results = run_jobs(run_job, [p for _, p in parts], store, scheduler=scheduler, workers=workers, progress=progress,
                            desc="tune: fresh seeds", check=check_job)
    _raise_errors([p for _, p in parts], part_results)
    final_rows = [[] for _ in finals]
    for (k, _), res in zip(parts, part_results):
        final_rows[k] += res["rows"]
    by_algo = {a["algo"]: a for a in algorithms}
    for spec, rows in zip(finals, final_rows):
        final = {"seeds": spec["seeds"], "test_acc": [r["test_acc"] for r in rows],
                 "test_acc_final_epoch": [r["test_acc_final"] for r in rows],
                 "val_acc": [r["score"] for r in rows], "val_acc_as_trained": [r.get("score_as_trained") for r in rows],
                 "sign_ever": [r.get("sign_ever") for r in rows], "selected_epoch": [r["selected_epoch"] for r in rows],
                 "diverged": sum(r["diverged_epoch"] is not None for r in rows), **summarise([r["test_acc"] for r in rows])}
        if spec["stage"] == "final":
            by_algo[spec["algo"]]["final"] = final
        else:
            label = presets.table()["presets"][spec["preset"]]["label"]
            paper_rows.append({"algo": spec["algo"], "preset": spec["preset"], "label": label, "final": final})
    result = {
        "kind": "tune", "provenance": provenance(), "dataset": task["dataset"], "model": task["model"], "width": task["width"],
        "bn_images": base.get("bn_images", 0),
        "data_source": data_source(task),
        "params": {"algos": list(algos), "trials": trials, "seeds": seeds, "tune_seed": tune_seed, "final_seeds": fresh,
                   "schedule": params.schedule, "recipe": params.recipe, "halving": params.halving, **base},
        "protocol": ("equal budget: the same number of scrambled-Sobol trials per algorithm over its declared search space; "
                     "trials chosen on validation accuracy (binary weights; float weights for Float); the chosen configuration "
                     f"re-run on {seeds} fresh seeds, test accuracy at each run's validation-selected epoch; every accuracy with "
                     + catalog.bn_protocol(base.get("bn_images")) + variants(params)),
        "algorithms": algorithms, "paper_rows": paper_rows,
        "search_difficulty": search_difficulty(algorithms, trials, spaces, map_result),
    }
    if p["rungs"]:
        result["halving"] = {"eta": params.halving, "rungs": [{"trials": n, "epochs": e} for n, e in p["rungs"]],
                             "trial_epochs": sum(n * e for n, e in p["rungs"])}
    stem = result_stem(task["dataset"])
    table_text = format_table(result) + "\n"
    with staged(out_dir, last=(f"{stem}.json",)) as stage:  # the JSON and its table replace an earlier pair together
        atomic_write_text(stage / f"{stem}.md", table_text)
        TUNE.write(result, stage / f"{stem}.json")
    return result


def variants(params: TuneParams) -> str:
    """The protocol's departures from plain equal-budget tuning, in words (empty when none)."""
    out = []
    if params.schedule != "constant":
        out.append(f"every step (lr; STAM's 1/beta) on the {params.schedule} schedule")
    if params.recipe != "none":
        fixed = "; ".join(f"{_label(a)}: {_fmt_hyper(h)}" for a, h in recipe(params.recipe).items() if a in params.algos)
        out.append(f"the {params.recipe} recipe ({fixed or 'no algorithm tuned here'})")
    if params.halving:
        rungs = ", ".join(f"{n} x {counted(e, 'epochs')}" for n, e in halving_rungs(params.trials, params.epochs, params.halving))
        out.append(f"successive halving by {params.halving} (rungs: {rungs}; promotion on validation accuracy, the best trial "
                   "chosen in the last rung)")
    return "".join(f"; {x}" for x in out)


def describe(result: dict) -> str:
    """What was trained, in words: ``CIFAR-10 (JPEG copy), VGG-11 at width 0.125`` / ``digits, MLP``."""
    dataset = result.get("dataset", "digits")
    name = DATASETS.get(dataset, dataset).split(" (")[0]
    src = result.get("data_source") or {}
    if "jpeg" in str(src.get("kind", "")).lower():
        name += " (JPEG copy)"
    model = MODELS.get(result.get("model", "mlp"), result.get("model", "mlp"))
    width = result.get("width", 1.0)
    return f"{name[:1].upper()}{name[1:]}, {model}" + ("" if width == 1.0 else f" at width {width:g}")


def _raise_errors(specs, results) -> None:
    bad = [(s, r) for s, r in zip(specs, results) if "error" in r]
    if bad:
        s, r = bad[0]
        raise RuntimeError(f"{len(bad)} tuning job(s) failed, e.g. {s['stage']} {s['algo']}: {r['error']}")


def _fmt_hyper(overrides: dict) -> str:
    parts = []
    for k, v in overrides.items():
        v = v[0]["value"] if isinstance(v, list) else v
        parts.append(f"{k}={v:.3g}")
    return ", ".join(parts)


def table(result: dict) -> tuple[str, list[str], list[list[str]]]:
    """The equal-budget table as (caption, header, rows): tuned rows, then the paper-settings rows,
    labelled (one layout for the terminal, the Markdown file and the report)."""
    def pm(f):
        if f.get("mean") is None:
            return "-"
        return f"{f['mean']:.1f} \u00b1 {f['std']:.1f}" if f.get("std") is not None else f"{f['mean']:.1f}"

    ci = lambda f: "-" if not f.get("ci95") else f"[{f['ci95'][0]:.1f}, {f['ci95'][1]:.1f}]"  # noqa: E731
    prm = result["params"]
    classes = CLASSES.get(result.get("dataset", "digits"))

    def mean_cell(f):  # an accuracy at or below chance is a bug until shown otherwise: flagged in the cell
        return pm(f) + (" (at chance!)" if classes and catalog.at_chance(f.get("mean"), classes) else "")

    def flips(f, algo):
        signs = [v for v in f.get("sign_ever") or [] if v is not None]
        return f"{100 * sum(signs) / len(signs):.1f}%" if signs and algorithm(algo).binary else "-"

    caption = (f"{describe(result)} ({counted(prm['epochs'], 'epochs')}, batch {prm['batch_size']}): test accuracy (%) with "
               f"binary weights (Float: float weights) on {counted(prm['seeds'], 'fresh seeds')}, each at its validation-selected "
               f"epoch; the same {counted(prm['trials'], 'Sobol trials')} per algorithm, chosen on validation accuracy; "
               f"{catalog.bn_protocol(prm.get('bn_images'))}; signs flipped: the binary weights whose sign ever changed")
    note = budget_note(prm)
    if note:
        caption = f"{caption} ({note})"
    header = ["algorithm", "protocol", "hyperparameters", "val. acc. (best trial)", "test acc. mean \u00b1 std",
              "95% interval", "signs flipped", "diverged"]
    rows = []
    for a in result["algorithms"]:
        f = a.get("final", {})
        best = a.get("best") or {}
        rows.append([a["label"], f"tuned, {len(a['trials'])} trials", _fmt_hyper(best.get("overrides", {})) or "-",
                     "-" if best.get("score") is None else format(best["score"], ".1f"), mean_cell(f), ci(f),
                     flips(f, a["algo"]), str(f.get("diverged", "-"))])
    for r in result["paper_rows"]:
        f = r["final"]
        rows.append([r["label"], "paper setting (not tuned)", f"preset {r['preset']}", "-", mean_cell(f), ci(f),
                     flips(f, r["algo"]), str(f["diverged"])])
    return caption, header, rows


def format_table(result: dict) -> str:
    """:func:`table` as Markdown."""
    from stam.dnn.table import markdown_cell

    caption, header, rows = table(result)
    esc = lambda cells: " | ".join(map(markdown_cell, cells))  # noqa: E731
    lines = [markdown_cell(caption) + ".", "", "| " + esc(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + esc(r) + " |" for r in rows])


def headline(result: dict) -> str:
    """One line: each algorithm's tuned test accuracy with its 95% interval."""
    parts = []
    for a in result["algorithms"]:
        f = a.get("final") or {}
        if f.get("mean") is None:
            parts.append(f"{a['label']} -")
            continue
        iv = f" [{f['ci95'][0]:.1f}, {f['ci95'][1]:.1f}]" if f.get("ci95") else ""
        chance = " (at chance!)" if catalog.at_chance(f["mean"], CLASSES.get(result.get("dataset", "digits"), 10)) else ""
        parts.append(f"{a['label']} {f['mean']:.1f}%{iv}{chance}")
    prm = result["params"]
    note = budget_note(prm)
    return ((f"[{note}] " if note else "") + f"{describe(result)}, equal budget ({counted(prm['trials'], 'trials')} each, chosen on "
            f"validation, {counted(prm['seeds'], 'fresh seeds')}, {counted(prm['epochs'], 'epochs')}), test accuracy with binary "
            f"weights (Float: float; BatchNorm {'re-estimated on ' + str(prm['bn_images']) + ' images' if prm.get('bn_images') else 'as trained'}) and 95% interval "
            "(none from fewer than 3 distinct values): " + ", ".join(parts))



# -- the result (``stam tune``: OUT/tune-DATASET.json, :func:`tune`) --------------------------------------
#: the fresh-seed runs of a tuned or paper setting: test accuracies in percent, their summary
FINAL = Schema(required={"test_acc": LIST, "diverged": COUNT},
               optional={"mean": PCT_OR_NULL, "std": NONNEG_OR_NULL, "ci95": LIST_OR_NULL, "n": COUNT, "seeds": LIST,
                         "val_acc": LIST, "test_acc_final_epoch": LIST, "selected_epoch": LIST, "val_acc_as_trained": LIST,
                         "sign_ever": LIST},
               items={"test_acc": PCT_OR_NULL, "ci95": PCT_OR_NULL, "val_acc": PCT_OR_NULL, "test_acc_final_epoch": PCT_OR_NULL,
                      "selected_epoch": POSINT_OR_NULL, "seeds": COUNT, "val_acc_as_trained": PCT_OR_NULL,
                      "sign_ever": FRAC_OR_NULL},
               rules=(at_most("diverged", "test_acc", "the runs"), at_most("n", "test_acc", "the runs"),
                      holds("ci95", lambda r: r.get("ci95") is None or (len(r["ci95"]) == 2 and (
                          None in r["ci95"] or r["ci95"][0] <= r["ci95"][1])),
                            "must be two bounds [lo, hi] with lo <= hi (a 95% confidence interval, summarise)")))
#: one trial of a tuning: its validation score (percent), the epoch chosen on it
#: (with ``--halving``: ``rung``, the last rung it reached, from 0; ``epochs``, its score's; ``rung_scores``, one per rung)
TRIAL = Schema(optional={"overrides": DICT, "score": PCT_OR_NULL, "selected_epoch": POSINT_OR_NULL,
                         "diverged_epoch": POSINT_OR_NULL, "score_as_trained": PCT_OR_NULL, "sign_ever": FRAC_OR_NULL,
                         "rung": COUNT, "epochs": POSINT, "rung_scores": LIST},
               items={"rung_scores": PCT_OR_NULL})
TUNED = Schema(required={"algo": NAME, "label": STR, "trials": LIST}, optional={"best": DICT_OR_NULL, "final": DICT, "space": DICT},
               inner={"final": FINAL, "best": TRIAL}, each={"trials": TRIAL})
PAPER_ROW = Schema(required={"algo": NAME, "preset": STR, "label": STR, "final": DICT}, inner={"final": FINAL})
TUNE = ResultType(
    "tune", Schema(required={"params": DICT, "algorithms": NONEMPTY_LIST, "paper_rows": LIST},
                   optional={"kind": STR, "dataset": NAME, "model": NAME, "width": WIDTH, "data_source": DICT_OR_NULL,
                             "protocol": STR, "provenance": DICT_OR_NULL, "bn_images": COUNT,
                             # search_difficulty: {algo: {"trials": {fraction, level, bar, find}, "map": {...} or null}},
                             # search_difficulty(); halving: {eta, rungs: [{trials, epochs}], trial_epochs}
                             "search_difficulty": DICT, "halving": DICT},
                   each={"algorithms": TUNED, "paper_rows": PAPER_ROW},
                   inner={"params": Schema(required={"trials": POSINT, "seeds": POSINT, "epochs": EPOCHS,
                                                     "batch_size": POSINT}, optional={"bn_images": COUNT}),
                          "provenance": PROVENANCE, "data_source": DATA_SOURCE}),
    files="tune-*.json", writer="stam tune")


__all__ = ["coordinates", "to_hyper", "to_coordinates", "step_schedule", "recipe", "find_probability", "map_fraction",
           "trial_fraction", "search_difficulty", "difficulty_lines", "read_map", "halving_rungs", "promote", "rung_jobs",
           "WORKING_LEVEL", "TUNE", "search_space", "sample_trials", "FINAL_SEED0", "tune", "plan", "table", "headline",
           "summarise", "budget_note", "counted", "MIN_BUDGET", "format_table", "describe", "result_stem", "data_source", "expected_best", "expected_best_curve", "CURVE_TAIL", "tuning_curves"]
