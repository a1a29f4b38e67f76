"""The numbers of a tuning (:mod:`stam.dnn.tune`): how hard each search is (the share of its space that works,
from its trials or from a network map), whether its budget compares anything, the summary of fresh-seed accuracies
(mean, std, 95% t-interval) and the expected best of k trials (tuning curves)."""

from __future__ import annotations

import math
from pathlib import Path

from stam.dnn.catalog import algorithm
from stam.dnn.table import mean_std
from stam.dnn.tunespace import coordinates, cube_point, search_space, to_coordinates, to_hyper, unit_points
from stam.errors import UsageError

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
    pts = np.log([[v for v in to_coordinates(space, to_hyper(algo, space, cube_point(space, row))).values()]
                  for row in unit_points(len(space), samples, seed)])
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
    """Each algorithm's share of trials that work, two ways, with halving on the first rung's scores
    (which every trial has at the same epochs): an estimate, from the tuning itself, of the fraction
    of its space that trains.

    - ``fraction``: the score reaches ``level`` of the best score of any trial of a binary
      algorithm (``bar``), one bar for all: Float's float-weight accuracy is another network's, so
      it sets the bar only where no binary algorithm was tuned;
    - ``own_fraction``: the score reaches ``level`` of the algorithm's own best trial (``own_bar``):
      how hard its search is, apart from how good its best is (an algorithm that starts slower
      than another can have no trial at the common bar and still find its own best often)."""
    def first(t):
        return t.get("rung_scores", [t.get("score")])[0]

    def binary(a):
        try:
            return bool(algorithm(a["algo"]).binary)
        except KeyError:
            return True

    def share(a, bar):
        return sum(first(t) is not None and first(t) >= bar for t in a["trials"]) / len(a["trials"])

    setters = [a for a in result_algos if binary(a)] or result_algos
    scores = [first(t) for a in setters for t in a["trials"] if first(t) is not None]
    if not scores:
        return {a["algo"]: {"fraction": None, "level": level} for a in result_algos}
    bar = level * max(scores)
    out = {}
    for a in result_algos:
        if not a["trials"]:
            continue
        own = [first(t) for t in a["trials"] if first(t) is not None]
        out[a["algo"]] = {"fraction": share(a, bar), "level": level, "bar": bar,
                          **({"own_fraction": share(a, level * max(own)), "own_bar": level * max(own)} if own else {})}
    return out


def search_difficulty(result_algos: list, trials: int, spaces: dict | None = None, map_result: dict | None = None) -> dict:
    """``{algo: {"trials": {...}, "map": {...} or None}}``: the fraction of each algorithm's space that
    works, estimated from the tuning's trials (:func:`trial_fraction`) and, given a map, from it
    (:func:`map_fraction`), each with ``find``, the probability that ``trials`` trials find it
    (:func:`find_probability`)."""
    out = {}
    own = trial_fraction(result_algos)
    for a in result_algos:
        got = own.get(a["algo"], {"fraction": None})
        entry = {"trials": {**got, "find": find_probability(got.get("fraction"), trials),
                            **({"own_find": find_probability(got["own_fraction"], trials)} if "own_fraction" in got else {})}}
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
                f"{100 * t['fraction']:.0f}% of its trials reach {100 * t['level']:.0f}% of the best binary trial's score "
                f"({counted(n, 'trials')} {'finds' if n == 1 else 'find'} that region with probability {100 * t['find']:.0f}%)"
                + ("" if t.get("own_fraction") is None else
                   f", {100 * t['own_fraction']:.0f}% reach {100 * t['level']:.0f}% of its own best (found with probability "
                   f"{100 * t['own_find']:.0f}%)"))]
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


# --------------------------------------------------------------------------- budget and summaries

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


#: the paired differences every tuning states beside its table and in its headline (issue 35, point 4):
#: STAM against BC and against BR, test accuracy of the fresh seeds
PAIRED = (("stam", "bc"), ("stam", "br"))


def _paired(a: str, fa: dict, b: str, fb: dict, **extra) -> dict:
    """The differences ``a - b`` of two finals' test accuracies, matched by seed, and their summary."""
    acc_a = dict(zip(fa.get("seeds") or [], fa.get("test_acc") or []))
    diffs = [acc_a[s] - y for s, y in zip(fb.get("seeds") or [], fb.get("test_acc") or [])
             if acc_a.get(s) is not None and y is not None]
    return {"a": a, "b": b, "seeds": len(diffs), **extra, **summarise(diffs, bounds=(-100.0, 100.0))}


def paired_differences(result: dict, paper: bool = False, pairs=PAIRED) -> list[dict]:
    """Per pair ``(a, b)`` of ``pairs`` (default :data:`PAIRED`) with both tuned: the differences ``a - b`` of the test
    accuracies (points) of their fresh-seed runs, matched by seed (every algorithm's finals run on
    the same seeds, so the same initial draws of the data order and the augmentation), and their
    :func:`summarise` (mean, std, the 95% t-interval of the mean difference); ``seeds``, the pairs.
    With ``paper``, then the same pairs among the paper's settings (not tuned; the paper's own
    protocol, e.g. Our3 against BC's setting of Table para), each with ``labels`` (the rows' labels)
    and ``paper`` True."""
    finals = {a["algo"]: a.get("final") or {} for a in result.get("algorithms") or []}
    out = [_paired(a, finals[a], b, finals[b]) for a, b in pairs if finals.get(a) and finals.get(b)]
    if paper:
        rows = [r for r in result.get("paper_rows") or [] if r.get("final")]
        out += [_paired(a, ra["final"], b, rb["final"], labels=(ra["label"], rb["label"]), paper=True)
                for a, b in pairs for ra in rows if ra["algo"] == a for rb in rows if rb["algo"] == b]
    return out


def paired_text(d: dict) -> str:
    """One difference of :func:`paired_differences`, e.g. ``STAM - BC -32.5 [-34.2, -30.8]``
    (a pair of paper rows: ``Our3 - BC, paper settings, +4.2 [-0.9, +9.4]``)."""
    la, lb = d.get("labels") or (algorithm(d["a"]).label, algorithm(d["b"]).label)
    name = f"{la} \u2212 {lb}" + (", paper settings," if d.get("paper") else "")
    if d["mean"] is None:
        return f"{name} -"
    iv = f" [{d['ci95'][0]:+.1f}, {d['ci95'][1]:+.1f}]" if d.get("ci95") else ""
    return f"{name} {d['mean']:+.1f}{iv}"


def paired_lines(result: dict) -> list[str]:
    """The lines under a tuning's table: each paired difference with its spread and interval, the
    tuned pairs first, then the same pairs among the paper's settings (not tuned)."""
    lines = []
    for d in paired_differences(result, paper=True):
        spread = f", std {d['std']:.1f}" if d.get("std") is not None else ""
        what = "mean and 95% interval" if d.get("ci95") else "mean"
        why = "" if d.get("ci95") else "; no interval from fewer than 3 distinct values"
        lines.append(f"Paired difference {paired_text(d)} points of test accuracy ({what} over "
                     f"{counted(d['seeds'], 'paired seeds')}{spread}{why})")
    return lines


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


def curve_epochs(result: dict) -> int | None:
    """The epochs at which the trials of a tuning curve were scored: with successive halving the
    first rung's (every trial reached it), else the tuning's."""
    rungs = (result.get("halving") or {}).get("rungs")
    return rungs[0]["epochs"] if rungs else (result.get("params") or {}).get("epochs")


def tuning_curves(result: dict) -> dict[str, list[float]]:
    """Each algorithm's expected best validation accuracy after 1, 2, ..., n trials
    (:func:`expected_best` over its trials, :func:`expected_best_curve`): the comparison at every
    budget, not only at the one run.  With successive halving a trial's ``score`` is that of the
    last rung it reached, so scores of different budgets would mix: the curve resamples every
    trial's first-rung score instead, all at :func:`curve_epochs`."""
    def at_one_budget(t):
        return t["rung_scores"][0] if t.get("rung_scores") else t["score"]

    return {a["label"]: expected_best_curve([at_one_budget(t) for t in a["trials"]])
            for a in result["algorithms"] if a["trials"]}


__all__ = ["PAIRED", "paired_differences", "paired_text", "paired_lines", "WORKING_LEVEL", "find_probability", "map_fraction", "trial_fraction", "search_difficulty", "difficulty_lines",
           "read_map", "MIN_BUDGET", "counted", "budget_note", "summarise", "expected_best", "CURVE_TAIL",
           "expected_best_curve", "tuning_curves", "curve_epochs"]
