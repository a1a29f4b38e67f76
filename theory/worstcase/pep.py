"""Exact worst cases of deterministic STAM by performance estimation (PEP, via PEPit).

A performance-estimation problem (PEP) asks for the largest value of a performance metric
that a method can reach after ``T`` steps, over every function of a class and every starting
point obeying a normalisation.  For first-order methods on smooth and convex classes it is a
small semidefinite program (Drori-Teboulle; Taylor-Hendrickx-Glineur), which PEPit writes for us.

Setting (the paper's model (model) with the network coupling of eq. (binary-model)):

- ``G`` is ``L1``-smooth and nonconvex (``SmoothFunction``, Assumption ass2 (a1)), bounded below;
- ``H(x, y) = (lam/2)||x - y||^2`` (so ``L2* = L3* = L4* = L5* = lam``, ``l = -lam``); it has
  no oracle: its gradients and the x-step are affine in the iterates, so they are PEPit points;
- ``F`` is reached only through its proximal step eq. (algu) and belongs to one of three classes
  (``f_class``, :data:`F_CLASSES`; issue 22): ``"lsc"`` any proper lower semicontinuous ``F``
  (nonconvex; the default, the paper's class: problem (model) with ``F = I_Q`` of eq. (binary-model)
  is in it), ``"indicator"`` the indicator of an arbitrary closed set, ``"convex"`` closed, proper
  and convex (``ConvexFunction``).  The nonconvex classes are interpolated *exactly* through the
  proximal step (:func:`prox_function_class`): triples ``(v_i, u_i, F_i)`` are consistent with
  ``u_i in prox_{gamma F}(v_i)``, ``F(u_i) = F_i`` for some proper lsc ``F`` iff
  ``F_i + ||u_i - v_i||^2/(2 gamma) <= F_j + ||u_j - v_i||^2/(2 gamma)`` for all ``i, j`` (take ``F = F_i``
  at ``u_i`` and ``+infinity`` elsewhere); for an indicator, ``F_i = 0`` and
  ``||u_i - v_i|| <= ||u_j - v_i||``.  Every convex ``F`` and every indicator is a proper lsc ``F``, so
  ``"lsc"`` never has a smaller worst case than the other two (a test checks it).

The method is Algorithm 1 (eq. (algalg1)) with the *full* gradient of ``G`` (deterministic
STAM).  It is not re-written here: :func:`stam_pep` calls the project's one STAM update,
:func:`stam.steps.stam_init` and :func:`stam.steps.stam_step`, on PEPit points, with
:class:`stam.operators.QuadraticCoupling` for ``H`` and a proximal step of ``F`` that records the
subgradient it produces.  The start rule is therefore that of ``stam_init``: from ``y^0`` and
``z^{-1}`` (``z^{-1} = y^0`` by default, or a free point), one x-, u- and z-step gives
``x^0, u^0, z^0``.

Performance metric: the stationarity measure of Theorem conv, ``min_{0<=t<=T-1} S_t`` with::

    S_t = ||grad G(y^t) + lam (y^t - u^t)||^2 + ||lam (u^t - y^t) + g_F(u^t)||^2 ,

``g_F(u^t) = (2 x^t - z^{t-1} - u^t) / gamma = (v^t - u^t) / gamma`` the subgradient of ``F`` at ``u^t``
produced by the proximal step eq. (algu): for a nonconvex ``F`` a proximal subgradient, hence a
limiting subgradient (an element of the ``partial F(u^t)`` of Theorem conv).  The second term bounds ``dist^2(0, grad_x H(u^t, y^t) + dF(u^t))``
from above; it is the very element of eq. (eq401) that the proof of Theorem conv bounds, so
the proof of Theorem conv bounds ``S_t``.  The theorem's own measure (with ``dist^2``) is at most ``S_t``: the PEP
is exact for ``S_t``, the quantity of the proof, and an upper bound for the theorem's ``dist^2`` measure.

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
``delta0 + M0' = 1`` from :mod:`stam.theory.symbolic.numeric` (corrected constants), with the ES constants
of the deterministic gradient: ``tilde grad G = grad G`` satisfies Assumption ass3 with
``A0 = 0, B0 = 1, C0 = 0``, so Lemma ES-GH gives ``A = 2 max(L1, lam)`` and
``C = 0`` (:func:`stam.theory.symbolic.numeric.deterministic_es`).

The machinery is checked by :func:`gradient_descent_pep` (PEPit's nonconvex gradient-descent
example: ``4 L / (3 n)`` for ``gamma = 1/L``).

Solver: Clarabel by default, SCS if Clarabel fails or stops short of an optimal answer; the
status is always returned and a value is only a worst case when the status is ``optimal``.
PEPit keeps class-level counters: one PEP at a time per process (no threads).  The solve and its outcome
(:func:`solve`, :class:`PEPResult`) are written in :mod:`stam.theory.worstcase.pepsolve`; the class of problems
(``L1``, ``f_class``, ``N``, ``b``) is one :class:`stam.theory.settings.ProblemClass`, its fields also by keyword.
"""

from __future__ import annotations

import itertools
import math

from stam.steps import stam_init, stam_step
from stam.errors import require
from stam.io import provenance
from stam.operators import Composite, QuadraticCoupling
from stam.theory.params import F_CLASSES
# the solve and its outcome (stam.theory.worstcase.pepsolve)
from stam.theory.worstcase.pepsolve import PEPResult, evaluated, finite_or_none, solve
from stam.theory.settings import ProblemClass, no_other
from stam.results import (BOOL, DICT_OR_NULL, LIST, NONNEG_OR_NULL, POS, POSINT, PROVENANCE, STR, ResultType, Schema,
                          increasing, shown)

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
# the classes of ``F`` (module docstring), the paper's class first (the default): F_CLASSES and
# DEFAULT_F_CLASS, declared with the command's parameters (stam.theory.params, imported above)
#: how each class is named in outputs.
F_CLASS_TEXT = {
    "lsc": "any proper lsc F (nonconvex)",
    "indicator": "F the indicator of a closed set",
    "convex": "convex F",
}


def check_f_class(f_class: str) -> str:
    require(f_class in F_CLASSES, f"unknown class of F {f_class!r}; allowed: {', '.join(F_CLASSES)}")
    return f_class


_PROX_CLASS = None


def prox_function_class():
    """A PEPit ``Function`` class for ``F`` in the classes ``"lsc"`` / ``"indicator"`` (built on first
    use so that PEPit is imported only when a PEP runs): ``declare_function(cls, indicator=...)``.  Its points come
    from :meth:`ProxOracle.prox_F`, proximal steps of any sizes, each step recorded with its subgradient
    (``(u_i, s_i, F_i)`` with ``u_i in prox_{g_i F}(u_i + g_i s_i)``): exact interpolation conditions (module
    docstring; STAM's own steps all have ``g_i = gamma``, the baselines' PEPs add the step ``1/L1`` of a common measure)."""
    global _PROX_CLASS
    if _PROX_CLASS is not None:
        return _PROX_CLASS
    from PEPit.function import Function

    class ProxInterpolableFunction(Function):
        """Proper lsc ``F`` (or the indicator of a closed set) seen through proximal steps:
        ``F_i >= F_j + <s_j, u_i - u_j> - ||u_i - u_j||^2 / (2 g_j)`` for all ``i, j`` (and ``F_i = 0`` for an indicator)."""

        def __init__(self, indicator=False, is_leaf=True, decomposition_dict=None, reuse_gradient=False, name=None):
            super().__init__(is_leaf=is_leaf, decomposition_dict=decomposition_dict, reuse_gradient=reuse_gradient,
                             name=name)
            self.indicator = bool(indicator)
            self.steps = {}  # id(s_j) -> g_j, the size of the proximal step that produced the point

        def set_prox_constraint_i_j(self, xi, gi, fi, xj, gj, fj):
            # F_i >= F_j + <s_j, u_i - u_j> - ||u_i - u_j||^2 / (2 g_j)   (u_j = prox_{g_j F}(u_j + g_j s_j))
            return fi - fj >= gj * (xi - xj) - (xi - xj) ** 2 / (2 * self.steps[id(gj)])

        def add_class_constraints(self):
            self.add_constraints_from_two_lists_of_points(
                list_of_points_1=self.list_of_points, list_of_points_2=self.list_of_points,
                constraint_name="prox_lsc", set_class_constraint_i_j=self.set_prox_constraint_i_j)
            if self.indicator:  # F = 0 on the set: ||u_i - v_i|| <= ||u_j - v_i||
                self.add_constraints_from_one_list_of_points(
                    list_of_points=self.list_of_points, constraint_name="indicator_zero",
                    set_class_constraint_i=lambda x, g, f: f == 0)

    _PROX_CLASS = ProxInterpolableFunction
    return _PROX_CLASS


class ProxOracle:
    """``prox_F(v, gamma)`` for :mod:`stam.steps` on PEPit points, ``F`` of class ``f_class`` declared in ``problem``
    (eq. (algu)): the identity for ``"zero"`` (F = 0, the baselines' PEPs), PEPit's proximal step of a convex function
    for ``"convex"``, a step of :func:`prox_function_class` otherwise (the subgradient ``s = (v - u)/gamma`` and the
    value ``F(u)`` new unknowns, ``u = v - gamma s``).  ``last``: ``(u, g_F(u), F(u))`` of the last step (``g_F``
    None for F = 0); :meth:`value`: ``F(u)`` at any point it produced."""

    def __init__(self, problem, f_class: str):
        self.f_class = f_class
        self.F = None
        self.last = None
        self.values = {}  # id(u) -> F(u) of every point a proximal step produced (F = 0: none)
        if f_class == "convex":
            from PEPit.functions import ConvexFunction

            self.F = problem.declare_function(ConvexFunction)
        elif f_class in ("lsc", "indicator"):
            self.F = problem.declare_function(prox_function_class(), indicator=(f_class == "indicator"))

    def prox_F(self, v, gamma):
        if self.F is None:
            self.last = (v, None, 0)
            return v
        from PEPit import Expression, Point

        if self.f_class == "convex":
            from PEPit.primitive_steps import proximal_step

            u, s, Fu = proximal_step(v, self.F, gamma)
        else:
            s, Fu = Point(), Expression()
            u = v - gamma * s
            self.F.steps[id(s)] = float(gamma)
            self.F.add_point((u, s, Fu))
        self.values[id(u)] = Fu
        self.last = (u, s, Fu)
        return u

    def value(self, u):
        """``F(u)`` at a point ``u`` this oracle produced (0 for F = 0)."""
        return 0 if self.F is None else self.values[id(u)]


#: below this step the PEP is solved at unit step (:func:`stam_pep`: the problem scaled by ``gamma``).  Its worst
#: case grows like ``1/gamma``; solved as written, with coefficients ``1/gamma``, Clarabel's answer drifts from
#: ``gamma ~ 1e-6`` on (lam = L1 = 1, beta = 100, T = 2: "optimal" 0.83/gamma at 1e-7 for 1.0/gamma) and is
#: "unbounded" from ``1e-7``; at unit step it is exact to 1e-6 down to ``gamma * L1 = 1e-10``.
UNIT_STEP_BELOW = 1e-3
#: the smallest ``gamma * L1`` where the PEP's solver is trusted: at unit step Clarabel calls the PEP "unbounded"
#: from ``gamma * L1 ~ 1e-11`` on (the coefficients ``1/(gamma L1)``); every case probed (lambda and L1 from 0.01 to
#: 100, T up to 4, N = 2, lsc and convex F) is optimal at ``gamma * L1 >= 1e-10``: the floor keeps a factor 10.
GAMMA_L1_MIN = 1e-9


def _validate(lam, gamma, beta, T, L1):
    for name, value in (("lam", lam), ("gamma", gamma), ("beta", beta), ("L1", L1)):
        require(
            isinstance(value, (int, float)) and math.isfinite(value) and value > 0,
            f"{name}={value} must be a finite number > 0",
        )
    require(isinstance(T, int) and T >= 1, f"T={T} must be an integer >= 1")
    require(gamma * L1 >= GAMMA_L1_MIN,
            f"gamma={gamma:g} with L1={L1:g}: gamma * L1 = {gamma * L1:.3g} is below {GAMMA_L1_MIN:g}, where the PEP's "
            f"solver is trusted (the worst case grows like 1/gamma); give gamma >= {GAMMA_L1_MIN / L1:.3g}")


def minibatches(N: int, b: int) -> list[tuple[int, ...]]:
    """The ``C(N, b)`` equally likely minibatches of b-nice sampling (the paper's remark after
    eq. (stochastic G): uniform subsets of size ``b``; ``v_i = 1_{i in S} N / b``, so the stochastic
    gradient is ``(1/b) sum_{i in S} grad G_i``)."""
    validate_sampling(N, b)
    return list(itertools.combinations(range(N), b))


#: the largest N of the sampled gradient: every one of the C(N, b) minibatches is a branch of each step
#: (C(8, 4) = 70 branches; the Lyapunov SDP for N = 4, b = 2 is already 36 x 36).
MAX_N = 8


def validate_sampling(N, b):
    require(isinstance(N, int) and 1 <= N <= MAX_N,
            f"N={N} must be an integer from 1 to {MAX_N} (every one of the C(N, b) minibatches is enumerated)")
    require(isinstance(b, int) and 1 <= b <= N, f"b={b} must be an integer with 1 <= b <= N={N}")


def gram_size(T: int, N: int = 1, b: int = 1, free_start: bool = False):
    """Points of :func:`stam_pep` (its Gram matrix is this size): ``y^0``; at every node of the tree
    of minibatch paths (``K = C(N, b)`` children each) before ``T`` the ``N`` gradients of the
    ``G_i``; at every node up to ``T`` the subgradient of ``F``'s proximal step; one more for a free
    ``z^{-1}``.  ``N = b = 1``: ``2T + 2``.  ``math.inf`` when it exceeds ``2**64`` (no PEP that size
    is built, and the exact number is not worth computing)."""
    validate_sampling(N, b)
    K = math.comb(N, b)
    if K > 1 and T * math.log2(K) > 64:
        return math.inf
    nodes_before_T = T if K == 1 else (K**T - 1) // (K - 1)
    return 1 + N * nodes_before_T + nodes_before_T + K**T + (1 if free_start else 0)


def merit_of(state, Fu, gamma):
    """``M_t`` of Lemma conv-lemma (eq. (eq651)) at a STAM state ``(y, x, u, z)`` with ``F(u^t) = Fu``:
    ``F(u) + ||2x - u - z||^2/(2 gamma) - ||x - z||^2/(2 gamma) - ||u - x||^2/gamma``, in the arithmetic of the
    state (PEPit points, where ``p ** 2`` is the squared norm; sympy or plain numbers in one dimension,
    :mod:`stam.theory.worstcase.onset`)."""
    x, u, z = state.x, state.u, state.z
    return Fu + (2 * x - u - z) ** 2 / (2 * gamma) - (x - z) ** 2 / (2 * gamma) - (u - x) ** 2 / gamma


def stam_pep(lam: float, gamma: float, beta: float, T: int, *, problem: ProblemClass | None = None,
             free_start: bool = False, solver: str | None = None, solver_options: dict | None = None,
             **fields) -> PEPResult:
    """Exact worst case of ``min_{0<=t<=T-1} E S_t`` for ``T`` iterations of STAM
    (module docstring: setting, metric, normalisation ``delta0 + M0'_T <= 1``) with ``F`` of class
    ``f_class``.

    ``N = b = 1`` (default): deterministic STAM, the full gradient of ``G``.  Otherwise ``G = (1/N)
    sum_i G_i`` with every ``G_i`` ``L1``-smooth and bounded below by ``G_i^inf``, and each step uses the
    b-nice minibatch gradient (:func:`minibatches`): the ``C(N, b)^T`` equally likely paths of
    minibatches are enumerated, every node of the tree runs the project's ``stam_step``, and
    ``E S_t`` is the exact average over the nodes at depth ``t``.  The normalisation is then
    ``delta0 + Delta + M0'_T <= 1`` with ``Delta = G^inf - (1/N) sum_i G_i^inf >= 0`` (the paper's
    ``Delta^inf`` of Lemma es-lemma for ``H = (lam/2)||x - y||^2``) and ``M0'_T = E[M_0 - min_{t<=T} M_t]``
    (the minimum along each path): ``delta0 + Delta = G(y^0) + H(x^0, y^0) - (1/N) sum_i G_i^inf``, each
    ``G_i^inf`` interpolated exactly as ``G^inf`` is in the deterministic case.  With ``N = 1`` this is the
    deterministic PEP (``G_1^inf = G^inf``).

    ``free_start``: ``z^{-1}`` is a free point instead of ``y^0`` (the default of ``stam_init``).
    ``details`` of the result: ``metrics`` (``E S_t`` of the worst instance), ``delta0`` (``delta0 +
    Delta`` when sampled), ``M0_prime`` (its share of the normalisation), the Gram size, ``f_class``,
    ``N``, ``b``.

    ``problem``: the class (:class:`stam.theory.settings.ProblemClass`: ``L1``, ``f_class``, ``N``, ``b``), its
    fields also by keyword (``stam_pep(lam, gamma, beta, T, L1=2.0, N=2, b=1)``)."""
    problem = ProblemClass.of(problem, fields)
    no_other(fields, "stam_pep")
    L1, f_class, N, b = problem.L1, problem.f_class, problem.N, problem.b
    _validate(lam, gamma, beta, T, L1)
    check_f_class(f_class)
    validate_sampling(N, b)
    pep = (T, f_class, N, b, free_start, solver, solver_options)
    # below UNIT_STEP_BELOW, the same PEP at unit step: G, H and F scaled by c = gamma (L1 and lam times c, the step
    # gamma / c = 1) run the same iterates with S_t times c^2 and delta0 + M0'_T times c, so the worst case (and every
    # E S_t) is the scaled one over c, delta0 and M0'_T of the worst instance unchanged
    c = gamma if gamma < UNIT_STEP_BELOW else 1.0
    result = _solve_pep(lam * c, gamma / c, beta, L1 * c, *pep)
    if c != 1.0:
        for name in ("worst_case", "primal"):
            if getattr(result, name) is not None:
                setattr(result, name, getattr(result, name) / c)
        if result.details.get("metrics") is not None:
            result.details["metrics"] = [None if m is None else m / c for m in result.details["metrics"]]
        result.details["unit_step"] = True
    return result


def _solve_pep(lam, gamma, beta, L1, T, f_class, N, b, free_start, solver, solver_options) -> PEPResult:
    """The PEP of :func:`stam_pep` built and solved as written."""
    from PEPit import PEP, Point

    problem = PEP()
    tree = _PathTree(problem, lam, gamma, beta, L1, f_class, N, b)  # the G_i and F declared
    y0 = problem.set_initial_point()
    z_prev = problem.set_initial_point() if free_start else y0
    tree.unroll(y0, z_prev, T)
    delta0, M0_prime = tree.normalisation(y0)
    problem.set_initial_condition(delta0 + M0_prime <= 1)

    result = solve(problem, solver, solver_options)
    result.details.update(gram_size=Point.counter, f_class=f_class, N=N, b=b)
    if result.has_solution:
        result.details.update(
            metrics=[evaluated(s) for s in tree.metrics], delta0=evaluated(delta0), M0_prime=evaluated(M0_prime)
        )
    return result


class _PathTree:
    """The PEP of :func:`stam_pep` as it is written: ``G = (1/N) sum_i G_i`` (each ``G_i``
    ``L1``-smooth) and ``F`` of class ``f_class`` declared in the PEPit ``problem``, the project's
    ``stam_init`` and ``stam_step`` run at every node of the tree of minibatch paths; a node is
    ``(state, F(u^t), g_F(u^t), merits M_0..M_{t-1} along its path)``.  It collects the metrics
    ``E S_t`` (each also the problem's performance metric), ``(M_0, min_{t<=T} M_t)`` of every path
    and what the normalisation needs (``G(y^0)``, ``x^0``, the ``G_i^inf``)."""

    def __init__(self, problem, lam, gamma, beta, L1, f_class, N, b):
        from PEPit.functions import SmoothFunction

        self.problem, self.lam, self.gamma, self.beta, self.L1, self.N, self.b = problem, lam, gamma, beta, L1, N, b
        self.Gs = [problem.declare_function(SmoothFunction, L=L1) for _ in range(N)]
        self.H = QuadraticCoupling(lam)
        self.proxF = ProxOracle(problem, check_f_class(f_class))
        self.ops = Composite(self.H, self.proxF)
        self.batches = minibatches(N, b)
        self.f_stars, self.metrics, self.leaves_m = [], [], []
        self.G_y0 = self.x0 = None

    def unroll(self, y0, z_prev, T: int) -> None:
        """``T`` steps of STAM from ``y^0`` and ``z^{-1}`` down every path; ``M_T`` closes each path (it
        closes the telescoping sum of eq. (eq48); no metric at ``t = T``)."""
        from PEPit import Expression

        self.f_stars = [Expression() for _ in range(self.N)]  # G_i^inf (N = 1: G^inf = (G+H)^inf)
        state = stam_init(y0, self.ops, self.gamma, z_prev=z_prev)
        self.x0 = state.x
        layer = [(state, self.proxF.last[2], self.proxF.last[1], [])]
        for t in range(T):
            layer = self._depth(layer, t)
        for st, Fu, _gF, path in layer:
            self._close(path + [merit_of(st, Fu, self.gamma)])

    def _depth(self, layer: list, t: int) -> list:
        """The nodes at depth ``t``: their ``E S_t`` (every node has probability ``C(N, b)^-t``), then
        one step of STAM per minibatch from each; the nodes at depth ``t + 1``."""
        nxt, S_sum = [], None
        for st, Fu, gF, path in layer:
            path = path + [merit_of(st, Fu, self.gamma)]
            grads, vals = self._oracles(st.y)
            if t == 0:
                self.G_y0 = sum(vals[1:], vals[0]) / self.N
            g = sum(grads[1:], grads[0]) / self.N  # grad G(y^t)
            S = (g + self.H.grad_y_H(st.u, st.y)) ** 2 + (self.H.grad_x_H(st.u, st.y) + gF) ** 2
            S_sum = S if S_sum is None else S_sum + S
            for batch in self.batches:
                g_batch = sum((grads[i] for i in batch[1:]), grads[batch[0]]) / self.b
                new = stam_step(st, g_batch, self.ops, self.gamma, self.beta)
                nxt.append((new, self.proxF.last[2], self.proxF.last[1], path))
        ES_t = S_sum / len(layer)
        self.problem.set_performance_metric(ES_t)
        self.metrics.append(ES_t)
        return nxt

    def _oracles(self, y):
        """The gradients and values of the ``G_i`` at ``y``, each value tied to ``G_i^inf`` by Lemma
        Lip-lemma (exact: module docstring)."""
        grads, vals = zip(*(Gi.oracle(y) for Gi in self.Gs))
        for gi, Gi_y, fi in zip(grads, vals, self.f_stars):
            self.problem.add_constraint(fi <= Gi_y - gi**2 / (2 * self.L1))
        return grads, vals

    def _close(self, path: list) -> None:
        """A path's ``min_{0<=t<=T} M_t``, an auxiliary scalar below each ``M_t`` (the solver sets it to the min)."""
        from PEPit import Expression

        m = Expression()
        for M_t in path:
            self.problem.add_constraint(m <= M_t)
        self.leaves_m.append((path[0], m))

    def normalisation(self, y0):
        """``(delta0 + Delta, M0'_T)``: ``G(y^0) + H(x^0, y^0) - (1/N) sum_i G_i^inf`` and the mean over
        the paths of ``M_0 - min_{t<=T} M_t``."""
        f_star_mean = sum(self.f_stars[1:], self.f_stars[0]) / self.N
        delta0 = self.G_y0 + self.lam / 2 * (self.x0 - y0) ** 2 - f_star_mean
        leaves = self.leaves_m
        M0_prime = sum((M0 - m for M0, m in leaves[1:]), leaves[0][0] - leaves[0][1]) / len(leaves)
        return delta0, M0_prime


# --------------------------------------------------------------------------- the paper's side
def paper_bound(lam: float, gamma: float, beta: float, T: int, L1: float = 1.0, N: int = 1, b: int = 1) -> dict:
    """Theorem conv's right-hand side for the normalisation of :func:`stam_pep` (corrected constants,
    from :mod:`stam.theory.symbolic.numeric`) and whether ``(gamma, beta)`` meets Theorem conv's hypotheses
    (``K1 > 0``, ``[(L2*)^2 + (L5*)^2] gamma^2 <= 1``, ``beta K1/K2 >= 2``; the conditions of
    Theorem conv-rate are not needed for this bound).  ``bound`` is None when the formula gives
    no finite positive number.  The theorem holds for any proper lsc ``F``, so the bound is the same
    for every class of ``F``.

    Full gradient (``b = N``): ``delta0 + M0' = 1`` with the ES constants of the exact gradient.
    b-nice minibatches (``b < N``): Lemma es-lemma's ``A`` (``E v_i^2 = N/b``) and ``C = 2 A Delta^inf``;
    the right-hand side ``2 q^T beta (delta0 + M0') / T + (L+M) 2 A Delta / beta`` is linear in
    ``(delta0 + M0', Delta)``, so under ``delta0 + Delta + M0' <= 1`` its largest value is the larger of
    the two coefficients."""
    from stam.theory.symbolic import numeric

    if b == N:  # exact gradient: tilde grad G = grad G
        A, C = numeric.deterministic_es(L1, lam)  # H = (lam/2)||x - y||^2: L3* = lam, no gap
        c = numeric.quadratic_coupling(lam, L1=L1, A=float(A), C=float(C))
        bound = finite_or_none(numeric.theorem_rhs(T, gamma, beta, c, 1.0, 0.0))
    else:
        A, C1 = numeric.finite_sum(L1, N, b, lam, 1.0)  # C for Delta^inf = 1
        c0 = numeric.quadratic_coupling(lam, L1=L1, A=float(A), C=0.0)
        c1 = numeric.quadratic_coupling(lam, L1=L1, A=float(A), C=float(C1))
        parts = [finite_or_none(numeric.theorem_rhs(T, gamma, beta, c0, 1.0, 0.0)),
                 finite_or_none(numeric.theorem_rhs(T, gamma, beta, c1, 0.0, 0.0))]
        bound = None if None in parts else max(parts)
        c = c1
    verdict = numeric.check(gamma, beta, c)
    return {
        "bound": bound if bound is not None and bound > 0 else None,
        "admissible": bool(verdict["admissible"]),
        "violations": verdict["violations"],
    }


def compare(lam: float, gamma: float, beta: float, T: int, *, problem: ProblemClass | None = None,
            free_start: bool = False, solver: str | None = None, **fields) -> dict:
    """Worst case (PEP) beside the paper's bound: one row of ``stam pep`` / a pep-sweep.
    ``ratio = worst_case / bound`` only when the solver says optimal and the bound exists.  ``problem`` (or its
    fields by keyword) as in :func:`stam_pep`."""
    problem = ProblemClass.of(problem, fields)
    no_other(fields, "compare")
    f_class, N, b = problem.f_class, problem.N, problem.b
    result = stam_pep(lam, gamma, beta, T, problem=problem, free_start=free_start, solver=solver)
    paper = paper_bound(lam, gamma, beta, T, L1=problem.L1, N=N, b=b)
    ratio = None
    if result.optimal and result.worst_case is not None and paper["bound"] is not None:
        ratio = result.worst_case / paper["bound"]
    return {
        "T": T,
        "f_class": f_class,
        "N": N,
        "b": b,
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


def pep_sweep(lam: float, gamma: float, beta: float, Ts, *, problem: ProblemClass | None = None,
              free_start: bool = False, solver: str | None = None, **fields) -> dict:
    """The ``pep-sweep`` result object (format in COMMON.md) for the horizons ``Ts``; ``problem`` (or its fields
    by keyword) as in :func:`stam_pep`."""
    problem = ProblemClass.of(problem, fields)
    no_other(fields, "pep_sweep")
    L1, f_class, N, b = problem.L1, problem.f_class, problem.N, problem.b
    rows = [compare(lam, gamma, beta, int(T), problem=problem, free_start=free_start, solver=solver) for T in Ts]
    return {
        "kind": "pep-sweep",
        "provenance": provenance(),
        "lam": lam,
        "gamma": gamma,
        "beta": beta,
        "L1": L1,
        "free_start": free_start,
        "f_class": f_class,
        "N": N,
        "b": b,
        "admissible": all(r["admissible"] for r in rows),
        "rows": [{k: r[k] for k in ("T", "worst_case", "bound", "ratio", "status")} for r in rows],
    }



# -- the result of ``stam pep --sweep-T ... --out FILE`` (:func:`pep_sweep`) --------------------------
def _derived_row(row):
    """A row as :func:`compare` writes it: a worst case only where the solver said optimal (another status is the
    solver's, never a worst case), and the ratio the worst case over the bound (computed from the values beside it,
    to rounding), null where either is."""
    worst, bound, ratio = row.get("worst_case"), row.get("bound"), row.get("ratio")
    if worst is not None and row.get("status", "optimal") != "optimal":
        return "worst_case", f"is {shown(worst)} with status {shown(row['status'])}: only an optimal solve gives a worst case"
    want = worst / bound if worst is not None and bound else None
    if (want is None) != (ratio is None) or (want is not None and not math.isclose(ratio, want, rel_tol=1e-9)):
        return "ratio", f"is {shown(ratio)}, not worst_case / bound ({shown(want)}): it is computed from them"
    return None


#: a worst case of min_t S_t (>= 0) beside the theorem's bound
PEP_ROW = Schema(required={"T": POSINT},
                 optional={"worst_case": NONNEG_OR_NULL, "bound": NONNEG_OR_NULL, "ratio": NONNEG_OR_NULL, "status": STR},
                 rules=(_derived_row,))
#: lambda finite and > 0, horizons each once, increasing
PEP_SWEEP = ResultType(
    "pep-sweep", Schema(required={"rows": LIST, "lam": POS, "gamma": POS, "beta": POS},
                        optional={"kind": STR, "L1": POS, "free_start": BOOL, "admissible": BOOL,
                                  "provenance": DICT_OR_NULL},
                        each={"rows": PEP_ROW}, inner={"provenance": PROVENANCE}, rules=(increasing("rows", "T"),)),
    files="pep.json", writer="stam pep --sweep-T ... --out FILE",
    title=lambda d, path: f"PEP sweep: lambda={d.get('lam')}, gamma={d.get('gamma')}, beta={d.get('beta')}",
    params=lambda d: {k: d.get(k) for k in ("lam", "gamma", "beta")})


__all__ = ["PEP_ROW", "PEP_SWEEP", "GAMMA_L1_MIN", "UNIT_STEP_BELOW", "gradient_descent_pep", "stam_pep", "prox_function_class", "ProxOracle", "minibatches", "gram_size", "paper_bound", "compare", "pep_sweep", "validate_sampling"]
