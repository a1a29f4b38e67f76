"""The convergence map (``stam map``): STAM over a log grid of the (gamma, lambda) plane.

For ``H(x, y) = (lambda/2)||x - y||^2`` Theorem conv admits the (gamma, beta) with ``K1 > 0``
(eq. (k1)), ``[(L2*)^2 + (L5*)^2] gamma^2 <= 1`` and ``beta >= 2 K2/K1``; with ``L2* = L5* =
lambda``, ``l = -lambda`` the first condition is ``5 (gamma lambda)^2 + 4 gamma < 1``, i.e.
``gamma lambda < 1/sqrt(5)`` for large lambda (and ``gamma < 1/4`` for small).  The paper's
settings (Table para: gamma 8, lambda 0.5; gamma 15 -> 0.3, lambda 4) lie far outside.  The map
shows what STAM does across that plane, inside and outside the theorem's region.

Result format (its type :data:`MAP`, the one place: readers check it, :func:`write_map` writes through it)
-----------------------------------------------------------------------------------------------------
A JSON object, written atomically (:mod:`stam.io`) with a CSV twin of its rows (same stem,
columns :data:`ROW_KEYS`)::

    {"kind": "convergence-map",
     "format": 2,                              # 1: a network map's accuracies were fractions
     "provenance": {...},                      # stam.io.provenance()
     "source": "synthetic" | a data set of stam.dnn.catalog ("digits", "cifar10", ...),
     "problem": "binary"                       # synthetic: the problem family
              | "digits-mlp",                  # digits: the model on the data set
     "metric": "S_final" | "val_acc_binary",
     "metric_label": "human text",
     "beta_rule": {"kind": "fixed", "values": [b1, b2, ...]}     # or {"kind": "theorem", ...}
     "beta_rule_text": "the beta rule in words",
     "budget": {"iterations": T} | {"epochs": E},
     "params": {...},                          # everything else that fixes the run
     "rows": [{"gamma": g, "lam": l, "beta": b, "seeds": k,
               "metric": mean over the seeds that did not diverge, or null (all diverged);
                         digits: an accuracy in percent, in [0, 100],
               "metric_std": their standard deviation (0 for one seed) or null,
               "val_acc_float", "val_acc_float_std": a network map's float weights x (eq. (algx)) at the
                         same selected epochs, BatchNorm statistics re-estimated for them: mean and
                         standard deviation in percent over the same seeds, or null (a synthetic map,
                         or a network map whose jobs were stored before they recorded it: absent),
               "diverged": number of diverged seeds (0 .. seeds),
               "sign_ever_changed": fraction of binary weights whose sign ever changed (digits) or null,
               "admissible": Theorem conv's conditions at (g, b, H = (l/2)||x-y||^2), or for a
                             user's problem (params.coupling) at the constants of its H,
               ... source-specific extras (synthetic: S_0, S_min)}, ...]}

``admissible`` is :func:`stam.theory.symbolic.numeric.check` ``(gamma, beta,
quadratic_coupling(lam))["admissible"]`` without ``T`` and ``eps``: the conditions of Theorem
conv, which involve only L2*, L5*, l and beta, so the constants a network does not reveal (L1,
A, C) play no part (the admissible-region figure leaves them out of its (gamma, lambda) panel
for the same reason).  Everything is computed by :func:`admissible_flags`.

Synthetic evaluator (:func:`run_map`)
-------------------------------------
For each lambda, the problem family's instance with that lambda (same data, y^0 and sampling
seed; only H changes) is built once; all (gamma, beta, seed) of that lambda run as one batch of
``len(gammas) * len(betas) * R`` rows of :func:`stam.steps.stam_step` (per-row gamma and beta,
:func:`stam.steps.as_batch_scalar`) for ``T`` iterations.  Recorded per row:

- ``S_t``, the stationarity measure of Theorem conv (:meth:`ThreeBlockProblem.stationarity`,
  full gradient), on the schedule of :func:`stam.synthetic.rates.eval_schedule` up to ``t = T``;
- ``S_final = S_T`` (the metric), ``S_0``, and ``S_min = min`` over the scheduled t;
- diverged: some scheduled ``S_t`` is inf or nan, or ``S_T > growth * S_0`` (``growth`` = 100 by
  default, stated in ``params``).

Per cell the metric is the mean of ``S_T`` over the seeds that did not diverge (``S_min``
likewise, over the same seeds; ``S_0`` over all seeds: the start rule makes it the same for
every seed).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from stam.cliargs import log_grid
from stam.steps import as_batch_scalar, stam_step
from stam.datasets import DATA_SOURCE, DATASET_NAMES  # the data sets a network map trains on, and their record
from stam.io import bar_disable, provenance
from stam.results import (BOOL, COUNT, DICT, DICT_OR_NULL, EPOCHS_OR_NULL, WIDTH_OR_NULL, FIN_OR_NULL, FRAC_OR_NULL, NONEMPTY_LIST,
                          NONNEG_OR_NULL, PCT_OR_NULL, POS, POSINT, PROVENANCE, STR, TEXT, ResultType, Schema, at_most, bad_file,
                          distinct, holds, one_of, shown)
from stam.synthetic.families import MAP_BETAS, MAP_GAMMAS, MAP_GROWTH, MAP_ITERATIONS, MAP_LAMS, MAP_NAMES, MAP_SEEDS
from stam.theory.symbolic import numeric

KIND = "convergence-map"
SOURCES = ("synthetic", *DATASET_NAMES)
#: the metric of a map: E S_T for a synthetic problem, binary validation accuracy for a network
METRICS = {src: "S_final" if src == "synthetic" else "val_acc_binary" for src in SOURCES}
ROW_KEYS = ("gamma", "lam", "beta", "seeds", "metric", "metric_std", "val_acc_float", "val_acc_float_std", "diverged",
            "sign_ever_changed", "admissible", "S_0", "S_min")


#: ``params["coupling"]`` of a map: the built-in families' H (the overlays of the figure and the
#: words gamma*lambda = 1/sqrt(5) apply), or a user's problem's own H (``admissible`` from its
#: constants at each lambda; no overlays).  A map without the key is quadratic (older files).
QUADRATIC = "(lambda/2)||x - y||^2"
OWN_H = "the problem's own H, its constants at each lambda"


def is_quadratic(data: dict) -> bool:
    """Whether the map's H is ``(lambda/2)||x - y||^2`` (built-in families and digits)."""
    return (data.get("params") or {}).get("coupling", QUADRATIC) == QUADRATIC


def admissible_flags(gammas, lams, betas) -> list[bool]:
    """Theorem conv's conditions (module docstring) for each (gamma, lam, beta) triple."""
    return [bool(numeric.check(float(g), float(b), numeric.quadratic_coupling(float(lam)))["admissible"])
            for g, lam, b in zip(gammas, lams, betas)]


def coupling_constants(problem) -> "numeric.Constants":
    """The constants of ``problem``'s H (L2* .. L5*, l): certified where H states them, estimated
    otherwise; L1, A and C are left unknown, as the map's conditions do not involve them."""
    hc = dict(problem.H.constants())
    need = [k for k in ("L2", "L3", "L4", "L5", "l") if k not in hc]
    hc.update(problem.estimates(need) if need else {})
    return numeric.Constants(L1=None, L2=hc["L2"], L3=hc["L3"], L4=hc["L4"], L5=hc["L5"], l=hc["l"], A=None, C=None)


# --- the format (its type; :func:`write_map` writes through it) -----------------------------------------
#: accuracies of a network map in percent, like every result file (format 1 held fractions)
MAP_FORMAT = 2
MAP_ROW = Schema(required={"gamma": POS, "lam": POS, "beta": POS, "seeds": POSINT, "diverged": COUNT, "admissible": BOOL},
                 optional={"metric": FIN_OR_NULL, "metric_std": FIN_OR_NULL, "metric_final": FIN_OR_NULL,
                           "metric_as_trained": FIN_OR_NULL, "val_acc_float": PCT_OR_NULL,
                           "val_acc_float_std": NONNEG_OR_NULL, "sign_ever_changed": FRAC_OR_NULL, "S_0": FIN_OR_NULL,
                           "S_min": FIN_OR_NULL},
                 rules=(at_most("diverged", "seeds"),
                        holds("metric", lambda r: r.get("metric") is not None or not r["diverged"] < r["seeds"],
                              "is null although not every seed diverged")))


def _metric_of_source(obj):
    want = METRICS.get(obj.get("source"))
    if want is not None and obj.get("metric") != want:
        return "metric", f"must be {want!r} for source {obj['source']!r}, not {shown(obj.get('metric'))}"
    return None


def _percent_rows(obj):
    """A network map's accuracies are percentages (a synthetic map's metric is E S_T)."""
    if obj.get("source") == "synthetic":
        return None
    for i, row in enumerate(obj.get("rows") or []):
        for key in ("metric", "metric_final", "metric_as_trained"):
            v = row.get(key)
            if v is not None and not 0 <= v <= 100:
                return f"rows[{i}].{key}", f"must be a validation accuracy in percent, in [0, 100], not {shown(v)}"
    return None


def _drawable_grid(obj):
    """Each panel's grid (the rows of one beta) has its cells' edges within floating point: a map is drawn on
    cells reaching half a log step beyond the grid's ends (``stam.figures.map_figure.cell_edges``), so gammas or
    lambdas of 1e300 and 1e308 side by side (no grid a map writes) would overflow there."""
    rows = [r for r in obj.get("rows") or [] if isinstance(r, dict)]
    for beta in {r.get("beta") for r in rows}:
        for key in ("gamma", "lam"):
            logs = sorted({math.log(r[key]) for r in rows if r.get("beta") == beta and _positive(r.get(key))})
            if len(logs) < 2:
                continue
            ends = (1.5 * logs[0] - 0.5 * logs[1], 1.5 * logs[-1] - 0.5 * logs[-2])  # v0 - (mid0 - v0), likewise
            if not all(_LOG_TINY < e < _LOG_HUGE for e in ends):
                return "rows", (f"holds {key}s at beta = {shown(beta)} from {math.exp(logs[0]):g} to "
                                f"{math.exp(logs[-1]):g}: the map's cells, half a log step beyond the ends, would reach "
                                "beyond floating point")
    return None


def _positive(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


#: the logarithms of the largest and the smallest normal float (a cell edge beyond them is no number)
_LOG_HUGE, _LOG_TINY = math.log(sys.float_info.max), math.log(sys.float_info.min)


def _older(obj, path, version):
    """A format-1 map: a synthetic one holds no accuracy and reads as it is; a network one held its
    accuracies as fractions, so it is refused by name (run ``stam map`` again)."""
    if obj.get("source") == "synthetic":
        return obj
    raise bad_file(path, "format", f"is {version}: a network map of format {version} holds its accuracies as fractions; "
                   f"this toolkit reads them in percent (format {MAP_FORMAT}): run stam map again", damaged=False)


#: ``stam map``: ``map-NAME.json`` with ``map-NAME.csv`` of its rows (columns :data:`ROW_KEYS`)
MAP = ResultType(
    KIND, Schema(required={"kind": STR, "source": STR, "problem": TEXT, "metric": TEXT, "metric_label": TEXT,
                           "beta_rule": DICT, "budget": DICT, "params": DICT, "rows": NONEMPTY_LIST},
                 optional={"data_source": DICT_OR_NULL, "beta_rule_text": STR, "provenance": DICT_OR_NULL, "format": POSINT},
                 inner={"beta_rule": Schema(required={"kind": STR}, optional={"values": NONEMPTY_LIST}, items={"values": POS},
                                            rules=(one_of("kind", ("fixed", "theorem")),
                                                   holds("values", lambda r: r["kind"] != "fixed" or "values" in r,
                                                         "is missing (a fixed beta lists its values)"))),
                        "data_source": DATA_SOURCE, "provenance": PROVENANCE,
                        # a network map's network (a synthetic map has no width or epochs)
                        "params": Schema(optional={"width": WIDTH_OR_NULL, "epochs": EPOCHS_OR_NULL})},
                 each={"rows": MAP_ROW}, rules=(one_of("source", SOURCES), _metric_of_source, _percent_rows,
                                                 distinct("rows", "gamma", "lam", "beta", what="the cell"),
                                                 _drawable_grid)),
    files="map-*.json", writer="stam map", format=MAP_FORMAT, csv=ROW_KEYS, older=_older,
    title=lambda d, path: f"convergence map: {d.get('source')} {d.get('problem', path.stem)}")


def write_map(result: dict, out_dir, stem: str) -> tuple[Path, Path]:
    """``out_dir/stem.json`` and ``.csv`` through :data:`MAP` (checked first, atomic, the CSV
    first, both made before either is written), with provenance added."""
    path = MAP.write(dict(result, provenance=provenance()), Path(out_dir) / f"{stem}.json")
    return path, path.with_suffix(".csv")


def fixed_beta_rule(betas) -> tuple[dict, str]:
    values = [float(b) for b in betas]
    return {"kind": "fixed", "values": values}, "beta fixed at " + ", ".join(f"{b:g}" for b in values) + " (one panel each)"


# --- the synthetic evaluator --------------------------------------------------------------------
@dataclass(frozen=True)
class SyntheticMap:
    """The parameters of a synthetic map (:func:`run_map`), in the order of its positional arguments:
    the ``problem`` (a family of :data:`MAP_NAMES`, or the name of ``build``'s), the grid ``gammas`` x
    ``lams`` x ``betas`` (None: the default log grids), the horizon ``iterations`` (T), the ``seeds`` per
    cell (R) and the ``seed`` of the problem and the samples, the divergence factor ``growth``, the
    family's ``problem_kwargs``, ``device`` and ``dtype`` (None: float64); ``build``: for a problem
    that is not a built-in family (a user's, ``stam map --problem FILE.py:NAME``), ``lam ->
    ThreeBlockProblem``; ``admissible`` then uses the constants of its H at each lambda
    (:func:`coupling_constants`)."""

    problem: str = "binary"
    gammas: object = None
    lams: object = None
    betas: object = MAP_BETAS
    iterations: int = MAP_ITERATIONS
    seeds: int = MAP_SEEDS
    seed: int = 0
    growth: float = MAP_GROWTH
    problem_kwargs: dict | None = None
    device: object = "cpu"
    dtype: object = None
    build: Callable | None = None

    def resolved(self) -> "SyntheticMap":
        """The same map with its grids as lists of floats (the defaults filled in) and its dtype set;
        ``ValueError`` naming a bad value."""
        import torch

        if self.build is None and self.problem not in MAP_NAMES:
            raise ValueError(f"unknown problem {self.problem!r} for the map; known: {', '.join(MAP_NAMES)}")
        gammas = [float(g) for g in (self.gammas if self.gammas is not None else log_grid(*MAP_GAMMAS))]
        lams = [float(v) for v in (self.lams if self.lams is not None else log_grid(*MAP_LAMS))]
        betas = [float(b) for b in self.betas]
        for name, vals in (("gamma", gammas), ("lambda", lams), ("beta", betas)):
            if not vals or not all(math.isfinite(v) and v > 0 for v in vals):
                raise ValueError(f"{name} values must be a non-empty list of finite numbers > 0, got {vals}")
        if self.iterations < 1 or self.seeds < 1 or not self.growth > 1:
            raise ValueError(f"need iterations >= 1, seeds >= 1 and growth > 1, got {self.iterations}, {self.seeds}, {self.growth}")
        return replace(self, gammas=gammas, lams=lams, betas=betas, dtype=self.dtype or torch.float64)


def run_map(problem: "str | SyntheticMap" = "binary", *args, progress: bool = False, **fields) -> dict:
    """The synthetic map of the module docstring for a :class:`SyntheticMap` (or its fields, positional
    in its order or by keyword: ``run_map("binary", gammas=..., iterations=60)``); returns the result
    dict (without provenance, which :func:`write_map` adds).  ``progress``: a progress bar."""
    m = problem if isinstance(problem, SyntheticMap) else SyntheticMap(problem, *args, **fields)
    m = m.resolved()
    with _bar(len(m.lams) * m.iterations, f"map {m.problem}", progress) as bar:
        rows, instance, coupling = [], None, {}
        for lam in m.lams:
            prob = _problem_at(m, lam)
            if m.build is not None:
                coupling[lam] = coupling_constants(prob)
            instance = instance or prob
            rows += _lam_rows(m, prob, lam, bar)
    if m.build is None:
        flags = admissible_flags([r["gamma"] for r in rows], [r["lam"] for r in rows], [r["beta"] for r in rows])
    else:
        flags = [bool(numeric.check(r["gamma"], r["beta"], coupling[r["lam"]])["admissible"]) for r in rows]
    for r, a in zip(rows, flags):
        r["admissible"] = a
    return _synthetic_result(m, instance, rows)


def _bar(total: int, desc: str, progress: bool):
    """The progress bar of a map's iterations (off where :func:`stam.io.bar_disable` says)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, disable=bar_disable(progress), leave=False, unit="it")


def _problem_at(m: SyntheticMap, lam: float):
    """The map's problem at ``lam``: ``build(lam)``, or the family's instance of the map's seed."""
    from stam.synthetic.problems import make_problem

    if m.build is not None:
        return m.build(lam)
    return make_problem(m.problem, lam=lam, seed=m.seed, device=m.device, dtype=m.dtype, **dict(m.problem_kwargs or {}))


def _lam_rows(m: SyntheticMap, prob, lam: float, bar) -> list[dict]:
    """The rows of one lambda: STAM (eq. (algx)-(algz)) on ``prob`` for every (gamma, beta, seed) at once,
    one row per run (gamma-major, then beta, then seed), S_t recorded on the schedule of
    :func:`stam.synthetic.rates.eval_schedule` (t = 0 .. T), then each cell summarised (:func:`_cell_rows`)."""
    import torch

    from stam.synthetic.rates import eval_schedule

    schedule = eval_schedule([m.iterations + 1])  # t = 0 .. T, T included
    G, B, R = len(m.gammas), len(m.betas), m.seeds
    n = G * B * R
    gamma_rows = torch.tensor(m.gammas, dtype=m.dtype, device=m.device).repeat_interleave(B * R)
    beta_rows = torch.tensor(m.betas, dtype=m.dtype, device=m.device).repeat_interleave(R).repeat(G)
    gen = torch.Generator(device=m.device).manual_seed(m.seed)
    like = prob.y0.expand(n, -1)
    g_col, b_col = as_batch_scalar(gamma_rows, like), as_batch_scalar(beta_rows, like)
    state = prob.start(n, g_col)
    S = torch.full((n, len(schedule)), math.nan, dtype=m.dtype, device=m.device)
    j = 0
    for t in range(m.iterations + 1):
        if j < len(schedule) and schedule[j] == t:
            S[:, j] = prob.stationarity(state.u, state.y)
            j += 1
        if t == m.iterations:
            break
        grad = prob.stochastic_grad(state.y, gen)
        state = stam_step(state, grad, prob, g_col, b_col)
        bar.update(1)
    return _cell_rows(m, lam, S)


def _cell_rows(m: SyntheticMap, lam: float, S) -> list[dict]:
    """One row per (gamma, beta) cell of one lambda from the runs' recorded S_t (``S``, one row per run):
    the seeds that diverged (S_t not finite, or S_T > growth S_0), and over the others the means of
    S_T (``metric``, with its standard deviation) and of min_t S_t, the mean finite S_0."""
    import torch

    B, R = len(m.betas), m.seeds
    S0, ST = S[:, 0], S[:, -1]
    finite = torch.isfinite(S).all(dim=1)
    diverged = ~finite | (ST > m.growth * S0)
    Smin = torch.where(torch.isfinite(S), S, torch.full_like(S, math.inf)).min(dim=1).values
    rows = []
    for gi, g in enumerate(m.gammas):
        for bi, b in enumerate(m.betas):
            sl = slice((gi * B + bi) * R, (gi * B + bi + 1) * R)
            ok = ~diverged[sl]
            n_ok = int(ok.sum())

            def mean(v):
                return float(v[sl][ok].mean()) if n_ok else None

            std = float(ST[sl][ok].std()) if n_ok > 1 else (0.0 if n_ok else None)
            s0 = S0[sl][torch.isfinite(S0[sl])]
            rows.append(dict(gamma=g, lam=lam, beta=b, seeds=R, metric=mean(ST), metric_std=std,
                             diverged=R - n_ok, sign_ever_changed=None,
                             S_0=float(s0.mean()) if len(s0) else None, S_min=mean(Smin)))
    return rows


def _synthetic_result(m: SyntheticMap, instance, rows: list[dict]) -> dict:
    """The ``convergence-map`` result of a synthetic map: its rows and the parameters that made them."""
    rule, rule_text = fixed_beta_rule(m.betas)
    params = dict({k: v for k, v in instance.params.items() if k != "lam"}, problem=m.problem, R=m.seeds, seed=m.seed,
                  coupling=QUADRATIC if m.build is None else OWN_H,
                  gammas=m.gammas, lams=m.lams, betas=m.betas, iterations=m.iterations, growth=m.growth,
                  sampling=instance.sampling.describe(), F=instance.F.describe(),
                  dtype=str(m.dtype).replace("torch.", ""), device=str(m.device),
                  diverged_rule=f"S_t inf or nan at a scheduled t, or S_T > {m.growth:g} S_0",
                  schedule="S_t at t < 16, a geometric grid of ratio 1.1, and t = T",
                  means="over the seeds that did not diverge")
    return {
        "kind": KIND,
        "source": "synthetic",
        "problem": m.problem,
        "metric": "S_final",
        "metric_label": f"E S_T, stationarity of Theorem conv after T = {m.iterations} iterations (lower is better)",
        "beta_rule": rule,
        "beta_rule_text": rule_text,
        "budget": {"iterations": m.iterations},
        "params": params,
        "rows": rows,
    }


__all__ = ["run_map", "SyntheticMap", "MAP", "MAP_FORMAT", "write_map", "admissible_flags",
           "fixed_beta_rule", "KIND", "ROW_KEYS"]
