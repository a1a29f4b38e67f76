"""The one-step SDPs of three methods (:class:`stam.theory.worstcase.sdpstep.OneStep`): gradient descent and proximal
gradient (known answers, :func:`gradient_descent`, :func:`proximal_gradient`) and STAM, deterministic
(:func:`stam_step_sdp`, two templates) or with b-nice minibatches (:func:`stam_step_sdp_sampled`).  The question
they answer is in :mod:`stam.theory.worstcase.lyapunov`.

**Template.** The state of the iteration is ``(y^t, z^{t-1})``: from it the x-step eq. (algx)
gives ``x^t``, the u-step eq. (algu) gives ``u^t = 2x^t - z^{t-1} - gamma s_t`` with
``s_t = g_F(u^t)`` in ``dF(u^t)``, eq. (algz) gives ``z^t``, and eq. (algy) gives
``y^{t+1} = y^t - (grad G(y^t) + lam (y^t - x^t)) / beta``.  Everything is invariant under
translation, so one step of the method is described by the five vectors

    w = y^t - z^{t-1},   g_t = grad G(y^t),   s_t,   g_{t+1} = grad G(y^{t+1}),   s_{t+1}

and the four values ``G(y^t), G(y^{t+1}), F(u^t), F(u^{t+1})``.  The iterates are *computed* from
these by the project's one STAM update (:func:`stam.steps.stam_init`, :func:`stam_step`)
run on coefficient vectors, with the x-step derived in sympy from eq. (algx)
(:func:`stam.theory.symbolic.stamruns.derived_updates`) -- no second copy of the algorithm, and no torch.

A potential is ``V_t = (nonnegative combination of function values at the iterates) + (a
quadratic form in xi_t = (y^t - z^{t-1}, g_t, s_t))``, and the condition

    V_{t+1} - V_t + rho S_t <= 0   for every (G, F) of the class

(``S_t`` the stationarity measure of Theorem conv, as in :mod:`stam.theory.worstcase.pep`:
``||grad G(y^t) + lam (y^t - u^t)||^2 + ||lam (u^t - y^t) + s_t||^2``) is imposed through the
interpolation conditions of the two points of each function in one step (``L1``-smooth:
Taylor-Hendrickx-Glineur 2017, Thm 3.10; convex: ``F(u_i) >= F(u_j) + <s_j, u_i - u_j>``; proper lsc:
the same minus ``||u_i - u_j||^2 / (2 gamma)``) with
nonnegative multipliers (S-procedure): one small SDP (a 5 x 5 matrix inequality; with the
lower bound below one more 3 x 3), maximising ``rho`` with the function-value weights at most 1.
Summing from ``t = 0`` to ``T - 1`` gives ``min_{t<T} S_t <= (V_0 - V_T) / (rho T)``.  Two templates:

- ``"paper"``: ``V_t = a (G(y^t) + H(x^t, y^t)) + b M_t``, ``0 <= a, b <= 1``, with ``M_t`` of
  Lemma conv-lemma (eq. (eq651)).  Then ``V_0 - V_T <= delta0 + M0'_T`` (``delta_t >= 0``), so a
  certificate proves ``min_{t<T} S_t <= (delta0 + M0'_T) / (rho T)`` for every ``T``: the very
  normalisation of Theorem conv and of ``stam pep``.  The theorem's own bound, specialised to the
  full gradient, is ``2 (1 + (L+M) A / beta^2)^T beta (delta0 + M0') / T >= 2 beta (...) / T``,
  so ``1 / rho <= 2 beta`` means the certificate is at least as good as the theorem at every T.
  Where this template is certified, ``stam pep``'s worst case is at most ``1 / (rho T)`` for every
  T; where ``stam pep`` is unbounded at some T, no certificate of this template can exist
  (and no bound of the theorem's form): the two are complementary.
- ``"general"``: ``V_t = a G(y^t) + b F(u^t) + xi_t' P xi_t`` with ``P`` a free symmetric 3 x 3
  matrix (it contains the paper's ``a = b``, ``P`` = the quadratic part of ``H + M_t``) and
  ``a >= b >= 0``, ``a <= 1``; plus the condition that makes the bound mean something:
  ``V_t >= b Phi^inf + (a - b) G^inf`` for every state, with ``Phi = F(x) + G(y) + H(x, y)`` the
  objective of (model).  It is imposed as the 3 x 3 matrix inequality
  ``xi' P xi - b m(g_t, u^t - y^t) + (a - b) ||g_t||^2 / (2 L1) >= 0`` where
  ``Phi^inf <= F(u) + G(y) + m(g, u - y)``, ``m(g, d) = (lam/2)||d||^2 - ||g - lam d||^2 / (2 (L1 + lam))``
  (the upper bound of ``G`` from ``L1``-smoothness, minimised over the second point) and
  ``G^inf <= G(y) - ||g||^2 / (2 L1)`` (Lemma Lip-lemma).  Without it the numerator
  ``V_0 - inf_t V_t`` could be infinite (an indefinite ``P`` with ``V -> -infinity`` along a run);
  the verification checks it for every certificate (a test: the same point with ``P`` bent below is none; the
  former example of a point certified only without it, ``lam = 1, gamma = 10, beta = 5``, was an artefact of the
  fixed points, :func:`stam.theory.worstcase.sdp._null_space`).  A certificate proves
  ``min_{t<T} S_t <= (V_0 - b Phi^inf - (a - b) G^inf) / (rho T)``.  For the paper's ``V = delta + M``
  one finds ``delta_t + M_t = Phi(u^t, y^t) - G^inf + (gamma/2)(1 - gamma lam)||r_t||^2`` with
  ``r_t = (z^{t-1} - z^t)/gamma``, bounded below exactly when ``gamma lam <= 1``.

**Sampled gradients** (:func:`stam_step_sdp_sampled`, paper template): ``G = (1/N) sum_i G_i``, every
``G_i`` ``L1``-smooth and bounded below by ``G_i^inf``, and the y-step eq. (algy) uses the b-nice
minibatch gradient (the remark after eq. (stochastic G)).  One step has ``K = C(N, b)`` equally likely
branches; each is run through ``stam_step`` and ``E_t`` is their exact average (as Taylor and Bach,
COLT 2019, do for SGD).  The minibatch noise is only bounded through the ``G_i^inf`` (the route of
Lemma es-lemma: ``||grad G_i(y)||^2 <= 2 L1 (G_i(y) - G_i^inf)``), so the condition is

    E_t V_{t+1} - V_t + rho S_t <= kappa D_t,   D_t = G(y^t) + H(x^t, y^t) - (1/N) sum_i G_i^inf = delta_t + Delta,

with ``Delta = G^inf - (1/N) sum_i G_i^inf`` (Lemma es-lemma's ``Delta^inf``) and ``0 <= kappa <=``
:func:`growth_cap` ``* rho`` (at most a tenth of the rate, and at most ``2 (L1 + lam) A / beta``, ``A`` of
Lemma es-lemma); a certificate counts only with the weight ``a >= 1/2``.  Since ``V_t >= a delta_t``,
``E V_{t+1} <= q V_t - rho S_t + kappa Delta`` with ``q = 1 + kappa / a <= 1 + 2 kappa``; weighting step t
by ``q^{-t-1}`` (the paper's ``omega_t``) and summing gives the paper's own shape

    min_{t<T} E S_t <= q^T (delta0 + M0'_T) / (rho T) + kappa Delta / rho,

whose noise floor ``kappa Delta / rho`` is at most Theorem conv's ``(L+M) C / beta`` and whose growth
stays below ``e`` for ``T <= 5 / rho`` (the theorem's own growth ``(1 + (L+M) A / beta^2)^T`` is
unbounded in T too).  Without the growth term nothing is certified
for ``b < N`` (a test).  With ``b = N`` (in particular ``N = 1``) there is one branch, the exact
gradient, no growth term, and the certificate is the deterministic one (a test).  Size: a
``(2 + N + K (N + 1))``-square matrix inequality and ``N (K + 1)^2 + (K + 1) K`` interpolation
inequalities (N = 2, b = 1: 10 and 24; with one branch the bounds ``G_i^inf`` serve no growth term and are left
out: ``2 N + 2``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from types import SimpleNamespace

import numpy as np

from stam.steps import stam_init, stam_step
from stam.errors import require
from stam.theory.symbolic import numeric
from stam.theory.params import DEFAULT_F_CLASS
from stam.theory.worstcase.pep import minibatches
from stam.theory.worstcase.sdp import RHO_MIN, Certificate, search
from stam.theory.worstcase.sdpstep import Basis, Interp, OneStep, Piece, f_pair, scaled, smooth_pair, sq

#: the templates of the module docstring.
TEMPLATES = ("paper", "general")
#: sampled gradients: the growth ``kappa`` of a certificate is at most this fraction of its rate, so
#: that ``q^T <= e`` up to ``T = 1 / (2 GROWTH_PER_RATE rho)`` (module docstring, "Sampled gradients").
GROWTH_PER_RATE = 0.1


def growth_cap(lam: float, beta: float, L1: float, N: int, b: int) -> float:
    """``kappa / rho`` allowed: the smaller of :data:`GROWTH_PER_RATE` and ``2 (L1 + lam) A / beta``
    (``A`` of Lemma es-lemma for b-nice sampling, :func:`stam.theory.symbolic.numeric.finite_sum`), which keeps
    the noise floor ``kappa Delta / rho`` below Theorem conv's ``(L+M) C / beta = 2 (L+M) A Delta / beta``."""
    A, _ = numeric.finite_sum(L1, N, b, lam, 0.0)
    return min(GROWTH_PER_RATE, 2 * (L1 + lam) * float(A) / beta)


# --------------------------------------------------------------------------- known answers
def gradient_descent(L: float, gamma: float, rho_min: float = RHO_MIN, solver: str | None = None) -> Certificate:
    """``x_{t+1} = x_t - gamma grad f(x_t)``, ``f`` ``L``-smooth nonconvex, ``S_t = ||grad f(x_t)||^2``;
    ``V = a f(x_t) + p ||grad f(x_t)||^2`` with ``V >= a f^inf`` (``p >= -a/(2L)``).
    Certified exactly for ``gamma < 2/L``."""
    B = Basis(2, 2)  # g_t, g_{t+1}; f_t, f_{t+1}
    g0, g1, f0, f1 = B.vec(0), B.vec(1), B.val(0), B.val(1)
    x0 = B.zero()
    x1 = x0 - gamma * g0
    interp = [smooth_pair(L, x1, g1, f1, x0, g0, f0, "f(x1) vs f(x0)"),
              smooth_pair(L, x0, g0, f0, x1, g1, f1, "f(x0) vs f(x1)")]
    step = OneStep(B, interp, [Piece("a", f0, np.zeros((2, 2)), f1, np.zeros((2, 2)))], sq(g0),
                   xi_t=np.array([g0]), xi_t1=np.array([g1]),
                   low={"a": np.array([[1 / (2 * L)]])}, fixed=np.array([g0, g1 - g0]))
    return search(step, free_P=True, rho_min=rho_min, solver=solver)


def proximal_gradient(L: float, gamma: float, rho_min: float = RHO_MIN, solver: str | None = None,
                      f_class: str = "convex") -> Certificate:
    """``x_{t+1} = prox_{gamma F}(x_t - gamma grad G(x_t))``, ``G`` ``L``-smooth nonconvex, ``F`` of
    ``f_class``; ``S_t = ||(x_t - x_{t+1}) / gamma||^2`` (gradient mapping).  Template: ``V = a G(x_t) +
    b F(x_t) + xi' P xi``, ``xi_t = (g_t, s_t)`` (``s_t`` the subgradient of the previous prox),
    ``a >= b``, with ``V >= b (F+G)^inf + (a-b) G^inf``.  Certified exactly for ``gamma < 2/L`` with a
    convex ``F``; with a nonconvex ``F`` (``"lsc"``, ``"indicator"``) the known limit is ``gamma < 1/L``
    (the sufficient decrease ``Phi(x_{t+1}) <= Phi(x_t) - (1/gamma - L)||x_{t+1} - x_t||^2 / 2`` of
    Attouch-Bolte-Svaiter 2013, Bolte-Sabach-Teboulle 2014, shown tight by the
    forward-backward-envelope analysis of Themelis-Stella-Patrinos 2018)."""
    B = Basis(4, 4)  # g_t, s_t, g_{t+1}, s_{t+1}; G_t, G_{t+1}, F_t, F_{t+1}
    g0, s0, g1, s1 = (B.vec(i) for i in range(4))
    G0, G1, F0, F1 = (B.val(i) for i in range(4))
    x0 = B.zero()
    x1 = x0 - gamma * (g0 + s1)
    if f_class == "indicator":
        F0 = F1 = np.zeros(4)
    pair = f_pair(f_class, gamma)
    interp = [smooth_pair(L, x1, g1, G1, x0, g0, G0, "G(x1) vs G(x0)"),
              smooth_pair(L, x0, g0, G0, x1, g1, G1, "G(x0) vs G(x1)"),
              pair(x1, s1, F1, x0, s0, F0, "F(x1) vs F(x0)"),
              pair(x0, s0, F0, x1, s1, F1, "F(x0) vs F(x1)")]
    Z = np.zeros((4, 4))
    xi_t, xi_t1 = np.array([g0, s0]), np.array([g1, s1])
    # V_t - b (F+G)^inf - (a-b) G^inf >= xi' P xi + (a - b) ||g_t||^2 / (2L)  (F+G at x_t itself)
    low = {"G": np.array([[1 / (2 * L), 0], [0, 0]]), "F": np.array([[-1 / (2 * L), 0], [0, 0]])}
    pieces = [Piece("G", G0, Z, G1, Z), Piece("F", F0, Z, F1, Z)]
    step = OneStep(B, interp, pieces, sq(x0 - x1) / gamma**2, xi_t=xi_t, xi_t1=xi_t1, low=low,
                   fixed=np.array([x1 - x0, g1 - g0, s1 - s0]))
    return search(step, free_P=True, order=("G", "F"), rho_min=rho_min, solver=solver)


# --------------------------------------------------------------------------- STAM
class SymbolicOps:
    """The operators of :mod:`stam.steps` on coefficient vectors: ``H = (lam/2)||x - y||^2``
    with the x-step lambdified from the sympy derivation of eq. (algx), and a proximal step of
    ``F`` (eq. (algu)) that returns ``v - gamma s`` for the next recorded subgradient ``s``."""

    def __init__(self, lam: float, subgradients: list):
        from stam.theory.symbolic.stamruns import derived_updates

        self.lam = lam
        self._x_step = derived_updates()[1]
        self._s = list(subgradients)

    def grad_y_H(self, x, y):
        return self.lam * (y - x)

    def grad_x_H(self, x, y):
        return self.lam * (x - y)

    def prox_H(self, z, y, gamma):
        return np.asarray(self._x_step(y, z, gamma, self.lam), dtype=object if z.dtype == object else float)

    def prox_F(self, v, gamma):
        return v - gamma * self._s.pop(0)


def check_parameters(lam, gamma, beta, L1):
    for name, value in (("lam", lam), ("gamma", gamma), ("beta", beta), ("L1", L1)):
        require(isinstance(value, (int, float, Fraction)) and math.isfinite(value) and value > 0,
                f"{name}={value} must be a finite number > 0")


def stam_step_sdp(lam: float, gamma: float, beta: float, L1: float = 1.0, template: str = "general",
                  f_class: str = DEFAULT_F_CLASS, exact: bool = False) -> OneStep:
    """One step of deterministic STAM as an :class:`OneStep` (module docstring: basis, template),
    ``F`` of ``f_class`` (:data:`stam.theory.worstcase.pep.F_CLASSES`); with ``exact`` its forms are exact rationals
    (:class:`fractions.Fraction`, the parameters taken at the exact values of their floats) for :func:`prove`."""
    check_parameters(lam, gamma, beta, L1)
    require(template in TEMPLATES, f"template={template!r}; allowed: {', '.join(TEMPLATES)}")
    if exact:
        lam, gamma, beta, L1 = (Fraction(v) for v in (lam, gamma, beta, L1))
    pair = f_pair(f_class, gamma)

    B = Basis(5, 4, exact)  # w = y^t - z^{t-1}, g_t, s_t, g_{t+1}, s_{t+1};  G_t, G_{t+1}, F_t, F_{t+1}
    w, g0, s0, g1, s1 = (B.vec(i) for i in range(5))
    G0, G1, F0, F1 = (B.val(i) for i in range(4))
    if f_class == "indicator":  # F = 0 on the set (its values are no unknowns)
        F0 = F1 = B.zeros(4)
    ops = SymbolicOps(lam, [s0, s1])
    st0 = stam_init(w, ops, gamma, z_prev=B.zero())  # x^t, u^t, z^t from (y^t, z^{t-1}) = (w, 0)
    st1 = stam_step(st0, g0, ops, gamma, beta)  # eq. (algy), (algx), (algu), (algz)
    interp = [smooth_pair(L1, st1.y, g1, G1, st0.y, g0, G0, "G(y^t+1) vs G(y^t)"),
              smooth_pair(L1, st0.y, g0, G0, st1.y, g1, G1, "G(y^t) vs G(y^t+1)"),
              pair(st1.u, s1, F1, st0.u, s0, F0, "F(u^t+1) vs F(u^t)"),
              pair(st0.u, s0, F0, st1.u, s1, F1, "F(u^t) vs F(u^t+1)")]

    def S(st, g, s):  # Theorem conv's measure, as in stam.theory.worstcase.pep.stam_pep
        return sq(g + ops.grad_y_H(st.u, st.y)) + sq(ops.grad_x_H(st.u, st.y) + s)

    xi_t = np.array([st0.y - B.zero(), g0, s0])  # (y^t - z^{t-1}, g_t, s_t)
    xi_t1 = np.array([st1.y - st0.z, g1, s1])
    # a fixed point of the step: nothing moves, the new gradients are the old ones, S_t = 0
    fixed = np.array([st1.y - st0.y, st1.z - st0.z, st0.z, g1 - g0, s1 - s0, g0 + ops.grad_y_H(st0.u, st0.y),
                      ops.grad_x_H(st0.u, st0.y) + s0])
    if template == "paper":
        pieces = [Piece("a", G0, _H(st0, lam), G1, _H(st1, lam)),
                  Piece("b", F0, _M_quad(st0, gamma), F1, _M_quad(st1, gamma))]
        return OneStep(B, interp, pieces, S(st0, g0, s0), xi_t=xi_t, xi_t1=xi_t1,
                       note="V = a (G + H) + b M_t", fixed=fixed)
    Z = B.zeros((5, 5))
    pieces = [Piece("a", G0, Z, G1, Z), Piece("b", F0, Z, F1, Z)]
    # V_t - b Phi^inf - (a - b) G^inf >= xi' P xi - b m(g_t, u^t - y^t) + (a - b) ||g_t||^2 / (2 L1)
    # written over the time-t basis (w, g_t, s_t): coefficient rows of the time-t vectors
    d = (st0.u - st0.y)[:3]  # u^t - y^t over (w, g_t, s_t)
    gt = g0[:3]
    m = scaled(sq(d), lam / 2) - scaled(sq(gt - lam * d), div=2 * (L1 + lam))
    low = {"a": scaled(sq(gt), div=2 * L1), "b": -m - scaled(sq(gt), div=2 * L1)}
    # xi_t = (w, g_t, s_t) is the time-t part of the basis itself, so these forms are over xi_t
    assert (xi_t[:, :3] == np.eye(3)).all() and (xi_t[:, 3:] == 0).all()
    return OneStep(B, interp, pieces, S(st0, g0, s0), xi_t=xi_t, xi_t1=xi_t1, low=low,
                   note="V = a G + b F + xi' P xi", fixed=fixed)


def stam_step_sdp_sampled(lam: float, gamma: float, beta: float, L1: float = 1.0, f_class: str = DEFAULT_F_CLASS,
                          N: int = 2, b: int = 1, exact: bool = False) -> OneStep:
    """One step of STAM with b-nice minibatch gradients, paper template (module docstring, "Sampled
    gradients"): ``G = (1/N) sum_i G_i``, the ``K = C(N, b)`` branches of the step enumerated, each run
    through the project's ``stam_step``; ``E_t`` is their exact average.  Basis: ``w``, the ``N``
    gradients ``g_i^t``, ``s_t``, and per branch ``k`` the ``N`` gradients at ``y^{t+1,k}`` and
    ``s_{t+1,k}``; values: ``G_i`` at every point, ``F`` at every ``u``, and the lower bounds ``G_i^inf``.
    With ``b = N`` (one branch, the exact gradient) there is no growth term; ``exact``: as :func:`stam_step_sdp`."""
    check_parameters(lam, gamma, beta, L1)
    cap = growth_cap(float(lam), float(beta), float(L1), N, b)
    if exact:
        lam, gamma, beta, L1 = (Fraction(v) for v in (lam, gamma, beta, L1))
    batches = minibatches(N, b)
    K = len(batches)
    pair = f_pair(f_class, gamma)
    e = _sampled_basis(N, K, exact, f_class)
    ops = SymbolicOps(lam, [e.s0, *e.sk])
    st0 = stam_init(e.w, ops, gamma, z_prev=e.B.zero())
    branches = [stam_step(st0, scaled(sum(e.g0[i] for i in batch), div=b), ops, gamma, beta) for batch in batches]
    interp = _sampled_interp(e, st0, branches, pair, L1)
    mean = lambda items: scaled(sum(items[1:], items[0]), div=len(items))  # noqa: E731
    Gt = mean(e.G0)
    pieces = [Piece("a", Gt, _H(st0, lam), mean([mean(e.Gk[k]) for k in range(K)]),
                    mean([_H(st, lam) for st in branches])),
              Piece("b", e.F0, _M_quad(st0, gamma), mean(e.Fk), mean([_M_quad(st, gamma) for st in branches]))]
    g = mean(e.g0)
    S = sq(g + lam * (st0.y - st0.u)) + sq(lam * (st0.u - st0.y) + e.s0)
    # D_t = G(y^t) + H(x^t, y^t) - mean_i G_i^inf; kappa <= growth_cap rho
    growth = None if K == 1 else (Gt - mean(e.fstar), _H(st0, lam), cap)
    fixed = [st0.z, g + lam * (st0.y - st0.u), lam * (st0.u - st0.y) + e.s0]
    for k, st in enumerate(branches):
        fixed += [st.y - st0.y, st.z - st0.z, e.sk[k] - e.s0] + [e.gk[k][i] - e.g0[i] for i in range(N)]
    return OneStep(e.B, interp, pieces, S, growth=growth, fixed=np.array(fixed),
                   note=f"V = a (G + H) + b M_t, E over {K} minibatches (N={N}, b={b})")


def _sampled_basis(N: int, K: int, exact: bool, f_class: str) -> SimpleNamespace:
    """The basis of :func:`stam_step_sdp_sampled`: vectors ``w``, ``g0[i]`` (``g_i^t``), ``s0``, per branch ``k``
    ``gk[k][i]`` and ``sk[k]``; values ``G0[i]``, ``Gk[k][i]``, ``F0``, ``Fk[k]`` (zero for an indicator) and
    ``fstar[i]`` (``G_i^inf``)."""
    nb = 2 + N + K * (N + 1)
    nv = N + N * K + 1 + K + N
    B = Basis(nb, nv, exact)
    e = SimpleNamespace(B=B, w=B.vec(0), s0=B.vec(1 + N), g0=[B.vec(1 + i) for i in range(N)],
                        gk=[[B.vec(2 + N + k * (N + 1) + i) for i in range(N)] for k in range(K)],
                        sk=[B.vec(2 + N + k * (N + 1) + N) for k in range(K)], G0=[B.val(i) for i in range(N)],
                        Gk=[[B.val(N + k * N + i) for i in range(N)] for k in range(K)],
                        F0=B.val(N + N * K), Fk=[B.val(N + N * K + 1 + k) for k in range(K)],
                        fstar=[B.val(N + N * K + 1 + K + i) for i in range(N)])
    if f_class == "indicator":
        e.F0, e.Fk = B.zeros(nv), [B.zeros(nv)] * K
    return e


def _sampled_interp(e: SimpleNamespace, st0, branches, pair, L1) -> list:
    """The interpolation inequalities of :func:`stam_step_sdp_sampled` over its basis ``e``
    (:func:`_sampled_basis`): each ``G_i`` ``L1``-smooth on every pair of its points and bounded below by
    ``G_i^inf``, ``F`` of its class (``pair``) on every pair of the ``u``."""
    N, K = len(e.g0), len(branches)
    interp = []
    for i in range(N):  # G_i: L1-smooth on every pair of its points, bounded below by G_i^inf (for the growth term:
        # with one branch there is none, and the bounds below would only hide the fixed points,
        # :func:`stam.theory.worstcase.sdp._null_space`)
        pts = [(st0.y, e.g0[i], e.G0[i], "t")] + [(st.y, e.gk[k][i], e.Gk[k][i], f"t+1,{k}")
                                                  for k, st in enumerate(branches)]
        for p in pts:
            for q in pts:
                if p is not q:
                    interp.append(smooth_pair(L1, p[0], p[1], p[2], q[0], q[1], q[2], f"G_{i}(y^{p[3]}) vs G_{i}(y^{q[3]})"))
            if K > 1:
                interp.append(Interp(f"G_{i}^inf <= G_{i}(y^{p[3]}) - |g|^2/(2L1)", e.fstar[i] - p[2],
                                     scaled(sq(p[1]), div=2 * L1)))
    pts = [(st0.u, e.s0, e.F0, "t")] + [(st.u, e.sk[k], e.Fk[k], f"t+1,{k}") for k, st in enumerate(branches)]
    for p in pts:
        for q in pts:
            if p is not q:
                interp.append(pair(p[0], p[1], p[2], q[0], q[1], q[2], f"F(u^{p[3]}) vs F(u^{q[3]})"))
    return interp


def _H(st, lam):
    """``H(x, y) = (lam/2)||x - y||^2`` at a state, as a matrix."""
    return scaled(sq(st.x - st.y), lam / 2)


def _M_quad(st, gamma):
    """The quadratic part of ``M_t`` (eq. (eq651)) at a state, as a matrix."""
    x, u, z = st.x, st.u, st.z
    return (scaled(sq(2 * x - u - z), div=2 * gamma) - scaled(sq(x - z), div=2 * gamma)
            - scaled(sq(u - x), div=gamma))

__all__ = ["TEMPLATES", "GROWTH_PER_RATE", "growth_cap", "gradient_descent", "proximal_gradient", "SymbolicOps",
           "check_parameters", "stam_step_sdp", "stam_step_sdp_sampled"]
