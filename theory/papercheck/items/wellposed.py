"""Well-posedness of what the paper defines (issue 23, point 3): the sets and functions the
algorithm and the application use, the minimisers the algorithm takes and the constants the
assumptions name, re-read for closedness, lower semicontinuity, existence, and constants that
the application needs but that do not exist.  Each finding is a gap with a witness computed
here (sympy, or an actual start of Algorithm 1 through :func:`stam.steps.stam_init`).

What the re-reading found well-posed is not an item (it would repeat items that exist): the
y-step (3a) is a strongly convex quadratic; the x-step (3b) is strongly convex under (k1)
(``gamma l < 1/10``, item eq260); ``l`` exists (``l = L2*``, item ass2); ``L5*``, which (a3)
uses without listing it among the constants that exist, is at most ``L4*`` (mixed differences of
a C^1 H); ``(G+H)^inf``, printed as a min in the proof of Lemma par1, is only used as an inf.
The u-step's existence for a general F, H^inf, dF and M'_0 are the gap items of Section 2 and
the appendices.  The constants A and C of Lemma conv-lemma and Theorems conv, conv-rate are named
but defined there nowhere (two lemmas define an A and a C, differently): a gap here."""

from __future__ import annotations

import numpy as np
import sympy as sp

from stam.steps import stam_init
from stam.theory.papercheck.items.declare import Gap, Result, item
from stam.theory.papercheck.items.common import rounded
from stam.theory.symbolic.stamruns import DerivedCoupling, scaled_binary_projection


@item("gap: Q of eq01 not closed (s_i in (0, inf))", covers=("eq01", "0411", "0412"))
def gap_q_closed() -> Result:
    """eq. (eq01) defines ``Q`` with ``s_i in R^+``; (model) needs ``F = I_Q`` proper and lower
    semicontinuous, i.e. Q closed, and (0411) a projection.  With ``R^+ = (0, inf)`` the points
    ``s (1, ..., 1)`` of Q tend to 0, which is not in Q: ``dist(0, Q) = 0`` is not attained, so
    ``Proj_Q(0)`` is empty and the printed closed form returns ``s* = 0``, outside Q.  Algorithm 1
    asks for it at its first u-step from ``y^0 = z^{-1} = 0`` (witness run through
    :func:`stam.steps.stam_init`, H = (lam/2)||x - y||^2)."""
    s, n = sp.symbols("s n", positive=True)
    dist = s * sp.sqrt(n)  # ||s (1, ..., 1) - 0|| for a layer of n weights
    inf = sp.limit(dist, s, 0, "+")
    attained = [v for v in sp.solve(sp.Eq(dist, inf), s) if v.is_positive]
    # the printed closed form is the projection onto the closed Q (s >= 0): for a fixed sign pattern z,
    # argmin_s ||s z - U||^2 = <z, U>/n (sympy, n = 3), maximal over z at z = sign U: s = ||U||_1/n
    U = sp.symbols("U1:4", real=True)
    z = sp.symbols("z1:4", real=True)
    obj = sum((s * zi - ui) ** 2 for zi, ui in zip(z, U)).subs({zi**2: 1 for zi in z})
    s_star = sp.solve(sp.diff(sp.expand(obj).subs({zi**2: 1 for zi in z}), s), s)[0]
    asked = []

    class Ops(DerivedCoupling):  # H = (lam/2)||x - y||^2 (derived x-step), F = I_Q recording what it is asked
        def prox_F(self, v, gamma):
            asked.append(np.array(v))
            return scaled_binary_projection(v)

    lam, gam = np.array([0.5]), 0.1
    st = stam_init(np.zeros((1, 3)), Ops(lam), gam, z_prev=np.zeros((1, 3)))
    s0 = float(scaled_binary_projection(np.zeros(3))[0])
    wit = {"Q (eq01), one layer of n weights": "{s z : s in R^+, z in {-1, 1}^n}",
           "s (1, ..., 1) in Q for s > 0, as s -> 0+": "-> 0", "dist(0, Q) = inf_(s>0) s sqrt(n)": str(inf),
           "s > 0 attaining it": [str(v) for v in attained],
           "argmin_s ||s z - U||^2 (z fixed, z_i^2 = 1, n = 3)": str(s_star),
           "printed closed form at U = 0": {"s*": s0, "in R^+ = (0, inf)": s0 > 0},
           "Algorithm 1 from y^0 = z^{-1} = 0 (stam_init, H = (lam/2)||x - y||^2, lam = 0.5, gamma = 0.1)":
               {"x^0": st.x[0].tolist(), "u^0 asks Proj_Q of": asked[0][0].tolist()}}
    return Result("Q := {W : |W_i1| = ... = |W_in| = s_i, W_ij in s_i {-1, +1}, s_i in R^+}; Proj_Q(U) in (0411)",
                  "Q closed iff s_i >= 0 is allowed; with s_i > 0, I_Q is not lsc at 0 and Proj_Q(0) is empty", None,
                  gap=Gap("Proj_Q(U) nonempty for every U (eq. (0411), the u-step (3c) with F = I_Q), i.e. Q closed, "
                          "I_Q lower semicontinuous as (2) requires of F",
                          "s_i in R^+ (eq. (eq01)), R^+ not defined; with R^+ = (0, inf) Q is not closed",
                          "allow s_i >= 0: Q is then closed (0 in Q) and the printed closed form s_i = ||U_i||_1/n is "
                          "its projection", rounded(wit)))


@item("gap: (a1) has no L1 for a network loss", covers=("G-lip", "binary-model", "stam"))
def gap_network_l1() -> Result:
    """Section 3 applies Algorithm 1 and Theorems conv, conv-rate to ``G = L_W(p, q)``, the loss of
    VGG and ResNet networks; Assumption ass2 (a1) needs ``grad G`` L1-Lipschitz on all of R^n, and
    L1 enters L, M, beta and T.  Witness: the smallest two-layer network (one datum ``p = q = 1``,
    two scalar weights, identity activation, square loss) ``G(w1, w2) = (w2 w1 - 1)^2/2``: its
    Hessian entry ``d^2G/dw1^2 = w2^2`` is unbounded (sympy), and two points at distance 1 have
    gradients ``R^2`` apart.  (With ReLU activations G is not even differentiable.)"""
    w1, w2, R = sp.symbols("w1 w2 R", real=True)
    G = (w2 * w1 - 1) ** 2 / 2
    hess = sp.hessian(G, (w1, w2))
    sup = sp.limit(hess[0, 0], w2, sp.oo)
    grad = sp.Matrix([sp.diff(G, v) for v in (w1, w2)])
    diff = sp.simplify((grad.subs({w1: 1, w2: R}) - grad.subs({w1: 0, w2: R})).norm())
    wit = {"G(w1, w2)": "(w2 w1 - 1)^2/2 (two layers, p = q = 1)", "d2G/dw1^2": str(hess[0, 0]),
           "sup over w": str(sup), "||grad G(1, R) - grad G(0, R)|| (points at distance 1)": str(diff),
           "at R = 10": float(diff.subs(R, 10))}
    return Result("(a1): ||grad G(y1) - grad G(y2)|| <= L1 ||y1 - y2|| for all y1, y2 (L1 in L, M, beta, T)",
                  "no finite L1 for G = L_W(p, q) with two or more layers of weights", None,
                  gap=Gap("Assumption ass2 (a1) for G = L_W(p, q), the loss of the networks of Section 3",
                          "Section 3 applies Algorithm 1 and the theorems to VGG-11/16 and ResNet-18 losses",
                          "assume (a1) on a set that contains the iterates (bounded iterates, e.g. with weight decay "
                          "or a bounded Q and a projection), or state that the theorems do not cover these losses",
                          wit))


@item("gap: A, C undefined in Lemma conv-lemma", covers=("conv-lemma", "conv", "conv-rate"))
def gap_a_c_undefined() -> Result:
    """Lemma conv-lemma and Theorems conv, conv-rate use constants ``A`` and ``C`` (in ``omega_t``,
    the bound and the conditions on beta and T) that none of them defines; two earlier lemmas define
    an ``A`` and a ``C``, differently: Lemma ES-GH from the constants of Assumption ass3 (with
    ``Delta_GH = (G+H)^inf - G^inf - H^inf``) and Lemma es-lemma for a finite sum (with
    ``Delta^inf = (1/N) sum_i ((G+H)^inf - G_i^inf - H^inf)``).  Witness: one instance of both
    lemmas where the two readings give different C, hence different bounds of Theorem conv:
    ``G = (G_1 + G_2)/2``, ``G_i = (y - c_i)^2/2``, ``c = (1, -1)``, ``H = (x - y)^2/2``, exact
    gradients (b = N = 2, so ass3 holds with ``A0 = 0, B0 = 1, C0 = 0`` and ``E v_i^2 = 1``)."""
    from stam.theory.symbolic import numeric as num

    y, x = sp.symbols("y x", real=True)
    c = (1, -1)
    Gi = [(y - ci) ** 2 / 2 for ci in c]
    G = sum(Gi) / 2
    H = (x - y) ** 2 / 2
    ystar = sp.solve(sp.diff(G, y), y)[0]
    G_inf = G.subs(y, ystar)
    Gi_inf = [g.subs(y, sp.solve(sp.diff(g, y), y)[0]) for g in Gi]
    GH_inf = (G + H).subs({x: ystar, y: ystar})  # H >= 0 = H(y*, y*) and G >= G(y*)
    H_inf = sp.Integer(0)
    delta_gh = GH_inf - G_inf - H_inf
    delta_es = sum(GH_inf - gi - H_inf for gi in Gi_inf) / 2
    L1 = sp.diff(G, y, 2)  # constant: the Lipschitz constant of grad G (and of each grad G_i)
    L3 = sp.diff(H, y, 2)
    A_gh, C_gh = num.deterministic_es(float(L1), float(L3), float(delta_gh))
    A_es, C_es = num.es_lemma(np.array([1.0, 1.0]), np.array([1.0, 1.0]), float(L3), float(delta_es))
    cst = num.quadratic_coupling(1.0, L1=float(L1))
    gam = 0.5 * num.gamma_max(cst)
    beta, T = 4 * float(num.K2(gam, cst) / num.K1(gam, cst)), 100
    rhs = {name: float(num.theorem_rhs(T, gam, beta, num.quadratic_coupling(1.0, L1=float(L1), A=a, C=cc), 1.0, 0.0))
           for name, (a, cc) in {"Lemma ES-GH": (A_gh, C_gh), "Lemma es-lemma (corrected)": (A_es, C_es)}.items()}
    wit = {"instance": "G = ((y - 1)^2 + (y + 1)^2)/4, H = (x - y)^2/2, exact gradients (b = N = 2)",
           "G^inf, G_i^inf, H^inf, (G+H)^inf": [str(G_inf), [str(g) for g in Gi_inf], str(H_inf), str(GH_inf)],
           "Delta_GH (Lemma ES-GH)": str(delta_gh), "Delta^inf (Lemma es-lemma)": str(delta_es),
           "A, C of Lemma ES-GH": [float(A_gh), float(C_gh)],
           "A, C of Lemma es-lemma (corrected A)": [float(A_es), float(C_es)],
           "Theorem conv's bound (gamma = gamma_max/2, beta = 4 K2/K1, T = 100, delta0 = 1, M0' = 0)": rounded(rhs)}
    differ = (float(A_gh), float(C_gh)) != (float(A_es), float(C_es))
    return Result("Lemma conv-lemma, Theorems conv and conv-rate: omega_t, the bound, beta and T in terms of A, C "
                  "(not defined there)",
                  "A, C: constants with (gh-es); the two lemmas that define an A and a C give different values", None,
                  gap=Gap("A and C in Lemma conv-lemma and Theorems conv, conv-rate",
                          "no definition there; Lemma ES-GH and Lemma es-lemma each define an A and a C, differently",
                          "define them: A, C any constants for which (gh-es) holds for all x, y (Lemma ES-GH gives them "
                          "from Assumption ass3, the corrected Lemma es-lemma for a finite sum)",
                          wit if differ else None))
