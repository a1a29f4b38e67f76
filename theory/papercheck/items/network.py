"""Items of the network specialisation (Section 3): the updates eq. (alg:stamm) against Algorithm 1
and the constants of Assumption ass2 for ``H = (lam/2)||x - y||^2``."""

from __future__ import annotations

import sympy as sp

from stam.theory.symbolic import constants as k
from stam.theory.papercheck.items.common import rounded
from stam.theory.symbolic.stamruns import pretty
from stam.theory.papercheck.items.declare import Occurrence, Result, item


@item("alg:stamm vs Algorithm 1", covers=())
def stamm() -> Result:
    nu = k.network_updates()
    sy = nu["symbols"]
    dW = sp.simplify(nu["printed"]["W"] - nu["derived"]["W"])
    same_U = sp.simplify(nu["printed"]["U"] - nu["derived"]["U"]) == 0
    ok_if_fixed = sp.simplify(dW.subs({sy["W~^t"]: sy["U^t"], sy["gradL(W^T)"]: sy["gradL(W^t)"]})) == 0
    lam, beta = 0.5, 1000.0
    W, U, V, g = 0.3, 0.1, 0.25, 0.02
    derived_W = ((beta - lam) * W + lam * U - g) / beta
    printed_W = ((beta - lam) * W + lam * V - g) / beta
    ce = None
    if dW != 0:
        ce = rounded({"lam": lam, "beta": beta, "W^t": W, "U^t (= x^t)": U, "V^t (quantised, read as W~^t)": V,
                 "gradL(W^t)": g, "W^{t+1} Algorithm 1": derived_W, "W^{t+1} printed": printed_W,
                 "meaning": "the printed W-update differs from Algorithm 1's y-step (eq. algy) unless W~^t = U^t; "
                            "grad L(W^T) would need the last iterate"})
    derived = (f"W^{{t+1}} = {pretty(nu['derived']['W'])}; U^{{t+1}} = {pretty(nu['derived']['U'])}; "
               f"V^{{t+1}} = {nu['derived']['V']}; X^{{t+1}} = {nu['derived']['X']}")
    printed = (f"W^{{t+1}} = {pretty(nu['printed']['W'])}; U^{{t+1}} = {pretty(nu['printed']['U'])}; "
               f"V^{{t+1}} = {nu['printed']['V']}; X^{{t+1}} = {nu['printed']['X']}")
    return Result(printed, derived, ce,
                  (Occurrence("Algorithm 1 (algy, algx) in the paper's own names (W~^t = x^t = U^t, grad L(W^t))",
                              bool(same_U and ok_if_fixed)),),
                  note="W-update: lambda*U^t (x^t) for lambda*W~^t and grad L(W^t) for grad L(W^T); U, V, X updates agree.")


@item("network constants (H = (lam/2)||x-y||^2)", covers=())
def network_constants() -> Result:
    qc = k.quadratic_coupling()
    return Result("L2* = L3* = L4* = L5* = lam (not printed), l = L2*",
                  ", ".join(f"{key} = {pretty(v)}" for key, v in qc.items()), None,
                  note="the paper's 'one can always take l = L2*' is valid but not the smallest; l = -lam is.")
