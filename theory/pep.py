"""Exact worst cases of deterministic STAM by performance estimation (PEP, via PEPit).

A performance-estimation problem (PEP) asks for the largest value of a performance metric
that a method can reach after ``T`` steps, over every function of a class and every starting
point obeying a normalisation.  For first-order methods on smooth and convex classes it is a
small semidefinite program (Drori-Teboulle; Taylor-Hendrickx-Glineur), which PEPit writes for us.

Setting (the paper's model (model) with the network coupling of eq. (binary-model)):

- ``G`` is ``L1``-smooth and nonconvex (``SmoothFunction``, Assumption ass2 (a1)), bounded below;
- ``H(x, y) = (lam/2)||x - y||^2`` (so ``L2* = L3* = L4* = L5* = lam``, ``l = -lam``); it has
  no oracle: its gradients and the x-step are affine in the iterates, so they are PEPit points;
- ``F`` is closed, proper and convex (``ConvexFunction``), reached only through its proximal step.

The method is Algorithm 1 (eq. (algalg1)) with the *full* gradient of ``G`` (deterministic
STAM).  It is not re-written here: :func:`stam_pep` calls the project's one STAM update,
:func:`stam.algorithm.stam_init` and :func:`stam.algorithm.stam_step`, on PEPit points, with
:class:`stam.operators.QuadraticCoupling` for ``H`` and a proximal step of ``F`` that records the
subgradient it produces.  The start rule is therefore that of ``stam_init``: from ``y^0`` and
``z^{-1}`` (``z^{-1} = y^0`` by default, or a free point), one x-, u- and z-step gives
``x^0, u^0, z^0``.

Performance metric: the stationarity measure of Theorem conv, ``min_{0<=t<=T-1} S_t`` with::

    S_t = ||grad G(y^t) + lam (y^t - u^t)||^2 + ||lam (u^t - y^t) + g_F(u^t)||^2 ,

``g_F(u^t) = (2 x^t - z^{t-1} - u^t) / gamma`` the subgradient of ``F`` at ``u^t`` produced by the
proximal step eq. (algu).  The second term bounds ``dist^2(0, grad_x H(u^t, y^t) + dF(u^t))``
from above; it is the very element of eq. (eq401) that the proof of Theorem conv bounds, so
the theorem bounds ``S_t`` itself.

Normalisation (initial condition): ``delta0 + M0'_T <= 1`` with

- ``delta0 = G(y^0) + H(x^0, y^0) - (G+H)^inf``.  Here ``(G+H)^inf = G^inf`` (take ``x = y``).
  ``G^inf`` is a free scalar ``f_*`` constrained by ``f_* <= G(y^t) - ||grad G(y^t)||^2 / (2 L1)``
  at every point where ``G`` is queried.  This is *exact*: the constraint is necessary
  (Lemma Lip-lemma), and it is sufficient, since a set of triples that is ``L1``-smooth
  interpolable with it is interpolated by ``conv(min_i q_i) - (L1/2)||.||^2`` with
  ``q_i(y) = f_i + <g_i, y - y_i> + (L1/2)||y - y_i||^2 + (L1/2)||y||^2`` (Azagra-Mudarra's
  smooth convex extension of ``G + (L1/2)||.||^2``, as in Taylor et al. Thm 3.10), whose infimum
  is at least ``min_i (f_i - ||g_i||^2 / (2 L1))``.  A stationary point ``y_*`` with
  ``G(y_*) = f_*`` alone would not do: the solver puts it far away and then bounds nothing.
- ``M0'_T = M_0 - min_{0<=t<=T} M_t`` with ``M_t`` of Lemma conv-lemma::

      M_t = F(u^t) + ||2x^t - u^t - z^t||^2/(2 gamma) - ||x^t - z^t||^2/(2 gamma) - ||u^t - x^t||^2/gamma.

  The paper's ``M0' = M_0 - inf_{t>=0} M_t`` involves all future iterates, which no finite PEP
  sees.  The proof of Lemma conv-lemma only uses ``M_t - inf >= 0`` for ``0 <= t <= T`` (eq. (eq47)
  and the dropped ``-beta w_{T-1} M_T'`` in eq. (eq48)), so Theorem conv holds verbatim with
  ``M0'_T``; and ``M0'_T <= M0'``.  The min is modelled honestly with an auxiliary scalar ``m``
  and the linear constraints ``m <= M_t`` (``t = 0..T``; ``M_T`` needs one more x-, u-, z-step),
  so the solver sets ``m = min_t M_t``.  Consequently the value computed here is the exact worst
  case under ``delta0 + M0'_T <= 1``, an upper bound of the worst case under the paper's
  ``delta0 + M0' <= 1``; a ratio ``worst_case / bound`` below 1 is thus a sound measure of how
  pessimistic Theorem conv is, and a ratio above 1 would refute it.

The paper's bound for the same normalisation is Theorem conv's right-hand side with
``delta0 + M0' = 1`` from :mod:`stam.theory.numeric` (corrected constants), with the ES constants
of the deterministic gradient: ``tilde grad G = grad G`` satisfies Assumption ass3 with
``A0 = 0, B0 = 1, C0 = 0``, so Lemma ES-GH gives ``A = 2 max(L1, lam)`` and
``C = 0`` (:func:`stam.theory.numeric.deterministic_es`).

The machinery is checked by :func:`gradient_descent_pep` (PEPit's nonconvex gradient-descent
example: ``4 L / (3 n)`` for ``gamma = 1/L``).

Solver: Clarabel by default, SCS if Clarabel fails or stops short of an optimal answer; the
status is always returned and a value is only a worst case when the status is ``optimal``.
PEPit keeps class-level counters: one PEP at a time per process (no threads).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

from stam.algorithm import stam_init, stam_step
from stam.errors import require
from stam.io import provenance
from stam.operators import Composite, QuadraticCoupling

#: cvxpy statuses that carry no number.
NO_VALUE_STATUSES = ("infeasible", "unbounded", "infeasible_inaccurate", "unbounded_inaccurate")
#: solver names accepted by :func:`solve` (``None``: Clarabel, then SCS).
SOLVERS = ("CLARABEL", "SCS")
#: Default options.  With Clarabel's own settings (tolerances 1e-8, static regularisation 1e-8)
#: these PEPs often end "AlmostSolved" (cvxpy: ``optimal_inaccurate``) at a relative gap ~1e-7
#: once T > 4; tolerances of 1e-7 and a static KKT regularisation of 1e-6 (it only steadies the
#: linear solves; the residuals are still checked on the original problem) make every case of
#: benchmarks/pep_speed.py optimal, and stay far tighter than SCS (which is off by up to 3e-3).
SOLVER_DEFAULTS = {
    "CLARABEL": {"tol_gap_abs": 1e-7, "tol_gap_rel": 1e-7, "tol_feas": 1e-7, "static_regularization_constant": 1e-6},
    "SCS": {},
}


@dataclass
class PEPResult:
    """Outcome of one PEP.  ``worst_case`` is the dual value (a certified upper bound up to the
    solver's tolerance) and ``primal`` the value of the worst instance found; both are None when
    the solver found no solution.  Only ``status == "optimal"`` makes them a worst case."""

    worst_case: float | None
    primal: float | None
    status: str
    solver: str
    seconds: float
    details: dict = field(default_factory=dict)

    @property
    def optimal(self) -> bool:
        return self.status == "optimal"

    @property
    def has_solution(self) -> bool:
        """The solver left values (possibly unverified) in the PEP's points and expressions."""
        return self.worst_case is not None or self.primal is not None


def _check_solver(solver: str | None) -> str | None:
    if solver is None:
        return None
    name = solver.upper()
    require(name in SOLVERS, f"unknown solver {solver!r}; allowed: {', '.join(s.lower() for s in SOLVERS)}")
    return name


def solve(problem, solver: str | None = None, solver_options: dict | None = None) -> PEPResult:
    """Solve a PEPit ``problem`` quietly.  ``solver=None``: Clarabel, and SCS if Clarabel raises
    or ends with a status other than optimal/infeasible/unbounded (e.g. ``optimal_inaccurate``,
    ``user_limit``).  A named solver is used alone.  ``solver_options`` maps a solver name to
    cvxpy options that override :data:`SOLVER_DEFAULTS` (e.g. ``{"CLARABEL": {"max_iter": 5}}``)."""
    import contextlib
    import io

    import cvxpy as cp

    solver = _check_solver(solver)
    chain = [solver] if solver else ["CLARABEL", "SCS"]
    result, tried = None, []
    for name in chain:
        options = {**SOLVER_DEFAULTS[name], **(solver_options or {}).get(name, {})}
        start = time.perf_counter()
        try:  # PEPit prints duality-gap warnings even with verbose=0: the status says it all
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                dual = problem.solve(wrapper="cvxpy", solver=name, verbose=0, **options)
            status = problem.wrapper.prob.status
            primal = problem.wrapper.objective.value
        except cp.error.SolverError as exc:
            dual, primal, status = None, None, f"solver_error: {str(exc).splitlines()[0]}"
        seconds = time.perf_counter() - start
        has_value = status not in NO_VALUE_STATUSES
        result = PEPResult(
            worst_case=_finite_or_none(dual) if has_value else None,
            primal=_finite_or_none(primal) if has_value else None,
            status=status,
            solver=name,
            seconds=seconds,
        )
        if tried:
            result.details["fallback_from"] = list(tried)
        if status in ("optimal", "infeasible", "unbounded"):
            break
        tried.append(f"{name}: {status}")
    return result


def _finite_or_none(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _eval(expr) -> float | None:
    try:
        return float(expr.eval())
    except Exception:  # PEPit raises when the solver left no values
        return None


# --------------------------------------------------------------------------- machinery check
def gradient_descent_pep(L: float, gamma: float, n: int, solver: str | None = None,
                         solver_options: dict | None = None) -> PEPResult:
    """PEPit's nonconvex gradient-descent example: ``x_{t+1} = x_t - gamma f'(x_t)`` on an
    ``L``-smooth ``f``; worst ``min_{0<=t<=n} ||f'(x_t)||^2`` subject to ``f(x_0) - f(x_n) <= 1``.
    For ``gamma = 1/L`` the (empirically tight) answer is ``4 L / (3 n)``."""
    from PEPit import PEP
    from PEPit.functions import SmoothFunction

    require(L > 0 and gamma > 0, f"L={L} and gamma={gamma} must be > 0")
    require(int(n) == n and n >= 1, f"n={n} must be an integer >= 1")
    problem = PEP()
    f = problem.declare_function(SmoothFunction, L=L)
    x = problem.set_initial_point()
    g, f0 = f.oracle(x)
    problem.set_performance_metric(g**2)
    fx = f0
    for _ in range(int(n)):
        x = x - gamma * g
        g, fx = f.oracle(x)
        problem.set_performance_metric(g**2)
    problem.set_initial_condition(f0 - fx <= 1)
    return solve(problem, solver, solver_options)


# --------------------------------------------------------------------------- STAM
class _RecordedProxF:
    """``prox_F`` for :mod:`stam.algorithm` on PEPit points: a proximal step of the convex ``F``
    (eq. (algu)) that keeps the subgradient and value it produces, ``u = v - gamma g_F(u)``."""

    def __init__(self, F):
        self.F = F
        self.last = None  # (u, g_F(u), F(u))

    def prox_F(self, v, gamma):
        from PEPit.primitive_steps import proximal_step

        self.last = proximal_step(v, self.F, gamma)
        return self.last[0]


def _validate(lam, gamma, beta, T, L1):
    for name, value in (("lam", lam), ("gamma", gamma), ("beta", beta), ("L1", L1)):
        require(
            isinstance(value, (int, float)) and math.isfinite(value) and value > 0,
            f"{name}={value} must be a finite number > 0",
        )
    require(isinstance(T, int) and T >= 1, f"T={T} must be an integer >= 1")


def stam_pep(
    lam: float,
    gamma: float,
    beta: float,
    T: int,
    L1: float = 1.0,
    free_start: bool = False,
    solver: str | None = None,
    solver_options: dict | None = None,
) -> PEPResult:
    """Exact worst case of ``min_{0<=t<=T-1} S_t`` for ``T`` iterations of deterministic STAM
    (module docstring: setting, metric, normalisation ``delta0 + M0'_T <= 1``).

    ``free_start``: ``z^{-1}`` is a free point instead of ``y^0`` (the default of ``stam_init``).
    ``details`` of the result: ``metrics`` (``S_t`` of the worst instance), ``delta0``, ``M0_prime``
    (its share of the normalisation) and the Gram size."""
    _validate(lam, gamma, beta, T, L1)
    from PEPit import PEP, Expression, Point
    from PEPit.functions import ConvexFunction, SmoothFunction


    problem = PEP()
    G = problem.declare_function(SmoothFunction, L=L1)
    F = problem.declare_function(ConvexFunction)
    H = QuadraticCoupling(lam)
    proxF = _RecordedProxF(F)
    ops = Composite(H, proxF)

    y0 = problem.set_initial_point()
    z_prev = problem.set_initial_point() if free_start else y0
    f_star = Expression()  # G^inf = (G+H)^inf
    m = Expression()  # min_{0<=t<=T} M_t

    def merit(state):  # M_t of Lemma conv-lemma (eq. (eq651))
        x, u, z = state.x, state.u, state.z
        return proxF.last[2] + (2 * x - u - z) ** 2 / (2 * gamma) - (x - z) ** 2 / (2 * gamma) - (u - x) ** 2 / gamma

    state = stam_init(y0, ops, gamma, z_prev=z_prev)
    x0 = state.x
    G_y0 = None
    metrics, merits = [], []
    for t in range(T + 1):
        merits.append(merit(state))
        problem.add_constraint(m <= merits[-1])
        if t == T:  # M_T closes the telescoping sum of eq. (eq48); no metric at t = T
            break
        g, Gy = G.oracle(state.y)
        if t == 0:
            G_y0 = Gy
        problem.add_constraint(f_star <= Gy - g**2 / (2 * L1))  # Lemma Lip-lemma; exact (docstring)
        gF = proxF.last[1]
        S_t = (g + H.grad_y_H(state.u, state.y)) ** 2 + (H.grad_x_H(state.u, state.y) + gF) ** 2
        problem.set_performance_metric(S_t)
        metrics.append(S_t)
        state = stam_step(state, g, ops, gamma, beta)

    delta0 = G_y0 + lam / 2 * (x0 - y0) ** 2 - f_star
    M0_prime = merits[0] - m
    problem.set_initial_condition(delta0 + M0_prime <= 1)

    result = solve(problem, solver, solver_options)
    result.details["gram_size"] = Point.counter
    if result.has_solution:
        result.details.update(
            metrics=[_eval(s) for s in metrics], delta0=_eval(delta0), M0_prime=_eval(M0_prime)
        )
    return result


# --------------------------------------------------------------------------- the paper's side
def paper_bound(lam: float, gamma: float, beta: float, T: int, L1: float = 1.0) -> dict:
    """Theorem conv's right-hand side for ``delta0 + M0' = 1`` (corrected constants, from
    :mod:`stam.theory.numeric`) and whether ``(gamma, beta)`` meets Theorem conv's hypotheses
    (``K1 > 0``, ``[(L2*)^2 + (L5*)^2] gamma^2 <= 1``, ``beta K1/K2 >= 2``; the conditions of
    Theorem conv-rate are not needed for this bound).  ``bound`` is None when the formula gives
    no finite positive number."""
    from stam.theory import numeric

    A, C = numeric.deterministic_es(L1, lam)  # full gradient, H = (lam/2)||x - y||^2: L3* = lam, no gap
    c = numeric.quadratic_coupling(lam, L1=L1, A=float(A), C=float(C))
    bound = _finite_or_none(numeric.theorem_rhs(T, gamma, beta, c, 1.0, 0.0))
    verdict = numeric.check(gamma, beta, c)
    return {
        "bound": bound if bound is not None and bound > 0 else None,
        "admissible": bool(verdict["admissible"]),
        "violations": verdict["violations"],
    }


def compare(lam: float, gamma: float, beta: float, T: int, L1: float = 1.0, free_start: bool = False,
            solver: str | None = None) -> dict:
    """Worst case (PEP) beside the paper's bound: one row of ``stam pep`` / a pep-sweep.
    ``ratio = worst_case / bound`` only when the solver says optimal and the bound exists."""
    result = stam_pep(lam, gamma, beta, T, L1=L1, free_start=free_start, solver=solver)
    paper = paper_bound(lam, gamma, beta, T, L1=L1)
    ratio = None
    if result.optimal and result.worst_case is not None and paper["bound"] is not None:
        ratio = result.worst_case / paper["bound"]
    return {
        "T": T,
        "worst_case": result.worst_case if result.optimal else None,
        "bound": paper["bound"],
        "ratio": ratio,
        "status": result.status,
        "solver": result.solver,
        "seconds": result.seconds,
        "admissible": paper["admissible"],
        "violations": paper["violations"],
        "unverified_value": None if result.optimal else result.worst_case,
        "details": result.details,
    }


def pep_sweep(lam: float, gamma: float, beta: float, Ts, L1: float = 1.0, free_start: bool = False,
              solver: str | None = None) -> dict:
    """The ``pep-sweep`` result object (format in COMMON.md) for the horizons ``Ts``."""
    rows = [compare(lam, gamma, beta, int(T), L1=L1, free_start=free_start, solver=solver) for T in Ts]
    return {
        "kind": "pep-sweep",
        "provenance": provenance(),
        "lam": lam,
        "gamma": gamma,
        "beta": beta,
        "L1": L1,
        "free_start": free_start,
        "admissible": all(r["admissible"] for r in rows),
        "rows": [{k: r[k] for k in ("T", "worst_case", "bound", "ratio", "status")} for r in rows],
    }


__all__ = [
    "PEPResult",
    "solve",
    "gradient_descent_pep",
    "stam_pep",
    "paper_bound",
    "compare",
    "pep_sweep",
]
