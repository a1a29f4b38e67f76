"""``stam tune``'s search (:mod:`stam.dnn.tune`): each algorithm's search space as data (declared by its
update rule, :attr:`stam.rules.UpdateRule.search_space`, or ``--space-file``), its coordinates (hyperparameters
or their monomials), the trials drawn quasi-randomly (scrambled Sobol points mapped to the log ranges), the step
schedules and recipes, and successive halving's rungs.

Equal-budget tuning: each algorithm's search space is sampled quasi-randomly (scrambled Sobol) on a log scale,
and every algorithm gets the same number of trials.  A key of a space names a hyperparameter of the algorithm's
default preset, overridden by a constant (or, with ``"decay"``, by a schedule that starts at the sampled value),
or, with ``"monomial": {hyperparameter: exponent}``, a coordinate that is a product of powers of them (the
coordinates of a space together determine its hyperparameters: the map back solves the linear system in the
logarithms); every other hyperparameter keeps its preset's schedule, scaled onto the run.  Each range contains
the paper's setting (Table para; each rule's module says why its space is what it is).  A space's coordinates are
sampled in the order the rule declares them (the Sobol dimensions).
"""

from __future__ import annotations

import copy
import math
import warnings
from pathlib import Path

from stam.dnn import presets
from stam.dnn.catalog import algorithm, algorithms
from stam.errors import UsageError

def declared_spaces() -> dict:
    """``{algorithm: its search space}`` as the update rules declare them
    (:attr:`stam.rules.UpdateRule.search_space`; a rule without one is not tuned), in the paper's
    order: what ``stam tune`` searches unless ``--space-file`` is given.  A copy: a reader cannot
    change a rule's declaration."""
    return {a.name: copy.deepcopy(a.search_space) for a in algorithms() if a.search_space}


def search_space(algo: str, spaces: dict | None = None) -> dict:
    """The search space of ``algo`` from ``spaces`` (default: the rules' own, :func:`declared_spaces`),
    validated (one-line errors): each coordinate a log-uniform range of a hyperparameter, or of a
    ``monomial`` of them (:func:`coordinates`), the coordinates together determining the
    hyperparameters they name."""
    spaces = declared_spaces() if spaces is None else spaces
    if algo not in spaces:
        known = ", ".join(k for k in spaces if not k.startswith("_"))
        raise UsageError(f"unknown algorithm {algo!r} for tuning; choose from {known}")
    space = spaces[algo]
    if not isinstance(space, dict) or not space:
        raise UsageError(f"the search space of {algo} is empty; give it at least one range (its rule's search_space, "
                         "or the --space-file)")
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
        if dim.get("decay") is not None:  # the schedule each trial gets (sample_trials): checked before any job runs
            hyper = next(iter(coordinates({key: dim})[key]))
            try:
                presets.check_spec(hyper, [{"from": 1, "value": lo, "decay": dim["decay"]}])
            except UsageError as exc:
                raise UsageError(f"search space of {algo}: {key}'s decay: {str(exc).removeprefix(hyper + ': ')}") from None
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


def unit_points(dims: int, n: int, seed: int):
    from scipy.stats import qmc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Sobol's balance warning for n not a power of 2
        return qmc.Sobol(dims, scramble=True, seed=seed).random(n)


def cube_point(space: dict, row) -> dict:
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
    for row in unit_points(len(space), n, seed):
        hyper = to_hyper(algo, space, cube_point(space, row))
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


def read_spaces(space_file: str | None) -> dict | None:
    """The search spaces of ``--space-file``, one-line errors (None: no file, the rules' own,
    :func:`declared_spaces`).  The file replaces them all: an algorithm it leaves out is no choice of ``--algos`` with it."""
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
    return presets.named_constants(spaces, f"--space-file {space_file}")  # "stam.steps:BR_RHO" as presets.json reads it


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


__all__ = ["declared_spaces", "search_space", "coordinates", "to_hyper", "to_coordinates", "unit_points", "cube_point", "step_schedule",
           "recipe", "sample_trials", "read_spaces", "halving_rungs", "promote"]
