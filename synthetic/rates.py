"""Rate experiment: STAM on a synthetic problem, min_t E S_t against Theorem conv.

For each horizon ``T`` of a geometric grid, ``R`` independent runs (seeds of the sampling; all
start from the problem's ``y^0`` by the start rule of :mod:`stam.steps`) are advanced by
:func:`stam.steps.stam_step`.  All horizons and all seeds form one batch of
``R * len(T_grid)`` rows; rows are ordered by horizon and the batch shrinks as horizons end, so
the whole experiment is ``max(T_grid)`` vectorised steps (never a Python loop over runs).

Parameters (default): ``gamma = gamma_fraction * gamma_max`` (:func:`stam.theory.symbolic.numeric.gamma_max`,
i.e. ``K1 > 0`` and ``[(L2*)^2 + (L5*)^2] gamma^2 <= 1``; any gamma is also checked against the
problem's own limits, e.g. ``gamma < theta`` for MCP), and for each T ``beta = max{sqrt((L+M) A T), 2 K2/K1}``, the
lower bounds of Theorem conv-rate without eps (:func:`stam.theory.symbolic.numeric.beta_lower_bounds`).
Explicit ``gamma``/``beta`` are checked against Theorem conv's hypotheses
(:func:`stam.theory.symbolic.numeric.check`); if they fail, the run needs ``allow_inadmissible`` and its
rows carry ``admissible = False`` and ``bound = None``.

Recorded per horizon T (rules):

- Stationarity: ``S_t`` (:meth:`ThreeBlockProblem.stationarity`, full gradient) on the schedule
  ``t in {0, ..., 15}`` plus a geometric grid of ratio 1.1 up to ``max(T_grid) - 1`` plus every
  ``T_k - 1``.  ``E S_t`` is the mean over the R seeds at each scheduled t < T; ``S_min_mean`` is
  the minimum of that mean over the scheduled t (``t*`` its argmin); ``S_min_std``,
  ``S_min_lo``, ``S_min_hi`` are the standard deviation and the 10% / 90% quantiles over the seeds
  at ``t*``, ``S_min_se`` the standard error of the mean there.  ``S_min_mean`` *estimates*
  ``min_t E S_t``: the mean over seeds is unbiased at each t, the minimum over t of those noisy
  means is biased low (by at most a few standard errors where they are small), and the minimum
  over a subset of t is >= the minimum over all t.  So ``ratio = bound / S_min_mean`` is evidence
  for the theorem's inequality, strong where it is large against ``S_min_se / S_min_mean``, not a
  certificate.
- What happens along the way, which the minimum hides (a run that diverges keeps its small
  ``S_0`` as its minimum): ``S_0_mean`` and ``S_final_mean``, the mean of ``S_t`` at t = 0 and at
  ``t = T - 1``, and ``nonfinite``, the number of seeds whose ``S_t`` is inf or nan at some
  scheduled t < T (they count in no mean: means are over the finite values).
- ``delta_0 = mean over seeds of G(y^0) + H(x^0, y^0) - GH_inf_lb`` with the certified lower bound
  ``GH_inf_lb <= (G+H)^inf`` (so delta_0 is an upper bound of the paper's delta_0).
- ``M_0' = mean over seeds of (M_0 - min_{0 <= t <= T} M_t)``, ``M_t`` of Lemma conv-lemma evaluated
  at every step.  (The paper takes the infimum over all t >= 0; the proof of Theorem conv for
  horizon T only needs ``M_t' >= 0`` for ``0 <= t <= T``, which this finite-horizon rule gives.)
- ``bound`` = right-hand side of Theorem conv (:func:`stam.theory.symbolic.numeric.theorem_rhs`) with the
  problem's constants, when Theorem conv's hypotheses hold; ``ratio = bound / S_min_mean``.
- ``slope`` / ``bound_slope``: least-squares slopes of ``log S_min_mean`` / ``log bound`` against
  ``log T`` over the grid; ``slope_tail`` / ``bound_slope_tail`` the same over its upper half (the
  horizons where ``sqrt((L+M) A T)`` rather than ``2 K2/K1`` tends to set beta).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from stam.steps import as_batch_scalar, stam_step
from stam.io import bar_disable
from stam.results import (BOOL, COUNT_OR_NULL, DICT, DICT_OR_NULL, FIN_OR_NULL, LIST, NONEMPTY_LIST, NONNEG_OR_NULL, POS, POS_OR_NULL,
                          POSINT, PROVENANCE, STR, STR_OR_NULL, ANY, ResultType, Schema, below, holds, increasing, ordered)
from stam.theory.symbolic import numeric
from stam.theory.symbolic.numeric import LABELLED, StepSizes
from stam.theory.worstcase.pep import PEP_ROW
from stam.theory.settings import no_other

if TYPE_CHECKING:  # torch is imported where the experiment runs, so that reading a result needs none
    import torch

    from stam.synthetic.problems import ThreeBlockProblem

#: What the CLI tells a user whose parameters the rule refused.
REMEDY = "add --allow-inadmissible to run them anyway (rows are then marked admissible=false, bound=null)"


def geometric_grid(T_min: int, T_max: int, points: int) -> list[int]:
    """``points`` integers from ``T_min`` to ``T_max``, geometrically spaced (duplicates removed;
    a grid so dense that its spacing is at most 1 is every integer of the range, computed without
    building it)."""
    if T_min < 1 or T_max < T_min or points < 1:
        raise ValueError(f"need 1 <= T_min <= T_max and points >= 1, got {T_min}, {T_max}, {points}")
    if points - 1 >= T_max * math.log(T_max / T_min):  # spacing <= 1 everywhere: every integer, as geomspace gives
        return list(range(T_min, T_max + 1))
    return sorted({int(round(v)) for v in np.geomspace(float(T_min), float(T_max), points)})  # floats: a T beyond int64


def eval_schedule(T_grid: list[int], dense: int = 16, ratio: float = 1.1) -> list[int]:
    """The iterations t at which S_t is evaluated (module docstring)."""
    T_max = max(T_grid)
    ts = set(range(min(dense, T_max)))
    v = float(dense)
    while v < T_max:
        ts.add(int(v))
        v *= ratio
    ts.update(T - 1 for T in T_grid)
    return sorted(t for t in ts if t < T_max)


def choose_parameters(problem: ThreeBlockProblem, T_grid, *, step_sizes: StepSizes | None = None, **fields):
    """``(gamma, betas, admissible, info)``: the step sizes for each horizon, by the one rule
    :func:`stam.theory.symbolic.numeric.admissible_parameters` given ``step_sizes`` (a :class:`~stam.theory.symbolic.numeric.StepSizes`,
    or its fields by keyword), and the problem's own limits on gamma."""
    step_sizes = StepSizes.of(step_sizes, fields)
    no_other(fields, "choose_parameters")
    gamma = step_sizes.gamma
    c = problem.theory_constants()
    if gamma is not None:
        problem.check_gamma(gamma)
    p = numeric.admissible_parameters(c, T_grid, step_sizes=step_sizes, remedy=REMEDY)
    problem.check_gamma(p.gamma)
    info = {"gamma_max": p.gamma_max, "gamma_rule": p.gamma_rule, "beta_rule": p.beta_rule}
    return p.gamma, list(p.betas), p.admissible, info


def _quantiles(x: torch.Tensor) -> tuple[float, float]:
    import torch

    q = torch.quantile(x, torch.tensor([0.1, 0.9], dtype=x.dtype, device=x.device))
    return float(q[0]), float(q[1])


def _finite(v):
    return v if v is not None and math.isfinite(v) else None


def _nanmean(x: torch.Tensor) -> torch.Tensor:
    """Mean over dim 0 of the finite entries (nan where there is none)."""
    import torch

    ok = torch.isfinite(x)
    return torch.where(ok, x, torch.zeros_like(x)).sum(dim=0) / ok.sum(dim=0)


def _slope(T, vals) -> float | None:
    pts = [(math.log(t), math.log(v)) for t, v in zip(T, vals) if v is not None and v > 0 and math.isfinite(v)]
    if len(pts) < 2:
        return None
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0])


def run_rates(problem: ThreeBlockProblem, T_grid, R: int = 16, *, step_sizes: StepSizes | None = None, seed: int = 0,
              progress: bool = True, **fields) -> dict:
    """Run the experiment of the module docstring; returns the ``synthetic-rates`` result dict
    (without ``provenance``, which the writer adds): the step sizes by the one rule
    (:func:`choose_parameters`; ``step_sizes``, a :class:`~stam.theory.symbolic.numeric.StepSizes`, or its fields
    ``gamma``, ``beta``, ``gamma_fraction``, ``allow_inadmissible`` by keyword), every horizon and seed in one
    batch (:func:`_simulate`), a row per horizon (:func:`_rows`), the parameters and constants they were run
    with, the slopes."""
    step_sizes = StepSizes.of(step_sizes, fields)
    no_other(fields, "run_rates")
    T_grid = sorted({int(T) for T in T_grid})
    if not T_grid or T_grid[0] < 1 or R < 1:
        raise ValueError(f"need horizons T >= 1 and R >= 1, got T_grid={T_grid}, R={R}")
    gamma, betas, admissible, info = choose_parameters(problem, T_grid, step_sizes=step_sizes)
    runs = _simulate(problem, _Runs(T_grid, R, seed), gamma, betas, progress)
    rows, details = _rows(problem, runs, gamma, betas, admissible)
    Ts, half = [r["T"] for r in rows], len(rows) // 2
    return {
        "kind": "synthetic-rates",
        "problem": problem.name,
        "params": _params(problem, runs, gamma, step_sizes.gamma_fraction, info),
        "constants": _constants(problem, gamma, info),
        "rows": rows,
        "slope": _slope(Ts, [r["S_min_mean"] for r in rows]),
        "bound_slope": _slope(Ts, [r["bound"] for r in rows]),
        "slope_tail": _slope(Ts[half:], [r["S_min_mean"] for r in rows[half:]]),
        "bound_slope_tail": _slope(Ts[half:], [r["bound"] for r in rows[half:]]),
        "details": details,
    }


@dataclass
class _Runs:
    """The batch of :func:`run_rates`: the horizons ``T_grid`` (sorted), ``R`` seeds each from ``seed``; after
    :func:`_simulate`, ``S_rec`` (row ``k R + r``: horizon ``k``, seed ``r``; a column per scheduled t,
    nan after the row's horizon), each row's ``phi0 = G(y^0) + H(x^0, y^0)``, ``M0`` and ``M_min`` (its
    ``min_{0<=t<=T} M_t``)."""

    T_grid: list
    R: int
    seed: int
    schedule: list = field(default_factory=list)
    S_rec: object = None
    phi0: object = None
    M0: object = None
    M_min: object = None


def _simulate(problem: ThreeBlockProblem, runs: _Runs, gamma, betas, progress: bool) -> _Runs:
    """``max(T_grid)`` vectorised steps of STAM on all rows of ``runs`` (rows ordered by horizon; the
    batch shrinks as horizons end), recording ``S_t`` on the schedule and the merits ``M_t``."""
    import torch
    from tqdm import tqdm

    T_grid, R = runs.T_grid, runs.R
    dev, dt = problem.y0.device, problem.y0.dtype
    K, T_max = len(T_grid), T_grid[-1]
    beta_rows = torch.tensor(betas, dtype=dt, device=dev).repeat_interleave(R)
    gen = torch.Generator(device=dev).manual_seed(runs.seed)
    runs.schedule = eval_schedule(T_grid)
    col = {t: j for j, t in enumerate(runs.schedule)}
    runs.S_rec = torch.full((K * R, len(runs.schedule)), math.nan, dtype=dt, device=dev)

    state = problem.start(K * R, gamma)
    runs.phi0 = problem.G.value(state.y) + problem.H.H(state.x, state.y)
    runs.M0 = problem.lyapunov(state, gamma)
    runs.M_min = M_min = runs.M0.clone()
    first = 0  # rows [first:] are still running
    k_next = 0
    with tqdm(total=T_max, desc=f"stam {problem.name}", disable=bar_disable(progress), leave=False, unit="it") as bar:
        for t in range(T_max):
            if t in col:
                runs.S_rec[first:, col[t]] = problem.stationarity(state.u, state.y)
            grad = problem.stochastic_grad(state.y, gen)
            state = stam_step(state, grad, problem, gamma, as_batch_scalar(beta_rows[first:], state.y))
            M_min[first:] = torch.fmin(M_min[first:], problem.lyapunov(state, gamma))
            while k_next < K and T_grid[k_next] == t + 1:
                first += R
                k_next += 1
                state = type(state)(*(v[R:] for v in state))
            bar.update(1)
    return runs


def _rows(problem: ThreeBlockProblem, runs: _Runs, gamma, betas, admissible) -> tuple[list, list]:
    """``(rows, details)``: per horizon, the statistics of ``S_t`` over the seeds (:func:`_spread`),
    ``delta_0``, ``M_0'``, Theorem conv's bound where its hypotheses hold and the ratio."""
    import torch

    c = problem.theory_constants()
    rows, details = [], []
    for k, T in enumerate(runs.T_grid):
        sl = slice(k * runs.R, (k + 1) * runs.R)
        cols = [j for j, t in enumerate(runs.schedule) if t < T]
        S = runs.S_rec[sl][:, cols]
        mean = _nanmean(S)
        nonfinite = int((~torch.isfinite(S)).any(dim=1).sum())
        delta0 = float(runs.phi0[sl].mean()) - problem.constants()["GH_inf_lb"]
        M0p = float((runs.M0[sl] - runs.M_min[sl]).mean())
        ts = [runs.schedule[j] for j in cols]
        s_mean, s_std, s_se, lo, hi, t_star = _spread(S, mean, ts)
        bound = None
        if admissible[k] and math.isfinite(delta0) and math.isfinite(M0p):
            bound = _finite(float(numeric.theorem_rhs(T, gamma, betas[k], c, delta0, M0p)))
        ratio = bound / s_mean if bound is not None and s_mean else None
        rows.append(dict(T=T, gamma=gamma, beta=betas[k], admissible=admissible[k], S_min_mean=_finite(s_mean),
                         S_min_std=_finite(s_std), S_min_lo=_finite(lo), S_min_hi=_finite(hi), bound=bound,
                         ratio=_finite(ratio), S_min_se=_finite(s_se), t_star=t_star, S_0_mean=_finite(float(mean[0])),
                         S_final_mean=_finite(float(mean[-1])), nonfinite=nonfinite))
        details.append(dict(T=T, delta0=_finite(delta0), M0_prime=_finite(M0p), t_star=t_star,
                            t=ts, S_mean=[_finite(float(v)) for v in mean]))
    return rows, details


def _spread(S: torch.Tensor, mean: torch.Tensor, ts: list) -> tuple:
    """``(mean, std, standard error, 10% and 90% quantiles, t*)`` over the seeds (the finite ones) of
    ``S_t`` at ``t* = argmin_t mean`` (``ts``: the t of ``S``'s columns); all None where no mean is finite."""
    import torch

    finite = torch.isfinite(mean)
    if not bool(finite.any()):
        return None, None, None, None, None, None
    j = int(torch.where(finite, mean, torch.full_like(mean, math.inf)).argmin())
    S_star = S[:, j][torch.isfinite(S[:, j])]
    s_mean = float(S_star.mean())
    s_std = float(S_star.std()) if len(S_star) > 1 else 0.0
    s_se = s_std / math.sqrt(len(S_star))
    lo, hi = _quantiles(S_star)
    return s_mean, s_std, s_se, lo, hi, ts[j]


def _constants(problem: ThreeBlockProblem, gamma, info: dict) -> dict:
    """The problem's constants and Theorem conv's at ``gamma`` (``K1``, ``K2``, ``K3``, ``M``, ``L``, ``gamma_max``)."""
    c = problem.theory_constants()
    consts = problem.constants()
    consts.update(K1=float(numeric.K1(gamma, c)), K2=float(numeric.K2(gamma, c)), K3=float(numeric.K3(gamma, c)),
                  M=float(numeric.M(gamma, c)), L=float(c.L), gamma_max=info["gamma_max"])
    return consts


def _params(problem: ThreeBlockProblem, runs: _Runs, gamma, gamma_fraction, info: dict) -> dict:
    """The ``params`` of the result: the problem's, the run's and the rules it followed."""
    dev, dt = problem.y0.device, problem.y0.dtype
    return dict(problem.params, problem=problem.name, R=runs.R, seed=runs.seed, T_grid=runs.T_grid, gamma=gamma,
                gamma_rule=info["gamma_rule"], gamma_fraction=None if info["gamma_rule"] == "given" else gamma_fraction,
                beta_rule=info["beta_rule"], sampling=problem.sampling.describe(),
                F=problem.F.describe(), dtype=str(dt).replace("torch.", ""), device=str(dev),
                schedule="S_t at t < 16, a geometric grid of ratio 1.1, and every T-1; min over these t",
                delta0_rule="mean_r [G(y0)+H(x0,y0)] - GH_inf_lb (certified lower bound of (G+H)^inf)",
                M0_rule="mean_r [M_0 - min_{0<=t<=T} M_t] (finite-horizon infimum, per run)",
                spread="std, standard error and 10%/90% quantiles over seeds at t* = argmin_t mean_r S_t",
                means="over the seeds whose S_t is finite; nonfinite counts the others")


ROW_KEYS = ("T", "gamma", "beta", "admissible", "S_min_mean", "S_min_std", "S_min_lo", "S_min_hi", "bound", "ratio",
            "S_min_se", "t_star", "S_0_mean", "S_final_mean", "nonfinite")


#: the largest horizon T a rates file holds: 2^53, the largest integer a float holds exactly (every
#: horizon is read as a float for the slopes; 10^400 was an internal error)
MAX_HORIZON = 2**53
RATES_ROW = Schema(
    required={"T": POSINT, "S_min_mean": NONNEG_OR_NULL},
    optional={"gamma": POS, "beta": POS, "admissible": BOOL, "S_min_std": NONNEG_OR_NULL, "S_min_lo": NONNEG_OR_NULL,
              "S_min_hi": NONNEG_OR_NULL, "S_min_se": NONNEG_OR_NULL, "bound": NONNEG_OR_NULL, "ratio": NONNEG_OR_NULL,
              "t_star": COUNT_OR_NULL, "S_0_mean": NONNEG_OR_NULL, "S_final_mean": NONNEG_OR_NULL, "nonfinite": COUNT_OR_NULL},
    rules=(ordered("S_min_lo", "S_min_hi"), below("t_star", "T"),
           holds("T", lambda r: r["T"] <= MAX_HORIZON, f"must be at most {MAX_HORIZON} (2^53: a horizon a float holds exactly)")),
)
RATES_PARAMS = Schema(optional={"R": POSINT, "seeds": ANY, "preset": STR_OR_NULL, "lam": POS_OR_NULL,
                                "gamma_rule": STR_OR_NULL, "beta_rule": STR_OR_NULL, "problem": STR})


def _rates_title(d: dict, path) -> str:
    preset = (d.get("params") or {}).get("preset")
    return f"synthetic rates: {d.get('problem', path.stem)}" + (f" at {preset}" if preset else "")


#: the result of :func:`run_rates` (``stam synthetic run``: ``rates-P.json`` with ``rates-P.csv`` of its rows)
RATES = ResultType(
    "synthetic-rates", Schema(
        required={"rows": NONEMPTY_LIST},
        optional={"kind": STR, "problem": STR, "params": DICT, "constants": DICT, "slope": FIN_OR_NULL,
                  "bound_slope": FIN_OR_NULL, "slope_tail": FIN_OR_NULL, "bound_slope_tail": FIN_OR_NULL,
                  "details": LIST, "pep": DICT_OR_NULL, "provenance": DICT_OR_NULL, "constant_status": DICT},
        each={"rows": RATES_ROW}, values={"constant_status": LABELLED},
        inner={"params": RATES_PARAMS, "provenance": PROVENANCE,
               "pep": Schema(required={"rows": LIST}, optional={"kind": STR}, each={"rows": PEP_ROW},
                             rules=(increasing("rows", "T"),))},
        rules=(increasing("rows", "T"),)),
    files="rates-*.json", writer="stam synthetic run", csv=ROW_KEYS, title=_rates_title)


__all__ = ["run_rates", "choose_parameters", "geometric_grid", "eval_schedule", "ROW_KEYS", "RATES",
           "RATES_ROW", "MAX_HORIZON"]
