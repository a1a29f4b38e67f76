"""Exact worst cases of every update rule with a theory form (PSGD, BC, BR, STAM): ``stam pep --algo NAME``.

Each rule of :mod:`stam.rules` that declares a theory form (``theory_params``, ``theory_start``,
``theory_step``, ``theory_measure``: its step in terms of the oracles only, declared once in its own module)
is run here, unchanged, on PEPit points: eq. (alg:PSGD), eq. (alg:BC), eq. (alg:BR) (its relaxed first phase,
``lam_t = lam rho^t`` grown once per step; ``rho = 1``: fixed) and Algorithm 1 (eq. (algalg1)) with the full
gradient.  The class of problems is the one of :mod:`stam.theory.worstcase.pep`: ``G`` ``L1``-smooth and nonconvex,
``F`` reached through its proximal step only, of a class ``f_class``: ``"lsc"`` any proper lsc F,
``"indicator"`` the indicator of a closed set, ``"convex"`` closed proper convex, or ``"zero"``, F = 0 (its
proximal step is the identity: PSGD, BC and BR are then gradient descent).

The nonconvex classes are interpolated exactly through proximal steps of *several* sizes (:func:`stam.theory.worstcase.pep.prox_function_class`:
a method's own step and the common measure's ``1/L1``): triples ``(u_i, s_i, F_i)`` with ``u_i in prox_{g_i F}(u_i +
g_i s_i)`` are consistent with some proper lsc F iff ``F_j >= F_i + <s_i, u_j - u_i> - ||u_j - u_i||^2/(2 g_i)`` for
all ``i, j`` (necessary: the prox's definition; sufficient: F = F_i at u_i, +infinity elsewhere), with ``F_i = 0``
for an indicator.

Performance metric ``min_{0<=t<=T}`` of a measure at the ``T + 1`` points where the gradient is taken:

- ``natural``: the rule's own (``theory_measure``): ``||grad G(U^t)||^2`` for PSGD (its float iterates are those of
  gradient descent on G; ``W~ = Proj_Q(U)`` is an output only), ``||grad G(W~^t)||^2 = ||U^{t+1} - U^t||^2/gamma^2``
  for BC and BR (the residual of their fixed-point equation), Theorem conv's ``S_t`` for STAM;
- ``common``: one measure for all four, the proximal-gradient residual of problem (eq02), ``min G + F``, at the
  weights each method outputs (``binary_weights``: the binary weights its accuracy is measured with)::

      R(w) = L1^2 ||w - prox_{F/L1}(w - grad G(w)/L1)||^2 ,

  the squared gradient mapping with the step ``1/L1`` of the class, not of any method.  It is fair because it
  depends on the method only through the point it outputs (no step size, no auxiliary variable of its own), it is
  zero exactly at the fixed points of the proximal gradient method with step 1/L1 (the usual stationarity of
  ``G + F`` for L1-smooth G), and it is ``||grad G(w)||^2`` when F = 0, so all four are measured on one scale.

Normalisation (``initial``): ``"gap"``, ``G(w^0) - G^inf <= 1`` (``w^0`` the first point where the gradient is taken;
``G^inf`` interpolated exactly as in :mod:`stam.theory.worstcase.pep`: ``G^inf <= G(p) - ||grad G(p)||^2/(2 L1)`` at every
query), or ``"last-gap"``, ``G(w^0) - G(w^T) <= 1`` (PEPit's gradient-descent example, Abbaszadehpeivasti, de Klerk
and Zamani 2021).  F's values enter neither, so the worst case of a nonconvex F may be unbounded where a method
needs F's decrease (STAM's own normalisation ``delta0 + M0'_T`` is :func:`stam.theory.worstcase.pep.stam_pep`'s).

A value is a worst case only with the solver's status ``optimal`` (:func:`stam.theory.worstcase.pepsolve.solve`).
"""

from __future__ import annotations

import math

from stam.errors import UsageError, require
from stam.theory.params import INITIALS, MEASURES, METHOD_F_CLASSES
from stam.theory.worstcase.pep import ProxOracle
from stam.theory.worstcase.pepsolve import PEPResult, solve


def theory_rules() -> tuple:
    """The update rules with a theory form, in the paper's order."""
    from stam.rules import RULES

    return tuple(r for r in RULES if r.theory_params is not None)


def theory_rule(algo: str):
    """The rule ``algo`` if it has a theory form; a usage error naming those that have one otherwise."""
    names = [r.name for r in theory_rules()]
    require(algo in names, f"--algo {algo!r} has no theory form; allowed: {', '.join(names)}")
    return next(r for r in theory_rules() if r.name == algo)


def check_hyper(rule, hyper: dict) -> dict:
    """``hyper`` holds exactly the rule's ``theory_params``, each a finite number > 0 (``rho`` >= 1: lam grows)."""
    missing = [k for k in rule.theory_params if hyper.get(k) is None]
    require(not missing, f"--algo {rule.name} needs {', '.join('--' + k for k in missing)}")
    extra = [k for k, v in hyper.items() if v is not None and k not in rule.theory_params]
    require(not extra, f"{', '.join('--' + k for k in extra)}: not a parameter of --algo {rule.name} "
            f"(its parameters: {', '.join('--' + k for k in rule.theory_params)})")
    for k in rule.theory_params:
        v = hyper[k]
        low = 1.0 if k == "rho" else 0.0
        require(isinstance(v, (int, float)) and math.isfinite(v) and (v >= low if k == "rho" else v > low),
                f"--{k} {v}: must be a finite number {'>= 1' if k == 'rho' else '> 0'}")
    return {k: float(hyper[k]) for k in rule.theory_params}


def check_choices(f_class: str, initial: str, measure: str) -> None:
    require(f_class in METHOD_F_CLASSES, f"--F {f_class!r}; allowed: {', '.join(METHOD_F_CLASSES)}")
    require(initial in INITIALS, f"--initial {initial!r}; allowed: {', '.join(INITIALS)}")
    require(measure in MEASURES, f"--measure {measure!r}; allowed: {', '.join(MEASURES)}")


def method_pep(algo: str, T: int, hyper: dict, *, L1: float = 1.0, f_class: str = "lsc", initial: str = "gap",
               measure: str = "natural", solver: str | None = None, solver_options: dict | None = None) -> PEPResult:
    """The exact worst case of ``min_{0<=t<=T}`` of the measure ``measure`` over ``T`` steps of the rule ``algo``
    (its theory form, with the parameters ``hyper``: its ``theory_params``) from any start, over every ``L1``-smooth
    G and every F of ``f_class``, under the normalisation ``initial`` (module docstring).  ``details``: the Gram
    size, the metrics of the worst instance (when the solver left values)."""
    from PEPit import PEP, Expression, Point
    from PEPit.functions import SmoothFunction

    rule = theory_rule(algo)
    hyper = check_hyper(rule, hyper)
    check_choices(f_class, initial, measure)
    require(isinstance(L1, (int, float)) and math.isfinite(L1) and L1 > 0, f"--L1 {L1}: must be a finite number > 0")
    require(isinstance(T, int) and T >= 1, f"--T {T}: must be an integer >= 1")
    problem = PEP()
    G = problem.declare_function(SmoothFunction, L=L1)
    q = ProxOracle(problem, f_class)
    f_star = Expression()

    def oracle(p):
        g, Gp = G.oracle(p)
        problem.add_constraint(f_star <= Gp - g ** 2 / (2 * L1))
        return g, Gp

    state = rule.theory_start(problem.set_initial_point(), hyper, q)
    metrics, G_first, G_last, w0 = [], None, None, None
    for t in range(T + 1):
        g, G_last = oracle(rule.forward_weights(state))
        G_first = G_last if G_first is None else G_first
        # the binary output, one proximal step (of a nonconvex F any selection: each call is a point of its own)
        w = rule.binary_weights(state, q) if measure == "common" or (initial == "objective" and t == 0) else None
        w0 = w if t == 0 else w0
        if measure == "natural":
            metric = rule.theory_measure(state, g, hyper)
        else:  # the proximal-gradient residual at the weights it outputs, step 1/L1
            gw, _ = oracle(w)
            metric = L1 ** 2 * (w - q.prox_F(w - gw / L1, 1.0 / L1)) ** 2
        problem.set_performance_metric(metric)
        metrics.append(metric)
        if t < T:
            state = rule.theory_step(state, g, hyper, q, t)
    if initial == "objective":  # (G + F)(w^0) - inf G - inf F at the first output, F^inf below every F(u_i)
        F_star = Expression()
        for Fu in q.values.values():
            problem.add_constraint(F_star <= Fu)
        _, G_w0 = oracle(w0)
        gap = G_w0 + q.value(w0) - f_star - (0 if q.F is None else F_star)
    else:
        gap = G_first - f_star if initial == "gap" else G_first - G_last
    problem.set_initial_condition(gap <= 1)
    result = solve(problem, solver, solver_options)
    result.details.update(gram_size=Point.counter)
    if result.has_solution:
        from stam.theory.worstcase.pepsolve import evaluated

        result.details["metrics"] = [evaluated(m) for m in metrics]
    return result


def pep_row(algo: str, T: int, hyper: dict, *, L1: float = 1.0, f_class: str = "lsc", initial: str = "gap",
               measure: str = "natural", solver: str | None = None) -> dict:
    """One row of ``stam pep --algo NAME``: :func:`method_pep` and what it measured; ``worst_case`` only when the
    solver's status is optimal (else ``unverified_value``)."""
    rule = theory_rule(algo)
    result = method_pep(algo, T, hyper, L1=L1, f_class=f_class, initial=initial, measure=measure, solver=solver)
    return {
        "algo": algo, **check_hyper(rule, hyper), "L1": L1, "T": T, "f_class": f_class, "initial": initial,
        "measure": measure,
        "measure_text": rule.theory_measure_text if measure == "natural" else COMMON_MEASURE_TEXT,
        "worst_case": result.worst_case if result.optimal else None,
        "status": result.status, "solver": result.solver, "seconds": result.seconds,
        "unverified_value": None if result.optimal else result.worst_case,
        "details": result.details,
    }


#: the common measure as the outputs name it
COMMON_MEASURE_TEXT = "L1^2 ||w^t - prox_{F/L1}(w^t - grad G(w^t)/L1)||^2 at the binary output w^t"
#: the normalisations as the outputs name them
INITIAL_TEXT = {"gap": "G(w^0) - inf G <= 1", "last-gap": "G(w^0) - G(w^T) <= 1",
                "objective": "(G + F)(w^0) - inf G - inf F <= 1 (w^0 the first binary output)"}


def text(row: dict) -> str:
    """The row of :func:`pep_row` as ``stam pep --algo NAME`` prints it."""
    from stam import rules

    rule = rules.rule(row["algo"])
    params = " ".join(f"{k}={row[k]:g}" for k in rule.theory_params)
    F = {"zero": "F = 0", "lsc": "any proper lsc F", "indicator": "F the indicator of a closed set",
         "convex": "convex F"}[row["f_class"]]
    if row["status"] == "optimal":
        status = f"optimal ({row['solver']}, {row['seconds']:.2f} s)"
    elif row["status"] == "unbounded":
        status = f"UNBOUNDED ({row['solver']}): the normalisation bounds nothing; the worst case is +infinity"
    else:
        status = f"{row['status'].upper()} ({row['solver']}): not a certified worst case"
        if row["unverified_value"] is not None:
            status += f"; the solver's unverified value was {row['unverified_value']:.6g}"
    value = "none" if row["worst_case"] is None else f"{row['worst_case']:.6g}"
    return "\n".join([
        f"{rule.label} ({rule.equation}; {F}), {params} L1={row['L1']:g} T={row['T']}",
        f"  measure ({row['measure']})  : {row['measure_text']}",
        f"  worst case of min_(0<=t<=T) (PEP) : {value}   status: {status}",
        f"  normalisation           : {INITIAL_TEXT[row['initial']]}",
    ])




#: the range of every coefficient of ``stam pep --algo NAME``'s PEP (a parameter, its product with L1 and ratio to it)
COEFFICIENT_RANGE = (1e-60, 1e60)


def is_method_pep(params) -> bool:
    """Whether ``stam pep``'s parameters ask for this module's PEP (:func:`run_params`) rather than STAM's own
    (:func:`stam.theory.worstcase.pep.compare`): another rule, F = 0, a normalisation or a measure named, BR's ``--rho``."""
    return (params.algo != "stam" or params.f_class == "zero" or params.initial is not None
            or params.measure != "natural" or params.rho is not None)


def run_params(params) -> dict:
    """``stam pep --algo NAME`` (a :class:`stam.theory.params.PepParams`) as a library call: :func:`pep_row` at
    ``params.T``; refused before any work: a sweep, ``--out``, ``--N/--b``, ``--free-start`` (STAM's own PEP only),
    a parameter the rule has not, a Gram matrix above :data:`stam.theory.params.MAX_GRAM` without ``--force``."""
    from stam.theory.params import MAX_GRAM

    rule = theory_rule(params.algo)
    used = [f"--{k.replace('_', '-')}" for k in ("sweep_T", "out", "N", "b") if getattr(params, k) is not None]
    used += ["--free-start"] if params.free_start else []
    require(not used, f"{', '.join(used)}: only with STAM's own PEP (--algo stam, F not zero, no --initial, --measure "
            "or --rho); --algo gives one horizon --T")
    require(params.T is not None, f"--algo {rule.name} needs --T N")
    hyper = {k: getattr(params, k) for k in ("gamma", "lam", "beta", "rho")}
    if rule.name == "br" and hyper["rho"] is None:
        hyper["rho"] = 1.0  # lam fixed per step
    # T + 1 gradients, each with F's proximal steps (common: two more points a step): a bound, checked before work
    per_step = 2 + 3 * (params.measure == "common") + 3 * (rule.name == "stam")
    size = 1 + per_step * (params.T + 1)
    require(params.force or size <= 2 * MAX_GRAM,
            f"--T {params.T}: a PEP of about {size} points, above the limit {2 * MAX_GRAM}; give a smaller --T or add --force")
    L1 = params.L1
    coefficients = [L1, L1 ** 2 if L1 < 1e154 else math.inf] + [v * f for v in hyper.values() if v is not None
                                                                    for f in (1.0, L1, 1 / L1)]
    given = " ".join(f"--{k} {v:g}" for k, v in {**hyper, "L1": L1}.items() if v is not None and k != "rho")
    require(all(COEFFICIENT_RANGE[0] <= c <= COEFFICIENT_RANGE[1] for c in coefficients),
            f"{given}: the PEP's coefficients (these, their products with L1 and ratios to it) leave "
            f"[{COEFFICIENT_RANGE[0]:g}, {COEFFICIENT_RANGE[1]:g}], where the SDP solvers' tolerances (1e-7) still mean "
            "something; give values of ordinary size")
    try:
        return pep_row(rule.name, params.T, hyper, L1=params.L1, f_class=params.f_class,
                          initial=params.initial or "gap", measure=params.measure, solver=params.solver)
    except (ValueError, ArithmeticError) as exc:  # cvxpy refuses inf/nan data; SCS cannot set up such a problem
        text = str(exc)
        if not isinstance(exc, ArithmeticError) and "NaN or Inf" not in text and "allocation error" not in text:
            raise
        raise UsageError(f"{given}: the PEP's coefficients (products and ratios of these) are beyond floating point; "
                         "give values of ordinary size") from None


__all__ = ["theory_rules", "theory_rule", "check_hyper", "check_choices",
           "method_pep", "pep_row", "COMMON_MEASURE_TEXT", "INITIAL_TEXT", "text", "is_method_pep", "run_params", "COEFFICIENT_RANGE"]
