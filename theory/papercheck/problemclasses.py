"""The classes of problems the adversarial search (:mod:`stam.theory.papercheck.chainsearch`) runs STAM on: the sets ``Q`` of
``F = I_Q`` (:data:`SETS`), the gradients of ``G`` (:data:`GRADIENTS`), and the couplings ``H``, quadratic or
``(lam/2)||x - y||^2 + kappa sum_i phi(alpha x_i + b y_i)`` with ``phi`` log-cosh or softplus (:data:`PHI`), their
derivatives in sympy (:func:`coupling_derivatives`) and their exact constants (:class:`SmoothCoupling`), on boxes of
parameters (:data:`COUPLINGS`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy as sp

from stam.theory.symbolic.stamruns import DerivedCoupling, scaled_binary_projection

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
    crit = [c for c in sp.solve(sp.factor(sp.numer(sp.together(d3.rewrite(sp.exp)))), t) if c.is_real]  # factored first: 6x faster
    # phi'' -> 0 at +-infinity (both phi are asymptotically linear; tests/test_theory_adversary.py takes the
    # limits in sympy): with its values at the critical points, the range of phi''
    cands = [sp.nsimplify(sp.simplify(d2.subs(t, c))) for c in crit] + [sp.Integer(0)]
    sup2, inf2 = sp.Max(*cands), sp.Min(*cands)
    blocks = {key: sp.lambdify((lam, kap, al, b, p2), e, "numpy") for key, e in hess.items()}
    return {"grad_x": grads[x], "grad_y": grads[y], "hess": hess, "sup phi''": sup2, "inf phi''": inf2,
            "symbols": (lam, kap, al, b, p1, p2), "phi''": d2, "t": t, "blocks": blocks}


class SmoothCoupling:
    """``H(x, y) = (lam/2)||x - y||^2 + kappa sum_i phi(alpha x_i + b y_i)`` for
    :mod:`stam.steps` on numpy arrays (each parameter one value per run, shape ``(R,)``)."""

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
            nl = ga * self.phi1(w)
            return v - z + gl * (v - y) + nl, 1 + gl + gk * self.phi2(w), nl

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


class DerivedQuadraticCoupling(DerivedCoupling):
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
                  lambda p: DerivedQuadraticCoupling(np.exp(p[:, 0]))),
    CouplingClass("H = (lam/2)||x - y||^2 + kappa sum log cosh(alpha x_i + b y_i) (lam in [0, 5], kappa in [-10, 10], "
                  "alpha in [0.05, 3], b in [-5, 5])", (0.0, -10.0, np.log(0.05), -5.0), (5.0, 10.0, np.log(3.0), 5.0),
                  _smooth("log-cosh")),
    CouplingClass("H = (lam/2)||x - y||^2 + kappa sum softplus(alpha x_i + b y_i) (same box)",
                  (0.0, -10.0, np.log(0.05), -5.0), (5.0, 10.0, np.log(3.0), 5.0), _smooth("softplus")),
)


__all__ = ["SETS", "GRADIENTS", "PHI", "coupling_derivatives", "SmoothCoupling", "DerivedQuadraticCoupling", "CouplingClass",
           "COUPLINGS"]
