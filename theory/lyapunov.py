"""Automated Lyapunov search for STAM (Taylor, Van Scoy, Lessard 2018; Taylor, Bach 2019).

Question (issues 15, 22): for which ``(gamma, lam, beta)`` does *some* Lyapunov function certify that
STAM (Algorithm 1, eq. (algalg1), with the full gradient of ``G`` or b-nice minibatches) reaches
stationarity at the rate ``O(1/T)``, for every problem of the class

- ``G`` ``L1``-smooth, nonconvex, bounded below (Assumption ass2 (a1));
- ``F`` reached only through its proximal step eq. (algu), of one of the classes of
  :mod:`stam.theory.pep` (``f_class``): any proper lsc ``F`` (``"lsc"``, the paper's class and the
  default), the indicator of any closed set (``"indicator"``, e.g. the binary ``Q``), or closed proper
  convex (``"convex"``).  The nonconvex classes use the exact interpolation condition of the
  proximal step (:func:`prox_pair`): the convex inequality with the curvature ``1/gamma`` allowed;
- ``H(x, y) = (lam/2)||x - y||^2`` (the network coupling; no oracle: its gradients and the x-step
  eq. (algx) are affine in the iterates)?

**Template.** The state of the iteration is ``(y^t, z^{t-1})``: from it the x-step eq. (algx)
gives ``x^t``, the u-step eq. (algu) gives ``u^t = 2x^t - z^{t-1} - gamma s_t`` with
``s_t = g_F(u^t)`` in ``dF(u^t)``, eq. (algz) gives ``z^t``, and eq. (algy) gives
``y^{t+1} = y^t - (grad G(y^t) + lam (y^t - x^t)) / beta``.  Everything is invariant under
translation, so one step of the method is described by the five vectors

    w = y^t - z^{t-1},   g_t = grad G(y^t),   s_t,   g_{t+1} = grad G(y^{t+1}),   s_{t+1}

and the four values ``G(y^t), G(y^{t+1}), F(u^t), F(u^{t+1})``.  The iterates are *computed* from
these by the project's one STAM update (:func:`stam.algorithm.stam_init`, :func:`stam_step`)
run on coefficient vectors, with the x-step derived in sympy from eq. (algx)
(:func:`stam.theory.items.common.derived_updates`) -- no second copy of the algorithm, and no torch.

A potential is ``V_t = (nonnegative combination of function values at the iterates) + (a
quadratic form in xi_t = (y^t - z^{t-1}, g_t, s_t))``, and the condition

    V_{t+1} - V_t + rho S_t <= 0   for every (G, F) of the class

(``S_t`` the stationarity measure of Theorem conv, as in :mod:`stam.theory.pep`:
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
  fixed points, :func:`_null_space`).  A certificate proves
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

**Solver status** is never hidden: every :class:`Certificate` carries cvxpy's status, and a
value of ``rho`` only counts as a certificate when the status is ``optimal`` and ``rho >=
rho_min``; ``optimal_inaccurate``, ``infeasible``, ``unbounded``, solver errors are reported as
such (Clarabel first, SCS when Clarabel is not conclusive, as :func:`stam.theory.pep.solve`).
The solver's values are not taken on its word: :func:`_verify` checks them in numpy (``residual``) and the
certificate's ``rho`` is the rate it proves (``details["solver_rho"]``: the solver's).  The SDP is first reduced
to its face (:func:`_null_space`): at the method's fixed points (nothing moves, ``S_t = 0``) every form of the SDP
vanishes, so every feasible decrease form ``D <= 0`` has ``D N = 0`` there; the SDP imposes it as equalities and
the matrix inequality on the complement.  Without it the solver's ``D`` was off there by its accuracy, invisibly to
a re-check relative to ``||S||``, and at lambda = 0.01 the rate fed on it: "certificates" up to gamma lambda = 100
whose inequality failed along binary-Q runs by 0.8 % to 2.2 times rho S (issue 22; with ``D N = 0`` the solver's
rate there is zero).  The verification then takes ``rho' = (1 - share) rho`` (:data:`VERIFY_SHARES`; a second solve
seeks the point with the largest margin where the solver's point has none), restores the identities (function
values, ``D N = 0``) to rounding by least squares, and requires the decrease form negative definite and the
lower-bound form positive definite off their null directions, by more than a bound on the rounding of forming
them and of the eigenvalue computation (:data:`VERIFY_MARGIN`): then the certificate holds, with ``rho'``, for
every problem of the class.  An optimal rate that fails it is no certificate and is marked
``details["unverified"]``.  A STAM rate below ``rho beta >= RHO_BETA_MIN`` (:func:`rate_floor`: a bound a
thousand times weaker than the y-step's own ``1/beta``) is counted apart (``details["below_floor"]``), so that a
region's bracket ends where the rate still matters.  :func:`certified_gamma` counts both apart in its
``statuses`` and marks a
bracket whose end is a rejected rate above the floor (``hi_unverified``; ``stam pep --region`` prints "?").

**Certified means proven** (issue 39): the verification is floating point; :func:`certify_stam` then proves every
certificate it reports in exact rational arithmetic (:func:`prove`, on :mod:`stam.theory.rational`): the step is
built again with ``exact=True`` (the same code, :class:`fractions.Fraction` for floats, :func:`scaled` for the
scalars), the verified point is rounded to the rationals its floats store, projected exactly onto the identities and
checked for signs and definiteness exactly (``LDL^T``).  One that fails is "numerical only"
(``details["numerical_only"]``, :data:`NUMERICAL_ONLY` in the statuses), never certified; so every bracket, figure
and headline of the region counts proven certificates only.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from stam.algorithm import stam_init, stam_step
from stam.errors import UsageError, require
from stam.io import provenance
from stam.theory import numeric
from stam.theory.params import (REFUTE_BETAS, REFUTE_TS, REGION_GAMMA_RANGE, REGION_RTOL, REGION_SAMPLING, SCAN_MAX_STEPS,
                                SCAN_RATIO, RegionParams)
from stam.theory.pep import (DEFAULT_F_CLASS, F_CLASSES, SOLVER_DEFAULTS, check_solver, validate_sampling,
                             check_f_class, minibatches, stam_pep)
from stam.results import (COUNT, DICT, DICT_OR_NULL, LIST, NONNEG, NONNEG_OR_NULL, POS, POS_OR_NULL, POSINT, PROVENANCE,
                          STR, ResultType, Schema, at_most, one_of, ordered)

#: the templates of the module docstring.
TEMPLATES = ("paper", "general")
#: smallest rate that counts as a certificate (L1 = 1 scale; see :func:`certify_stam`).
RHO_MIN = 1e-7
#: STAM certificates count only with ``rho * beta >= RHO_BETA_MIN`` (:func:`rate_floor`; scale-free, as ``rho``
#: scales like ``1/beta``): the y-step moves by ``1/beta`` of a gradient step, and a rate a thousand times below
#: that proves a bound too weak to matter (near the end of a region the rate falls continuously to 0; the floor
#: puts the bracket's end where it is still of that size).
RHO_BETA_MIN = 1e-3
#: sampled gradients: the growth ``kappa`` of a certificate is at most this fraction of its rate, so
#: that ``q^T <= e`` up to ``T = 1 / (2 GROWTH_PER_RATE rho)`` (module docstring, "Sampled gradients").
GROWTH_PER_RATE = 0.1


def growth_cap(lam: float, beta: float, L1: float, N: int, b: int) -> float:
    """``kappa / rho`` allowed: the smaller of :data:`GROWTH_PER_RATE` and ``2 (L1 + lam) A / beta``
    (``A`` of Lemma es-lemma for b-nice sampling, :func:`stam.theory.numeric.finite_sum`), which keeps
    the noise floor ``kappa Delta / rho`` below Theorem conv's ``(L+M) C / beta = 2 (L+M) A Delta / beta``."""
    A, _ = numeric.finite_sum(L1, N, b, lam, 0.0)
    return min(GROWTH_PER_RATE, 2 * (L1 + lam) * float(A) / beta)
#: how a status is counted (``statuses`` of :func:`certified_gamma`) when the solver's optimal rate failed the
#: verification (:func:`_verify`; ``details["unverified"]`` of the :class:`Certificate`).
UNVERIFIED = "rejected by the verification"
#: how a status is counted when the solver's optimal rate is below :func:`rate_floor` (``details["below_floor"]``).
BELOW_FLOOR = "rate below rho*beta = 1e-3"
#: cvxpy statuses that end the solver chain.
_CONCLUSIVE = ("optimal", "infeasible", "unbounded")


# --------------------------------------------------------------------------- one step, symbolically
class Basis:
    """Coefficient vectors: a vector of the method is a linear combination of ``nb`` basis vectors,
    a function value one of ``nv`` basis values; inner products become ``nb x nb`` matrices."""

    def __init__(self, nb: int, nv: int, exact: bool = False):
        self.nb, self.nv, self.exact = nb, nv, exact

    def zeros(self, shape) -> np.ndarray:
        """Zeros of floats, or (``exact``) an object array of the int 0, whose other entries are
        :class:`fractions.Fraction` objects: then every form built from the basis is exact rational arithmetic (no float
        enters: a float zero would turn a sum into a float; scalars are applied through :func:`scaled`, never as an
        int divided by an int)."""
        return np.zeros(shape, dtype=object) if self.exact else np.zeros(shape)  # exact: int 0, fast and exact

    def one(self):
        return Fraction(1) if self.exact else 1.0

    def vec(self, i: int) -> np.ndarray:
        e = self.zeros(self.nb)
        e[i] = self.one()
        return e

    def val(self, i: int) -> np.ndarray:
        e = self.zeros(self.nv)
        e[i] = self.one()
        return e

    def zero(self) -> np.ndarray:
        return self.zeros(self.nb)


_HALF = Fraction(1, 2)


def _outer_exact(a: np.ndarray, b: np.ndarray, half: bool) -> np.ndarray:
    """``a b'`` (``half``: ``(a b' + b a')/2``) of exact vectors (object arrays of Fractions and int zeros), over their
    nonzero entries only (the coefficient vectors are sparse, and Fraction arithmetic on zeros is what costs)."""
    out = np.zeros((len(a), len(b)), dtype=object)
    ia, ib = [i for i, v in enumerate(a) if v], [j for j, v in enumerate(b) if v]
    for i in ia:
        for j in ib:
            if half:
                h = a[i] * b[j] * _HALF
                out[i, j] += h
                out[j, i] += h
            else:
                out[i, j] = a[i] * b[j] * 1
    return out


def scaled(M: np.ndarray, c=None, div=None) -> np.ndarray:
    """``(c * M) / div`` (either may be None): on floats exactly that expression; on exact arrays (object) entry by
    entry over the nonzero entries only, as Fractions (an int divided by an int would be a float)."""
    if M.dtype != object:
        out = M if c is None else c * M
        return out if div is None else out / div
    out = np.zeros(M.shape, dtype=object)
    flat, res = M.ravel(), out.ravel()
    for i in np.flatnonzero(flat):
        q = flat[i] if c is None else flat[i] * c
        res[i] = (q if isinstance(q, Fraction) else Fraction(q)) / div if div is not None else q
    return out


def inner(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The symmetric matrix ``Q`` with ``<a, b> = e' Q e`` (``a, b`` coefficient vectors)."""
    if a.dtype == object:
        return _outer_exact(a, b, True)
    o = np.outer(a, b)
    return (o + o.T) / 2


def sq(a: np.ndarray) -> np.ndarray:
    """``||a||^2`` as a matrix."""
    return _outer_exact(a, a, False) if a.dtype == object else np.outer(a, a)


@dataclass
class Interp:
    """One interpolation inequality ``lin . f + e' quad e <= 0``."""

    name: str
    lin: np.ndarray
    quad: np.ndarray


def smooth_pair(L: float, xi, gi, fi, xj, gj, fj, name: str) -> Interp:
    """``L``-smooth (not necessarily convex) interpolation, Taylor et al. 2017 Thm 3.10 (PEPit's
    ``SmoothFunction``): ``f_i - f_j >= -(L/4)||x_i - x_j||^2 + <g_i + g_j, x_i - x_j>/2 +
    ||g_i - g_j||^2 / (4L)``, written as ``<= 0``."""
    quad = scaled(sq(xi - xj), -(L / 4)) + scaled(inner(gi + gj, xi - xj), div=2) + scaled(sq(gi - gj), div=4 * L)
    return Interp(name, fj - fi, quad)


def convex_pair(xi, si, fi, xj, sj, fj, name: str) -> Interp:
    """Convex interpolation ``F(x_i) >= F(x_j) + <s_j, x_i - x_j>``, written as ``<= 0``."""
    return Interp(name, fj - fi, inner(sj, xi - xj))


def prox_pair(gamma: float, xi, si, fi, xj, sj, fj, name: str) -> Interp:
    """A proper lsc (possibly nonconvex) ``F`` seen through proximal steps of size ``gamma``
    (``s_j = (v_j - x_j)/gamma``, ``x_j = prox_{gamma F}(v_j)``): the exact interpolation condition
    ``F_j + ||x_j - v_j||^2/(2 gamma) <= F_i + ||x_i - v_j||^2/(2 gamma)``, i.e.
    ``F(x_i) >= F(x_j) + <s_j, x_i - x_j> - ||x_i - x_j||^2/(2 gamma)`` (issue 22; :mod:`stam.theory.pep`),
    written as ``<= 0``.  It is :func:`convex_pair` with the curvature ``1/gamma`` allowed."""
    return Interp(name, fj - fi, inner(sj, xi - xj) - scaled(sq(xi - xj), div=2 * gamma))


def f_pair(f_class: str, gamma: float):
    """The interpolation inequality of ``F``'s class (``"convex"``, ``"lsc"``, ``"indicator"``; for an
    indicator the values are zero, which the callers impose by giving ``F`` no value basis)."""
    check_f_class(f_class)
    if f_class == "convex":
        return convex_pair
    return lambda *args: prox_pair(gamma, *args)


@dataclass
class Piece:
    """A term of a potential: ``lin . f + e' quad e`` at time t and at time t+1."""

    name: str
    lin_t: np.ndarray
    quad_t: np.ndarray
    lin_t1: np.ndarray
    quad_t1: np.ndarray


@dataclass
class OneStep:
    """Everything the SDP needs about one step of a method: the interpolation inequalities, the
    weighted pieces of the potential (``V = sum_i theta_i piece_i + xi' P xi``), the state vectors
    ``xi_t`` and ``xi_{t+1}`` (rows, for the free quadratic form), the measure ``S_t`` and, for the
    lower bound, the forms ``low[name]`` with ``V_t - (lower bound) = sum_i theta_i low_i + xi' P xi``."""

    basis: Basis
    interp: list[Interp]
    pieces: list[Piece]
    S: np.ndarray
    xi_t: np.ndarray | None = None
    xi_t1: np.ndarray | None = None
    low: dict | None = None  # piece name -> matrix over the time-t basis
    note: str = ""
    growth: tuple | None = None  # (lin, quad, cap) of D_t: E V_{t+1} - V_t + rho S_t <= kappa D_t, kappa <= cap rho
    fixed: np.ndarray | None = None  # rows whose common null space is the method's fixed points (:func:`_null_space`)


# --------------------------------------------------------------------------- the SDP
@dataclass
class Certificate:
    """Outcome of one Lyapunov search.  ``certified`` only when the solver says ``optimal`` and
    ``rho >= rho_min``; ``rho`` is the largest rate found (None without a solution)."""

    certified: bool
    rho: float | None
    status: str
    solver: str
    seconds: float
    theta: dict = field(default_factory=dict)
    P: list | None = None
    residual: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)
    #: the verified point (the SDP's variable vector of :func:`_forms`, floats) that :func:`prove` rounds; not in the JSON
    point: list | None = field(default=None, repr=False, compare=False)

    def as_json(self) -> dict:
        return {"certified": self.certified, "rho": self.rho, "status": self.status, "solver": self.solver,
                "seconds": self.seconds, "theta": self.theta, "P": self.P, "residual": self.residual,
                **({"details": self.details} if self.details else {})}


def _finite(v) -> float | None:
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def _forms(step: OneStep, free_P: bool):
    """The forms of the SDP over its one variable vector ``x = (rho, theta_p..., mu_k..., [kappa], [P_ij, i <= j])``,
    in the arithmetic of ``step`` (floats, or exact Fractions for :func:`prove`): for each variable its quadratic form
    (the decrease form ``V_{t+1} - V_t + rho S_t - kappa D_t - sum_k mu_k (interpolation k)`` is ``sum_v x_v
    cols[v]``, not yet symmetrised), its function values ``lins[v]`` and its lower-bound form ``low[v]`` (None
    without a lower bound); ``names`` of the variables and the ``pairs`` ``(i, j)`` of ``P``'s entries."""
    nv = step.basis.nv
    zeros = step.basis.zeros
    cols, lins, names = [step.S], [zeros(nv)], ["rho"]
    for p in step.pieces:
        cols.append(p.quad_t1 - p.quad_t)
        lins.append(p.lin_t1 - p.lin_t)
        names.append(p.name)
    for c in step.interp:
        cols.append(-c.quad)
        lins.append(-c.lin)
        names.append("mu")
    if step.growth is not None:
        cols.append(-step.growth[1])
        lins.append(-step.growth[0])
        names.append("kappa")
    k = step.xi_t.shape[0] if free_P else 0
    low = []
    if step.low is not None:
        low = [zeros((k, k))] + [step.low.get(p.name, zeros((k, k))) for p in step.pieces]
        low += [zeros((k, k))] * (len(cols) - len(low))
    pairs = [(i, j) for i in range(k) for j in range(i, k)]
    for i, j in pairs:  # xi' P xi = sum_i P_ii |xi_i|^2 + sum_{i<j} 2 P_ij <xi_i, xi_j>
        form = (lambda xi: sq(xi[i]) if i == j else 2 * inner(xi[i], xi[j]))
        cols.append(form(step.xi_t1) - form(step.xi_t))
        lins.append(zeros(nv))
        names.append("P")
        if step.low is not None:
            e = zeros((k, k))
            e[i, j] = e[j, i] = step.basis.one()
            low.append(e)
    return cols, lins, names, pairs, k, (low if step.low is not None else None)


def _layout(step: OneStep, free_P: bool) -> dict:
    """The SDP's one variable vector ``x = (rho, theta_p..., mu_k..., [kappa], [P_ij, i <= j])`` and the
    forms as matrices over it (numpy, :func:`_forms`): ``quad(x) = sum_v x_v Q[v]`` (the decrease form ``V_{t+1} -
    V_t + rho S_t - kappa D_t - sum_k mu_k (interpolation k)``), ``lin(x) = L x`` (its function values), and the
    lower-bound form ``low(x) = sum_v x_v W[v]``.  Written once; the solver sees it through cvxpy
    :class:`cvxpy.Parameter` s and the verification (:func:`_verify`) evaluates it in numpy."""
    nb = step.basis.nb
    cols, lins, names, pairs, k, low = _forms(step, free_P)
    Q = np.array(cols)
    Q = (Q + Q.transpose(0, 2, 1)) / 2
    # the basis rescaled (a congruence: definiteness is unchanged) so that every diagonal entry's largest term is 1:
    # at small gamma the subgradients' entries are gamma^2 times the others, below the solver's accuracy
    diag = np.abs(np.einsum("vii->vi", Q)).max(axis=0)
    T = np.where(diag > 0, 1 / np.sqrt(np.where(diag > 0, diag, 1.0)), 1.0)
    Q = Q * T[None, :, None] * T[None, None, :]
    L = np.array(lins).T
    N = _null_space(step, Q, L, T)
    return {"Q": Q, "L": L, "W": np.array(low) if low is not None else None, "names": names,
            "pairs": pairs, "k": k, "nb": nb, "N": N, "T": T,
            "low_null": _low_null(step, N, T) if step.low is not None else None}


def _low_null(step: OneStep, N: np.ndarray, T: np.ndarray) -> np.ndarray:
    """The states ``xi_t`` of the decrease form's null directions ``N`` (orthonormal columns): there the lower-bound
    form vanishes too once ``D N = 0`` (at a fixed point the potential's bound is tight), so :func:`_verify` asks
    ``low C = 0`` and positive definiteness on the complement."""
    if not N.shape[1]:
        return np.zeros((step.xi_t.shape[0], 0))
    u, s, _ = np.linalg.svd(step.xi_t @ (T[:, None] * N), full_matrices=False)  # N is over the rescaled basis
    return u[:, s > 1e-12 * max(s[0], 1e-300)]


def _null_space(step: OneStep, Q: np.ndarray, L: np.ndarray, T: np.ndarray) -> np.ndarray:
    """Directions (orthonormal columns) on which every decrease form ``D = sum_v x_v Q[v]`` with vanishing
    function values (``L x = 0``) is zero, so that ``D <= 0`` forces ``D N = 0`` and no margin is possible
    there: the method's fixed points (the null space of ``step.fixed``: nothing moves and ``S_t = 0``; kept where
    every form vanishes on it) and the basis vectors whose diagonal entry of ``D`` is a combination of the function
    values' identities (e.g. the next subgradient in the paper form, whose square enters only through ``F``'s
    proximal inequalities and ``M_{t+1}``, weighted so that they cancel).  :func:`_verify` makes ``D N = 0`` hold
    to rounding and asks for a margin on the complement."""
    nb = Q.shape[1]
    cols = []
    if step.fixed is not None:
        _, s, vt = np.linalg.svd(np.asarray(step.fixed, dtype=float) * T, full_matrices=True)  # rescaled basis
        F = vt[int(np.sum(s > 1e-12 * s[0])):]
        scale = np.abs(Q).reshape(len(Q), -1).max(axis=1)
        if len(F) and (np.abs(np.einsum("fa,vab,gb->vfg", F, Q, F)).reshape(len(Q), -1).max(axis=1) <= 1e-12 * scale).all():
            cols += list(F)
    for i in range(nb):
        d = Q[:, i, i]
        if np.abs(d).max() > 0:
            c = np.linalg.lstsq(L.T, d, rcond=None)[0]
            if np.abs(L.T @ c - d).max() <= 1e-12 * np.abs(d).max():
                cols.append(np.eye(nb)[i])
    if not cols:
        return np.zeros((nb, 0))
    u, s, _ = np.linalg.svd(np.array(cols).T, full_matrices=False)
    return u[:, s > 1e-12 * s[0]]


#: the cvxpy problems built so far, one per shape of :func:`_layout` (a region solves thousands of SDPs of a
#: handful of shapes: building a cvxpy problem costs 4/5 of a solve, changing its parameters almost nothing)
_PROGRAMS: dict = {}


def _program(lay: dict, order_idx, has_growth: bool, margin: bool = False):
    """The cvxpy problem of a layout's shape, its data as :class:`cvxpy.Parameter` s (built once per shape, then only
    the parameters change): maximise ``rho``; or (``margin``) with ``rho`` fixed, maximise the margin ``t <= tcap``
    by which the decrease form is negative definite off its null directions ``N`` (where ``D N = 0``) and the
    lower-bound form positive definite off ``low_null`` (where it vanishes): the point :func:`_verify` checks."""
    import cvxpy as cp

    Q, L, W, N = lay["Q"], lay["L"], lay["W"], lay["N"]
    key = (Q.shape, L.shape, N.shape, None if W is None else W.shape, tuple(lay["names"]), order_idx, has_growth, margin)
    if key in _PROGRAMS:
        return _PROGRAMS[key]
    nvar, nb = Q.shape[0], Q.shape[1]
    names = lay["names"]
    x = cp.Variable(nvar, name="x")
    t = cp.Variable(name="t") if margin else 0
    prm = {"rho": cp.Parameter(name="rho"), "tcap": cp.Parameter(nonneg=True, name="tcap"),
           "cap": cp.Parameter(nonneg=True, name="cap"), "L": cp.Parameter(L.shape, name="L")}
    nonneg = [i for i, n in enumerate(names) if n not in ("rho", "P")]
    weights = [i for i, n in enumerate(names) if n not in ("rho", "P", "mu", "kappa")]
    cons = [prm["L"] @ x == 0, x[nonneg] >= 0, x[weights] <= 1]

    def definite(name, size, shape, sign):  # the form (vec over the basis) is sign * definite by t, off its nulls
        prm[name] = cp.Parameter((size * size, nvar), name=name)
        form = cp.Variable((size, size), symmetric=True)
        return [cp.vec(form, order="F") == prm[name] @ x, sign * form - t * np.eye(size) >> 0] if size else []

    m = nb - N.shape[1]
    cons += definite("Qc", m, nb, -1)  # the decrease form on N's complement
    if N.shape[1]:
        prm["Qn"] = cp.Parameter((nb * N.shape[1], nvar), name="Qn")
        cons.append(prm["Qn"] @ x == 0)  # D N = 0
    if W is not None:
        k, c = W.shape[1], lay["low_null"].shape[1]
        cons += definite("Wc", k - c, k, 1)
        if c:
            prm["Wn"] = cp.Parameter((k * c, nvar), name="Wn")
            cons.append(prm["Wn"] @ x == 0)
    if has_growth:
        cons.append(x[names.index("kappa")] <= prm["cap"] * x[0])
    if order_idx is not None:
        cons.append(x[order_idx[0]] >= x[order_idx[1]])
    if margin:
        cons += [x[0] == prm["rho"], t <= prm["tcap"]]
    prog = {"x": x, "t": t, "prm": prm, "problem": cp.Problem(cp.Maximize(t if margin else x[0]), cons)}
    _PROGRAMS[key] = prog
    return prog


def _load(prog: dict, lay: dict, cap: float | None) -> dict:
    """Put a layout's data into a program's parameters (:func:`_program`)."""
    Q, W, N = lay["Q"], lay["W"], lay["N"]
    nvar = Q.shape[0]
    comp = np.linalg.svd(N, full_matrices=True)[0][:, N.shape[1]:] if N.shape[1] else np.eye(Q.shape[1])

    def vec(forms, left, right):  # column-major vec of left' form right, for each form
        return np.einsum("ai,vab,bj->jiv", left, forms, right).reshape(left.shape[1] * right.shape[1], nvar)

    prm = prog["prm"]
    prm["L"].value = lay["L"]
    prm["cap"].value = cap if cap is not None else 0.0
    if "Qc" in prm:
        prm["Qc"].value = vec(Q, comp, comp)
    if "Qn" in prm:
        prm["Qn"].value = vec(Q, np.eye(Q.shape[1]), N)
    if W is not None:
        C = lay["low_null"]
        off = np.linalg.svd(C, full_matrices=True)[0][:, C.shape[1]:] if C.shape[1] else np.eye(W.shape[1])
        if "Wc" in prm:
            prm["Wc"].value = vec(W, off, off)
        if "Wn" in prm:
            prm["Wn"].value = vec(W, np.eye(W.shape[1]), C)
    return prog


#: a cvxpy problem whose parameters have more entries than this is solved without DPP (its parameters taken as
#: constants): compiling the parameter-to-data map costs more than building the problem anew at each solve
#: (minibatches with N = 4, b = 2: 16 s against 2 s)
DPP_MAX_ENTRIES = 100_000


def _large(prob) -> bool:
    return sum(p.size for p in prob.parameters()) > DPP_MAX_ENTRIES


def _solve(prob, solver: str | None, solver_options: dict | None):
    """Solve a cvxpy problem with ``solver`` (default: Clarabel, then SCS when Clarabel is not conclusive);
    returns ``(status, solver used, the non-conclusive tries)``."""
    import contextlib
    import io

    import cvxpy as cp

    name = check_solver(solver)
    chain = [name] if name else ["CLARABEL", "SCS"]
    tried = []
    status, used = "not_solved", chain[0]
    for used in chain:
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                prob.solve(solver=used, warm_start=False, ignore_dpp=_large(prob),
                           **{**SOLVER_DEFAULTS[used], **(solver_options or {}).get(used, {})})
            status = prob.status
        except cp.error.SolverError as exc:
            status = f"solver_error: {str(exc).splitlines()[0]}"
        if status in _CONCLUSIVE:
            break
        tried.append(f"{used}: {status}")
    return status, used, tried


#: the verified rate is sought at ``rho = (1 - share) * (the solver's optimal rate)`` for each share in turn
#: (:func:`_verify`): at the optimum the matrix inequality is tight, and the solver's point lies outside it by its
#: accuracy; a slightly smaller rate leaves a margin along S
VERIFY_SHARES = (0.0, 1e-3, 1e-2, 1e-1)


def search(step: OneStep, free_P: bool = False, order: tuple | None = None, rho_min: float = RHO_MIN,
           solver: str | None = None, solver_options: dict | None = None) -> Certificate:
    """Maximise ``rho`` subject to ``V_{t+1} - V_t + rho S_t <= 0`` (S-procedure over
    ``step.interp``), ``0 <= theta_i <= 1``, ``theta_{order[0]} >= theta_{order[1]}`` when ``order``
    is given, ``P`` free when ``free_P``, and the lower bound ``step.low >= 0`` when given, on the face of
    :func:`_null_space`.  The solver's word is not taken: :func:`_verify` checks its point in numpy a little
    below its rate; where that fails, a second solve at ``rho = (1 - share)`` times the optimal rate
    (:data:`VERIFY_SHARES`) seeks the point with the largest margin in the matrix inequalities, and that point
    is checked (``rho`` of the result: the rate proven, None when none; ``details["solver_rho"]``: the
    solver's).
    ``solver_options`` maps a solver name to cvxpy options over :data:`stam.theory.pep.SOLVER_DEFAULTS`."""
    lay = _layout(step, free_P)
    names = lay["names"]
    piece_idx = {p.name: 1 + i for i, p in enumerate(step.pieces)}
    order_idx = None if order is None else (piece_idx[order[0]], piece_idx[order[1]])
    cap = float(step.growth[2]) if step.growth is not None else None

    start = time.perf_counter()
    prog = _load(_program(lay, order_idx, step.growth is not None), lay, cap)
    status, used, tried = _solve(prog["problem"], solver, solver_options)
    x = prog["x"].value
    has_value = status in ("optimal", "optimal_inaccurate") and x is not None and math.isfinite(x[0])
    cert = Certificate(certified=False, rho=None, status=status, solver=used, seconds=time.perf_counter() - start)
    if tried:
        cert.details["fallback_from"] = tried
    if not has_value:
        return cert
    raw = np.asarray(x, dtype=float)
    solver_rho = float(raw[0])
    cert.details["solver_rho"] = solver_rho
    v, rho, cert.residual = None, None, {}
    if status == "optimal" and solver_rho >= rho_min:
        v, rho, cert.residual = _verify(lay, raw, order_idx, cap, rho_min)
        if rho is None:  # the point with the largest margin, a little below the optimal rate
            inner = _load(_program(lay, order_idx, step.growth is not None, margin=True), lay, cap)
            top_S = float(np.linalg.eigvalsh(lay["Q"][0]).max())
            for share in VERIFY_SHARES[1:]:
                inner["prm"]["rho"].value = (1 - share) * solver_rho
                inner["prm"]["tcap"].value = share * solver_rho * top_S
                inner_status, _, _ = _solve(inner["problem"], solver, solver_options)
                if inner_status in ("optimal", "optimal_inaccurate") and inner["x"].value is not None:
                    v, rho, cert.residual = _verify(lay, np.asarray(inner["x"].value, dtype=float), order_idx, cap,
                                                    rho_min, shares=(0.0,))
                    cert.residual.update(share=share, margin_solve=inner_status)
                    if rho is not None:
                        break
        cert.seconds = time.perf_counter() - start
    cert.rho = rho
    vals = raw if v is None else v
    cert.theta = {p.name: float(vals[piece_idx[p.name]]) for p in step.pieces}
    if lay["k"]:
        P = np.zeros((lay["k"], lay["k"]))
        for (i, j), val in zip(lay["pairs"], vals[len(names) - len(lay["pairs"]):]):
            P[i, j] = P[j, i] = val
        cert.P = P.tolist()
    mu = [i for i, n in enumerate(names) if n == "mu"]
    cert.details["multipliers"] = {c.name: float(vals[i]) for c, i in zip(step.interp, mu)}
    cert.certified = bool(status == "optimal" and rho is not None and rho >= rho_min)
    if cert.certified:
        cert.point = [float(val) for val in v]
    if status == "optimal" and solver_rho >= rho_min and not cert.certified:
        # a rate the solver calls optimal that the verification does not prove: not a certificate, and said so
        # (the region marks a bracket ended by one with "?")
        cert.details["unverified"] = True
    if step.growth is not None:
        kap, a = float(vals[names.index("kappa")]), cert.theta.get("a", 0.0)
        r = rho if rho else solver_rho
        cert.details.update(kappa=kap, growth=(1 + kap / a) if a > 0 else None, floor=kap / r if r else None)
        # q = 1 + kappa / a <= 1 + 2 kappa: counted only with a >= 1/2 (module docstring)
        cert.certified = cert.certified and a >= 0.5
    return cert


#: the verification's rounding margin: a matrix inequality counts when its extreme eigenvalue, computed in numpy,
#: clears zero by VERIFY_MARGIN * n * eps * (the sum of |coefficient| * ||matrix|| of its terms), a bound on the
#: rounding of forming the matrix and of the (backward stable) eigenvalue computation; an identity (the function
#: values' combination, the decrease form on its null directions) counts when it holds to the same rounding
VERIFY_MARGIN = 16.0
#: :func:`_verify`: a basis vector whose diagonal entry of the decrease form is within this fraction of its largest
#: entry of zero is taken as a null direction too (``D e = 0`` is then asked and checked, never assumed)
VERIFY_NULL = 1e-7


def _verify(lay: dict, raw: np.ndarray, order_idx, cap: float | None, rho_min: float, shares=VERIFY_SHARES):
    """A-posteriori verification of the solver's point ``raw`` (the solver's word is not taken).  For ``rho' =
    (1 - share) rho``, each share of ``shares`` in turn: clip the weights and multipliers to their bounds; move the
    active weights and multipliers and ``P`` (least squares, ``rho'`` fixed) until the identities hold to rounding:
    the function values' combination vanishes, the decrease form ``D = sum_v x_v Q[v]`` vanishes on its null
    directions ``N`` (:func:`_null_space`: ``D N = 0``) and the lower-bound form on its own (:func:`_low_null`);
    then ``D`` must be negative definite on ``N``'s complement and the lower-bound form positive definite on its
    null directions' complement, each with the rounding margin (:data:`VERIFY_MARGIN`).  Then ``D <= 0`` and the
    lower-bound form ``>= 0``: the certificate holds for every problem of the class with the rate ``rho'``.
    Returns ``(values, rate, residual)``; rate None when no share passes with ``rho' >= rho_min`` (and
    ``kappa <= cap rho'``)."""
    eps = np.finfo(float).eps
    names = lay["names"]
    Q, L, W = lay["Q"], lay["L"], lay["W"]
    nb = Q.shape[1]
    nonneg = np.array([n not in ("rho", "P") for n in names])
    weights = np.array([n not in ("rho", "P", "mu", "kappa") for n in names])
    is_P = np.array([n == "P" for n in names])
    norms_Q = np.array([np.linalg.norm(m, 2) for m in Q])
    residual = {}
    for share in shares:
        v = raw.copy()
        v[0] = (1 - share) * raw[0]
        v[nonneg] = np.maximum(v[nonneg], 0.0)
        v[weights] = np.minimum(v[weights], 1.0)
        if order_idx is not None and v[order_idx[1]] > v[order_idx[0]]:
            v[order_idx[1]] = v[order_idx[0]]
        if cap is not None:  # the growth stays within its cap at the smaller rate
            v[names.index("kappa")] = min(v[names.index("kappa")], cap * v[0])
        if v[0] < rho_min:
            break
        residual = {"share": share}
        N = lay["N"]
        D = np.tensordot(v, Q, 1)
        near = [i for i in range(nb) if abs(D[i, i]) <= VERIFY_NULL * np.abs(D).max()]  # a basis vector where D is 0
        if near:  # (e.g. the next subgradient for an indicator, whose square's weights cancel at the optimum)
            u, s, _ = np.linalg.svd(np.hstack([N, np.eye(nb)[:, near]]), full_matrices=False)
            N = u[:, s > 1e-9 * s[0]]
        A = np.vstack([L, np.einsum("vab,bn->anv", Q, N).reshape(nb * N.shape[1], len(names))])
        if W is not None:  # at the fixed points' states c the lower-bound form vanishes too (given D N = 0): low c = 0
            k = W.shape[1]
            C = lay["low_null"]
            A = np.vstack([A, np.einsum("vab,bn->anv", W, C).reshape(k * C.shape[1], len(names))])
        for _ in range(4):  # the identities, by least squares on the free entries (rho fixed)
            r = A @ v
            free = (nonneg & (v > 0) & ~(weights & (v >= 1))) | is_P
            if cap is not None and v[names.index("kappa")] >= cap * v[0]:
                free[names.index("kappa")] = False  # at its cap
            if not np.abs(r).max() > 0 or not free.any():
                break
            v[free] += np.linalg.lstsq(A[:, free], -r, rcond=None)[0]
            v[nonneg] = np.maximum(v[nonneg], 0.0)
            v[weights] = np.minimum(v[weights], 1.0)
        r = A @ v
        residual["identities_abs"] = float(np.abs(r).max())
        ok = bool(np.abs(r).max() <= VERIFY_MARGIN * nb * eps * float((np.abs(A) @ np.abs(v)).max()))
        if W is not None:  # positive definite off its null directions
            margin_w = VERIFY_MARGIN * k * eps * float(np.abs(v) @ np.array([np.linalg.norm(m, 2) for m in W]))
            off = np.linalg.svd(C, full_matrices=True)[0][:, C.shape[1]:] if C.shape[1] else np.eye(k)
            residual["lower_min_eig"] = float(np.linalg.eigvalsh(off.T @ np.tensordot(v, W, 1) @ off).min())
            ok = ok and residual["lower_min_eig"] >= margin_w
        comp = np.linalg.svd(N, full_matrices=True)[0][:, N.shape[1]:]  # N's orthogonal complement
        margin_d = VERIFY_MARGIN * nb * eps * float(np.abs(v) @ norms_Q)
        top = float(np.linalg.eigvalsh(comp.T @ np.tensordot(v, Q, 1) @ comp).max()) if comp.shape[1] else -math.inf
        residual.update(null_directions=int(N.shape[1]), decrease_max_eig=top, margin=margin_d, near=near)
        if ok and top <= -margin_d and (cap is None or v[names.index("kappa")] <= cap * v[0]):
            return v, float(v[0]), residual
    return None, None, residual


# --------------------------------------------------------------------------- the proof in exact arithmetic
#: how a status is counted (``statuses`` of :func:`certified_gamma`) when a certificate passed the floating-point
#: verification (:func:`_verify`) but not the exact proof (:func:`prove`; ``details["numerical_only"]``)
NUMERICAL_ONLY = "numerical only (not proven in exact arithmetic)"


#: :func:`prove`: the exact projection onto the identities may move an entry by at most this fraction of the largest
#: entry (the verified point holds them to rounding; a larger correction would prove some other point)
PROJECTION_RTOL = 1e-9


def prove(step: OneStep, point, free_P: bool = False, order: tuple | None = None, cap=None, near=()) -> dict:
    """Prove a certificate in exact rational arithmetic (issue 39, "certified means proven"), from the floating-point
    point ``point`` that :func:`_verify` accepted (:attr:`Certificate.point`) and ``step`` built with ``exact=True``
    (its forms exact rationals of the parameters' stored values, :func:`_forms`):

    1. round: every entry of the point is taken as the rational it stores (:func:`stam.theory.rational.fraction`);
    2. project exactly onto the linear identities, with ``rho`` fixed: the function values' combination vanishes
       (``L x = 0``), the decrease form ``D = sum_v x_v Q[v]`` vanishes on its null directions ``N`` (``D N = 0``:
       the method's fixed points, the null space of ``step.fixed`` computed exactly, kept when every form vanishes
       on it exactly; the basis vectors whose diagonal entry of ``D`` is a combination of the function values'
       identities, decided exactly; and the basis vectors ``near`` that :func:`_verify` took as null), and the
       lower-bound form on its own (``W C = 0`` with ``C`` the states of ``N``): the least-norm correction of the
       free entries (those :func:`_verify` moves), solved exactly (:func:`stam.theory.rational.solve_basic`);
    3. check exactly the sign constraints (multipliers and weights ``>= 0``, weights ``<= 1``, ``theta_order[0] >=
       theta_order[1]``, ``kappa <= cap rho``) and the definiteness: ``-D`` restricted to a complement of ``N`` and
       the lower-bound form restricted to a complement of ``C`` positive definite by exact ``LDL^T``
       (:func:`stam.theory.rational.positive_definite`, Sylvester's criterion).  Since ``D N = 0``, ``x' D x =
       b' (M' D M) b`` for ``x = N a + M b``: then ``D <= 0`` and the lower bound ``>= 0`` hold exactly, and the
       certificate holds with the rate ``rho`` for every problem of the class.

    Returns ``{"proven": bool, "rho": the rate proven (a float that is the exact rational), "reason": why not}``, and
    for a proof its exact point ``x`` and the bases ``null`` (``N``) and ``low_null`` (``C``), for anyone to check."""
    from stam.theory import rational as rq

    F = rq.fraction
    cols, lins, names, pairs, k, low = _forms(step, free_P)
    nb, nvar = step.basis.nb, len(names)
    if len(point) != nvar:
        return {"proven": False, "rho": None, "reason": f"the point has {len(point)} entries, the forms {nvar}"}
    try:  # the forms must be exact: a float among them (a rounded coefficient) is refused, never taken as exact
        Q = [rq.symmetric_part(c, strict=True) for c in cols]
        W = [rq.matrix(w, strict=True) for w in low] if low is not None else None
        lins = [rq.matrix([li], strict=True)[0] for li in lins]
    except TypeError:
        return {"proven": False, "rho": None, "reason": "a float entered the exact forms"}
    x = [F(v) for v in point]

    def rows_of(forms, vecs):  # the rows of (sum_v x_v forms[v]) u = 0 over x, for each u of vecs
        out = []
        for u in vecs:
            cols = [rq.matvec(f, u) for f in forms]
            out += [list(row) for row in zip(*cols)]
        return out

    # the null directions N, exactly: D N = 0 is imposed on a spanning set (a unit vector's rows are a column of
    # each form)
    vecs, units, fixed = [], set(), []
    if step.fixed is not None:
        fixed = rq.nullspace(rq.matrix(step.fixed), nb)
        if not all(not any(any(row) for row in rq.congruent(fixed, q)) for q in Q):  # as _null_space: every
            fixed = []  # form vanishes on the fixed points (as a quadratic form), else they are no null directions
        vecs += fixed
    L = [[F(lins[v][a]) for v in range(nvar)] for a in range(step.basis.nv)]  # L x = the function values' combination
    Lred, Lpiv = rq.rref(L)
    for i in range(nb):
        d = [q[i][i] for q in Q]
        if any(d) and rq.in_row_space(Lred, Lpiv, d):
            units.add(i)
    units |= {int(i) for i in near}
    unit = lambda i, n: [F(int(j == i)) for j in range(n)]  # noqa: E731
    vecs += [unit(i, nb) for i in sorted(units)]
    N = rq.span_basis(vecs, nb)
    A = Lred + rows_of(Q, fixed) + [[q[a][i] for q in Q] for i in sorted(units) for a in range(nb)]
    C = []
    if W is not None:
        xi_t = rq.matrix(step.xi_t)
        C = rq.span_basis([rq.matvec(xi_t, u) for u in vecs], k)
        A += rows_of(W, C)
    A = list({tuple(row): row for row in A if any(row)}.values())  # the same identities, without zero or repeated rows
    nonneg = [n not in ("rho", "P") for n in names]
    weights = [n not in ("rho", "P", "mu", "kappa") for n in names]
    kap = names.index("kappa") if "kappa" in names else None
    capq = None if cap is None else F(cap)
    for i, (nn, w) in enumerate(zip(nonneg, weights)):  # the bounds, as _verify clipped them in floating point
        x[i] = max(x[i], F(0)) if nn else x[i]
        x[i] = min(x[i], F(1)) if w else x[i]
    if kap is not None:
        x[kap] = min(x[kap], capq * x[0])
    free = [(nn and xv > 0 and not (w and xv >= 1)) or n == "P" for nn, w, xv, n in zip(nonneg, weights, x, names)]
    if kap is not None and x[kap] >= capq * x[0]:
        free[kap] = False
    x0 = list(x)
    for _ in range(3):  # project; a free entry the correction pushed past its bound is held at the bound, and again
        x = list(x0)
        r = rq.matvec(A, x)
        if not any(r):
            break
        idx = [i for i in range(nvar) if free[i]]
        dx = rq.solve_basic([[row[i] for i in idx] for row in A], [-v for v in r]) if idx else None
        if dx is None:
            return {"proven": False, "rho": None, "reason": "the identities have no exact solution near the point"}
        scale = max(abs(v) for v in x0)
        if max(abs(d) for d in dx) > PROJECTION_RTOL * scale:  # a proof of the solver's point, not of another one
            return {"proven": False, "rho": None, "reason": "the identities are off by more than rounding"}
        for i, d in zip(idx, dx):
            x[i] += d
        if any(rq.matvec(A, x)):
            return {"proven": False, "rho": None, "reason": "the identities do not hold exactly"}
        past = [i for i in idx if (nonneg[i] and x[i] < 0) or (weights[i] and x[i] > 1)
                or (i == kap and x[i] > capq * x[0])]
        if not past:
            break
        for i in past:
            free[i] = False
            x0[i] = F(0) if nonneg[i] and x[i] < 0 else F(1) if weights[i] and x[i] > 1 else capq * x0[0]
    fail = [n for n, nn, xv in zip(names, nonneg, x) if nn and xv < 0] + [
        n for n, w, xv in zip(names, weights, x) if w and xv > 1]
    if order is not None and x[names.index(order[0])] < x[names.index(order[1])]:
        fail.append("order")
    if kap is not None and x[kap] > capq * x[0]:
        fail.append("kappa > cap rho")
    if fail:
        return {"proven": False, "rho": None, "reason": "signs: " + ", ".join(sorted(set(fail)))}
    D = rq.combine(x, Q)
    M = rq.complement(N, nb)
    if not rq.positive_definite([[-e for e in row] for row in rq.congruent(M, D)]):
        return {"proven": False, "rho": None, "reason": "the decrease form is not negative definite off its null directions"}
    if W is not None:
        Wx = rq.combine(x, W)
        if not rq.positive_definite(rq.congruent(rq.complement(C, k), Wx)):
            return {"proven": False, "rho": None, "reason": "the lower-bound form is not positive definite"}
    if not x[0] > 0:
        return {"proven": False, "rho": None, "reason": "rate not positive"}
    return {"proven": True, "rho": float(x[0]), "reason": None, "x": x, "null": N, "low_null": C}


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
    """The operators of :mod:`stam.algorithm` on coefficient vectors: ``H = (lam/2)||x - y||^2``
    with the x-step lambdified from the sympy derivation of eq. (algx), and a proximal step of
    ``F`` (eq. (algu)) that returns ``v - gamma s`` for the next recorded subgradient ``s``."""

    def __init__(self, lam: float, subgradients: list):
        from stam.theory.items.common import derived_updates

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


def _validate(lam, gamma, beta, L1):
    for name, value in (("lam", lam), ("gamma", gamma), ("beta", beta), ("L1", L1)):
        require(isinstance(value, (int, float, Fraction)) and math.isfinite(value) and value > 0,
                f"{name}={value} must be a finite number > 0")


def stam_step_sdp(lam: float, gamma: float, beta: float, L1: float = 1.0, template: str = "general",
                  f_class: str = DEFAULT_F_CLASS, exact: bool = False) -> OneStep:
    """One step of deterministic STAM as an :class:`OneStep` (module docstring: basis, template),
    ``F`` of ``f_class`` (:data:`stam.theory.pep.F_CLASSES`); with ``exact`` its forms are exact rationals
    (:class:`fractions.Fraction`, the parameters taken at the exact values of their floats) for :func:`prove`."""
    _validate(lam, gamma, beta, L1)
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

    def S(st, g, s):  # Theorem conv's measure, as in stam.theory.pep.stam_pep
        return sq(g + ops.grad_y_H(st.u, st.y)) + sq(ops.grad_x_H(st.u, st.y) + s)

    def H(st):
        return scaled(sq(st.x - st.y), lam / 2)

    def M_quad(st):  # the quadratic part of M_t (eq. (eq651))
        x, u, z = st.x, st.u, st.z
        return (scaled(sq(2 * x - u - z), div=2 * gamma) - scaled(sq(x - z), div=2 * gamma)
                - scaled(sq(u - x), div=gamma))

    xi_t = np.array([st0.y - B.zero(), g0, s0])  # (y^t - z^{t-1}, g_t, s_t)
    xi_t1 = np.array([st1.y - st0.z, g1, s1])
    # a fixed point of the step: nothing moves, the new gradients are the old ones, S_t = 0
    fixed = np.array([st1.y - st0.y, st1.z - st0.z, st0.z, g1 - g0, s1 - s0, g0 + ops.grad_y_H(st0.u, st0.y),
                      ops.grad_x_H(st0.u, st0.y) + s0])
    if template == "paper":
        pieces = [Piece("a", G0, H(st0), G1, H(st1)), Piece("b", F0, M_quad(st0), F1, M_quad(st1))]
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
    _validate(lam, gamma, beta, L1)
    cap = growth_cap(float(lam), float(beta), float(L1), N, b)
    if exact:
        lam, gamma, beta, L1 = (Fraction(v) for v in (lam, gamma, beta, L1))
    batches = minibatches(N, b)
    K = len(batches)
    pair = f_pair(f_class, gamma)
    nb = 2 + N + K * (N + 1)
    nv = N + N * K + 1 + K + N
    B = Basis(nb, nv, exact)
    w, s0 = B.vec(0), B.vec(1 + N)
    g0 = [B.vec(1 + i) for i in range(N)]
    gk = [[B.vec(2 + N + k * (N + 1) + i) for i in range(N)] for k in range(K)]
    sk = [B.vec(2 + N + k * (N + 1) + N) for k in range(K)]
    G0 = [B.val(i) for i in range(N)]
    Gk = [[B.val(N + k * N + i) for i in range(N)] for k in range(K)]
    F0, Fk = B.val(N + N * K), [B.val(N + N * K + 1 + k) for k in range(K)]
    fstar = [B.val(N + N * K + 1 + K + i) for i in range(N)]
    if f_class == "indicator":
        F0, Fk = B.zeros(nv), [B.zeros(nv)] * K
    ops = SymbolicOps(lam, [s0, *sk])
    st0 = stam_init(w, ops, gamma, z_prev=B.zero())
    branches = [stam_step(st0, scaled(sum(g0[i] for i in batch), div=b), ops, gamma, beta) for batch in batches]

    interp = []
    for i in range(N):  # G_i: L1-smooth on every pair of its points, bounded below by G_i^inf (for the growth term:
        # with one branch there is none, and the bounds below would only hide the fixed points, :func:`_null_space`)
        pts = [(st0.y, g0[i], G0[i], "t")] + [(st.y, gk[k][i], Gk[k][i], f"t+1,{k}") for k, st in enumerate(branches)]
        for p in pts:
            for q in pts:
                if p is not q:
                    interp.append(smooth_pair(L1, p[0], p[1], p[2], q[0], q[1], q[2], f"G_{i}(y^{p[3]}) vs G_{i}(y^{q[3]})"))
            if K > 1:
                interp.append(Interp(f"G_{i}^inf <= G_{i}(y^{p[3]}) - |g|^2/(2L1)", fstar[i] - p[2],
                                     scaled(sq(p[1]), div=2 * L1)))
    pts = [(st0.u, s0, F0, "t")] + [(st.u, sk[k], Fk[k], f"t+1,{k}") for k, st in enumerate(branches)]
    for p in pts:
        for q in pts:
            if p is not q:
                interp.append(pair(p[0], p[1], p[2], q[0], q[1], q[2], f"F(u^{p[3]}) vs F(u^{q[3]})"))

    def H(st):
        return scaled(sq(st.x - st.y), lam / 2)

    def M_quad(st):  # the quadratic part of M_t (eq. (eq651))
        x, u, z = st.x, st.u, st.z
        return (scaled(sq(2 * x - u - z), div=2 * gamma) - scaled(sq(x - z), div=2 * gamma)
                - scaled(sq(u - x), div=gamma))

    mean = lambda items: scaled(sum(items[1:], items[0]), div=len(items))  # noqa: E731
    Gt = mean(G0)
    pieces = [Piece("a", Gt, H(st0), mean([mean(Gk[k]) for k in range(K)]), mean([H(st) for st in branches])),
              Piece("b", F0, M_quad(st0), mean(Fk), mean([M_quad(st) for st in branches]))]
    g = mean(g0)
    S = sq(g + lam * (st0.y - st0.u)) + sq(lam * (st0.u - st0.y) + s0)
    # D_t = G(y^t) + H(x^t, y^t) - mean_i G_i^inf; kappa <= growth_cap rho
    growth = None if K == 1 else (Gt - mean(fstar), H(st0), cap)
    fixed = [st0.z, g + lam * (st0.y - st0.u), lam * (st0.u - st0.y) + s0]
    for k, st in enumerate(branches):
        fixed += [st.y - st0.y, st.z - st0.z, sk[k] - s0] + [gk[k][i] - g0[i] for i in range(N)]
    return OneStep(B, interp, pieces, S, growth=growth, fixed=np.array(fixed),
                   note=f"V = a (G + H) + b M_t, E over {K} minibatches (N={N}, b={b})")


def rate_floor(beta: float) -> float:
    """The smallest rate a STAM certificate counts with (:func:`certify_stam`): :data:`RHO_MIN`, and at least
    :data:`RHO_BETA_MIN` ``/ beta``."""
    return max(RHO_MIN, RHO_BETA_MIN / beta)


def certify_stam(lam: float, gamma: float, beta: float, L1: float = 1.0, template: str = "general",
                 rho_min: float | None = None, solver: str | None = None, solver_options: dict | None = None,
                 f_class: str = DEFAULT_F_CLASS, N: int = 1, b: int = 1) -> Certificate:
    """The best certificate of ``template`` for STAM at ``(lam, gamma, beta)`` with ``F`` of
    ``f_class``: deterministic (``N = b = 1``, the full gradient) or with b-nice minibatches of
    ``G = (1/N) sum_i G_i`` (paper template only; :func:`stam_step_sdp_sampled`).  It counts with a rate
    of at least ``rho_min`` (default :func:`rate_floor`); an optimal rate below that floor is marked
    ``details["below_floor"]`` (the solver's accuracy, not a certificate)."""
    floor = rate_floor(beta) if rho_min is None else rho_min
    check_f_class(f_class)
    validate_sampling(N, b)
    def build(exact=False):
        if (N, b) != (1, 1):
            require(template == "paper", f"sampled gradients (N={N}, b={b}) are searched with the paper template only")
            return stam_step_sdp_sampled(lam, gamma, beta, L1, f_class, N, b, exact=exact)
        return stam_step_sdp(lam, gamma, beta, L1, template, f_class, exact=exact)

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


def certified_gamma(lam: float, template: str = "general", betas=REGION_BETAS, L1: float = 1.0,
                    gamma_range=REGION_GAMMA_RANGE, rtol: float = REGION_RTOL, solver: str | None = None,
                    f_class: str = DEFAULT_F_CLASS, N: int = 1, b: int = 1, inherited=(),
                    scan_ratio: float = SCAN_RATIO) -> dict:
    """The end of the interval of gammas, from ``gamma_range[0]`` up, with a certificate of ``template`` for
    some beta of ``betas`` (:func:`_first_gap`: a scan by factors 1.2, then log bisection; it
    reports the bracket): ``lo`` the largest certified gamma found (None: not even ``gamma_range[0]``),
    ``hi`` the smallest uncertified one above it (None: certified up to ``gamma_range[1]``),
    ``beta`` and ``rho`` of the certificate at ``lo``, and the count of every solver status.
    ``inherited``: gammas already certified for a larger class of ``F`` (any proper lsc ``F`` contains
    the convex ones): its certificate is one for ``f_class`` too, so they count without a solve
    (``inherited`` in the result counts them; without it the solver's accuracy at rates near
    :data:`RHO_MIN` could make a smaller class look less certified)."""
    statuses: dict[str, int] = {}
    found: dict[float, tuple] = {}
    slowest = [0.0]
    order = list(betas)[::-1]

    inherited = set(inherited)
    taken = [0]
    unverified: dict[float, float] = {}  # gamma -> the largest rho * beta the verification rejected there

    seen: dict[float, bool] = {}

    def test(gamma):
        if gamma not in seen:
            seen[gamma] = solve(gamma)
        return seen[gamma]

    def solve(gamma):
        if gamma in inherited:
            taken[0] += 1
            return True
        for beta in list(order):
            c = certify_stam(lam, gamma, beta, L1=L1, template=template, solver=solver, f_class=f_class, N=N, b=b)
            key = (f"{c.status}, {UNVERIFIED}" if c.details.get("unverified") else
                   f"{c.status}, {NUMERICAL_ONLY}" if c.details.get("numerical_only") else
                   f"{c.status}, {BELOW_FLOOR}" if c.details.get("below_floor") else c.status)
            statuses[key] = statuses.get(key, 0) + 1
            if c.details.get("unverified") or c.details.get("numerical_only"):
                unverified[gamma] = max(unverified.get(gamma, 0.0), c.details["solver_rho"] * beta)
            slowest[0] = max(slowest[0], c.seconds)
            if c.certified:
                found[gamma] = (beta, c.rho)
                order.remove(beta)
                order.insert(0, beta)  # try the last good beta first next time
                return True
        return False

    ratio = gamma_scan_ratio(gamma_range) if len(gamma_range) > 2 else scan_ratio  # LO:HI:N fixes the scan
    start = gamma_range[0]
    lo, hi, _ = _first_gap(test, start, gamma_range[1], rtol, ratio=ratio)
    if lo is None and unverified.get(start, 0.0) >= RHO_BETA_MIN:
        # the first gamma's rate was not verified (at gamma lam ~ 1e-6 the minibatch SDP is at the solver's accuracy):
        # the interval is sought from the first certified gamma of the scan up ("start")
        g = start
        while lo is None and g < gamma_range[1]:
            g = min(g * ratio, gamma_range[1])
            if test(g):
                start = g
                lo, hi, _ = _first_gap(test, g, gamma_range[1], rtol, ratio=ratio)
    beta, rho = found.get(lo, (None, None))
    return {"lo": lo, "hi": hi, "beta": beta, "rho": rho, "statuses": statuses,
            # the scan's first gamma where the interval begins; when it is above gamma_range[0], the gammas below it
            # had rates the verification rejected
            "start": start, "start_unverified": start > gamma_range[0],
            "solves": sum(statuses.values()), "slowest_solve": slowest[0], "f_class": f_class, "N": N, "b": b,
            "inherited": taken[0], "certified_at": sorted(found),
            # the first uncertified gamma had a rate above the floor (rho beta >= RHO_BETA_MIN) that the solver called
            # optimal and the verification rejected: the end of the bracket is the solver's accuracy there, not shown to
            # be the template's limit (near the end of a region rates fall to the floor: a rejected one below it means
            # nothing)
            "hi_unverified": hi is not None and unverified.get(hi, 0.0) >= RHO_BETA_MIN,
            "hi_rejected_rho_beta": unverified.get(hi) if hi is not None else None}


def refuted_gamma(lam: float, Ts=REFUTE_TS, betas=REFUTE_BETAS, L1: float = 1.0, gamma_range=REGION_GAMMA_RANGE,
                  rtol: float = REGION_RTOL, solver: str | None = None, f_class: str = DEFAULT_F_CLASS) -> dict:
    """The smallest gamma where ``stam pep`` (:func:`stam.theory.pep.stam_pep`) is *unbounded* at
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
            cert = certify_stam(float(lam), gamma, beta, L1=L1, template="paper", solver=solver, f_class=f_class, N=N, b=b)
            points.append({"fraction": frac, "gamma": gamma, "beta": beta, "N": N, "b": b, "certified": cert.certified,
                           "rho": cert.rho, "status": cert.status})
    good = [1 / (p["rho"] * p["beta"]) for p in points if p["certified"]]
    return {"fractions": list(fractions), "points": points, "certified": len(good) == len(points),
            "max_inv_rho_beta": max(good) if good else None}


def region_row(lam: float, betas=REGION_BETAS, L1: float = 1.0, gamma_range=REGION_GAMMA_RANGE,
               rtol: float = REGION_RTOL, refute_Ts=REFUTE_TS, refute_betas=REFUTE_BETAS, solver: str | None = None,
               f_class: str = DEFAULT_F_CLASS, sampling=REGION_SAMPLING, beside_convex: bool = True,
               scan_ratio: float = SCAN_RATIO, refute_beside: bool = True) -> dict:
    """One row of :func:`region` (one lambda)."""
    t0 = time.perf_counter()
    gmax = float(numeric.gamma_max(numeric.quadratic_coupling(float(lam), L1=L1)))
    row = {"lam": float(lam), "gamma_theorem": gmax}
    classes = [f_class] + (["convex"] if beside_convex and f_class != "convex" else [])
    for cls in classes:
        larger = row if cls != f_class and f_class == "lsc" else None  # lsc certificates hold for convex F
        part = {
            tpl: certified_gamma(lam, tpl, betas, L1, gamma_range, rtol, solver, f_class=cls,
                                 inherited=larger[tpl]["certified_at"] if larger else (), scan_ratio=scan_ratio)
            for tpl in ("general", "paper")
        }
        if cls == f_class or refute_beside:
            part["refuted"] = refuted_gamma(lam, refute_Ts, refute_betas, L1, gamma_range, rtol, solver, f_class=cls)
        if cls == f_class:
            row.update(part)
            if sampling is not None:
                row["sampled"] = certified_gamma(lam, "paper", betas, L1, gamma_range, rtol, solver, f_class=cls,
                                                 N=int(sampling[0]), b=int(sampling[1]), scan_ratio=scan_ratio)
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
    return region_row(spec["lam"], **args)


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


def region(lams=REGION_LAMS, betas=REGION_BETAS, L1: float = 1.0, gamma_range=REGION_GAMMA_RANGE,
           rtol: float = REGION_RTOL, refute_Ts=REFUTE_TS, refute_betas=REFUTE_BETAS, solver: str | None = None,
           progress=None, f_class: str = DEFAULT_F_CLASS, sampling=REGION_SAMPLING, beside_convex: bool = True,
           workers: int = 1, scan_ratio: float = SCAN_RATIO, refute_beside: bool = True, store=None,
           scheduler: str | None = None, bar: bool = False) -> dict:
    """The ``lyapunov-region`` result (``stam pep --region``): for each lambda, for ``F`` of
    ``f_class`` (default the paper's class, any proper lsc ``F``) the certified gamma of both templates
    with the full gradient (``general``, ``paper``), of the paper template with b-nice minibatches of
    ``sampling = (N, b)`` (``sampled``; None: not searched), the refuted gamma, and Theorem conv's
    ``gamma_max(lam)``, and whether Theorem conv's own region is certified for the class
    (``theorem``, :func:`theorem_region`); with ``beside_convex`` (and a nonconvex ``f_class``) the same
    three searches for convex ``F`` under ``convex`` (without its refutation when not ``refute_beside``).
    The lambdas are jobs of the toolkit's one job engine (:func:`stam.jobs.run_jobs`, :func:`region_job`): stored
    in ``store`` (a folder; None: a temporary one) as they finish, so a rerun on the same store computes only the
    missing rows; ``workers`` local processes or a Dask ``scheduler`` (every row is computed alone, so the result is
    the same; ``progress`` sees the rows in order once all are done; ``bar``: the engine's progress bar);
    ``scan_ratio``: the step of the scan (:func:`_first_gap`).  The same as :func:`compute_region` of these
    parameters (:class:`stam.theory.params.RegionParams`)."""
    params = RegionParams(lams=lams, betas=betas, L1=L1, gamma_range=gamma_range, rtol=rtol, refute_Ts=refute_Ts,
                          refute_betas=refute_betas, solver=solver, f_class=f_class, sampling=sampling,
                          beside_convex=beside_convex, workers=workers, scan_ratio=scan_ratio, refute_beside=refute_beside,
                          scheduler=scheduler)
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

    from stam.jobs import run_jobs

    f_class, L1, rtol, sampling, workers = params.f_class, params.L1, params.rtol, params.sampling, params.workers
    gamma_range = params.gamma_range if params.gamma_range is not None else REGION_GAMMA_RANGE
    check_f_class(f_class)
    for name, value in (("L1", L1), ("rtol", rtol)):
        require(math.isfinite(value) and value > 0, f"{name}={value} must be a finite number > 0")
    require(0 < gamma_range[0] < gamma_range[1] and math.isfinite(gamma_range[1]),
            f"gamma range {gamma_range} must be 0 < lo < hi < inf")
    require(workers is None or (isinstance(workers, int) and workers >= 1), f"workers={workers} must be an integer >= 1")
    if sampling is not None:
        validate_sampling(*sampling)
    full = resolved(params)
    for lam in full.lams:
        _validate(lam, 1.0, 1.0, L1)
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
                                        "f_class": STR, "sampling": DICT_OR_NULL},
                              rules=(one_of("f_class", F_CLASSES),),
                              each={"rows": REGION_ROW},
                              inner={"provenance": PROVENANCE,
                                     # the sampled gradient's N and b (b-nice sampling, 1 <= b <= N)
                                     "sampling": Schema(required={"N": POSINT, "b": POSINT}, optional={"growth_per_rate": POS},
                                                        rules=(at_most("b", "N", "N"),))},
                              items={"betas": POS, "gamma_range": POS, "refute_Ts": POSINT, "refute_betas": POS}),
    files="region.json", writer="stam pep --region --out FILE")


__all__ = ["BRACKET", "REGION_ROW", "REGION", "TEMPLATES", "Certificate", "search", "gradient_descent", "proximal_gradient", "stam_step_sdp",
           "stam_step_sdp_sampled", "prox_pair", "F_CLASSES",
           "certify_stam", "certified_gamma", "refuted_gamma", "theorem_region", "region_row", "region", "compute_region",
           "region_specs", "resolved"]
