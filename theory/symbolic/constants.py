"""Every constant and condition of Section 2 and the appendices as a sympy expression,
derived from its defining condition (never copied from the print; :mod:`stam.theory.papercheck.audit`
compares the two).  All functions are cached: each derivation runs once per process.

Notation: :mod:`stam.theory.symbolic.symbols`.  ``K_1, K_2, K_3`` come from the inequality chain of
Lemma par2 (:mod:`stam.theory.symbolic.chain`).
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from stam.theory.symbolic import chain
from stam.theory.symbolic.symbols import (
    A0,
    B0,
    C0,
    K1,
    K2,
    L1,
    L2,
    L3,
    L5,
    M0,
    A,
    C,
    L,
    M,
    N,
    T,
    b,
    beta,
    delta0,
    delta_inf,
    eps,
    gamma,
    gap,
    l,
    lam,
    m_v,
    omega_m1,
    t,
)

cached = lru_cache(maxsize=None)


# --------------------------------------------------------------------------------------------
# Expected smoothness: Lemma ES-GH and Lemma es-lemma
# --------------------------------------------------------------------------------------------

def _smallest_dominating(bound: sp.Expr, parts: list[sp.Symbol]) -> list[sp.Expr]:
    """For ``bound = sum_k c_k p_k + c_0`` (``p_k >= 0`` free), the smallest values making
    ``target = sum_k a_k p_k + a_0 >= bound`` for all ``p_k >= 0``: ``a_k >= c_k`` each."""
    poly = sp.Poly(sp.expand(bound), *parts)
    return [poly.coeff_monomial(p) for p in parts] + [poly.coeff_monomial(1)]


@cached
def es_gh() -> dict:
    """Lemma ES-GH (eq. (gh-es)): ``A`` and ``C`` derived from the chain of its proof.

    With ``g = G - G^inf >= 0``, ``h = H - H^inf >= 0`` and the ES inequality eq. (422):
    ``E||g~ + grad_y H||^2 <= 2E||g~||^2 + 2||grad_y H||^2 <= 4A0 g + 2B0 ||grad G||^2 + 2C0 + 2||grad_y H||^2``,
    then Lemma Lip-lemma (``||grad G||^2 <= 2 L1 g``, ``||grad_y H||^2 <= 2 L3* h``).  The target
    ``2A [G + H - (G+H)^inf] + C = 2A (g + h - Delta_GH) + C`` dominates it for all ``g, h >= 0``
    iff ``2A >=`` each coefficient and ``C >= 2A Delta_GH + constant``; the smallest such values
    are returned, ``Delta_GH = (G+H)^inf - G^inf - H^inf``."""
    g, h = sp.symbols("g h", nonnegative=True)
    bound = 2 * (2 * A0 * g + B0 * (2 * L1 * g) + C0) + 2 * (2 * L3 * h)
    cg, ch, c0 = _smallest_dominating(bound, [g, h])
    a = sp.Max(cg / 2, ch / 2)
    return {"A": a, "C": 2 * a * gap + c0}


@cached
def es_lemma() -> dict:
    """Lemma es-lemma (eq. (eq101)): ``A``, ``C`` for ``G = (1/N) sum_i G_i`` and the estimator
    eq. (stochastic G), with ``m = max_i L_1^i E[v_i^2]``.

    eq. (eq100) (Young, then Jensen for the mean) and Lemma Lip-lemma give
    ``E||g~ + grad_y H||^2 <= (4/N) sum_i [L_1^i E v_i^2 g_i + L3* h] <= (4/N) sum_i [m g_i + L3* h]``
    with ``g_i = G_i - G_i^inf``, ``h = H - H^inf``.  The target
    ``2A [(1/N) sum_i (g_i + h) - Delta^inf] + C`` dominates it termwise iff ``2A >= 4 m`` and
    ``2A >= 4 L3*``: ``A = 2 max(m, L3*)``, ``C = 2 A Delta^inf``.  (Printed: ``(4m + L3*)/2``.)"""
    gi, h = sp.symbols("g_i h", nonnegative=True)
    # one representative summand i of (1/N) sum_i (...): coefficients per unit of (1/N)
    bound = 4 * (m_v * gi + L3 * h)
    cg, ch, _ = _smallest_dominating(bound, [gi, h])
    a = sp.Max(cg / 2, ch / 2)
    return {"A": a, "C": 2 * a * delta_inf}


ES_LEMMA_A_PRINTED = (4 * m_v + L3) / 2


@cached
def ev2_nice_without_replacement() -> sp.Expr:
    """``E[v_i^2]`` for b-nice sampling without replacement (Section 2.1): ``v_i = 1_{i in S} N/b``,
    ``P(i in S) = C(N-1, b-1) / C(N, b)``."""
    p_in = sp.combsimp(sp.binomial(N - 1, b - 1) / sp.binomial(N, b))
    return sp.simplify(p_in * (N / b) ** 2)


@cached
def ev2_with_replacement() -> sp.Expr:
    """``E[v_i^2]`` for b samples drawn uniformly with replacement, ``v_i = (N/b) * count_i``;
    ``count_i = sum_j I_j`` of b independent Bernoulli(1/N) indicators, so
    ``E count_i^2 = b/N + b(b-1)/N^2``."""
    ecount2 = b / N + b * (b - 1) / N**2
    return sp.simplify((N / b) ** 2 * ecount2)


# --------------------------------------------------------------------------------------------
# Lemma conv-lemma: K1, K2, K3, M, L, omega_t
# --------------------------------------------------------------------------------------------

@cached
def K1_expr() -> sp.Expr:
    """``K_1`` (eq. (k1), eq. (eq36)): minus the coefficient of ``||x^{t+1} - x^t||^2`` in the
    derived eq. (eq36)."""
    return chain.derivation()["K1"]


@cached
def K2_expr() -> sp.Expr:
    """``K_2`` (eq. (eq39)): the value for which ``K_1/(K_2 gamma^2)`` times eq. (eq35) cancels
    ``K_1 ||x^{t+1} - x^t||^2``."""
    return chain.derivation()["K2"]


@cached
def K3_expr(substituted: bool = True) -> sp.Expr:
    """``K_3`` (eq. (eq39)): the coefficient of ``||y^{t+1} - y^t||^2`` in the derived eq. (eq39)
    (corrected: ``(L4*)^2 (1 + 5 gamma) + 5 K1 (L4*)^2 / K2``)."""
    k3 = chain.derivation()["K3"]
    return sp.simplify(k3.subs({K1: K1_expr(), K2: K2_expr()})) if substituted else k3


@cached
def K3_printed_expr(substituted: bool = True) -> sp.Expr:
    """``K_3`` as printed in Lemma conv-lemma / Lemma par2."""
    k3 = chain.K3_PRINTED
    return sp.simplify(k3.subs({K1: K1_expr(), K2: K2_expr()})) if substituted else k3


@cached
def K3_printed_is_derived() -> bool:
    """Whether the printed ``K_3`` (Lemma conv-lemma, Lemma par2) is the derived one (sympy)."""
    return sp.simplify(K3_printed_expr(False) - K3_expr(False)) == 0


@cached
def M_expr() -> sp.Expr:
    """``M`` (eq. (eq45) -> eq. (eq46)): the smallest ``M`` with ``K_3 - M/2 <= 0``, so that the
    ``||y^{t+1}-y^t||^2`` terms of eq. (eq45) can be dropped: ``M = 2 K_3``."""
    return sp.solve(sp.Eq(K3_expr(False) - M / 2, 0), M)[0]


@cached
def L_expr() -> sp.Expr:
    """``L`` (Assumption ass2 (a3)): the smallest ``L`` with ``L_3^* + L_1 <= L``."""
    return L1 + L3


_l_nonneg = sp.Symbol("l", nonnegative=True)


def _is_zero(expr: sp.Expr) -> bool:
    """Exactly whether ``expr`` (rational functions and square roots) is 0: square roots with their
    radicands in one canonical form (expanded, common factors out), then radicals cleared from the
    denominator and expanded; only if that does not give 0, sympy's ``simplify`` decides."""
    canon = expr.replace(lambda a: a.is_Pow and a.exp == sp.S.Half,
                         lambda a: sp.sqrt(sp.factor_terms(sp.expand(a.base))))
    if sp.expand(sp.radsimp(sp.together(canon))) == 0:
        return True
    return sp.simplify(sp.radsimp(expr)) == 0


@cached
def gamma_threshold() -> dict:
    """Remark Rem=09836: the exact sup of ``gamma > 0`` with ``K_1 > 0``.

    ``4 gamma K_1 = 1 - beta_ gamma - 5 (L2*)^2 gamma^2`` with ``beta_ = 10(l + L2*) + 4`` is 1 at
    gamma = 0; for ``L2* > 0`` it is a concave parabola, so ``K_1 > 0`` exactly on
    ``(0, root)`` with ``root`` its positive root (sympy ``solve``).  The rationalised form
    ``2 / (beta_ + sqrt(beta_^2 + 20 (L2*)^2))`` equals it and stays valid at ``L2* = 0``
    (where it is ``1/beta_``, the linear case); it needs ``beta_ > 0``, which holds because
    ``l >= -L2*`` (an ``L2*``-smooth ``H(., y)`` is at most ``L2*``-strongly convex)."""
    num = sp.expand(sp.numer(sp.together(K1_expr())))
    roots = sp.solve(sp.Eq(num, 0), gamma)
    bq = 10 * (l + L2) + 4
    probe = {L2: 2, l: 0}
    root = next(r for r in roots if r.subs(probe) > 0)
    stable = 2 / (bq + sp.sqrt(bq**2 + 20 * L2**2))
    assert _is_zero(root - stable)
    b_ = sp.Symbol("b", positive=True)  # shorthand for beta_ in the displayed forms
    in_b = (sp.sqrt(b_**2 + 20 * L2**2) - b_) / (10 * L2**2)
    assert _is_zero(in_b.subs(b_, bq) - root)
    linear_root = sp.solve(sp.Eq(num.subs(L2, 0), 0), gamma)[0]
    assert _is_zero(stable.subs({L2: 0, l: _l_nonneg}) - linear_root.subs(l, _l_nonneg))
    return {
        "root": sp.simplify(root),
        "root_in_b": in_b,
        "printed_in_b": (sp.sqrt(b_**2 + 20 * L2**2) - b_) / (10 * L2),
        "b": bq,
        "stable": stable,
        # L2* = 0 (then l >= 0): K1's numerator is linear; its root is the stable form at L2* = 0
        "at_L2_zero": linear_root,
        "printed": (sp.sqrt((10 * L2 + 10 * l + 4) ** 2 + 20 * L2**2) - (10 * L2 + 10 * l + 4)) / (10 * L2),
        "numerator": num,
        # K1 > 0  ==>  gamma l < 1/10: (1 - 10 gamma l) - num is >= 0 when l >= -L2*
        "gamma_l_slack": sp.expand(1 - 10 * gamma * l - num),
    }


@cached
def gamma_lambda_limit() -> sp.Expr:
    """The large-lambda limit of ``lambda`` times Remark Rem=09836's threshold for the network
    coupling ``H = (lambda/2)||x - y||^2`` (:func:`quadratic_coupling`: L2* = lambda,
    l = -lambda): ``lim_{lambda -> oo} lambda sup{gamma: K_1 > 0}``, so that for large lambda
    the theorem's region is ``gamma lambda < `` this value (``1/sqrt(5)``)."""
    q = quadratic_coupling()
    return sp.limit(lam * gamma_threshold()["stable"].subs({L2: q["L2"], l: q["l"]}), lam, sp.oo)


@cached
def second_condition() -> sp.Expr:
    """Theorem conv: ``[(L2*)^2 + (L5*)^2] gamma^2 <= 1`` (used in eq. (eq403)); returned as the
    left-hand side, and its sup in gamma is ``1/sqrt((L2*)^2 + (L5*)^2)``."""
    return (L2**2 + L5**2) * gamma**2


@cached
def omega() -> sp.Expr:
    """``omega_t`` of Lemma conv-lemma (eq. (eq47)): ``omega_t = omega_{t-1} / (1 + (L+M)A/beta^2)``
    unrolled from ``omega_{-1}``."""
    q = (L + M) * A / beta**2
    w = sp.Function("omega")
    sol = sp.rsolve(w(t) - w(t - 1) / (1 + q), w(t), {w(-1): omega_m1})
    return sp.simplify(sol)


@cached
def theorem_rhs() -> sp.Expr:
    """Right-hand side of Theorem conv (eq. (con-inequality)), from eq. (eq49) with
    ``W_T >= T omega_{T-1}`` (eq. (eq50)), then eq. (eq51) (``beta K1/K2 >= 2``) and the factor 2
    of eq. (eq403)/eq. (eq52).  Kept in the form ``2 (1+q)^T beta (delta0+M0')/T + (L+M)C/beta``
    (``q = (L+M)A/beta^2``), which evaluates without overflow."""
    W_lower = T * omega().subs(t, T - 1)
    ratio = sp.powsimp(sp.simplify(omega_m1 / W_lower), force=True)  # = (1 + q)^T / T
    q = (L + M) * A / beta**2
    assert sp.simplify(ratio - (1 + q) ** T / T) == 0
    rhs51 = (1 + q) ** T / T * beta * (delta0 + M0) + (L + M) * C / (2 * beta)
    return 2 * rhs51


@cached
def beta_conditions() -> dict:
    """Theorem conv-rate's three lower bounds on beta, each solved from its defining condition:

    - eq. (eq700): ``(L+M) A T / beta^2 <= 1`` (so ``(1 + (L+M)A/beta^2)^T <= e <= 3``),
    - Theorem conv's ``beta K1 / K2 >= 2``,
    - eq. (eq702): ``(L+M) C / beta <= eps^2 / 2``.
    All three must hold: beta must exceed their **max** (printed: min)."""
    bb = sp.Symbol("bb", positive=True)
    k1, k2 = sp.Symbol("k1", positive=True), sp.Symbol("k2", positive=True)
    return {
        "sqrt((L+M)*A*T)": sp.solve(sp.Eq((L + M) * A * T / bb**2, 1), bb)[0],
        "2*K2/K1": sp.solve(sp.Eq(bb * k1 / k2, 2), bb)[0].subs({k1: K1, k2: K2}),
        "2*(L+M)*C/eps^2": sp.solve(sp.Eq((L + M) * C / bb, eps**2 / 2), bb)[0],
    }


@cached
def T_lower_bounds() -> dict:
    """Theorem conv-rate: eq. (eq703) ``6 beta (delta0 + M0')/T <= eps^2/2`` solved for T, with each
    lower bound of :func:`beta_conditions` substituted for beta (eq. (eq704)); the first one has
    T on both sides and is solved for T (``T >= 144 (L+M) A (delta0+M0')^2 / eps^4``)."""
    Tt = sp.Symbol("Tt", positive=True)
    St = sp.Symbol("St", positive=True)  # sqrt(T): the first bound has sqrt(T) on the right, so solve for it
    t_of_beta = sp.solve(sp.Eq(6 * beta * (delta0 + M0) / Tt, eps**2 / 2), Tt)[0]
    out = {}
    for name, bound in beta_conditions().items():
        eq = sp.Eq(Tt, t_of_beta.subs(beta, bound.subs(T, Tt))).subs(Tt, St**2)  # polynomial in St > 0
        sols = [s**2 for s in sp.solve(eq, St) if s != 0]
        out[name] = sp.factor(sp.simplify(sols[0]))
    return out


@cached
def T_min_expr() -> sp.Expr:
    """Theorem conv-rate: ``T_min = max`` of :func:`T_lower_bounds` (eq. (eq705))."""
    return sp.Max(*T_lower_bounds().values())


T_MIN_PRINTED = (
    12 * (L + M) * (delta0 + M0) / eps**2
    * sp.Max(2 * C / eps**2, 12 * (delta0 + M0) * A / eps**2, 2 * K2 / (K1 * (L + M)))
)


@cached
def T_min_rate() -> dict:
    """``T_min = O(eps^-4)``: each term times ``eps^4`` has a finite limit as ``eps -> 0`` and their
    max is positive as soon as ``(A > 0 or C > 0)`` and ``delta0 + M0' > 0``."""
    limits = {k: sp.limit(v * eps**4, eps, 0) for k, v in T_lower_bounds().items()}
    return {"limits": limits, "limit": sp.Max(*limits.values())}


# --------------------------------------------------------------------------------------------
# The network specialisation: G = loss, H = (lam/2)||x - y||^2, F = indicator of Q
# --------------------------------------------------------------------------------------------

@cached
def quadratic_coupling() -> dict:
    """Constants of Assumption ass2 for ``H(x, y) = (lam/2)||x - y||^2``.

    ``grad H`` is linear with Jacobian blocks ``d^2H/dx^2 = lam I``, ``d^2H/dxdy = -lam I``, ...;
    the Lipschitz constant of a linear map ``c I`` is ``|c|``, so L2* .. L5* are the absolute
    values of the (scalar) second derivatives.  The smallest ``l`` with ``H(., y) + (l/2)||.||^2``
    convex is the smallest root of ``d^2/dx^2 [H + l x^2/2] >= 0``."""
    x, y = sp.symbols("x y", real=True)
    H = lam / 2 * (x - y) ** 2
    ll = sp.Symbol("ll", real=True)
    hess_x = sp.diff(H + ll * x**2 / 2, x, 2)
    l_min = sp.solve(sp.Eq(hess_x, 0), ll)[0]  # hess_x is increasing in ll
    return {
        "L2": sp.Abs(sp.diff(H, x, x)),
        "L3": sp.Abs(sp.diff(H, y, y)),
        "L4": sp.Abs(sp.diff(H, x, y)),
        "L5": sp.Abs(sp.diff(H, y, x)),
        "l": l_min,
        "L": L1 + sp.Abs(sp.diff(H, y, y)),
    }


@cached
def network_updates() -> dict:
    """The four updates of eq. (alg:stamm) derived from Algorithm 1 for the network model
    eq. (stam): ``y = W`` (float weights, ``G = L``), ``x = U``, ``u = V``, ``z = X``.

    Each smooth subproblem is solved from its stationarity condition (scalar symbols stand for
    vectors: the subproblems are separable).  The u-step is the prox of the indicator of Q,
    which is the projection onto Q for every gamma (definition of the projection eq. (0411))."""
    y, x, z, yt, xt, zt, g, y1, x1 = sp.symbols("y x z y^t x^t z^t g y^{t+1} x^{t+1}", real=True)
    H = lambda xx, yy: lam / 2 * (xx - yy) ** 2  # noqa: E731
    # eq. (algy): <g + d/dy H(x^t, y^t), y - y^t> + beta/2 (y - y^t)^2
    dyH = sp.diff(H(xt, y), y).subs(y, yt)
    y_new = sp.solve(sp.diff((g + dyH) * (y - yt) + beta / 2 * (y - yt) ** 2, y), y)[0]
    # eq. (algx): H(x, y^{t+1}) + (x - z^t)^2/(2 gamma)
    x_new = sp.solve(sp.diff(H(x, y1) + (x - zt) ** 2 / (2 * gamma), x), x)[0]
    Wt, Wtil, Ut, Xt, W1, gL, gLT = sp.symbols("W^t Wtilde^t U^t X^t W^{t+1} gradL(W^t) gradL(W^T)", real=True)
    derived = {
        "W": sp.simplify(y_new.subs({yt: Wt, xt: Ut, g: gL})),
        "U": sp.simplify(x_new.subs({y1: W1, zt: Xt})),
        "V": "Proj_Q(2 U^{t+1} - X^t)",
        "X": "X^t + (V^{t+1} - U^{t+1})",
    }
    printed = {
        "W": ((beta - lam) * Wt + lam * Wtil - gLT) / beta,
        "U": (gamma * lam * W1 + Xt) / (gamma * lam + 1),
        "V": "Proj_Q(2 U^{t+1} - X^t)",
        "X": "X^t + (V^{t+1} - U^{t+1})",
    }
    return {
        "derived": derived,
        "printed": printed,
        "symbols": {"W^t": Wt, "W~^t": Wtil, "U^t": Ut, "X^t": Xt, "W^{t+1}": W1, "gradL(W^t)": gL,
                    "gradL(W^T)": gLT},
    }


__all__ = [
    "es_gh", "es_lemma", "ES_LEMMA_A_PRINTED", "ev2_nice_without_replacement", "ev2_with_replacement",
    "K1_expr", "K2_expr", "K3_expr", "K3_printed_expr", "M_expr", "L_expr", "gamma_threshold",
    "second_condition", "omega", "theorem_rhs", "beta_conditions", "T_lower_bounds", "T_min_expr",
    "T_MIN_PRINTED", "T_min_rate", "quadratic_coupling", "network_updates", "gamma_lambda_limit",
]
