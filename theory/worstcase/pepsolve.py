"""Solving a performance-estimation problem (PEPit, through cvxpy): the solvers and their default options, the
outcome of one PEP (:class:`PEPResult`) and :func:`solve` (Clarabel, then SCS where Clarabel stops short of an
optimal answer).  The PEPs of STAM are written in :mod:`stam.theory.worstcase.pep` (which names every public name here too);
the Lyapunov SDPs (:mod:`stam.theory.worstcase.sdp`) use the same solvers and options."""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

from stam.errors import require

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


def check_solver(solver: str | None) -> str | None:
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

    solver = check_solver(solver)
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
            worst_case=finite_or_none(dual) if has_value else None,
            primal=finite_or_none(primal) if has_value else None,
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


def finite_or_none(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def evaluated(expr) -> float | None:
    try:
        return float(expr.eval())
    except Exception:  # PEPit raises when the solver left no values
        return None


__all__ = ["NO_VALUE_STATUSES", "SOLVERS", "SOLVER_DEFAULTS", "PEPResult", "check_solver", "solve", "finite_or_none",
           "evaluated"]
