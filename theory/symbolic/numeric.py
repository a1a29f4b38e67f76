"""Numeric layer of the theory (numpy only, vectorised; no sympy, no torch at import).

The formulas are those of :mod:`stam.theory.symbolic.constants`, compiled to numpy code by
:mod:`stam.theory.symbolic.codegen` (``stam.theory.symbolic.numeric_generated``).  Corrected forms are the
default; ``as_printed=True`` uses the paper's printed ``K_3`` (hence ``M``), the printed
threshold of Remark Rem=09836 and the printed "beta > min{...}" of Theorem conv-rate.

All functions broadcast over numpy arrays: ``gamma``, ``beta``, ``T`` and the fields of
:class:`Constants` may be arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stam.theory.symbolic import numeric_generated as g
from stam.theory.settings import Settings, no_other
from stam.results import (DICT_OR_NULL, DICT, NONNEG_INF_OR_NULL, NUM_OR_NULL, POS_OR_NULL, PROVENANCE, REAL_OR_NULL, STR,
                          ResultType, Schema, at_most)


def _ieee(fn, *args):
    """Call a generated formula in IEEE double arithmetic: arguments as float64 (a Python float
    raises on ``1e308 ** 2`` and on ``x / 0``; an int beyond 2**63 is not a numpy number), and
    overflow, division by zero and underflow give ``inf``/``0`` without a warning.  A result that is
    ``nan`` where the formula is defined (``inf/inf``) is the caller's to refuse (``stam stepsize``
    does)."""
    with np.errstate(all="ignore"):
        out = fn(*(np.asarray(a, dtype=float) for a in args))
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out

# --------------------------------------------------------------------------------------------
# Constants of Assumption ass2 and of the ES inequality
# --------------------------------------------------------------------------------------------


def _check_nonneg(name: str, value, allow_none: bool = False) -> None:
    if value is None:
        if allow_none:
            return
        raise ValueError(f"{name} is required (a finite number >= 0)")
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name}={value!r} is not allowed; it must be a finite number >= 0")


@dataclass(frozen=True)
class Constants:
    """``L_1`` (a1), ``L_2^* .. L_5^*`` (a3), the weak-convexity constant ``l`` (``H(., y) +
    (l/2)||.||^2`` convex) and the ES constants ``A``, ``C`` (Lemma ES-GH / es-lemma).

    ``L1``, ``A`` and ``C`` may be ``None`` when unknown (e.g. for a network); conditions that
    need them are then reported as unknown.  ``l >= -L2*`` is required: an ``L2*``-smooth
    ``H(., y)`` is at most ``L2*``-strongly convex, so a smaller ``l`` is inconsistent."""

    L1: float | None
    L2: float
    L3: float
    L4: float
    L5: float
    l: float
    A: float | None = None
    C: float | None = None

    def __post_init__(self):
        for name in ("L2", "L3", "L4", "L5"):
            _check_nonneg(name, getattr(self, name))
        for name in ("L1", "A", "C"):
            _check_nonneg(name, getattr(self, name), allow_none=True)
        l_arr = np.asarray(self.l, dtype=float)
        if not np.all(np.isfinite(l_arr)):
            raise ValueError(f"l={self.l!r} is not allowed; it must be a finite number")
        if np.any(l_arr < -np.asarray(self.L2, dtype=float)):
            raise ValueError(
                f"l={self.l!r} is not allowed with L2={self.L2!r}: it must be >= -L2 "
                "(H(., y) with an L2-Lipschitz gradient is at most L2-strongly convex)"
            )

    @property
    def L(self):
        """``L = L_1 + L_3^*`` (the smallest L of (a3)); ``None`` if ``L1`` is unknown."""
        return None if self.L1 is None else self.L1 + self.L3


def quadratic_coupling(lam, L1=None, A=None, C=None) -> Constants:
    """``H(x, y) = (lam/2)||x - y||^2``: ``L2* = L3* = L4* = L5* = lam``, smallest ``l = -lam``
    (:func:`stam.theory.symbolic.constants.quadratic_coupling`)."""
    _check_nonneg("lambda", lam)
    return Constants(L1=L1, L2=lam, L3=lam, L4=lam, L5=lam, l=-np.asarray(lam) if np.ndim(lam) else -lam,
                     A=A, C=C)


def es_gh(L1, L3, A0, B0, C0, gap=0.0) -> tuple:
    """``(A, C)`` of Lemma ES-GH from the ES constants of eq. (422); ``gap = (G+H)^inf - G^inf -
    H^inf >= 0`` (0 when ``G`` and ``H`` attain their infima at a common point)."""
    for name, v in (("L1", L1), ("L3", L3), ("A0", A0), ("B0", B0), ("C0", C0), ("gap", gap)):
        _check_nonneg(name, v)
    return _ieee(g.es_gh_A, L1, L3, A0, B0), _ieee(g.es_gh_C, L1, L3, A0, B0, C0, gap)


def es_lemma(L1_i, Ev2_i, L3, delta_inf, as_printed: bool = False) -> tuple:
    """``(A, C)`` of Lemma es-lemma from the per-sample ``L_1^i`` and ``E[v_i^2]`` (arrays over i,
    reduced along the last axis) and ``Delta^inf``; corrected ``A = 2 max(max_i L_1^i E v_i^2, L3*)``."""
    m = np.max(np.asarray(L1_i, dtype=float) * np.asarray(Ev2_i, dtype=float), axis=-1)
    a = _ieee(g.es_lemma_A_printed, L3, m) if as_printed else _ieee(g.es_lemma_A, L3, m)
    with np.errstate(all="ignore"):  # IEEE: an infinite A with Delta^inf = 0 gives C = 0, not nan
        c = np.where(np.asarray(delta_inf) == 0, 0.0, 2 * a * np.asarray(delta_inf, dtype=float))
    return a, c[()] if np.ndim(c) == 0 else c


def deterministic_es(L1, L3, gap=0.0) -> tuple:
    """``(A, C)`` of a deterministic method (full gradient of ``G``): the exact gradient satisfies
    Assumption ass3 with ``A0 = 0, B0 = 1, C0 = 0``, so Lemma ES-GH gives ``A = 2 max(L1, L3*)`` and
    ``C = 2 A gap`` (``gap = (G+H)^inf - G^inf - H^inf``; 0 for ``H = (lam/2)||x - y||^2``)."""
    return es_gh(L1, L3, 0.0, 1.0, 0.0, gap)


def finite_sum(Lmax, N, b, L3, delta_inf, replacement: bool = False, as_printed: bool = False) -> tuple:
    """``(A, C)`` of Lemma es-lemma for ``N`` samples of smoothness ``<= Lmax`` and minibatches of
    ``b``: b-nice sampling without replacement (``E v_i^2 = N/b``), or with replacement
    (``E v_i^2 = (N + b - 1)/b``)."""
    ev2 = _ieee(g.ev2_replacement, N, b) if replacement else _ieee(g.ev2_nice, N, b)
    return es_lemma(np.asarray(Lmax)[..., None], np.asarray(ev2)[..., None], L3, delta_inf, as_printed)


# --------------------------------------------------------------------------------------------
# Lemma conv-lemma and the step-size conditions
# --------------------------------------------------------------------------------------------


def K1(gamma, c: Constants):
    """``K_1`` of eq. (k1)."""
    return _ieee(g.K1, gamma, c.L2, c.l)


def K2(gamma, c: Constants):
    """``K_2`` of Lemma conv-lemma."""
    return _ieee(g.K2, gamma, c.L2)


def K3(gamma, c: Constants, as_printed: bool = False):
    """``K_3``; corrected ``(L4*)^2 (1 + 5 gamma) + 5 K1 (L4*)^2 / K2`` (eq. (eq39))."""
    return _ieee(g.K3_printed if as_printed else g.K3, gamma, c.L2, c.L4, c.l)


def M(gamma, c: Constants, as_printed: bool = False):
    """``M = 2 K_3`` (eq. (eq46))."""
    with np.errstate(over="ignore"):
        return 2 * K3(gamma, c, as_printed)


#: ``gamma lambda`` below which the theorem's region lies for large ``lambda`` when
#: ``H = (lambda/2)||x - y||^2`` (derived: :func:`stam.theory.symbolic.constants.gamma_lambda_limit`, ``1/sqrt(5)``)
GAMMA_LAMBDA_LIMIT = float(g.gamma_lambda_limit())


def gamma_threshold(c: Constants, as_printed: bool = False):
    """sup of gamma with ``K_1 > 0`` (exact; the printed Remark Rem=09836 form with
    ``as_printed``, undefined (nan) at ``L2* = 0``)."""
    if as_printed:
        with np.errstate(divide="ignore", invalid="ignore"):
            return _ieee(g.gamma_threshold_printed, np.asarray(c.L2, dtype=float), c.l)
    return _ieee(g.gamma_threshold, c.L2, c.l)


def gamma_max(c: Constants, as_printed: bool = False):
    """sup of gamma with ``K_1 > 0`` and ``[(L2*)^2 + (L5*)^2] gamma^2 <= 1``."""
    with np.errstate(over="ignore", divide="ignore"):
        s = np.asarray(c.L2, dtype=float) ** 2 + np.asarray(c.L5, dtype=float) ** 2
        second = np.where(s > 0, 1 / np.sqrt(s), np.inf)
    out = np.minimum(gamma_threshold(c, as_printed), second)
    return float(out) if np.ndim(out) == 0 else out


def second_condition(gamma, c: Constants):
    """``[(L2*)^2 + (L5*)^2] gamma^2`` (Theorem conv requires ``<= 1``)."""
    return _ieee(g.second_condition, gamma, c.L2, c.L5)


def admissible_gamma(gamma, c: Constants):
    """Boolean: ``K_1 > 0`` and the second condition of Theorem conv."""
    return (K1(gamma, c) > 0) & (_ieee(g.second_condition, gamma, c.L2, c.L5) <= 1)


def _need(c: Constants, *names: str) -> None:
    missing = [n for n in names if getattr(c, n) is None]
    if missing:
        raise ValueError(f"this needs {', '.join(missing)}; give it (see `stam stepsize --help`)")


def theorem_rhs(T, gamma, beta, c: Constants, delta0, M0, as_printed: bool = False):
    """Right-hand side of Theorem conv (eq. (con-inequality)), valid under its hypotheses
    (see :func:`check`)."""
    _need(c, "L1", "A", "C")
    with np.errstate(over="ignore"):
        return _ieee(g.theorem_rhs, beta, T, c.L, c.A, c.C, M(gamma, c, as_printed), delta0, M0)


BETA_KEYS = ("sqrt((L+M)*A*T)", "2*K2/K1", "2*(L+M)*C/eps^2")


def beta_lower_bounds(T, gamma, c: Constants, eps=None, as_printed: bool = False) -> dict:
    """The lower bounds on beta of Theorem conv-rate (eq. (eq700), Theorem conv, eq. (eq702)); the
    eps one only when ``eps`` is given.  A bound that needs an unknown constant is ``None``.
    ``2*K2/K1`` is ``inf`` where ``K_1 <= 0``."""
    k1, k2 = K1(gamma, c), K2(gamma, c)
    with np.errstate(divide="ignore"):
        conv = np.where(k1 > 0, _ieee(g.beta_min_conv, k1, k2), np.inf)
    out = {"2*K2/K1": conv if np.ndim(conv) else float(conv)}
    m = M(gamma, c, as_printed)
    out["sqrt((L+M)*A*T)"] = None if c.L1 is None or c.A is None else _ieee(g.beta_min_exp, T, c.L, c.A, m)
    if eps is not None:
        out["2*(L+M)*C/eps^2"] = None if c.L1 is None or c.C is None else _ieee(g.beta_min_eps, eps, c.L, c.C, m)
    return {k: out[k] for k in BETA_KEYS if k in out}


def _T_bound(gamma, c, delta0, M0, eps, as_printed=False):
    """Real-valued lower bound on T of Theorem conv-rate (eq. (eq705)); inf where gamma is not
    admissible."""
    k1, k2, m = K1(gamma, c), K2(gamma, c), M(gamma, c, as_printed)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.maximum(
            np.maximum(_ieee(g.T_min_exp, eps, c.L, c.A, m, delta0, M0), _ieee(g.T_min_conv, eps, k1, k2, delta0, M0)),
            _ieee(g.T_min_eps, eps, c.L, c.C, m, delta0, M0),
        )
    return np.where(admissible_gamma(gamma, c), terms, np.inf)


def T_min(gamma, c: Constants, delta0, M0, eps, as_printed: bool = False):
    """Smallest iteration count T that Theorem conv-rate admits for this gamma (eq. (eq705):
    ``max{144 (L+M) A D^2, 24 C (L+M) D} / eps^4`` vs ``24 K2 D / (K1 eps^2)``, ``D = delta0 + M0'``),
    rounded up to an integer >= 1; ``inf`` where gamma violates ``K_1 > 0`` or the second
    condition."""
    _need(c, "L1", "A", "C")
    if np.any(np.asarray(eps) <= 0):
        raise ValueError(f"eps={eps!r} is not allowed; it must be > 0")
    out = np.maximum(np.ceil(_T_bound(gamma, c, delta0, M0, eps, as_printed)), 1.0)
    return float(out) if np.ndim(out) == 0 else out


# --------------------------------------------------------------------------------------------
# Checking a configuration and recommending one
# --------------------------------------------------------------------------------------------


def _f(x) -> float:
    return float(x)


def check(gamma, beta, c: Constants, T=None, eps=None, delta0=None, M0=None, as_printed: bool = False) -> dict:
    """Does (gamma, beta[, T]) satisfy the hypotheses of Theorem conv (and, with ``eps``, of
    Theorem conv-rate)?  Returns ``{"admissible", "violations": [{condition, value, limit}],
    "unknown": [condition...]}``; conditions needing an unknown constant are listed as unknown.

    Conditions: ``K_1 > 0``; ``[(L2*)^2+(L5*)^2] gamma^2 <= 1``; ``beta >= 2 K2/K1``; with T:
    ``beta >= sqrt((L+M) A T)``; with eps: ``beta >= 2 (L+M) C/eps^2``; with T, eps, delta0, M0:
    ``T >= 12 beta (delta0 + M0')/eps^2`` (eq. (eq703)).  ``as_printed`` uses the printed K_3
    and replaces the three beta bounds by the printed ``beta > min{...}``."""
    violations, unknown = [], []

    def cond(name, ok, value, limit):
        if not ok:
            violations.append({"condition": name, "value": _f(value), "limit": _f(limit)})

    k1 = _f(K1(gamma, c))
    cond("K1 > 0 (eq. k1)", k1 > 0, k1, 0.0)
    sc = _f(_ieee(g.second_condition, gamma, c.L2, c.L5))
    cond("[(L2*)^2+(L5*)^2] gamma^2 <= 1 (Theorem conv)", sc <= 1, sc, 1.0)
    bounds = beta_lower_bounds(T if T is not None else 1.0, gamma, c, eps, as_printed)
    names = {
        "2*K2/K1": "beta >= 2 K2/K1 (Theorem conv: beta K1/K2 >= 2)",
        "sqrt((L+M)*A*T)": "beta >= sqrt((L+M) A T) (Theorem conv-rate, eq700)",
        "2*(L+M)*C/eps^2": "beta >= 2 (L+M) C/eps^2 (Theorem conv-rate, eq702)",
    }
    if T is None:
        bounds.pop("sqrt((L+M)*A*T)")
    if as_printed and T is not None and eps is not None:
        known = [v for v in bounds.values() if v is not None]
        lim = min(known)
        cond("beta > min{sqrt((L+M)AT), 2K2/K1, 2(L+M)C/eps^2} (Theorem conv-rate as printed)", beta > lim, beta, lim)
    else:
        for key, lim in bounds.items():
            if lim is None:
                unknown.append(names[key])
            else:
                cond(names[key], beta >= lim, beta, lim)
    if T is not None and eps is not None:
        name = "T >= 12 beta (delta0+M0')/eps^2 (Theorem conv-rate, eq703)"
        if delta0 is None or M0 is None:
            unknown.append(name)
        else:
            with np.errstate(all="ignore"):  # IEEE: eps^2 may underflow to 0, the limit is then inf
                lim = 12 * np.float64(beta) * (np.float64(delta0) + M0) / np.float64(eps) ** 2
            cond(name, T >= lim, T, lim)
    return {"admissible": not violations, "violations": violations, "unknown": unknown}


def violations_text(verdict: dict, digits: int = 4) -> str:
    """The one wording of a violated hypothesis: ``condition: value vs limit``, '; '-joined, for a
    verdict of :func:`check`."""
    return "; ".join(f"{v['condition']}: {float(v['value']):.{digits}g} vs limit {float(v['limit']):.{digits}g}"
                     for v in verdict["violations"])


class Inadmissible(ValueError):
    """Parameters outside the hypotheses of Theorem conv where the caller did not allow them, or a
    gamma at which Theorem conv-rate prescribes no beta (:func:`admissible_parameters`)."""


@dataclass(frozen=True)
class Parameters:
    """What :func:`admissible_parameters` chose: one ``gamma`` and a ``beta`` per horizon ``T``,
    with Theorem conv's verdict on each pair and the rules that produced them (stated in outputs)."""

    gamma: float
    betas: tuple
    T: tuple
    verdicts: tuple
    gamma_max: float
    gamma_rule: str
    beta_rule: str
    gamma_fraction: float | None

    @property
    def admissible(self) -> list:
        return [bool(v["admissible"]) for v in self.verdicts]

    @property
    def beta(self) -> float:
        """The beta of the largest horizon (the one pair of a single-horizon choice)."""
        return self.betas[-1]


BETA_RULE = "max{sqrt((L+M) A T), 2 K2/K1} (Theorem conv-rate, no eps)"


@dataclass(frozen=True)
class StepSizes(Settings):
    """The arguments of the admissible-parameter rule (:func:`admissible_parameters`), one object (issue 38,
    point 4): an explicit ``gamma`` (None: ``gamma_fraction * gamma_max``, ``gamma_fraction`` in (0, 1)), an
    explicit ``beta`` for every horizon (None: the lower bounds of Theorem conv-rate without eps) and whether a
    pair outside Theorem conv's hypotheses is run anyway (``allow_inadmissible``).  The rate experiment
    (:func:`stam.synthetic.rates.run_rates`) and the comparison (:func:`stam.synthetic.baselines.compare`) pass it
    through unchanged; each takes its fields by keyword too (:meth:`Settings.of`)."""

    gamma: float | None = None
    beta: float | None = None
    gamma_fraction: float = 0.5
    allow_inadmissible: bool = False


def admissible_parameters(c: Constants, T=1, *, step_sizes: StepSizes | None = None,
                          remedy: str = "allow inadmissible parameters to run them anyway", **fields) -> Parameters:
    """The admissible-parameter rule, written once: ``gamma = gamma_fraction * gamma_max`` (or the
    given gamma) and, for each horizon in ``T`` (an int or a sequence), ``beta`` = the largest of
    the lower bounds of Theorem conv-rate without eps, ``max{sqrt((L+M) A T), 2 K2/K1}`` (or the
    given beta).  Every pair is checked against Theorem conv (:func:`check`); a violation raises
    :class:`Inadmissible` (worded by :func:`violations_text`, ending with ``remedy``) unless
    ``allow_inadmissible``.  A gamma with ``K_1 <= 0`` and no beta always raises: the theorem
    prescribes no beta there.  ``gamma``, ``beta``, ``gamma_fraction``, ``allow_inadmissible``: the fields
    of ``step_sizes`` (:class:`StepSizes`), or given by keyword (set on ``step_sizes`` or on its defaults)."""
    step_sizes = StepSizes.of(step_sizes, fields)
    no_other(fields, "admissible_parameters")
    gamma, beta, gamma_fraction = step_sizes.gamma, step_sizes.beta, step_sizes.gamma_fraction
    horizons = tuple(int(t) for t in (T if np.ndim(T) else [T]))
    gmax = gamma_max(c)
    if gamma is None:
        if not 0 < gamma_fraction < 1:
            raise ValueError(f"gamma_fraction={gamma_fraction!r} is not allowed; it must be in (0, 1)")
        if not (math.isfinite(gmax) and gmax > 0):
            raise Inadmissible(f"no admissible gamma in floating point: gamma_max={gmax!r} at these constants")
        gamma, gamma_rule = gamma_fraction * gmax, f"{gamma_fraction:g} * gamma_max"
    else:
        gamma, gamma_rule, gamma_fraction = float(gamma), "given", None
    if beta is None:
        if not K1(gamma, c) > 0:
            raise Inadmissible(f"gamma = {gamma:g} gives K1 <= 0 (gamma_max = {gmax:.4g}): Theorem conv-rate prescribes "
                               f"no beta there; give a beta and {remedy}")
        betas = tuple(float(max(v for v in beta_lower_bounds(t, gamma, c).values() if v is not None)) for t in horizons)
        beta_rule = BETA_RULE
    else:
        betas, beta_rule = (float(beta),) * len(horizons), "given"
    verdicts = tuple(check(gamma, b, c) for b in betas)
    bad = next((i for i, v in enumerate(verdicts) if not v["admissible"]), None)
    if bad is not None and not step_sizes.allow_inadmissible:
        raise Inadmissible(f"gamma = {gamma:g}, beta = {betas[bad]:g} violate Theorem conv "
                           f"({violations_text(verdicts[bad])}); {remedy}")
    return Parameters(float(gamma), betas, horizons, verdicts, float(gmax), gamma_rule, beta_rule, gamma_fraction)


def _argmin_gamma(c, delta0, M0, eps, as_printed, gmax) -> float:
    """The admissible gamma minimising the T bound: a geometric grid on (0, gamma_max], then a
    linear grid around the best point (vectorised; the bound is smooth in gamma)."""
    grid = gmax * np.geomspace(1e-7, 1.0, 4001)
    vals = _T_bound(grid, c, delta0, M0, eps, as_printed)
    i = int(np.argmin(vals))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    fine = np.linspace(lo, hi, 4001)
    fvals = _T_bound(fine, c, delta0, M0, eps, as_printed)
    j = int(np.argmin(fvals))
    return float(fine[j]) if fvals[j] <= vals[i] else float(grid[i])


def recommend(c: Constants, delta0, M0, eps, as_printed: bool = False, gamma=None) -> dict:
    """The step sizes the theory admits: ``gamma_max``; the recommended ``gamma`` = the admissible
    gamma that minimises ``T_min`` (or the given ``gamma``, which must be admissible); at it
    ``K1, K2, K3, M, L``; ``T_min`` (Theorem conv-rate) and ``beta_min`` = the largest of the
    three lower bounds on beta at ``T = T_min``, with the name of the one that binds."""
    _need(c, "L1", "A", "C")
    for name, v in (("delta0", delta0), ("M0", M0)):
        _check_nonneg(name, v)
    if not (eps is not None and math.isfinite(eps) and eps > 0):
        raise ValueError(f"eps={eps!r} is not allowed; it must be a finite number > 0")
    gmax = gamma_max(c, as_printed)
    if not (math.isfinite(gmax) and gmax > 0):
        raise ValueError(f"no admissible gamma in floating point: gamma_max={gmax!r} at these constants")
    if gamma is None:
        gam = _argmin_gamma(c, delta0, M0, eps, as_printed, gmax)
    else:
        gam = float(gamma)
        if not bool(admissible_gamma(gam, c)):
            raise ValueError(f"gamma={gamma!r} is not admissible; allowed: 0 < gamma <= gamma_max={gmax:.6g}")
    tmin = T_min(gam, c, delta0, M0, eps, as_printed)
    bounds = beta_lower_bounds(tmin, gam, c, eps, as_printed)
    binding = max(bounds, key=lambda k: bounds[k])
    return {
        "gamma_max": _f(gmax),
        "gamma": gam,
        "K1": _f(K1(gam, c)),
        "K2": _f(K2(gam, c)),
        "K3": _f(K3(gam, c, as_printed)),
        "M": _f(M(gam, c, as_printed)),
        "L": _f(c.L),
        "beta_min": _f(bounds[binding]),
        "binding": binding,
        "T_min": int(tmin) if math.isfinite(tmin) else tmin,
    }



# -- the result of ``stam stepsize --json`` (:func:`recommend`'s object; inf where a bound is beyond floating point) --
#: a constant with its label (``ThreeBlockProblem.constants_report``): certified, or estimated with its estimator
LABELLED = Schema(required={"status": STR}, optional={"value": NUM_OR_NULL, "how": STR, "settings": STR})
STEPSIZE = ResultType(
    "stepsize", Schema(required={"gamma_max": NONNEG_INF_OR_NULL, "beta_min": NONNEG_INF_OR_NULL, "binding": STR},
                       optional={"kind": STR, "gamma": POS_OR_NULL, "K1": REAL_OR_NULL, "K2": REAL_OR_NULL,
                                 "K3": REAL_OR_NULL, "M": REAL_OR_NULL, "L": REAL_OR_NULL, "T_min": NONNEG_INF_OR_NULL,
                                 "provenance": DICT_OR_NULL, "constants": DICT},
                       inner={"provenance": PROVENANCE}, values={"constants": LABELLED},
                       rules=(at_most("gamma", "gamma_max"),)),
    files="stepsize.json", writer="stam stepsize --json", aliases=("stepsize-recommendation",),
    recognise=lambda obj: isinstance(obj, dict) and {"gamma_max", "beta_min", "binding"} <= obj.keys())


__all__ = ["LABELLED", "STEPSIZE", 
    "GAMMA_LAMBDA_LIMIT",
    "Constants", "quadratic_coupling", "es_gh", "es_lemma", "finite_sum", "K1", "K2", "K3", "M",
    "gamma_threshold", "gamma_max", "second_condition", "admissible_gamma", "theorem_rhs", "beta_lower_bounds", "T_min",
    "check", "recommend", "BETA_KEYS", "deterministic_es", "violations_text", "Inadmissible", "Parameters",
    "StepSizes", "admissible_parameters", "BETA_RULE",
]
