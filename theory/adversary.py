"""An adversarial search for counterexamples to the printed steps eq. (eq36) and eq. (eq39) (and so
to K3, eq. (eq38), Lemmas par2 and conv-lemma, Theorem conv, which rest on them) on *actual* runs of
Algorithm 1 (:func:`stam.algorithm.stam_step`), beyond the quadratic instances of
:func:`stam.theory.items.common.iterate_search`.  The classes are the product of

- the coupling H: quadratic ``(lam/2)||x - y||^2`` and two smooth non-quadratic ones,
  ``(lam/2)||x - y||^2 + kappa sum_i phi(alpha x_i + b y_i)`` with ``phi`` log-cosh or softplus
  (``kappa`` of either sign: ``H(., y)`` convex or only weakly convex; ``alpha``, ``b`` free, so that
  ``L2*`` and ``L4*`` are no longer tied as in the quadratic coupling).  Their gradients and Hessian
  blocks are derived in sympy (:func:`coupling_derivatives`) and their constants ``L2*, ..., L5*``,
  ``l`` are exact: the Hessian blocks are affine in ``phi''``, whose range ``(0, sup phi'']`` is
  derived too; the x-step ``argmin_x H(x, y) + ||x - z||^2/(2 gamma)`` is solved by a safeguarded
  Newton iteration (strongly monotone since ``gamma l < 1``);
- F = I_Q for closed sets Q: binary ``{-1, 1}^n``, ternary ``{-1, 0, 1}^n`` and the paper's own
  scaled-binary set of eq. (eq01) read as closed, ``{s z : s >= 0, z in {-1, 1}^n}`` (projection
  ``s = ||v||_1/n``, ``z = sign v``);
- G: quadratic, or the nonconvex double well ``a sum (y_i^2 - 1)^2/4``;
- gradients: deterministic, or stochastic (Gaussian noise, sigma = 1).

gamma is drawn below ``gamma_max`` of the instance's constants (K1 > 0 and the second condition
of Theorem conv), so that every hypothesis of the statements holds.  Each class: a random stage
(R runs), then a local search from its best run (rounds of Gaussian perturbations in the class's
box, a shrinking step) that minimises :func:`margin`, negative exactly where the print fails; all
classes of a coupling, and all searched steps, run in one batch per round (:func:`search_all`).

The printed gap of each step is evaluated with the lambdified gaps of :mod:`stam.theory.chain` at
every step of every run (``d = grad_x H(x^t, y^{t+1}) - grad_x H(x^t, y^t)`` and ``Phi`` computed
from the coupling itself); a negative gap (relative to the size of the terms, below -1e-9) on a run
is a counterexample.  The derived chain is checked on the same runs by the tests: it must hold."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy as sp

from stam.algorithm import stam_init, stam_step
from stam.theory import numeric as num
from stam.theory.items import Search
from stam.theory.items.common import (SEED, DerivedCoupling, chain_counterexample, dot, gap_functions, iterate_search,
                                      relative_scale, rounded, scaled_binary_projection)

SETS = {
    "binary {-1,1}^n": lambda v: np.where(v >= 0, 1.0, -1.0),
    "ternary {-1,0,1}^n": lambda v: np.clip(np.round(v), -1, 1),
    "scaled binary {s z: s >= 0, z in {-1,1}^n} (eq01, closed)":
        scaled_binary_projection,
}
GRADIENTS = {"quadratic G": lambda y, a, g0: a * (y - g0),
             "double well G = a sum (y_i^2 - 1)^2/4": lambda y, a, g0: a * y * (y**2 - 1)}


# --------------------------------------------------------------------------------------------
# couplings
# --------------------------------------------------------------------------------------------

#: phi of the non-quadratic couplings, in sympy (the truth) and numerically stable numpy forms of
#: phi, phi' and phi'' (tested against the sympy derivatives)
PHI = {
    "log-cosh": (lambda t: sp.log(sp.cosh(t)),
                 lambda w: np.abs(w) + np.log1p(np.exp(-2 * np.abs(w))) - np.log(2.0),
                 np.tanh, lambda w: 1 / np.cosh(np.clip(w, -350, 350)) ** 2),
    "softplus": (lambda t: sp.log(1 + sp.exp(t)),
                 lambda w: np.logaddexp(0.0, w),
                 lambda w: 0.5 * (1 + np.tanh(w / 2)), lambda w: 0.25 / np.cosh(np.clip(w / 2, -350, 350)) ** 2),
}


@lru_cache(maxsize=None)
def coupling_derivatives(kind: str) -> dict:
    """For ``h(x, y) = (lam/2)(x - y)^2 + kappa phi(alpha x + b y)`` (one coordinate; H is the sum
    over coordinates): the gradient and the Hessian blocks in terms of ``phi'`` and ``phi''`` (sympy),
    and ``sup phi''`` (its critical points and its limits at +-infinity, sympy), with ``inf phi'' = 0``."""
    x, y, lam, kap, al, b, t = sp.symbols("x y lam kappa alpha b t", real=True)
    phi = PHI[kind][0](t)
    p1, p2 = sp.Symbol("phi1"), sp.Symbol("phi2")
    h = lam / 2 * (x - y) ** 2 + kap * sp.Function("phi")(al * x + b * y)

    def named(e):  # phi'(w), phi''(w) as the symbols phi1, phi2
        return sp.expand(e.replace(lambda a: isinstance(a, sp.Subs),
                                   lambda a: p1 if a.expr.derivative_count == 1 else p2))

    grads = {v: named(sp.diff(h, v)) for v in (x, y)}
    hess = {"xx": named(sp.diff(h, x, 2)), "xy": named(sp.diff(h, x, y)), "yy": named(sp.diff(h, y, 2))}
    d2, d3 = sp.diff(phi, t, 2), sp.diff(phi, t, 3)
    crit = [c for c in sp.solve(sp.numer(sp.together(d3.rewrite(sp.exp))), t) if c.is_real]
    # phi'' -> 0 at +-infinity (both phi are asymptotically linear; tests/test_theory_adversary.py takes the
    # limits in sympy): with its values at the critical points, the range of phi''
    cands = [sp.nsimplify(sp.simplify(d2.subs(t, c))) for c in crit] + [sp.Integer(0)]
    sup2, inf2 = sp.Max(*cands), sp.Min(*cands)
    blocks = {key: sp.lambdify((lam, kap, al, b, p2), e, "numpy") for key, e in hess.items()}
    return {"grad_x": grads[x], "grad_y": grads[y], "hess": hess, "sup phi''": sup2, "inf phi''": inf2,
            "symbols": (lam, kap, al, b, p1, p2), "phi''": d2, "t": t, "blocks": blocks}


class SmoothCoupling:
    """``H(x, y) = (lam/2)||x - y||^2 + kappa sum_i phi(alpha x_i + b y_i)`` for
    :mod:`stam.algorithm` on numpy arrays (each parameter one value per run, shape ``(R,)``)."""

    def __init__(self, kind: str, lam, kappa, alpha, b):
        self.kind = kind
        self.lam, self.kap, self.al, self.b = (np.asarray(v, dtype=float)[:, None] for v in (lam, kappa, alpha, b))
        _, self.phi, self.phi1, self.phi2 = PHI[kind]

    def _w(self, x, y):
        return self.al * x + self.b * y

    def value(self, x, y):
        """H at every run (sums the last axis)."""
        return np.sum(self.lam / 2 * (x - y) ** 2 + self.kap * self.phi(self._w(x, y)), axis=-1)

    def grad_x_H(self, x, y):
        return self.lam * (x - y) + self.kap * self.al * self.phi1(self._w(x, y))

    def grad_y_H(self, x, y):
        return self.lam * (y - x) + self.kap * self.b * self.phi1(self._w(x, y))

    def prox_H(self, z, y, gamma, iters: int = 60):
        """The x-step: the root of ``x - z + gamma grad_x H(x, y)``, increasing in x with slope
        ``>= 1 - gamma l > 0``: Newton steps kept inside a shrinking bracket (bisection otherwise),
        each entry until its residual is at rounding level or its bracket is."""
        gamma = np.asarray(gamma, dtype=float)
        m = 1 - gamma * np.maximum(self.constants()["l"][:, None], 0.0)  # the least slope
        ga, gk, gl, by = gamma * self.kap * self.al, gamma * self.kap * self.al**2, gamma * self.lam, self.b * y

        def f_slope(v):
            w = self.al * v + by
            return v - z + gl * (v - y) + ga * self.phi1(w), 1 + gl + gk * self.phi2(w), ga * self.phi1(w)

        x = (z + gl * y) / (1 + gl)
        fx, slope, nonlin = f_slope(x)
        lo, hi = x - np.abs(fx) / m, x + np.abs(fx) / m
        eps = np.finfo(float).eps
        for _ in range(iters):
            size = 1 + np.abs(x) + np.abs(z) + np.abs(gl * (x - y)) + np.abs(nonlin)
            done = (np.abs(fx) <= 8 * eps * size) | (hi - lo <= 4 * eps * (1 + np.abs(x)))
            if done.all():
                break
            lo, hi = np.where(fx > 0, lo, x), np.where(fx > 0, x, hi)
            xn = x - fx / slope
            x = np.where(done, x, np.where((xn >= lo) & (xn <= hi), xn, (lo + hi) / 2))
            fx, slope, nonlin = f_slope(x)
        return x

    def _derive_constants(self):
        der = coupling_derivatives(self.kind)
        sup2, inf2 = float(der["sup phi''"]), float(der["inf phi''"])
        blocks = {}
        for key, f in der["blocks"].items():  # affine in phi'': extremes at the ends of its range
            ends = [f(self.lam[:, 0], self.kap[:, 0], self.al[:, 0], self.b[:, 0], v) + 0 * self.lam[:, 0]
                    for v in (inf2, sup2)]
            blocks[key] = (np.minimum(*ends), np.maximum(*ends))
        sup_abs = {key: np.maximum(np.abs(lo), np.abs(hi)) for key, (lo, hi) in blocks.items()}
        return {"L2": sup_abs["xx"], "L3": sup_abs["yy"], "L4": sup_abs["xy"], "L5": sup_abs["xy"],
                "l": -blocks["xx"][0]}

    def constants(self) -> dict:
        """``L2* = sup |H_xx|``, ``L3* = sup |H_yy|``, ``L4* = L5* = sup |H_xy|`` and the smallest
        ``l = -inf H_xx`` (per run): exact, H being separable with 1x1 blocks."""
        if not hasattr(self, "_constants"):
            self._constants = self._derive_constants()
        return self._constants


class QuadraticCoupling(DerivedCoupling):
    """The audit's derived ``(lam/2)||x - y||^2`` (x-step lambdified from sympy) with its value,
    ``grad_x H`` and constants ``L2* = ... = L5* = lam``, ``l = -lam``."""

    def __init__(self, lam):
        super().__init__(np.asarray(lam, dtype=float))
        self.lam_ = np.asarray(lam, dtype=float)

    def value(self, x, y):
        return np.sum(self.lam / 2 * (x - y) ** 2, axis=-1)

    def grad_x_H(self, x, y):
        return self.lam * (x - y)

    def constants(self) -> dict:
        return {"L2": self.lam_, "L3": self.lam_, "L4": self.lam_, "L5": self.lam_, "l": -self.lam_}


@dataclass(frozen=True)
class CouplingClass:
    """A family of couplings on a box of parameters ``p`` (per run, the rows of an (R, k) array)."""

    name: str
    low: tuple
    high: tuple
    make: object  # p (R, k) -> coupling


def _smooth(kind):
    # p = (lam, kappa, log alpha, b)
    return lambda p: SmoothCoupling(kind, p[:, 0], p[:, 1], np.exp(p[:, 2]), p[:, 3])


COUPLINGS = (
    CouplingClass("H = (lam/2)||x - y||^2 (L4* = lam in [0.05, 50])", (np.log(0.05),), (np.log(50.0),),
                  lambda p: QuadraticCoupling(np.exp(p[:, 0]))),
    CouplingClass("H = (lam/2)||x - y||^2 + kappa sum log cosh(alpha x_i + b y_i) (lam in [0, 5], kappa in [-10, 10], "
                  "alpha in [0.05, 3], b in [-5, 5])", (0.0, -10.0, np.log(0.05), -5.0), (5.0, 10.0, np.log(3.0), 5.0),
                  _smooth("log-cosh")),
    CouplingClass("H = (lam/2)||x - y||^2 + kappa sum softplus(alpha x_i + b y_i) (same box)",
                  (0.0, -10.0, np.log(0.05), -5.0), (5.0, 10.0, np.log(3.0), 5.0), _smooth("softplus")),
)

#: the box of the step sizes: (gamma/gamma_max, log beta/L) with L = max(L3*, 0.05)
_STEP_LOW, _STEP_HIGH = np.array([0.01, np.log(0.05)]), np.array([0.999, np.log(1e3)])


# --------------------------------------------------------------------------------------------
# runs and their chain quantities
# --------------------------------------------------------------------------------------------

def constants_of(ops) -> num.Constants:
    c = ops.constants()
    return num.Constants(L1=None, L2=c["L2"], L3=c["L3"], L4=c["L4"], L5=c["L5"], l=c["l"])


COMBOS = [(si, gi, sg) for si in range(len(SETS)) for gi in range(len(GRADIENTS)) for sg in (0.0, 1.0)]
#: the printed chain steps that differ from the derived ones: eq25 -> eq300 (false on quadratic runs
#: already) and the unproven eq36, eq39 (on which K3, eq38, Lemmas par2, conv-lemma and Theorem conv rest)
LABELS = ("eq25", "eq26", "eq27", "eq300", "eq36", "eq39")
#: the steps the local search refines (the unproven ones); every label is evaluated on every run
REFINED = ("eq36", "eq39")


def _select(index, values):
    """Row r of the result is row r of ``values[index[r]]``."""
    out = values[0]
    for k in range(1, len(values)):
        out = np.where((index == k)[:, None], values[k], out)
    return out


def runs(ops, gfrac, bfac, combo, rng, T, n=3) -> dict:
    """T steps of STAM (:func:`stam.algorithm.stam_step`) per run (row) with coupling ``ops``,
    F = I_Q and G of the run's combination ``combo = (set index, gradient index, sigma)`` (arrays,
    one entry per run); returns the chain's arguments, the scale of its terms, the constants."""
    c = constants_of(ops)
    gam = gfrac * num.gamma_max(c)
    beta = bfac * np.maximum(c.L3, 0.05)
    si, gi, sigma = combo
    R = gam.size
    a, g0 = rng.uniform(0.1, 2, (R, 1)), rng.normal(0, 2, (R, n))
    sets, grads = list(SETS.values()), list(GRADIENTS.values())

    class Ops:  # the coupling with F = I_Q
        grad_y_H, prox_H = ops.grad_y_H, ops.prox_H
        prox_F = staticmethod(lambda v, gamma: _select(si, [proj(v) for proj in sets]))

    st = stam_init(rng.normal(0, 2, (R, n)), Ops, gam[:, None], z_prev=rng.normal(0, 2, (R, n)))
    traj = [st]
    for _ in range(T):
        g = _select(gi, [grad(st.y, a, g0) for grad in grads]) + sigma[:, None] * rng.normal(0, 1, st.y.shape)
        st = stam_step(st, np.clip(g, -1e6, 1e6), Ops, gam[:, None], beta[:, None])
        traj.append(st)
    y, x, u, z = (np.stack([getattr(s, k) for s in traj]) for k in ("y", "x", "u", "z"))
    zprev = np.concatenate([(traj[0].z - (traj[0].u - traj[0].x))[None], z[:-1]])  # z^{-1}, z^0, ...
    dx, dy, dz = x[1:] - x[:-1], y[1:] - y[:-1], z[:-1] - zprev[:-1]
    d = ops.grad_x_H(x[:-1], y[1:]) - ops.grad_x_H(x[:-1], y[:-1])

    def phi(xx, uu, zz, yy):  # F = I_Q is 0 on the iterates u^t (projections onto Q)
        return (ops.value(xx, yy) + dot(2 * xx - uu - zz, 2 * xx - uu - zz) / (2 * gam)
                - dot(xx - zz, xx - zz) / (2 * gam) - dot(uu - xx, uu - xx) / gam)

    q = {"X": dot(dx, dx), "Y": dot(dy, dy), "Z": dot(dz, dz), "P": dot(dz, dx), "D": dot(d, d),
         "Q": dot(d, dx), "E": dot(x[1:] - u[:-1], x[1:] - u[:-1]),
         "dPhi": phi(x[1:], u[1:], z[1:], y[1:]) - phi(x[:-1], u[:-1], z[:-1], y[1:])}
    args = (q["X"], q["Y"], q["Z"], q["P"], q["D"], q["Q"], q["E"], q["dPhi"], gam, c.l, c.L2, c.L4,
            num.K1(gam, c), num.K2(gam, c))
    return {"args": args, "scale": relative_scale(q), "gamma": gam, "beta": beta, "constants": c}


def relative_gaps(label: str, out: dict, which: int = 0) -> np.ndarray:
    """The printed (``which = 0``) or derived (1) gap of ``label`` over ``1 +`` the size of its
    terms (the counterexample criterion: below -1e-9), per (t, run); +inf where not finite or where
    y does not move (printed = derived there: their difference is a multiple of ``||y^{t+1} - y^t||^2``)."""
    args, scale = out["args"], out["scale"]
    with np.errstate(all="ignore"):
        gap = gap_functions()[label][which](*args) + 0 * args[0]
        rel = gap / scale
        return np.where(np.isfinite(rel) & (args[1] > 1e-10 * scale), rel, np.inf)


def margin(label: str, out: dict) -> np.ndarray:
    """The search's objective: ``printed gap / (derived gap - printed gap)`` where the print asks
    more than the derivation gives (``derived - printed > 1e-9 (1 + size of the terms)``; +inf
    elsewhere, where the print cannot fail since the derived step holds on every run).  It is
    negative exactly where the print fails, and measures how close it comes: the derived slack
    over the print's error, minus 1."""
    args, scale = out["args"], out["scale"]
    fp, fd = gap_functions()[label]
    with np.errstate(all="ignore"):
        printed, derived = fp(*args) + 0 * args[0], fd(*args) + 0 * args[0]
        m = printed / (derived - printed)
        return np.where(np.isfinite(m) & (derived - printed > 1e-9 * scale), m, np.inf)


def batch(cls: CouplingClass, P, combo_index, seed, T):
    """One batched run of the parameter rows ``P`` = (coupling params..., gamma/gamma_max, log
    beta/max(L3*, 0.05)), row r with the combination ``COMBOS[combo_index[r]]``, data seeded by ``seed``."""
    rng = np.random.default_rng(seed)
    combo = tuple(np.array([COMBOS[i][j] for i in combo_index], dtype=float if j == 2 else int) for j in range(3))
    with np.errstate(all="ignore"):
        return runs(cls.make(P[:, :-2]), P[:, -2], np.exp(P[:, -1]), combo, rng, T)


def box(cls: CouplingClass):
    """The search box of a coupling class: its parameters, then the step sizes."""
    return np.concatenate([cls.low, _STEP_LOW]), np.concatenate([cls.high, _STEP_HIGH])


def class_name(cls, combo) -> str:
    si, gi, sigma = combo
    return (f"{cls.name}; F = I_Q, Q {list(SETS)[si]}; {list(GRADIENTS)[gi]}; "
            f"{'stochastic (sigma = 1)' if sigma else 'deterministic'}")


MARGIN = ("printed gap / (derived gap - printed gap) at the step where the print asks more than the derivation "
          "gives: < 0 iff the print fails there")
PARAMETERS = "coupling parameters (see the class), gamma/gamma_max, log(beta/max(L3*, 0.05))"


@lru_cache(maxsize=None)
def search_all(seed: int = SEED, R: int = 64, T: int = 20, rounds: int = 6, width: int = 16) -> dict:
    """For every coupling class, one batch of R random runs per (set, G, sigma) combination (every
    label of :data:`LABELS` evaluated on them), then, per (label of :data:`REFINED`, combination), a
    local search from its most violated run: ``rounds`` rounds of ``width`` Gaussian perturbations
    of the best point so far (0.5 of the box's width, capped at 1, halved every two rounds), every
    (label, combination) of a round in one batch.  Returns, per label, the runs and steps evaluated,
    the classes, the smallest :func:`margin` (with its class and parameters) and a
    counterexample or None."""
    rng = np.random.default_rng(seed)
    res = {lab: {"runs": 0, "steps": 0, "classes": [], "closest": None, "found": None} for lab in LABELS}
    nc = len(COMBOS)
    keys = [(lab, c) for lab in REFINED for c in range(nc)]
    for cls in COUPLINGS:
        low, high = box(cls)
        span = np.minimum(high - low, 1.0)
        P = rng.uniform(low, high, (R * nc, low.size))
        idx = np.repeat(np.arange(nc), R)
        out = batch(cls, P, idx, int(rng.integers(2**31)), T)
        best, value, found = {}, {}, {}  # (label, combination) -> best parameters, their value; a hit

        def record(rows_P, rows_c, out):
            for lab in LABELS:
                per_run = margin(lab, out).min(axis=0)
                hit = relative_gaps(lab, out).min(axis=0) < -1e-9  # a counterexample on this run
                for c in np.unique(rows_c):
                    rows = np.flatnonzero(rows_c == c)
                    i = rows[int(np.argmin(per_run[rows]))]
                    if np.isfinite(per_run[i]) and per_run[i] < value.get((lab, c), np.inf):
                        best[lab, c], value[lab, c] = rows_P[i], float(per_run[i])
                    if hit[rows].any() and (lab, c) not in found:
                        found[lab, c] = rows_P[rows[int(np.argmax(hit[rows]))]]

        record(P, idx, out)
        for k in range(rounds):
            starts = [best.get(key, P[np.flatnonzero(idx == key[1])[0]]) for key in keys]
            cand = np.concatenate([np.clip(b + span * rng.normal(0.0, 0.5 * 0.5 ** (k // 2), (width, low.size)), low, high)
                                   for b in starts])
            cidx = np.concatenate([np.full(width, c) for _, c in keys])
            record(cand, cidx, batch(cls, cand, cidx, int(rng.integers(2**31)), T))
        n_runs = R * nc + rounds * width * len(keys)
        for lab in LABELS:
            r = res[lab]
            r["runs"], r["steps"] = r["runs"] + n_runs, r["steps"] + n_runs * T
            for c in range(nc):
                name = class_name(cls, COMBOS[c])
                r["classes"].append(name)
                v = value.get((lab, c), np.inf)
                if r["closest"] is None or v < r["closest"]["margin"]:
                    r["closest"] = {"margin": v, "class": name, "parameters":
                                    [float(p) for p in best[lab, c]], "parameters are": PARAMETERS,
                                    "margin is": MARGIN}
                if (lab, c) in found and r["found"] is None:
                    r["found"] = {"class": name, "parameters": [float(p) for p in found[lab, c]],
                                  "parameters are": PARAMETERS, "evidence": "run",
                                  "meaning": f"printed {lab} fails on an actual run (gap < -1e-9 (1 + size of its terms))"}
    return {lab: dict(r, classes=tuple(r["classes"])) for lab, r in res.items()}


def search(label: str, seed: int = SEED) -> dict:
    """:func:`search_all` for one label of :data:`LABELS`."""
    return search_all(seed)[label]


@lru_cache(maxsize=None)
def runs_search(label: str, seed: int = SEED) -> Search:
    """The printed chain step ``label`` evaluated at every step of actual STAM runs: the seeded
    quadratic runs of :func:`stam.theory.items.common.iterate_search`, then :func:`search` (three
    couplings, three sets Q, two G, deterministic and stochastic gradients, a batched local
    refinement); what was tried, the counterexample found on a run (or None) and the smallest
    margin (:func:`margin`: how close the print came to failing)."""
    srch = iterate_search(seed)
    printed, derived = srch["gaps"][label]
    scale = relative_scale(srch["q"])
    with np.errstate(all="ignore"):
        m = np.where(derived - printed > 1e-9 * scale, printed / (derived - printed), np.inf)
    t, r = np.unravel_index(np.argmin(m), m.shape)
    T, R = m.shape
    adv = search(label, seed)
    closest = {"margin": float(m[t, r]), "class": "quadratic (iterate_search)", "run": int(r), "t": int(t),
               "L4*": float(srch["inst"]["lam"][r]), "margin is": MARGIN}
    if adv["closest"] is not None and adv["closest"]["margin"] < closest["margin"]:
        closest = adv["closest"]
    return Search(
        method=f"seeded (seed {seed}): {R} random deterministic runs of {T} steps through stam.algorithm.stam_step, "
               f"then {adv['runs']} adversarial runs over {len(adv['classes'])} classes (random, then a batched local "
               f"search from the most violated per class; stam.theory.adversary); the printed {label} evaluated at "
               "every step",
        classes=("G = (a/2)||y - g0||^2 in R^2, H = (lam/2)||x - y||^2 (L4* = lam in [0.2, 6]), "
                 "F = (mu/2)||u - c||^2, gamma < gamma_max, beta/lam in [0.5, 50]",) + adv["classes"],
        instances=R + adv["runs"], steps=R * T + adv["steps"], found=chain_counterexample(label, seed) or adv["found"],
        closest=rounded(closest))
