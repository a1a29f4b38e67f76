"""Automated Lyapunov search for STAM (Taylor, Van Scoy, Lessard 2018; Taylor, Bach 2019).

Question (issues 15, 22): for which ``(gamma, lam, beta)`` does *some* Lyapunov function certify that
STAM (Algorithm 1, eq. (algalg1), with the full gradient of ``G`` or b-nice minibatches) reaches
stationarity at the rate ``O(1/T)``, for every problem of the class

- ``G`` ``L1``-smooth, nonconvex, bounded below (Assumption ass2 (a1));
- ``F`` reached only through its proximal step eq. (algu), of one of the classes of
  :mod:`stam.theory.worstcase.pep` (``f_class``): any proper lsc ``F`` (``"lsc"``, the paper's class and the
  default), the indicator of any closed set (``"indicator"``, e.g. the binary ``Q``), or closed proper
  convex (``"convex"``).  The nonconvex classes use the exact interpolation condition of the
  proximal step (:func:`prox_pair`): the convex inequality with the curvature ``1/gamma`` allowed;
- ``H(x, y) = (lam/2)||x - y||^2`` (the network coupling; no oracle: its gradients and the x-step
  eq. (algx) are affine in the iterates)?

The search is written in five modules, each of one concern:

- :mod:`stam.theory.worstcase.sdpstep`: one step of a method as coefficient vectors over a basis, the interpolation
  inequalities of the function classes (:class:`OneStep`);
- :mod:`stam.theory.worstcase.templates`: the steps of gradient descent, proximal gradient and STAM (the templates of the
  potential, the sampled gradients: its docstring);
- :mod:`stam.theory.worstcase.sdp`: the SDP of one step, its solve and its verification in floating point (solver status,
  the face of the fixed points: its docstring);
- :mod:`stam.theory.worstcase.sdpproof`: the proof of a verified certificate in exact rational arithmetic;
- this module: STAM's certificate (:func:`certify_stam`), the certified region (``stam pep --region``: the
  gamma search, :func:`region`, its jobs) and its result type (:data:`REGION`).  Every public name of the
  others is importable from here too.

**Why not AutoLyap.**  AutoLyap 0.2.1 (``pip install autolyap``, in the ``pep`` extra) was tried
first; its representation does not fit STAM, so the SDP is written here with cvxpy:

1. its problem is the one-variable inclusion ``0 in sum_i dF_i(y)`` on one space, with every
   linear map of the method a scalar multiple of the identity (Kronecker form); STAM solves the
   two-block problem (model) ``min F(x) + G(y) + H(x, y)`` whose stationarity measure (Theorem
   conv) couples the blocks through ``H``, which is no component of such an inclusion;
2. its interpolation conditions always include a common solution point ``y*`` of that inclusion
   (pairs with ``star``), which STAM's class does not have (``G`` and ``F`` are queried at
   different points, and the stationary point of (model) has ``x* != y*``);
3. its sublinear analyses measure ``V >= 0`` relative to ``y*``; a nonconvex ``G`` needs the lower
   bound ``G^inf`` (and ``Phi^inf``) modelled as above.  On the one case both can express,
   gradient descent on an ``L``-smooth function, ``tests/test_lyapunov.py`` checks that AutoLyap and
   this module agree on the threshold ``gamma = 2/L``.

**Checks** (tests): gradient descent (:func:`gradient_descent`) and proximal gradient with a
convex ``F`` (:func:`proximal_gradient`) are certified exactly for ``gamma < 2/L``, proximal gradient
with a nonconvex ``F`` exactly for ``gamma < 1/L``; at parameters
of Theorem conv the paper template gives ``1/rho`` below the theorem's constant; where the paper
template is certified, ``stam pep``'s worst case is below ``1 / (rho T)``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from stam.errors import UsageError, require
from stam.io import provenance
from stam.theory.symbolic import numeric
from stam.theory.params import (REFUTE_BETAS, REFUTE_TS, REGION_GAMMA_RANGE, REGION_RTOL, REGION_SAMPLING, SCAN_MAX_STEPS,
                                SCAN_RATIO, RegionParams)
from stam.theory.params import DEFAULT_F_CLASS, F_CLASSES
from stam.theory.worstcase.pep import GAMMA_L1_MIN, check_f_class, stam_pep, validate_sampling
from stam.theory.worstcase.sdp import RHO_MIN, Certificate, search
from stam.theory.worstcase.sdpproof import NUMERICAL_ONLY, prove
from stam.theory.settings import GammaScan, ProblemClass, SdpOptions, no_other
from stam.theory.worstcase.templates import GROWTH_PER_RATE, check_parameters, stam_step_sdp, stam_step_sdp_sampled
from stam.results import (COUNT, DICT, DICT_OR_NULL, LIST, NONNEG, NONNEG_OR_NULL, POS, POS_OR_NULL, POSINT, PROVENANCE,
                          STR, ResultType, Schema, at_most, distinct, one_of, ordered)
# the public names of the search's other modules, importable from here as when they lived here

#: STAM certificates count only with ``rho * beta >= RHO_BETA_MIN`` (:func:`rate_floor`; scale-free, as ``rho``
#: scales like ``1/beta``): the y-step moves by ``1/beta`` of a gradient step, and a rate a thousand times below
#: that proves a bound too weak to matter (near the end of a region the rate falls continuously to 0; the floor
#: puts the bracket's end where it is still of that size).
RHO_BETA_MIN = 1e-3
#: how a status is counted (``statuses`` of :func:`certified_gamma`) when the solver's optimal rate failed the
#: verification (:func:`stam.theory.worstcase.sdp.verify`; ``details["unverified"]`` of the :class:`Certificate`).
UNVERIFIED = "rejected by the verification"
#: how a status is counted when the solver's optimal rate is below :func:`rate_floor` (``details["below_floor"]``).
BELOW_FLOOR = "rate below rho*beta = 1e-3"


#: the smallest gamma a region's search starts from (``stam pep --region --gamma-range LO:...``): a certificate's
#: rate is about ``gamma/2`` for small gamma (whatever L1 and lambda: the rate scales as the step), so below
#: ``10 RHO_MIN`` none reaches :data:`RHO_MIN`, the smallest rate the solver is trusted with, and the bracket would
#: be the solver's accuracy, not the template's
REGION_GAMMA_MIN = 10 * RHO_MIN
#: the largest ``gamma * max(L1, lambda)`` a region's search reaches (``--gamma-range ...:HI``): the inverse of the
#: PEP's floor :data:`stam.theory.worstcase.pep.GAMMA_L1_MIN`, so that its coefficients ``gamma L1`` and ``1/(gamma L1)`` both
#: stay within a factor 1e9 (at 1e300 cvxpy refuses the data: NaN or Inf); the default region reaches 3.2e5
REGION_SCALE_MAX = 1 / GAMMA_L1_MIN


def rate_floor(beta: float) -> float:
    """The smallest rate a STAM certificate counts with (:func:`certify_stam`): :data:`RHO_MIN`, and at least
    :data:`RHO_BETA_MIN` ``/ beta``."""
    return max(RHO_MIN, RHO_BETA_MIN / beta)


def certify_stam(lam: float, gamma: float, beta: float, *, template: str = "general",
                 problem: ProblemClass | None = None, sdp: SdpOptions | None = None, at: tuple | None = None,
                 **fields) -> Certificate:
    """The best certificate of ``template`` for STAM at ``(lam, gamma, beta)`` over the class ``problem``
    (:class:`stam.theory.settings.ProblemClass`: ``L1``, ``F`` of ``f_class``, the gradient): deterministic
    (``N = b = 1``, the full gradient) or with b-nice minibatches of ``G = (1/N) sum_i G_i`` (paper template only;
    :func:`stam_step_sdp_sampled`), solved as ``sdp`` says (:class:`stam.theory.settings.SdpOptions`: the solver,
    its options, ``rho_min``).  It counts with a rate of at least ``rho_min`` (default :func:`rate_floor`); an
    optimal rate below that floor is marked ``details["below_floor"]`` (the solver's accuracy, not a certificate).
    The fields of both also by keyword (``certify_stam(lam, gamma, beta, template="paper", f_class="convex",
    solver="scs")``).  ``at``: the exact rationals ``(lam, gamma, beta, L1)`` the proof is made at (default: the
    values the floats store; ``stam pep --certify`` gives the decimals typed, ``0.1`` as ``1/10``); a proven
    certificate keeps its exact point and step in ``cert.proof`` (:mod:`stam.theory.worstcase.certificates` writes it)."""
    problem, sdp = ProblemClass.of(problem, fields), SdpOptions.of(sdp, fields)
    no_other(fields, "certify_stam")
    L1, f_class, N, b = problem.L1, problem.f_class, problem.N, problem.b
    solver, solver_options = sdp.solver, sdp.solver_options
    floor = rate_floor(beta) if sdp.rho_min is None else sdp.rho_min
    check_f_class(f_class)
    validate_sampling(N, b)
    def build(exact=False):
        p = at if exact and at is not None else (lam, gamma, beta, L1)
        if (N, b) != (1, 1):
            require(template == "paper", f"sampled gradients (N={N}, b={b}) are searched with the paper template only")
            return stam_step_sdp_sampled(*p[:3], p[3], f_class, N, b, exact=exact)
        return stam_step_sdp(*p[:3], p[3], template, f_class, exact=exact)

    with np.errstate(over="raise", invalid="raise"):  # FloatingPointError: coefficients beyond floating point
        step = build()
    free_P, order = (False, None) if template == "paper" else (True, ("a", "b"))
    cert = search(step, free_P=free_P, order=order, rho_min=floor, solver=solver, solver_options=solver_options)
    if cert.certified:  # certified means proven: the exact proof of the verified point (issue 39)
        t0 = time.perf_counter()
        exact = build(exact=True)
        proof = prove(exact, cert.point, free_P, order, None if exact.growth is None else exact.growth[2],
                      cert.residual.get("near", ()))
        cert.details["proof"] = {"exact": proof["proven"], "seconds": time.perf_counter() - t0,
                                 **({"reason": proof["reason"]} if not proof["proven"] else {})}
        if not proof["proven"]:
            cert.certified = False
            cert.details["numerical_only"] = True
        else:
            cert.proof = {**proof, "step": exact, "free_P": free_P,
                          "params": dict(zip(("lam", "gamma", "beta", "L1"),
                                             (Fraction(v) for v in (at or (lam, gamma, beta, L1)))))}
    cert.details.update(template=step.note, f_class=f_class, N=N, b=b, size=step.basis.nb,
                        constraints=len(step.interp), rate_floor=floor)
    solver_rho = cert.details.get("solver_rho")
    if cert.status == "optimal" and solver_rho is not None and RHO_MIN <= solver_rho < floor:
        cert.details["below_floor"] = True
    return cert


# --------------------------------------------------------------------------- the certified region
#: defaults of :func:`region` (``stam pep --region``): 12 lambdas on a log grid, gamma searched on
#: [1e-4, 1e4] (log bisection to a ratio of 1.02), beta on a log grid, refutation at T = 1, 2.
REGION_LAMS = tuple(float(v) for v in np.logspace(-2, 1.5, 12))
REGION_BETAS = tuple(float(v) for v in np.logspace(0, 6, 13))
# the rest, literals, are declared with the command's parameters (stam.theory.params, imported above)


def _bisect(test, lo: float, hi: float, rtol: float):
    """Log bisection of a property that holds at small gamma and fails at large: returns
    ``(last holding, first failing, calls)``; ``None`` for an end that was never met."""
    calls = 0
    ok_lo, calls = test(lo), calls + 1
    if not ok_lo:
        return None, lo, calls
    ok_hi, calls = test(hi), calls + 1
    if ok_hi:
        return hi, None, calls
    lo, hi, more = _bisect_inside(test, lo, hi, rtol)
    return lo, hi, calls + more


# the ratio of the scan of :func:`_first_gap` and its most steps: SCAN_RATIO, SCAN_MAX_STEPS of stam.theory.params


def gamma_scan_ratio(gamma_range) -> float:
    """The factor of the scan of :func:`_first_gap` over ``gamma_range``: :data:`SCAN_RATIO` for
    ``(lo, hi)``; for ``(lo, hi, n)`` (``stam pep --region --gamma-range LO:HI:N``) the one that scans
    n gammas from lo to hi, geometrically spaced."""
    if len(gamma_range) < 3 or gamma_range[2] < 2 or not gamma_range[1] > gamma_range[0]:
        return SCAN_RATIO
    lo, hi, n = gamma_range
    return (hi / lo) ** (1 / (n - 1))


def _first_gap(test, lo: float, hi: float, rtol: float, ratio: float = SCAN_RATIO):
    """The end of the interval from below where ``test`` holds: a scan upwards from ``lo`` by factors
    ``ratio`` to the first failure, then log bisection between the last success and it.  Unlike
    :func:`_bisect` it does not assume the property fails everywhere above its first failure (with a
    nonconvex ``F`` the certified gammas are not an interval: the class itself depends on gamma); a
    gap narrower than ``ratio`` can be stepped over.  Returns ``(last holding, first failing, calls)``."""
    calls = 1
    if not test(lo):
        return None, lo, calls
    ratio = max(ratio, (hi / lo) ** (1 / SCAN_MAX_STEPS))  # a wide range: at most SCAN_MAX_STEPS steps
    g = lo
    while g < hi:
        nxt = min(g * ratio, hi)
        calls += 1
        if not test(nxt):
            a, b, more = _bisect_inside(test, g, nxt, rtol)
            return a, b, calls + more
        g = nxt
    return hi, None, calls


def _bisect_inside(test, lo: float, hi: float, rtol: float):
    """Log bisection with ``test(lo)`` true and ``test(hi)`` false already known."""
    calls = 0
    while hi / lo > 1 + rtol:
        mid = math.sqrt(lo * hi)
        calls += 1
        if test(mid):
            lo = mid
        else:
            hi = mid
    return lo, hi, calls


def status_key(c: Certificate) -> str:
    """How :func:`certified_gamma` counts a certificate's status: the solver's, and why an optimal rate is no
    certificate (:data:`UNVERIFIED`, :data:`NUMERICAL_ONLY`, :data:`BELOW_FLOOR`)."""
    return (f"{c.status}, {UNVERIFIED}" if c.details.get("unverified") else
            f"{c.status}, {NUMERICAL_ONLY}" if c.details.get("numerical_only") else
            f"{c.status}, {BELOW_FLOOR}" if c.details.get("below_floor") else c.status)


def _gap_from_first_success(test, start: float, top: float, rtol: float, ratio: float):
    """:func:`_first_gap` from the first gamma of the scan up from ``start`` (by factors ``ratio``, to ``top``)
    where ``test`` holds: ``(that gamma, last holding, first failing)``; ``(start, None, first failing)`` when none
    holds (the scan reaches ``top``)."""
    lo, hi, g = None, start, start
    while lo is None and g < top:
        g = min(g * ratio, top)
        if test(g):
            start = g
            lo, hi, _ = _first_gap(test, g, top, rtol, ratio=ratio)
    return start, lo, hi


def certified_gamma(lam: float, template: str = "general", betas=REGION_BETAS, *, problem: ProblemClass | None = None,
                    scan: GammaScan | None = None, solver: str | None = None, inherited=(), **fields) -> dict:
    """The end of the interval of gammas, from ``gamma_range[0]`` up, with a certificate of ``template`` for
    some beta of ``betas`` (:func:`_first_gap`: a scan by factors 1.2, then log bisection; it
    reports the bracket): ``lo`` the largest certified gamma found (None: not even ``gamma_range[0]``),
    ``hi`` the smallest uncertified one above it (None: certified up to ``gamma_range[1]``),
    ``beta`` and ``rho`` of the certificate at ``lo``, and the count of every solver status.
    ``inherited``: gammas already certified for a larger class of ``F`` (any proper lsc ``F`` contains
    the convex ones): its certificate is one for ``f_class`` too, so they count without a solve
    (``inherited`` in the result counts them; without it the solver's accuracy at rates near
    :data:`RHO_MIN` could make a smaller class look less certified).  ``problem``: the class
    (:class:`stam.theory.settings.ProblemClass`), ``scan``: where gamma is searched
    (:class:`stam.theory.settings.GammaScan`: ``gamma_range``, ``rtol``, ``scan_ratio``), the fields of both also
    by keyword."""
    problem, scan = ProblemClass.of(problem, fields), GammaScan.of(scan, fields)
    no_other(fields, "certified_gamma")
    gamma_range, rtol = scan.gamma_range, scan.rtol
    search = _GammaSearch(lambda gamma, beta: certify_stam(lam, gamma, beta, template=template, problem=problem,
                                                          solver=solver),
                          betas, inherited)
    ratio = gamma_scan_ratio(gamma_range) if len(gamma_range) > 2 else scan.scan_ratio  # LO:HI:N fixes the scan
    start = gamma_range[0]
    lo, hi, _ = _first_gap(search.test, start, gamma_range[1], rtol, ratio=ratio)
    if lo is None and search.unverified.get(start, 0.0) >= RHO_BETA_MIN:
        # the first gamma's rate was not verified (at gamma lam ~ 1e-6 the minibatch SDP is at the solver's accuracy):
        # the interval is sought from the first certified gamma of the scan up ("start")
        start, lo, hi = _gap_from_first_success(search.test, start, gamma_range[1], rtol, ratio)
    return search.bracket(lo, hi, start, gamma_range[0], {"f_class": problem.f_class, "N": problem.N, "b": problem.b})


class _GammaSearch:
    """What :func:`certified_gamma` learns as it tests gammas: ``certify(gamma, beta)`` (a :class:`Certificate`)
    tried for each beta of ``betas``, the last good beta first; ``inherited`` gammas hold without a solve.
    It counts every solver status (:func:`status_key`), keeps the certified ``(beta, rho)`` of each gamma
    (``found``), the slowest solve and, per gamma, the largest ``rho * beta`` the verification rejected
    (``unverified``)."""

    def __init__(self, certify, betas, inherited=()):
        self.certify = certify
        self.order = list(betas)[::-1]
        self.inherited = set(inherited)
        self.statuses: dict[str, int] = {}
        self.found: dict[float, tuple] = {}
        self.slowest = 0.0
        self.taken = 0
        self.unverified: dict[float, float] = {}  # gamma -> the largest rho * beta the verification rejected there
        self.seen: dict[float, bool] = {}

    def test(self, gamma) -> bool:
        """Whether some beta certifies ``gamma`` (each gamma solved once)."""
        if gamma not in self.seen:
            self.seen[gamma] = self._solve(gamma)
        return self.seen[gamma]

    def _solve(self, gamma) -> bool:
        if gamma in self.inherited:
            self.taken += 1
            return True
        for beta in list(self.order):
            c = self.certify(gamma, beta)
            key = status_key(c)
            self.statuses[key] = self.statuses.get(key, 0) + 1
            if c.details.get("unverified") or c.details.get("numerical_only"):
                self.unverified[gamma] = max(self.unverified.get(gamma, 0.0), c.details["solver_rho"] * beta)
            self.slowest = max(self.slowest, c.seconds)
            if c.certified:
                self.found[gamma] = (beta, c.rho)
                self.order.remove(beta)
                self.order.insert(0, beta)  # try the last good beta first next time
                return True
        return False

    def bracket(self, lo, hi, start, first, searched: dict) -> dict:
        """The result of :func:`certified_gamma` for the bracket ``[lo, hi)`` found from ``start`` (``first``: the
        range's first gamma; ``searched``: the class of F and the sampling, as the result names them)."""
        beta, rho = self.found.get(lo, (None, None))
        return {"lo": lo, "hi": hi, "beta": beta, "rho": rho, "statuses": self.statuses,
                # the scan's first gamma where the interval begins; when it is above gamma_range[0], the gammas below
                # it had rates the verification rejected
                "start": start, "start_unverified": start > first,
                "solves": sum(self.statuses.values()), "slowest_solve": self.slowest, **searched,
                "inherited": self.taken, "certified_at": sorted(self.found),
                # the first uncertified gamma had a rate above the floor (rho beta >= RHO_BETA_MIN) that the solver
                # called optimal and the verification rejected: the end of the bracket is the solver's accuracy there,
                # not shown to be the template's limit (near the end of a region rates fall to the floor: a rejected
                # one below it means nothing)
                "hi_unverified": hi is not None and self.unverified.get(hi, 0.0) >= RHO_BETA_MIN,
                "hi_rejected_rho_beta": self.unverified.get(hi) if hi is not None else None}


def refuted_gamma(lam: float, Ts=REFUTE_TS, betas=REFUTE_BETAS, L1: float = 1.0, gamma_range=REGION_GAMMA_RANGE,
                  rtol: float = REGION_RTOL, solver: str | None = None, f_class: str = DEFAULT_F_CLASS) -> dict:
    """The smallest gamma where ``stam pep`` (:func:`stam.theory.worstcase.pep.stam_pep`) is *unbounded* at
    some ``T`` of ``Ts`` for every beta of ``betas``: there ``min_{t<T} S_t`` is not bounded by any
    multiple of ``delta0 + M0'_T`` for ``F`` of ``f_class`` (so for no larger class either), so no
    bound of Theorem conv's form holds and no certificate of the ``"paper"`` template exists.
    ``lo`` the largest gamma found not refuted, ``hi`` the smallest refuted one (None: none)."""
    statuses: dict[str, int] = {}

    def refuted(gamma):
        for beta in betas:
            hit = False
            for T in Ts:
                r = stam_pep(lam, gamma, beta, T, L1=L1, solver=solver, f_class=f_class)
                statuses[r.status] = statuses.get(r.status, 0) + 1
                if r.status == "unbounded":
                    hit = True
                    break
            if not hit:
                return False
        return True

    lo, hi, _ = _bisect(lambda g: not refuted(g), *gamma_range[:2], rtol)
    return {"lo": lo, "hi": hi, "statuses": statuses, "solves": sum(statuses.values()), "f_class": f_class}


# REGION_SAMPLING (stam.theory.params): the sampled gradient of the default region, G = (G_1 + G_2)/2,
# minibatches of one (two branches).
#: :func:`theorem_region`: the fractions of Theorem conv's gamma_max(lam) checked.
THEOREM_FRACTIONS = (0.5, 0.99)


def theorem_region(lam: float, L1: float = 1.0, f_class: str = DEFAULT_F_CLASS, sampling=REGION_SAMPLING,
                   fractions=THEOREM_FRACTIONS, solver: str | None = None) -> dict:
    """Is Theorem conv's own region certified for ``F`` of ``f_class``?  The paper template at
    ``gamma = frac * gamma_max(lam)`` for each ``frac`` of ``fractions``, with the theorem's
    ``beta = ceil(2 K2 / K1)``, with the full gradient and (``sampling``) b-nice minibatches.  A
    certificate there proves ``min_{t<T} E S_t <= q^T (delta0 + M0'_T)/(rho T) + kappa Delta / rho`` with
    ``M0'_T <= M0'`` (so it holds with the paper's ``M0'`` too); ``1/rho <= 2 beta`` is at least as good
    as the theorem's constant ``2 (1 + (L+M) A / beta^2)^T beta``.  ``certified``: every point;
    ``max_inv_rho_beta``: the largest ``1 / (rho beta)`` of the certified points."""
    c = numeric.quadratic_coupling(float(lam), L1=L1)
    gmax = float(numeric.gamma_max(c))
    samplings = [(1, 1)] + ([tuple(int(v) for v in sampling)] if sampling is not None and tuple(sampling) != (1, 1) else [])
    points = []
    for frac in fractions:
        gamma = frac * gmax
        beta = float(math.ceil(2 * float(numeric.K2(gamma, c)) / float(numeric.K1(gamma, c))))
        for N, b in samplings:
            cert = certify_stam(float(lam), gamma, beta, template="paper", problem=ProblemClass(L1, f_class, N, b),
                                solver=solver)
            points.append({"fraction": frac, "gamma": gamma, "beta": beta, "N": N, "b": b, "certified": cert.certified,
                           "rho": cert.rho, "status": cert.status})
    good = [1 / (p["rho"] * p["beta"]) for p in points if p["certified"]]
    return {"fractions": list(fractions), "points": points, "certified": len(good) == len(points),
            "max_inv_rho_beta": max(good) if good else None}


def region_row(lam: float, params: RegionParams | None = None, **settings) -> dict:
    """One row of :func:`compute_region` (one lambda): the searches of :func:`region` at ``lam`` with the fields of
    ``params`` that decide a row (those marked ``job``: the betas, the gamma range, ``L1``, the class of F, the
    sampled gradient, the solver and the search's settings; the grids given as None are the defaults,
    :func:`resolved`).  ``settings``: fields of :class:`~stam.theory.params.RegionParams` by keyword, set on
    ``params`` (the keyword form of before, ``region_row(lam, betas=..., L1=...)``, still works)."""
    params = resolved(dataclasses.replace(params, **settings) if params is not None else RegionParams(**settings))
    betas, L1, gamma_range, rtol, solver = params.betas, params.L1, params.gamma_range, params.rtol, params.solver
    f_class, sampling, scan_ratio = params.f_class, params.sampling, params.scan_ratio
    refute_Ts, refute_betas, beside_convex, refute_beside = (params.refute_Ts, params.refute_betas, params.beside_convex,
                                                             params.refute_beside)
    scan = GammaScan(gamma_range, rtol, scan_ratio)
    t0 = time.perf_counter()
    gmax = float(numeric.gamma_max(numeric.quadratic_coupling(float(lam), L1=L1)))
    row = {"lam": float(lam), "gamma_theorem": gmax}
    classes = [f_class] + (["convex"] if beside_convex and f_class != "convex" else [])
    for cls in classes:
        larger = row if cls != f_class and f_class == "lsc" else None  # lsc certificates hold for convex F
        part = {
            tpl: certified_gamma(lam, tpl, betas, problem=ProblemClass(L1, cls), scan=scan, solver=solver,
                                 inherited=larger[tpl]["certified_at"] if larger else ())
            for tpl in ("general", "paper")
        }
        if cls == f_class or refute_beside:
            part["refuted"] = refuted_gamma(lam, refute_Ts, refute_betas, L1, gamma_range, rtol, solver, f_class=cls)
        if cls == f_class:
            row.update(part)
            if sampling is not None:
                row["sampled"] = certified_gamma(lam, "paper", betas, problem=ProblemClass(L1, cls, int(sampling[0]),
                                                                                          int(sampling[1])),
                                                 scan=scan, solver=solver)
            row["theorem"] = theorem_region(lam, L1, cls, sampling, solver=solver)
        else:
            row[cls] = part
    row["seconds"] = time.perf_counter() - t0
    return row


def default_workers() -> int:
    """The processes :func:`region` uses by default in ``stam pep --region`` and ``stam demo``: 2 where this
    process may use 2 CPUs, else 1."""
    import os

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 2 if cpus >= 2 else 1


#: ``"kind"`` of a job spec of :func:`region` (one lambda's row, :func:`region_job`)
ROW_JOB = "lyapunov-region-row"


def region_job(spec: dict) -> dict:
    """One job of :func:`region` (:func:`stam.jobs.run_jobs`): the row of one lambda, :func:`region_row` of the
    spec's arguments (everything the row depends on is in the spec, so a stored row is reused only for the same
    search)."""
    args = {k: v for k, v in spec.items() if k not in ("kind", "lam", "version")}
    for name in ("betas", "gamma_range", "refute_Ts", "refute_betas", "sampling"):
        if args.get(name) is not None:
            args[name] = tuple(args[name])
    return region_row(spec["lam"], RegionParams(**args))


def check_region_row(result: dict, spec: dict, path) -> None:
    """A stored row makes sense and is the row of its spec (:func:`stam.jobs.run_jobs`' ``check``): else it is
    computed again.  It must be a row of the result (:data:`REGION_ROW`: every bracket ``lo <= hi``, ...; the
    sampled one, if searched, a :data:`BRACKET` too), so that a poisoned store entry is named and recomputed
    here, never blamed on ``region.json`` when the result is written."""
    from stam.results import validate

    parts = ("general", "paper", "refuted", "theorem") + (("sampled",) if spec.get("sampling") is not None else ())
    if not isinstance(result, dict) or result.get("lam") != spec["lam"] or any(
            not isinstance(result.get(k), dict) for k in parts):
        raise UsageError(f"{path}: not the lyapunov-region row of lambda = {spec['lam']}")
    validate(result, REGION_ROW, Path(path))
    if spec.get("sampling") is not None:
        validate(result["sampled"], BRACKET, Path(path), where="sampled.")


#: changes when the search changes (the verification of issue 22): a store's rows of an older search are not reused
SEARCH_VERSION = 3


def region(lams=REGION_LAMS, *, progress=None, store=None, bar: bool = False, **settings) -> dict:
    """The ``lyapunov-region`` result (``stam pep --region``): for each lambda, for ``F`` of
    ``f_class`` (default the paper's class, any proper lsc ``F``) the certified gamma of both templates
    with the full gradient (``general``, ``paper``), of the paper template with b-nice minibatches of
    ``sampling = (N, b)`` (``sampled``; None: not searched), the refuted gamma, and Theorem conv's
    ``gamma_max(lam)``, and whether Theorem conv's own region is certified for the class
    (``theorem``, :func:`theorem_region`); with ``beside_convex`` (and a nonconvex ``f_class``) the same
    three searches for convex ``F`` under ``convex`` (without its refutation when not ``refute_beside``).
    The lambdas are jobs of the toolkit's one job engine (:func:`stam.jobs.run_jobs`, :func:`region_job`): stored
    in ``store`` (a folder; None: a temporary one) as they finish, so a rerun on the same store computes only the
    missing rows; ``workers`` local processes (default 1 here) or a Dask ``scheduler`` (every row is computed alone,
    so the result is the same; ``progress`` sees the rows in order once all are done; ``bar``: the engine's progress
    bar); ``scan_ratio``: the step of the scan (:func:`_first_gap`).

    The keyword form of :func:`compute_region`: ``settings`` are the fields of
    :class:`stam.theory.params.RegionParams` (``betas``, ``L1``, ``gamma_range``, ``rtol``, ``refute_Ts``,
    ``refute_betas``, ``solver``, ``f_class``, ``sampling``, ``beside_convex``, ``workers``, ``scan_ratio``,
    ``refute_beside``, ``scheduler``; another name is a ``TypeError``); new code builds the parameters and calls
    :func:`compute_region`."""
    params = RegionParams(lams=lams, **{"workers": 1, **settings})
    return compute_region(params, progress=progress, store=store, bar=bar)


def region_specs(params: RegionParams) -> list[dict]:
    """The job of each lambda of :func:`compute_region` (:func:`region_job`): the parameters'
    :meth:`~stam.params.Params.spec` (the fields marked ``job``: everything a row depends on) plus the
    lambda, with the job's kind and :data:`SEARCH_VERSION`.  ``params``: as :func:`resolved` gives them."""
    base = {"kind": ROW_JOB, "version": SEARCH_VERSION, **params.spec()}
    return [{**base, "lam": float(lam)} for lam in params.lams]


def resolved(params: RegionParams) -> RegionParams:
    """``params`` with the defaults of the grids given as None filled in (:data:`REGION_LAMS`,
    :data:`REGION_BETAS`, :data:`REGION_GAMMA_RANGE`; the workers: 2 where 2 CPUs are visible, else 1, and 1
    with a scheduler) and each number of its type (a lambda of 1 and of 1.0 is the same job)."""
    sampling = params.sampling
    return dataclasses.replace(
        params, lams=tuple(float(v) for v in (params.lams if params.lams is not None else REGION_LAMS)),
        betas=tuple(float(b) for b in (params.betas if params.betas is not None else REGION_BETAS)),
        gamma_range=tuple(float(g) for g in (params.gamma_range if params.gamma_range is not None else REGION_GAMMA_RANGE)),
        L1=float(params.L1), rtol=float(params.rtol), refute_Ts=tuple(int(T) for T in params.refute_Ts),
        refute_betas=tuple(float(b) for b in params.refute_betas), beside_convex=bool(params.beside_convex),
        sampling=None if sampling is None else tuple(int(v) for v in sampling), scan_ratio=float(params.scan_ratio),
        refute_beside=bool(params.refute_beside),
        workers=params.workers or (1 if params.scheduler else default_workers()))


def compute_region(params: RegionParams, progress=None, store=None, bar: bool = False) -> dict:
    """:func:`region` of the parameters ``params`` (:class:`stam.theory.params.RegionParams`: its grids, the
    class of F, the sampled gradient, the search's settings, ``workers`` and ``scheduler``); each lambda one job
    of :func:`region_specs` in ``store`` (None: a temporary folder)."""
    import contextlib
    import tempfile

    from stam.jobs import check_workers, run_jobs

    f_class, L1, rtol, sampling, workers = params.f_class, params.L1, params.rtol, params.sampling, params.workers
    gamma_range = params.gamma_range if params.gamma_range is not None else REGION_GAMMA_RANGE
    check_f_class(f_class)
    for name, value in (("L1", L1), ("rtol", rtol)):
        require(math.isfinite(value) and value > 0, f"{name}={value} must be a finite number > 0")
    require(0 < gamma_range[0] < gamma_range[1] and math.isfinite(gamma_range[1]),
            f"gamma range {gamma_range} must be 0 < lo < hi < inf")
    low = max(REGION_GAMMA_MIN, GAMMA_L1_MIN / L1)
    require(gamma_range[0] >= low,
            f"gamma range from {gamma_range[0]:g}: the search starts at {low:g} at the least (a certificate's rate, about "
            f"gamma/2, is below {RHO_MIN:g}, the smallest the SDP's solver is trusted with, under {REGION_GAMMA_MIN:g}; "
            f"the PEP's solver is trusted from gamma * L1 = {GAMMA_L1_MIN:g})")
    largest = max([L1, *(params.lams if params.lams is not None else REGION_LAMS)])
    require(gamma_range[1] * largest <= REGION_SCALE_MAX,
            f"gamma range to {gamma_range[1]:g}: with L1 and lambda up to {largest:g} the search ends at "
            f"{REGION_SCALE_MAX / largest:.3g} at the most (gamma * max(L1, lambda) <= {REGION_SCALE_MAX:g}: beyond, the "
            "PEP's and the SDP's coefficients leave the range the solvers are trusted in, and reach beyond floating "
            "point)")
    require(workers is None or (isinstance(workers, int) and workers >= 1), f"workers={workers} must be an integer >= 1")
    check_workers(params.scheduler, 1 if workers is None else workers)  # --workers is not for --scheduler (as stam tune)
    if sampling is not None:
        validate_sampling(*sampling)
    full = resolved(params)
    for lam in full.lams:
        check_parameters(lam, 1.0, 1.0, L1)
    twice = sorted({lam for lam in full.lams if full.lams.count(lam) > 1})
    require(not twice, f"lambdas {', '.join(f'{lam:g}' for lam in twice)} listed more than once; give each lambda once")
    start = time.perf_counter()
    require(math.isfinite(params.scan_ratio) and params.scan_ratio > 1,
            f"scan_ratio={params.scan_ratio} must be a finite number > 1")
    specs = region_specs(full)
    # a temporary store only without one (a folder in $TMPDIR that a killed run would leave behind)
    with tempfile.TemporaryDirectory(prefix="stam-region-") if store is None else contextlib.nullcontext(store) as where:
        rows = run_jobs(region_job, specs, Path(where), scheduler=params.scheduler,
                        workers=min(full.workers, max(len(specs), 1)), progress=bar, desc="lambdas", check=check_region_row)
    failed = [(spec["lam"], row["error"]) for spec, row in zip(specs, rows) if "error" in row]
    require(not failed, f"the row of lambda = {failed[0][0] if failed else ''} failed: {failed[0][1] if failed else ''}")
    if progress is not None:
        for row in rows:
            progress(row)
    betas, scan_ratio, workers = full.betas, params.scan_ratio, full.workers
    refute_Ts, refute_betas = params.refute_Ts, params.refute_betas
    return {
        "kind": "lyapunov-region",
        "provenance": provenance(),
        "L1": L1,
        "f_class": f_class,
        "sampling": None if sampling is None else {"N": int(sampling[0]), "b": int(sampling[1]),
                                                   "growth_per_rate": GROWTH_PER_RATE},
        "betas": [float(b) for b in betas],
        "gamma_range": [float(g) for g in gamma_range],
        "rtol": rtol,
        "scan_ratio": scan_ratio,
        "refute_Ts": [int(T) for T in refute_Ts],
        "refute_betas": [float(b) for b in refute_betas],
        "rows": rows,
        "workers": workers,
        "seconds": time.perf_counter() - start,
    }




# -- the result of ``stam pep --region --out FILE`` (:func:`region`) ----------------------------------
#: a certified or refuted interval of gamma: hi >= lo
BRACKET = Schema(required={"lo": POS_OR_NULL, "hi": POS_OR_NULL},
                 optional={"beta": POS_OR_NULL, "rho": NONNEG_OR_NULL, "statuses": DICT, "solves": COUNT,
                           "slowest_solve": NONNEG},
                 rules=(ordered("lo", "hi"),))
REGION_ROW = Schema(required={"lam": POS, "gamma_theorem": NONNEG, "general": DICT, "paper": DICT, "refuted": DICT},
                    optional={"seconds": NONNEG}, inner={"general": BRACKET, "paper": BRACKET, "refuted": BRACKET})
REGION = ResultType(
    "lyapunov-region", Schema(required={"rows": LIST, "L1": POS},
                              optional={"kind": STR, "betas": LIST, "gamma_range": LIST, "rtol": POS, "refute_Ts": LIST,
                                        "refute_betas": LIST, "seconds": NONNEG, "provenance": DICT_OR_NULL,
                                        "f_class": STR, "sampling": DICT_OR_NULL, "certificates": LIST},
                              rules=(one_of("f_class", F_CLASSES), distinct("rows", "lam", what="the lambda")),
                              each={"rows": REGION_ROW},
                              inner={"provenance": PROVENANCE,
                                     # the sampled gradient's N and b (b-nice sampling, 1 <= b <= N)
                                     "sampling": Schema(required={"N": POSINT, "b": POSINT}, optional={"growth_per_rate": POS},
                                                        rules=(at_most("b", "N", "N"),))},
                              items={"betas": POS, "gamma_range": POS, "refute_Ts": POSINT, "refute_betas": POS,
                                     # the certificate files of the brackets (stam pep --check FILE), relative paths
                                     "certificates": STR}),
    files="region.json", writer="stam pep --region --out FILE")


__all__ = ["BRACKET", "REGION_ROW", "REGION", "REGION_GAMMA_MIN", "REGION_SCALE_MAX", "certify_stam", "certified_gamma", "refuted_gamma", "theorem_region", "region_row", "region",
           "compute_region", "region_specs", "resolved"]
