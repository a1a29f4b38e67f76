"""An adversarial search for counterexamples to the printed steps eq. (eq36) and eq. (eq39) (and so
to K3, eq. (eq38), Lemmas par2 and conv-lemma, Theorem conv, which rest on them) on *actual* runs of
Algorithm 1 (:func:`stam.algorithm.stam_step`), beyond the quadratic instances of
:func:`stam.theory.items.common.iterate_search`: quantisation sets Q (F = I_Q, binary {-1, 1}^n and
ternary {-1, 0, 1}^n, prox = projection), nonconvex G (a double well), deterministic and stochastic
gradients (Gaussian noise), H = (lam/2)||x - y||^2 with L4* = lam up to 12, and, after a random
stage, a batched local refinement of the most violated instance's (log lam, gamma/gamma_max, log
beta/lam): rounds of perturbations around the best point so far, with a step that shrinks, each
round one batched run of all its candidates.

The printed gap of each step is evaluated with the lambdified gaps of :mod:`stam.theory.chain` at
every step of every run; a negative gap (relative to the size of the terms, below -1e-9) on a run is
a counterexample.  (H non-quadratic is not yet searched: its chain quantities need d = grad_x H(x^t,
y^{t+1}) - grad_x H(x^t, y^t) and its own constants.)"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from stam.algorithm import stam_init, stam_step
from stam.theory import numeric as num
from stam.theory.items.common import (SEED, DerivedCoupling, chain_counterexample, dot, gap_functions, iterate_search,
                                      relative_scale, rounded)
from stam.theory.items import Search

SETS = {"binary {-1,1}^n": lambda v: np.where(v >= 0, 1.0, -1.0), "ternary {-1,0,1}^n": lambda v: np.clip(np.round(v), -1, 1)}
GRADIENTS = {"quadratic G": lambda y, a, g0: a * (y - g0), "double well G = a sum (y_i^2 - 1)^2/4": lambda y, a, g0: a * y * (y**2 - 1)}


class _Ops(DerivedCoupling):
    """The audit's derived coupling with F = I_Q, Q given by its projection ``proj``."""

    def __init__(self, lam, proj):
        super().__init__(lam)
        self.proj = proj

    def prox_F(self, v, gamma):
        return self.proj(v)


def _runs(lam, gfrac, bfac, rng, proj, grad, sigma, T, n=3):
    R = lam.size
    gam = gfrac * num.gamma_max(num.quadratic_coupling(lam))
    beta = bfac * lam
    a, g0 = rng.uniform(0.1, 2, (R, 1)), rng.normal(0, 2, (R, n))
    ops = _Ops(lam, proj)
    st = stam_init(rng.normal(0, 2, (R, n)), ops, gam[:, None], z_prev=rng.normal(0, 2, (R, n)))
    traj = [st]
    for _ in range(T):
        g = grad(st.y, a, g0) + sigma * rng.normal(0, 1, st.y.shape)
        g = np.clip(g, -1e6, 1e6)
        st = stam_step(st, g, ops, gam[:, None], beta[:, None])
        traj.append(st)
    y, x, u, z = (np.stack([getattr(s, k) for s in traj]) for k in ("y", "x", "u", "z"))
    zprev = np.concatenate([z[:1] * 0 + traj[0].z - (traj[0].u - traj[0].x), z[:-1]])  # z^{-1}, z^0, ...
    dx, dy, dz = x[1:] - x[:-1], y[1:] - y[:-1], z[:-1] - zprev[:-1]
    lam_ = lam[:, None]
    d = -lam_ * dy

    def phi(xx, uu, zz, yy):  # F = I_Q is 0 on the iterates u^t (projections onto Q)
        return (lam / 2 * dot(xx - yy, xx - yy) + dot(2 * xx - uu - zz, 2 * xx - uu - zz) / (2 * gam)
                - dot(xx - zz, xx - zz) / (2 * gam) - dot(uu - xx, uu - xx) / gam)

    q = {"X": dot(dx, dx), "Y": dot(dy, dy), "Z": dot(dz, dz), "P": dot(dz, dx), "D": dot(d, d),
         "Q": dot(d, dx), "E": dot(x[1:] - u[:-1], x[1:] - u[:-1]),
         "dPhi": phi(x[1:], u[1:], z[1:], y[1:]) - phi(x[:-1], u[:-1], z[:-1], y[1:])}
    c = num.quadratic_coupling(lam)
    args = (q["X"], q["Y"], q["Z"], q["P"], q["D"], q["Q"], q["E"], q["dPhi"], gam, -lam, lam, lam,
            num.K1(gam, c), num.K2(gam, c))
    scale = 1.0 + q["X"] + q["Y"] + q["Z"] + np.abs(q["P"]) + q["E"] + np.abs(q["dPhi"])
    return args, scale, gam, beta


def _worst(label, lam, gfrac, bfac, seed, proj, grad, sigma, T):
    rng = np.random.default_rng(seed)
    with np.errstate(all="ignore"):
        args, scale, gam, beta = _runs(lam, gfrac, bfac, rng, proj, grad, sigma, T)
        printed = gap_functions()[label][0](*args) + 0 * args[0]
        rel = printed / scale
        # a step where y does not move makes printed = derived (their difference is L4*(1 - L4*) Y): not informative
        rel = np.where(np.isfinite(rel) & (args[1] > 1e-10 * scale), rel, np.inf)
    per_run = rel.min(axis=0)
    return per_run, rel


#: the box of the refinement: (log lam, gamma/gamma_max, log beta/lam)
_LOW, _HIGH = np.array([np.log(0.05), 0.01, np.log(0.05)]), np.array([np.log(50.0), 0.999, np.log(1e3)])


def _refine(label, x0, value0, seed, proj, grad, sigma, T, rounds: int = 8, width: int = 32):
    """Local search from ``x0`` (a point of the box, its value ``value0``): ``rounds`` rounds of
    ``width`` Gaussian perturbations of the best point so far (scale 0.5, halved every two rounds),
    each round one batched call of :func:`_worst` on the same random instance; returns (best point,
    its value, runs tried)."""
    rng = np.random.default_rng(seed)
    best, value, tried = np.asarray(x0, dtype=float), float(value0), 0
    for k in range(rounds):
        cand = np.clip(best + rng.normal(0.0, 0.5 * 0.5 ** (k // 2), (width, 3)), _LOW, _HIGH)
        vals = _worst(label, np.exp(cand[:, 0]), cand[:, 1], np.exp(cand[:, 2]), seed, proj, grad, sigma, T)[0]
        tried += width
        i = int(np.argmin(vals))
        if np.isfinite(vals[i]) and vals[i] < value:
            best, value = cand[i], float(vals[i])
    return best, value, tried


@lru_cache(maxsize=None)
def search(label: str, seed: int = SEED, R: int = 150, T: int = 30) -> dict:
    """Random stage over every class (R runs each), then :func:`_refine` from the most violated run
    of each class; returns the counts, the smallest relative printed gap, and a counterexample
    (class, parameters) or None."""
    rng = np.random.default_rng(seed)
    runs, steps, best, found = 0, 0, None, None
    classes = []
    for (sname, proj), (gname, grad), sigma in [(s, g, sg) for s in SETS.items() for g in GRADIENTS.items()
                                                for sg in (0.0, 1.0)]:
        cls = f"F = I_Q, Q {sname}; {gname}; {'stochastic (sigma = 1)' if sigma else 'deterministic'}"
        classes.append(cls)
        lam = np.exp(rng.uniform(np.log(0.2), np.log(12.0), R))
        gfrac, bfac = rng.uniform(0.05, 0.999, R), np.exp(rng.uniform(np.log(0.3), np.log(50), R))
        cseed = int(rng.integers(2**31))
        per_run, _ = _worst(label, lam, gfrac, bfac, cseed, proj, grad, sigma, T)
        runs, steps = runs + R, steps + R * T
        i = int(np.argmin(per_run))
        x0 = np.array([np.log(lam[i]), gfrac[i], np.log(bfac[i])])
        at0 = float(_worst(label, lam[i : i + 1], gfrac[i : i + 1], bfac[i : i + 1], cseed + 1, proj, grad, sigma, T)[0][0])
        p, refined, tried = _refine(label, x0, at0 if np.isfinite(at0) else np.inf, cseed + 1, proj, grad, sigma, T)
        runs, steps = runs + tried + 1, steps + (tried + 1) * T
        val = min(float(per_run[i]), refined)
        if best is None or val < best["relative printed gap"]:
            p = p if refined < per_run[i] else x0
            best = {"relative printed gap": val, "class": cls, "lam (= L4*)": float(np.exp(p[0])),
                    "gamma/gamma_max": float(p[1]), "beta/lam": float(np.exp(p[2]))}
        if val < -1e-9 and found is None:
            found = dict(best, evidence="run", meaning=f"printed {label} fails on an actual run")
    return {"runs": runs, "steps": steps, "classes": tuple(classes), "closest": best, "found": found}


@lru_cache(maxsize=None)
def runs_search(label: str, seed: int = SEED) -> Search:
    """The printed chain step ``label`` evaluated at every step of actual STAM runs: the seeded
    quadratic runs of :func:`stam.theory.items.common.iterate_search`, then :func:`search` (Q binary and ternary, nonconvex G, stochastic gradients, a
    batched local refinement); what was tried, the counterexample found on a run (or None) and the
    smallest relative printed gap (how close the print came to failing)."""
    srch = iterate_search(seed)
    printed, _ = srch["gaps"][label]
    rel = printed / relative_scale(srch["q"])
    t, r = np.unravel_index(np.argmin(rel), rel.shape)
    T, R = rel.shape
    adv = search(label, seed)
    closest = {"relative printed gap": float(rel[t, r]), "class": "quadratic (iterate_search)", "run": int(r),
               "t": int(t), "L4*": float(srch["inst"]["lam"][r])}
    if adv["closest"] is not None and adv["closest"]["relative printed gap"] < closest["relative printed gap"]:
        closest = adv["closest"]
    return Search(
        method=f"seeded (seed {seed}): {R} random deterministic runs of {T} steps through stam.algorithm.stam_step, "
               f"then {adv['runs']} adversarial runs (random, then a batched local search from the most violated per class; "
               f"stam.theory.adversary); the printed {label} evaluated at every step",
        classes=("G = (a/2)||y - g0||^2 in R^2, H = (lam/2)||x - y||^2 (L4* = lam in [0.2, 6]), "
                 "F = (mu/2)||u - c||^2, gamma < gamma_max, beta/lam in [0.5, 50]",) + adv["classes"],
        instances=R + adv["runs"], steps=R * T + adv["steps"], found=chain_counterexample(label, seed) or adv["found"],
        closest=rounded(closest))
