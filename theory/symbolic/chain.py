"""The inequality chain of Lemma par2, eq. (eq23) -> (eq24) -> (eq25) -> (eq26) -> (eq27) ->
(eq300) -> (eq35) -> (eq36) -> (eq39), re-derived in sympy; it defines K_1, K_2 and K_3.

Every inequality is a *gap* ``g >= 0`` in scalar quantities of one iteration ``t``::

    X  = ||x^{t+1} - x^t||^2        Y  = ||y^{t+1} - y^t||^2       Z = ||z^t - z^{t-1}||^2
    P  = <z^t - z^{t-1}, x^{t+1} - x^t>
    d  = grad_x H(x^t, y^{t+1}) - grad_x H(x^t, y^t),   D = ||d||^2,   Q = <d, x^{t+1} - x^t>
    E  = ||x^{t+1} - u^t||^2         dPhi = Phi(x^{t+1}, u^{t+1}, z^{t+1}; y^{t+1}) - Phi(x^t, u^t, z^t; y^{t+1})
    sx = ||x^{t+1} - x^t||, sy = ||y^{t+1} - y^t||   (sx^2 = X, sy^2 = Y)

A step is *derived* by a certificate: a combination, with multipliers that are >= 0 under the
lemma's hypotheses (gamma > 0, K_1 > 0), of earlier gaps, of the hypotheses listed in
:data:`HYPOTHESES` and of squares ``||.||^2 >= 0``.  The derived gap IS that combination
(simplified); the printed gap is typed in from the paper and only compared with it.  A printed
step is implied by the derivation when ``printed - derived >= 0`` for all admissible values;
:func:`compare` decides this (exactly when it can, otherwise by a seeded search for a point
where it fails).

The algebraic identities the proof uses (eq. (eq263), eq. (eq650), the expansion in eq. (eq27),
eq. (eq31) and the sum eq. (eq260) + eq. (eq261) -> eq. (eq265)) are quadratic forms in the
iterates; a quadratic-form identity holds for vectors iff it holds for scalars (its symmetric
coefficient matrix must vanish), so :func:`identities` checks them with scalar symbols.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy as sp

from stam.theory.symbolic.symbols import K1, K2, L2, L4, gamma, l

X, Y, Z, D, E = sp.symbols("X Y Z D E", nonnegative=True)
P, Q, dPhi = sp.symbols("P Q dPhi", real=True)
sx, sy = sp.symbols("s_x s_y", nonnegative=True)

#: Hypotheses of the chain (gap >= 0) and where the paper takes them from.
HYPOTHESES = {
    "eq23": (
        P / gamma - (1 / gamma - l) * X - Q,
        "monotonicity of the gradient of the convex H(., y^{t+1}) + (l/2)||.||^2 at x^{t+1}, x^t, "
        "with the gradients eq. (eq21), eq. (eq22) (eq. (eq13) at t and t-1)",
    ),
    "Hx-ylip": (L4**2 * Y - D, "(Hx-ylip) with sup_x L4(x) <= L4*: ||d|| <= L4* ||y^{t+1} - y^t||, squared"),
    "eq265": (
        E / gamma - (1 / gamma - l) * X / 2 - dPhi,
        "eq. (eq260) + eq. (eq261) and the identities eq. (eq263), eq. (eq650) (see identities())",
    ),
    "eq34": (
        ((1 + gamma * L2) * sx + gamma * L4 * sy) ** 2 - Z,
        "eq. (eq31), the triangle inequality, (H-xlip) and (Hx-ylip); squared",
    ),
}


@dataclass(frozen=True)
class Step:
    """One inequality of the chain: ``derived >= 0`` follows from ``rule``; ``printed >= 0`` is
    what the paper prints (a gap in the same quantities)."""

    label: str
    derived: sp.Expr
    printed: sp.Expr
    rule: str
    printed_from_printed: sp.Expr  # the same rule applied to the *printed* predecessors


def _hyp(name: str) -> sp.Expr:
    return HYPOTHESES[name][0]


def _sq(expr: sp.Expr) -> sp.Expr:
    """Replace sx^2, sy^2 by X, Y after expanding."""
    return sp.expand(sp.expand(expr).subs({sx**2: X, sy**2: Y}))


#: The paper's K_1 of eq. (eq36) / Lemma par2 and of eq. (k1), typed in as printed.
K1_PRINTED_EQ36 = -((-3 + 5 * gamma * l + 2 * gamma) / (2 * gamma) + 5 * (1 + gamma * L2) ** 2 / (4 * gamma))
K1_PRINTED_K1 = (1 - (10 * (l + L2) + 4) * gamma - 5 * L2**2 * gamma**2) / (4 * gamma)
K2_PRINTED = 5 * (1 + gamma * L2) ** 2 / (4 * gamma**2)
K3_PRINTED = L4 * (1 + 5 * gamma * L4) + 5 * K1 * L4**2 / K2

#: The printed chain, typed in from Appendix A (gap >= 0 form).
PRINTED = {
    "eq24": P / gamma + D / 2 + X / 2 - (1 / gamma - l) * X,
    "eq25": P / gamma - (1 / gamma - l - sp.Rational(1, 2)) * X + L4 / 2 * Y,
    "eq26": P - (1 - gamma * l - gamma / 2) * X + gamma * L4 / 2 * Y,
    "eq27": (-1 + 2 * gamma * l + gamma) * X + gamma * L4 * Y + Z - E,
    "eq300": (-3 + 5 * gamma * l + 2 * gamma) / (2 * gamma) * X + L4 * Y + Z / gamma - dPhi,
    "eq35": sp.Rational(5, 4) * (1 + gamma * L2) ** 2 * X + 5 * (gamma * L4) ** 2 * Y - Z,
    "eq36": -K1_PRINTED_EQ36 * X + L4 * (1 + 5 * gamma * L4) * Y - dPhi,
    "eq39": -dPhi + K3_PRINTED * Y - K1 / K2 * Z / gamma**2,
}


@lru_cache(maxsize=None)
def derivation() -> dict:
    """Derive the chain.  Returns ``{"steps": [Step...], "K1": expr, "K2": expr, "K3": expr}``.

    - eq. (eq24) = eq. (eq23) + 1/2 ||d + (x^{t+1} - x^t)||^2          (Young, 2<a,b> >= -|a|^2 - |b|^2)
    - eq. (eq25) = eq. (eq24) + 1/2 [(L4*)^2 Y - D]                        ((Hx-ylip) squared)
    - eq. (eq26) = gamma * eq. (eq25)
    - eq. (eq27) = 2 * eq. (eq26) + [X - 2P + Z - E]                       (the bracket is 0: x^t - u^t = z^{t-1} - z^t by eq. (algz))
    - eq. (eq300) = eq. (eq265) + eq. (eq27) / gamma
    - eq. (eq35) = eq. (eq34) + (1/2 (1 + gamma L2*) sx - 2 gamma L4* sy)^2   ((a+b)^2 <= 5/4 a^2 + 5 b^2)
    - eq. (eq36) = eq. (eq300) + eq. (eq35) / gamma;   K_1 := -(coefficient of X)
    - eq. (eq39) = eq. (eq36) + K_1 / (K_2 gamma^2) * eq. (eq35), K_2 chosen so that X cancels;
      K_3 := coefficient of Y.  (multiplier >= 0 because K_1 > 0)
    """
    steps: list[Step] = []
    young = X + 2 * Q + D  # ||(x^{t+1}-x^t) + d||^2 >= 0
    algz = X - 2 * P + Z - E  # == 0 identically (see identities())
    eq35_square = (sp.Rational(1, 2) * (1 + gamma * L2) * sx - 2 * gamma * L4 * sy) ** 2

    def add(label, rule, combine):
        prev = {s.label: s for s in steps}
        derived = sp.expand(combine({k: v.derived for k, v in prev.items()}))
        from_printed = sp.expand(combine({k: PRINTED[k] for k in prev}))
        steps.append(Step(label, derived, sp.expand(PRINTED[label]), rule, from_printed))
        return derived

    add("eq24", "eq23 + 1/2 ||x^{t+1}-x^t + d||^2", lambda s: _hyp("eq23") + young / 2)
    add("eq25", "eq24 + 1/2 [(L4*)^2 Y - D]  (Hx-ylip)", lambda s: s["eq24"] + _hyp("Hx-ylip") / 2)
    add("eq26", "gamma * eq25", lambda s: gamma * s["eq25"])
    add("eq27", "2 * eq26 + (X - 2P + Z - E), the bracket = 0 by (algz)", lambda s: 2 * s["eq26"] + algz)
    add("eq300", "eq265 + eq27 / gamma", lambda s: _hyp("eq265") + s["eq27"] / gamma)
    add("eq35", "eq34 + (sx (1+gamma L2*)/2 - 2 gamma L4* sy)^2", lambda s: _sq(_hyp("eq34") + eq35_square))
    eq36 = add("eq36", "eq300 + eq35 / gamma", lambda s: s["eq300"] + s["eq35"] / gamma)

    k1 = sp.simplify(-eq36.coeff(X))
    # eq39: add K1/(K2 gamma^2) * eq35; K2 is the value that cancels X.
    k2_sym = sp.Symbol("k2", positive=True)
    eq35 = steps[-2].derived
    trial = sp.expand(eq36 + k1 / (k2_sym * gamma**2) * eq35)
    k2 = sp.solve(sp.Eq(trial.coeff(X), 0), k2_sym)[0]

    def eq39(s):
        # eq36 with its X coefficient (-k1) named -K1, plus K1/(K2 gamma^2) * eq35; the X terms
        # vanish for K2 = k2 (checked below) and are dropped.
        raw = sp.expand(s["eq36"] + (k1 - K1) * X + K1 / (K2 * gamma**2) * s["eq35"])
        assert sp.simplify(raw.coeff(X).subs(K2, k2)) == 0, "K2 must cancel the X terms of eq39"
        return raw - raw.coeff(X) * X

    add("eq39", "eq36 + K1/(K2 gamma^2) * eq35  (K1 > 0); K2 := the value that cancels X", eq39)
    k3 = sp.simplify(steps[-1].derived.coeff(Y))
    return {"steps": steps, "K1": k1, "K2": sp.factor(k2), "K3": k3}


def steps() -> list[Step]:
    return derivation()["steps"]


def step(label: str) -> Step:
    return next(s for s in steps() if s.label == label)


def identities() -> dict[str, sp.Expr]:
    """The algebraic identities used in Appendix A; each value must expand to 0.

    Scalars stand for vectors (valid for quadratic forms, see the module docstring).
    ``zm, z0, z1`` are ``z^{t-1}, z^t, z^{t+1}``; ``x0, x1``, ``u0, u1`` likewise."""
    a, b_, c = sp.symbols("a b c", real=True)
    x0, x1, u0, u1, zm, z0, y1 = sp.symbols("x0 x1 u0 u1 zm z0 y1", real=True)
    Ha, Hb, Fa, Fb = sp.symbols("Ha Hb Fa Fb", real=True)  # H(x^t,y^{t+1}), H(x^{t+1},y^{t+1}), F(u^t), F(u^{t+1})
    z1 = z0 + u1 - x1  # eq. (algz)
    out = {}
    # eq650's "basic equality"
    out["eq650 basic"] = (2 * a - b_ - c) ** 2 - 2 * (a - c) ** 2 - (2 * (a - b_) ** 2 - (b_ - c) ** 2)
    # eq263: ||2x1-u1-z0||^2 - ||2x1-u1-z1||^2 = -2||z1-z0||^2 - ||x1-z1||^2 + ||x1-z0||^2
    out["eq263"] = ((2 * x1 - u1 - z0) ** 2 - (2 * x1 - u1 - z1) ** 2) - (
        -2 * (z1 - z0) ** 2 - (x1 - z1) ** 2 + (x1 - z0) ** 2
    )
    # eq650: the two-line identity
    out["eq650"] = ((2 * x1 - u0 - z0) ** 2 + (z0 - x0) ** 2) - (
        2 * (x1 - u0) ** 2 + 2 * (x1 - z0) ** 2 + (2 * x0 - u0 - z0) ** 2 - (x0 - z0) ** 2 - 2 * (x0 - u0) ** 2
    )
    # eq27: x^t - u^t = z^{t-1} - z^t  (algz at t-1), so E = X - 2P + Z
    z0_ = zm + u0 - x0
    out["eq27 expansion"] = (x1 - u0) ** 2 - ((x1 - x0) ** 2 - 2 * (z0_ - zm) * (x1 - x0) + (z0_ - zm) ** 2)
    # eq31 from eq13 at t and t-1:  grad_x H(x^{t+1},y^{t+1}) = (z^t - x^{t+1})/gamma etc.
    g1, g0 = (z0 - x1) / gamma, (zm - x0) / gamma
    out["eq31"] = (z0 - zm) / gamma - (g1 - g0 + (x1 - x0) / gamma)

    # eq260 + eq261 -> eq265 (gaps >= 0); Phi_t = H(x^t, y^{t+1}) + M(x^t, u^t, z^t), eq. (eq651)
    def Mt(x, u, z, F):
        return F + (2 * x - u - z) ** 2 / (2 * gamma) - (x - z) ** 2 / (2 * gamma) - (u - x) ** 2 / gamma

    g260 = Ha + (z0 - x0) ** 2 / (2 * gamma) - (1 / gamma - l) * (x1 - x0) ** 2 / 2 - Hb - (z0 - x1) ** 2 / (2 * gamma)
    g261 = Fa + (2 * x1 - u0 - z0) ** 2 / (2 * gamma) - Fb - (2 * x1 - u1 - z0) ** 2 / (2 * gamma)
    dphi = (Hb + Mt(x1, u1, z1, Fb)) - (Ha + Mt(x0, u0, z0, Fa))
    g265 = (x1 - u0) ** 2 / gamma - (1 / gamma - l) * (x1 - x0) ** 2 / 2 - dphi
    out["eq260+eq261 -> eq265"] = g265 - (g260 + g261)
    return {k: sp.expand(v) for k, v in out.items()}


@dataclass(frozen=True)
class Comparison:
    verdict: str  # "same", "weaker" (printed implied), "not implied"
    residual: sp.Expr  # printed - derived
    witness: dict | None  # a point with residual < 0 (parameters and quantities), if not implied


_PARAM_RANGES = {"gamma": (1e-3, 0.3), "l": (-1.0, 1.0), "L_2^*": (0.0, 3.0), "L_4^*": (0.0, 3.0)}


@lru_cache(maxsize=None)  # many items compare the same printed and derived steps
def compare(printed: sp.Expr, derived: sp.Expr, seed: int = 0, tries: int = 4000) -> Comparison:
    """Is ``printed >= 0`` implied by ``derived >= 0``?  Exactly if ``printed - derived`` is 0 or
    provably >= 0 (sympy, under the symbols' assumptions); otherwise a seeded random search over
    the parameters and nonnegative quantities for a point where it is negative."""
    residual = sp.simplify(sp.expand(printed - derived))
    if residual == 0:
        return Comparison("same", residual, None)
    if sp.factor(residual).is_nonnegative:
        return Comparison("weaker", residual, None)

    free = sorted(residual.free_symbols, key=lambda s: s.name)
    f = sp.lambdify(free, residual, "numpy")
    rng = np.random.default_rng(seed)
    for _ in range(tries):
        point = {}
        for s in free:
            lo, hi = _PARAM_RANGES.get(s.name, (0.0, 3.0) if s.is_nonnegative else (-3.0, 3.0))
            point[s] = float(np.round(rng.uniform(lo, hi), 3))
        if f(*point.values()) < 0:
            return Comparison("not implied", residual, {s.name: v for s, v in point.items()})
    return Comparison("undecided", residual, None)


__all__ = ["HYPOTHESES", "PRINTED", "Step", "derivation", "steps", "step", "identities", "compare", "Comparison"]
