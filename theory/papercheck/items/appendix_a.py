"""Items of Appendix A up to the chain of Lemma par2: Lemma Lip-lemma, eq. (eq100), Lemma par1
(eq2 -> eq11 = eq200) and the first part of the proof of Lemma par2 (eq260 -> eq265, eq13 -> eq23,
eq651, eq15, eq31, eq34), with the gaps of these proofs.  The chain eq24 -> eq39 and what follows
it are in :mod:`.chain_items`."""

from __future__ import annotations

import itertools

import numpy as np
import sympy as sp

from stam.theory.symbolic import chain
from stam.theory.symbolic import constants as k
from stam.theory.symbolic import symbols as s
from stam.theory.papercheck.items.common import SEED, rounded
from stam.theory.symbolic.stamruns import derived_updates, pretty
from stam.theory.papercheck.items.declare import Corrected, Gap, Result, Tex, item
from stam.theory.papercheck.items.steps import declare_steps, identity_result, step_result
from stam.theory.papercheck.items.section2 import INTEGRABLE_DESCENT, definitions


@item("Lip-lemma", covers=("Lip-lemma",))
def lip_lemma() -> Result:
    """``f^inf <= min_s [f + g s + (L/2) s^2] = f - g^2/(2L)`` (descent lemma at its best step)."""
    f, g, finf, Lf, st = sp.symbols("f g f^inf L s", real=True)
    Lp = sp.Symbol("L", positive=True)
    upper = f + g * st + Lp / 2 * st**2
    best = upper.subs(st, sp.solve(sp.diff(upper, st), st)[0])
    derived = sp.expand(2 * Lp * (best - finf))  # = 2L(f - f^inf) - g^2 >= 0
    printed = 2 * Lp * (f - finf) - g**2
    return step_result(printed, derived, "f^inf <= f(x - grad f/L) <= f - ||grad f||^2/(2L)")


@item("eq100 (Young, Jensen, E v_i^2)", covers=("eq100",))
def eq100(seed: int = SEED) -> Result:
    """eq. (eq100): its first line is at most its last, checked exactly (all b-subsets enumerated)."""
    rng = np.random.default_rng(seed)
    worst = None
    for _ in range(300):
        N = int(rng.integers(2, 5))
        b = int(rng.integers(1, N + 1))
        gi = rng.normal(0, 2, N)
        h = float(rng.normal(0, 2))
        subsets = list(itertools.combinations(range(N), b))
        lhs = np.mean([(gi[list(S)].sum() / b + h) ** 2 for S in subsets])  # v_i = N/b on S
        ev2 = N / b  # E v_i^2 (b-nice), see constants.ev2_nice_without_replacement
        rhs = 2 / N * np.sum(ev2 * gi**2 + h**2)
        gapv = (rhs - lhs) / (1 + rhs)
        if worst is None or gapv < worst[0]:
            worst = (gapv, N, b, gi, h, lhs, rhs)
    ce = None
    if worst[0] < -1e-12:
        ce = rounded({"N": worst[1], "b": worst[2], "grad G_i(y)": worst[3], "grad_y H": worst[4], "first line": worst[5],
                 "last line": worst[6], "meaning": "the first line of eq100 exceeds its last"})
    ev2 = k.ev2_nice_without_replacement()
    return Result("E||g~ + grad_y H||^2 <= (2/N) sum_i [E v_i^2 ||grad G_i||^2 + ||grad_y H||^2]",
                  f"the same (Young, Jensen for the mean, E||v_i a||^2 = E[v_i^2] ||a||^2); E[v_i^2] = {ev2} (b-nice)",
                  ce, note=f"300 enumerated b-nice instances: min (last - first)/(1 + last) = {worst[0]:.3g}",
                  evidence="" if ce is not None else "sampled")


# ---------------------------------------------------------------------------------------------
# Lemma par1: eq2 -> eq11 (= eq200), scalars standing for vectors
# ---------------------------------------------------------------------------------------------

gt, et, dy, xi = sp.symbols("g_t e_t dy xi", real=True)  # grad(G+H)(y^t), its estimate, y^{t+1}-y^t
P0, P1, H1, Hn, inf = sp.symbols("P_0 P_1 H_1 H_n inf", real=True)
Ee2, EY, eta = sp.symbols("E[e_t^2] E[dy^2] eta_t", nonnegative=True)
L1x = sp.Symbol("L_3(x^t)", nonnegative=True)
sL, rL = sp.symbols("s_L r_L", nonnegative=True)
q = (s.L + s.M) * s.A / s.beta**2

# the y-step eq. (algy): minimise <e, y - y^t> + beta/2 (y - y^t)^2
_y = sp.Symbol("y", real=True)
DY = sp.solve(sp.diff(et * _y + s.beta / 2 * _y**2, _y), _y, simplify=False)[0]  # linear: -e_t/beta (simplify=False: no import of sympy.physics for it)

_eq3 = P0 + gt * dy + s.L / 2 * dy**2 - P1
_eq3_derived = (P0 + gt * dy + (s.L1 + L1x) / 2 * dy**2 - P1).subs({s.L: s.L1 + s.L3 + sL}).subs(L1x, s.L3 - rL)
_eq4 = P0 - gt * et / s.beta + (s.L + s.M) / (2 * s.beta**2) * et**2 - P1 - s.M / 2 * dy**2
_eq4_derived = (_eq3 + s.M / 2 * dy**2 - s.M / 2 * dy**2).subs(dy, DY)
_E = {et * gt: gt**2, et**2: Ee2}  # E[. | F_t] with E e_t = g_t (Definition ass1, conditionally)
_eq5 = P0 - gt**2 / s.beta + (s.L + s.M) / (2 * s.beta**2) * Ee2 - P1 - s.M / 2 * EY
_eq5_derived = sp.expand(_eq4.subs(dy**2, EY)).subs(_E)
_es = 2 * s.A * (P0 - inf) + s.C - Ee2  # Lemma ES-GH (gh-es), gap >= 0
_eq7 = P0 - gt**2 / s.beta + q * (P0 - inf) + (s.L + s.M) * s.C / (2 * s.beta**2) - P1 - s.M / 2 * EY
_eq8 = (1 + q) * (P0 - inf) + (s.L + s.M) * s.C / (2 * s.beta**2) - gt**2 / s.beta - (P1 + s.M / 2 * EY - inf)
_eq9 = _eq8.subs(gt**2, eta)  # total expectation (tower): every symbol now an unconditional expectation
_eq10 = ((1 + q) * (P0 - inf) + (s.L + s.M) * s.C / (2 * s.beta**2) + (Hn - H1)
         - (P1 - H1 + Hn - inf) - eta / s.beta - s.M / 2 * EY)
_d0, _d1 = sp.symbols("delta_t delta_{t+1}", real=True)
_eq11 = (1 + q) * _d0 - _d1 + (s.L + s.M) * s.C / (2 * s.beta**2) + (Hn - H1) - eta / s.beta - s.M / 2 * EY
_deltas = {_d0: P0 - inf, _d1: P1 - H1 + Hn - inf}

@item("eq2 (y-step)", covers=("eq2",))
def eq2() -> Result:
    """eq. (eq2): the minimiser of the y-subproblem eq. (algy), solved in sympy."""
    return identity_result(-et / s.beta - DY, "eq2: y^{t+1} - y^t = -(g~ + grad_y H)/beta")


declare_steps([
    ("eq3", ("eq3",), _eq3.subs(s.L, s.L1 + s.L3 + sL), _eq3_derived,
     "descent lemma for y -> G(y) + H(x^t, y), gradient (L1 + L3(x^t))-Lipschitz <= L (eq. lip-const)"),
    ("eq4", ("eq4",), _eq4.subs(dy, DY), _eq4_derived, "eq3 + (M/2) dy^2 on both sides, dy = -e_t/beta (eq2)"),
    ("eq5", ("eq5",), _eq5, _eq5_derived, "E[. | F_t] of eq4 with E[e_t | F_t] = g_t (see the gap on it)"),
    ("eq7", ("eq7",), _eq7, _eq5 + (s.L + s.M) / (2 * s.beta**2) * _es,
     "eq5 + (L+M)/(2 beta^2) [Lemma ES-GH]"),
    ("eq8", ("eq8",), _eq8, _eq7, "eq7 with (G+H)^inf subtracted on both sides"),
    ("eq9", ("eq9",), _eq9, _eq8.subs(gt**2, eta), "total expectation of eq8 (tower property)"),
    ("eq10", ("eq10",), _eq10, _eq9, "eq9 with E[H(x^{t+1}, y^{t+1}) - H(x^t, y^{t+1})] added on both sides"),
    ("eq11 = eq200 (Lemma par1)", ("eq11", "eq200", "par1"), _eq11.subs(_deltas), _eq10,
     "eq10 with delta_t, delta_{t+1} named"),
], __name__)


@item("gap: conditional unbiasedness (eq5)", covers=("eq5", "ass1", "eq7"))
def gap_conditional() -> Result:
    """eq. (eq5) needs ``E[g~(y^t) | F_t] = grad G(y^t)`` with ``F_t`` the past of the run; Definition
    ass1 states it for a fixed y only.  Witness (exact, sympy): b = 1 of N = 2, ``G_i = (y - c_i)^2/2``,
    ``c = (1, -1)``, H = 0, y^0 = 0 and the same sample S reused at every step: unbiased for every
    fixed y, yet at t = 1 ``E<grad G, g~> != E||grad G||^2``."""
    y, bb = sp.Symbol("y", real=True), sp.Symbol("beta", positive=True)
    c = (1, -1)
    grad_G = lambda v: sum(v - ci for ci in c) / 2  # noqa: E731
    est = lambda v, i: 2 * (v - c[i]) / 2  # noqa: E731  (v_i = N/b = 2 on S = {i})
    fixed_y_bias = sp.simplify(sum(est(y, i) for i in range(2)) / 2 - grad_G(y))
    y1 = {i: 0 - est(0, i) / bb for i in range(2)}  # y^1 given S = {i}
    inner = sp.simplify(sum(grad_G(y1[i]) * est(y1[i], i) for i in range(2)) / 2)
    square = sp.simplify(sum(grad_G(y1[i]) ** 2 for i in range(2)) / 2)
    wit = {"N": 2, "b": 1, "c_i": list(c), "E g~(y) - grad G(y) for fixed y": str(fixed_y_bias),
           "E<grad G(y^1), g~(y^1)> (sample reused)": str(inner), "E||grad G(y^1)||^2": str(square),
           "at beta = 2": [float(inner.subs(bb, 2)), float(square.subs(bb, 2))]}
    return Result("E[<grad G(y^t) + grad_y H, g~(y^t) + grad_y H> | y^t] = ||grad G(y^t) + grad_y H||^2",
                  "holds when E[g~(y^t) | F_t] = grad G(y^t) (fresh samples at each t); Definition ass1 gives it "
                  "for fixed y only", None,
                  gap=Gap("E[g~(y^t) | F_t] = grad G(y^t) and eq. (422) conditionally on F_t = sigma(y^0..y^t, x^0..x^t)",
                          "Definition ass1 (fixed y); eq5 conditions on y^t only although x^t is random too",
                          "assume the sample at step t independent of F_t (fresh sampling), so that ass1 and ass3 "
                          "hold conditionally on F_t", wit))


# ---------------------------------------------------------------------------------------------
# Lemma par2: eq260 -> eq265, eq13 -> eq23, eq15, eq31, eq34, eq651
# ---------------------------------------------------------------------------------------------

x0, x1, u0, u1, zm, z0, y0, y1 = sp.symbols("x0 x1 u0 u1 zm z0 y0 y1", real=True)
Ha, Hb, Fa, Fb = sp.symbols("Ha Hb Fa Fb", real=True)
Hx = sp.Function("H_x")  # grad_x H
z1 = z0 + u1 - x1  # eq. (algz)


@item("eq260 (strong convexity of the x-subproblem)", covers=("eq260",))
def eq260() -> Result:
    """The modulus of ``H(., y) + ||. - z||^2/(2 gamma)`` when ``H(., y) + (l/2)||.||^2`` is convex:
    its Hessian ``>= -l + 1/gamma`` (derived); valid while ``gamma l < 1``, which K1 > 0 implies."""
    x, z, c = sp.symbols("x z c", real=True)
    hess = sp.diff(c * x**2 / 2 + (x - z) ** 2 / (2 * s.gamma), x, 2)  # c = d2H/dx2 >= -l
    modulus = sp.simplify(hess.subs(c, -s.l))
    printed = sp.Rational(1, 2) * (1 / s.gamma - s.l)
    slack = sp.expand(k.gamma_threshold()["gamma_l_slack"])
    return Result(sp.Eq(sp.Symbol("mu/2"), printed, evaluate=False), sp.Eq(sp.Symbol("mu/2"), modulus / 2, evaluate=False),
                  None if sp.simplify(modulus / 2 - printed) == 0 else {"modulus": str(modulus)},
                  note=f"needs 1/gamma > l: 4 gamma K1 > 0 gives 1 - 10 gamma l > {pretty_slack(slack)} >= 0.")


def pretty_slack(e) -> str:
    return pretty(e)


@item("eq261, eq262 (u-step minimality, sum)", covers=("eq261", "eq262"))
def eq262() -> Result:
    g260 = Ha + (z0 - x0) ** 2 / (2 * s.gamma) - (1 / s.gamma - s.l) * (x1 - x0) ** 2 / 2 - Hb - (z0 - x1) ** 2 / (2 * s.gamma)
    g261 = Fa + (2 * x1 - u0 - z0) ** 2 / (2 * s.gamma) - Fb - (2 * x1 - u1 - z0) ** 2 / (2 * s.gamma)
    printed = (Ha + Fa + (2 * x1 - u0 - z0) ** 2 / (2 * s.gamma) + (z0 - x0) ** 2 / (2 * s.gamma)
               - (1 / s.gamma - s.l) * (x1 - x0) ** 2 / 2
               - (Hb + Fb + (2 * x1 - u1 - z0) ** 2 / (2 * s.gamma) + (z0 - x1) ** 2 / (2 * s.gamma)))
    return step_result(printed, g260 + g261, "eq260 + eq261 (eq261: u^{t+1} minimises the u-step, u^t is a candidate)")


@item("eq263 (identity)", covers=("eq263",))
def eq263() -> Result:
    return identity_result(chain.identities()["eq263"], "eq263 with z^{t+1} = z^t + u^{t+1} - x^{t+1} (algz)")


@item("eq264 (eq262 with eq263)", covers=("eq264",))
def eq264() -> Result:
    g262 = (Ha + Fa + (2 * x1 - u0 - z0) ** 2 / (2 * s.gamma) + (z0 - x0) ** 2 / (2 * s.gamma) - (1 / s.gamma - s.l) * (x1 - x0) ** 2 / 2
            - (Hb + Fb + (2 * x1 - u1 - z0) ** 2 / (2 * s.gamma) + (z0 - x1) ** 2 / (2 * s.gamma)))
    printed = (Ha + Fa + (2 * x1 - u0 - z0) ** 2 / (2 * s.gamma) + (z0 - x0) ** 2 / (2 * s.gamma) - (x1 - z0) ** 2 / s.gamma
               - (1 / s.gamma - s.l) * (x1 - x0) ** 2 / 2
               - (Hb + Fb + (2 * x1 - u1 - z1) ** 2 / (2 * s.gamma) - (x1 - z1) ** 2 / (2 * s.gamma) - (u1 - x1) ** 2 / s.gamma))
    return identity_result(printed - g262, "eq264 - eq262 (both as gaps) with eq263 and (algz)")


@item("eq650 (identity)", covers=("eq650",))
def eq650() -> Result:
    ids = chain.identities()
    return identity_result(ids["eq650"] + ids["eq650 basic"], "the basic equality and eq650")


@item("eq265 (eq260 + eq261 with eq263, eq650)", covers=("eq265",))
def eq265() -> Result:
    return identity_result(chain.identities()["eq260+eq261 -> eq265"], "eq265 - (eq260 + eq261) as gaps")


@item("eq13, eq21, eq22, eq15 (optimality of the x-step)", covers=("eq13", "eq21", "eq22", "eq15"))
def eq13() -> Result:
    """eq. (eq13) from the stationarity of ``H(x, y^{t+1}) + (x - z^t)^2/(2 gamma)`` (sympy), then
    eq21, eq22 (eq13 at t - 1) and eq15 (eq13 at t minus at t - 1) as identities."""
    x, zz, yy = sp.symbols("x zz yy", real=True)
    H = sp.Function("H")
    stat = sp.diff(H(x, yy) + (x - zz) ** 2 / (2 * s.gamma), x)
    derived13 = stat.subs(sp.Derivative(H(x, yy), x), Hx(x, yy)).subs({x: x1, yy: y1, zz: z0})
    printed13 = Hx(x1, y1) + (x1 - z0) / s.gamma
    r = sp.expand(printed13 - derived13)
    r21 = sp.expand(((z0 - x1) / s.gamma + s.l * x1) - (Hx(x1, y1) + s.l * x1)).subs(Hx(x1, y1), (z0 - x1) / s.gamma)
    r22 = sp.expand(((zm - x0) / s.gamma + s.l * x0 + Hx(x0, y1) - Hx(x0, y0)) - (Hx(x0, y1) + s.l * x0)).subs(
        Hx(x0, y0), (zm - x0) / s.gamma)
    r15 = sp.expand((Hx(x1, y1) - Hx(x0, y0) + (x1 - z0) / s.gamma - (x0 - zm) / s.gamma)
                    - (printed13 - (Hx(x0, y0) + (x0 - zm) / s.gamma)))
    total = sp.expand(r + r21 + r22 + r15)
    return identity_result(total, "eq13 (stationarity), eq21, eq22 (eq13 at t-1), eq15 (difference)")


@item("eq23 (monotone gradient)", covers=("eq23",))
def eq23() -> Result:
    """``<grad phi(x^{t+1}) - grad phi(x^t), x^{t+1} - x^t> >= 0`` for the convex
    ``phi = H(., y^{t+1}) + (l/2)||.||^2`` with the gradients of eq21, eq22; printed eq23 is that."""
    d_phi1 = (z0 - x1) / s.gamma + s.l * x1
    d_phi0 = (zm - x0) / s.gamma + s.l * x0 + Hx(x0, y1) - Hx(x0, y0)
    printed = ((z0 - x1) / s.gamma + s.l * x1 - (zm - x0) / s.gamma - s.l * x0 - (Hx(x0, y1) - Hx(x0, y0))) * (x1 - x0)
    return identity_result(printed - (d_phi1 - d_phi0) * (x1 - x0), "eq23 is the monotonicity of grad phi")


@item("eq31 (identity)", covers=("eq31",))
def eq31() -> Result:
    return identity_result(chain.identities()["eq31"], "eq31 from eq13 at t and t-1")


@item("eq34 (triangle, H-xlip, Hx-ylip)", covers=("eq34", "H-xlip", "Hx-ylip"))
def eq34() -> Result:
    """``z^t - z^{t-1} = gamma[(grad_x H(x^{t+1}, y^{t+1}) - grad_x H(x^t, y^{t+1})) + (grad_x H(x^t, y^{t+1})
    - grad_x H(x^t, y^t))] + (x^{t+1} - x^t)`` (eq31); the triangle inequality with (H-xlip) and
    (Hx-ylip) bounds each term: the coefficients are summed here."""
    terms = [(s.gamma, s.L2 * chain.sx), (s.gamma, s.L4 * chain.sy), (1, chain.sx)]
    bound = sp.expand(sum(abs_c * b for abs_c, b in terms))
    printed = (1 + s.gamma * s.L2) * chain.sx + s.gamma * s.L4 * chain.sy
    return step_result(sp.expand(printed) - sp.Symbol("n_z", nonnegative=True),
                       bound - sp.Symbol("n_z", nonnegative=True),
                       "triangle inequality on eq31, (H-xlip) with L2(y^{t+1}) <= L2*, (Hx-ylip) with L4(x^t) <= L4*")


@item("eq651 (M_t, Phi)", covers=("eq651",))
def eq651() -> Result:
    """The three printed definitions of ``M_t`` (Lemma conv-lemma, Lemma par2, eq651) are one, and
    the left side of eq264/eq265 is ``H(x^{t+1}, y^{t+1}) + M_{t+1}`` (with z^{t+1} by algz)."""
    F = sp.Function("F")
    x, u, z = x1, u1, z1
    conv_lemma = F(u) + (2 * x - u - z) ** 2 / (2 * s.gamma) - (x - z) ** 2 / (2 * s.gamma) - (u - x) ** 2 / s.gamma  # Lemma conv-lemma
    par2 = F(u) + (2 * x - u - z) ** 2 / (2 * s.gamma) - (x - z) ** 2 / (2 * s.gamma) - (u - x) ** 2 / s.gamma  # Lemma par2
    e651 = F(u) + (2 * x - u - z) ** 2 / (2 * s.gamma) - (x - z) ** 2 / (2 * s.gamma) - (u - x) ** 2 / s.gamma  # eq651
    lhs265 = Hb + F(u1) + (2 * x1 - u1 - z1) ** 2 / (2 * s.gamma) - (x1 - z1) ** 2 / (2 * s.gamma) - (u1 - x1) ** 2 / s.gamma
    total = sp.expand((conv_lemma - par2) + (par2 - e651) + (lhs265 - (Hb + e651)))
    return identity_result(total, "M_t as printed three times; Phi(x, u, z; y) = H(x, y) + M(x, u, z)")


# ---------------------------------------------------------------------------------------------
# gaps of Appendix A
# ---------------------------------------------------------------------------------------------

@item("gap: z^{-1}, z^0, u^0 undefined (start of Algorithm 1)", covers=("eq22", "eq31", "eq34", "eq16", "eq17"))
def gap_start() -> Result:
    """Step 0 of Algorithm 1 chooses ``x^0, y^0``; the x-step at t = 0 needs ``z^0``, ``M_0`` needs
    ``u^0, z^0``, and eq22, eq31, eq34 (and eq16, eq17, eq400) at t = 0 need ``z^{-1}`` with eq13
    at t = -1.  Witness: a run from a free ``x^0`` (not ``prox(z^{-1})``) where eq34 fails at t = 0."""
    y_step, x_step = derived_updates()
    lam, gam, beta = 1.0, 0.5, 2.0
    y0_, x0_, zm1 = 0.0, 0.0, 5.0
    u0_ = 2 * x0_ - zm1  # F = 0: the u-step is the identity
    z0_ = zm1 + (u0_ - x0_)
    y1_ = float(y_step(y0_, x0_, 0.0, beta, lam))  # G = 0
    x1_ = float(x_step(y1_, z0_, gam, lam))
    lhs = abs(z0_ - zm1)
    rhs = (1 + gam * lam) * abs(x1_ - x0_) + gam * lam * abs(y1_ - y0_)
    wit = {"H": "(lam/2)(x - y)^2", "G": 0, "F": 0, "lam": lam, "gamma": gam, "beta": beta, "x^0": x0_, "y^0": y0_,
           "z^{-1}": zm1, "u^0 = 2x^0 - z^{-1}": u0_, "z^0": z0_, "||z^0 - z^{-1}||": lhs,
           "eq34 right side at t = 0": rhs, "eq34 fails": lhs > rhs}
    return Result("z^{t-1}, u^t, z^t for t = 0 (eq22, eq31, eq34, eq16, eq17, eq400; M_0 in delta_0, M'_0)",
                  "Step 0 defines x^0, y^0 only", None,
                  gap=Gap("z^{-1}, z^0, u^0 with grad_x H(x^0, y^0) = (z^{-1} - x^0)/gamma (eq13 at t = -1)",
                          "Algorithm 1 Step 0: 'an initial point x^0, y^0'",
                          "start from z^{-1}: x^0 = prox_{gamma H(., y^0)}(z^{-1}), u^0 = prox_{gamma F}(2x^0 - z^{-1}), "
                          "z^0 = z^{-1} + u^0 - x^0 (stam.steps.stam_init)", wit))


@item("gap: the u-step may have no minimiser (F only proper, lsc)", covers=("eq261",))
def gap_u_step() -> Result:
    """eq. (algu) and eq261 take a minimiser of ``F(u) + ||v - u||^2/(2 gamma)``; for a proper lsc
    F it need not exist.  Witness: ``F(u) = -u^2`` (smooth, proper, lsc), gamma = 1: the objective's
    leading coefficient is negative (sympy), so it is unbounded below."""
    u, v = sp.symbols("u v", real=True)
    obj = -(u**2) + (v - u) ** 2 / (2 * s.gamma)
    lead = sp.Poly(sp.expand(obj), u).LC()
    at1 = lead.subs(s.gamma, 1)
    wit = {"F(u)": "-u^2", "leading coefficient in u": str(lead), "at gamma = 1": float(at1),
           "inf over u (gamma = 1, v = 0)": str(sp.limit(obj.subs({s.gamma: 1, v: 0}), u, sp.oo))}
    return Result("u^{t+1} in argmin_u {F(u) + ||2x^{t+1} - z^t - u||^2/(2 gamma)} exists",
                  "F proper lower semicontinuous (Section 1) does not give a minimiser", None,
                  gap=Gap("a minimiser of the u-subproblem (eq. algu), used in eq261 and eq16",
                          "F, G, H proper lower semicontinuous",
                          "assume F bounded below (then F + ||v - .||^2/(2 gamma) is coercive and lsc, and has a "
                          "minimiser), or prox-bounded with threshold > gamma", wit))


#: the symbols of Lemma par1 beyond L (:func:`stam.theory.papercheck.items.section2.definitions`)
_PAR1_SYMBOLS = ("eta_t", "delta_t", "A", "C", "A_0, B_0, C_0", "Delta_GH", "G^inf, H^inf, (G+H)^inf", "F_t",
                 "l, L_1, L_2^*, ..., L_5^*", "A, C (what they are)")


@item("gap: M = 2 K3 may be 0 (Lemma par1 asks M > 0)", covers=("par1", "eq46"))
def gap_m_positive() -> Result:
    """Lemma par1 is stated for ``M > 0``; the proof of Lemma conv-lemma takes ``M = 2 K3``, which is
    0 when ``L4* = 0`` (derived K3).  The proof of par1 never divides by M, so ``M >= 0`` is enough."""
    k3_at0 = sp.simplify(k.K3_expr(False).subs(s.L4, 0))
    corrected = lambda: Corrected(  # noqa: E731
        "Lemma par1",
        [Tex(r"\mathbb{E}[\tilde\nabla G(y^t)\mid\mathcal{F}_t]=\nabla G(y^t) \text{ and (422) holds conditionally on } "
             r"\mathcal{F}_t"),
         Tex(r"G, H \text{ satisfy Assumption ass2, and } H^{\inf}>-\infty"), Tex(r"\beta,\gamma>0,\quad M\ge 0"),
         Tex(r"A, C \text{ the constants of Lemma ES-GH}"), INTEGRABLE_DESCENT],
        Tex(r"\frac1\beta\eta_t+\frac M2\mathbb{E}\|y^{t+1}-y^t\|^2\le\Big(1+\frac{(L+M)A}{\beta^2}\Big)\delta_t"
            r"-\delta_{t+1}+\frac{(L+M)C}{2\beta^2}+\mathbb{E}\big[H(x^{t+1},y^{t+1})-H(x^t,y^{t+1})\big]"),
        {"L": k.L_expr(), **{key: v for key, v in definitions().items() if key in _PAR1_SYMBOLS}},
        "M >= 0 (printed M > 0, but M = 2 K3 = 0 when L4* = 0); conditional unbiasedness; integrability")
    return Result("M = 2 K3 > 0", sp.Eq(2 * sp.Symbol("K_3"), 2 * k3_at0, evaluate=False), None, corrected=corrected,
                  gap=Gap("Lemma par1 with M = 2 K3", "Lemma par1: 'for any M > 0'",
                          "state Lemma par1 for M >= 0 (its proof only adds (M/2)||y^{t+1} - y^t||^2 >= 0)",
                          {"L4*": 0, "K3 (derived)": str(k3_at0), "M": str(2 * k3_at0)}))
