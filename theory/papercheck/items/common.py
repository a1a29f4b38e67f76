"""The audit items' own helpers (premise witnesses, the instances of Lemma es-lemma, the stationarity terms of a
search); what they share with :mod:`stam.theory.papercheck.audit` and :mod:`stam.theory.papercheck.chainsearch` (tiny STAM runs, seeded
searches, counterexample records, rounding and display) is :mod:`stam.theory.symbolic.stamruns`, whose names are importable
from here too (public names: nothing private is imported across modules; ``tests/test_layering.py`` checks it).
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np
import sympy as sp

from stam.theory.symbolic import chain
from stam.theory.symbolic import numeric as num
from stam.theory.symbolic.stamruns import CHAIN_ARGS, SEED, dot, gap_functions, rounded


@lru_cache(maxsize=None)
def premise_witness(label: str, seed: int = SEED, tries: int = 3000) -> dict | None:
    """Explicit vectors in R^2 that satisfy every premise the proof of Lemma par2 uses up to
    ``label`` (eq. (eq23), (Hx-ylip), eq. (eq34), eq. (eq265) and (algz): ``E = ||dx - dz||^2``)
    with ``K1 > 0``, at which the printed ``label`` fails: the printed step is not implied.

    Construction: Young in eq. (eq24) and (Hx-ylip) tight (``dx = (1, 0)``, ``d = -dx``,
    ``dy = -dx / L4*``), eq. (eq23), eq. (eq34) and eq. (eq265) with equality; a seeded search
    over ``(gamma, l, L2*, L4*)`` (vectorised) picks the most violated point."""
    rng = np.random.default_rng(seed)
    L2 = np.round(rng.uniform(0, 2, tries), 2)
    L4 = np.round(rng.uniform(0.5, 4, tries), 2)
    l = np.round(rng.uniform(-L2, 1), 2)
    c = num.Constants(L1=None, L2=L2, L3=0, L4=L4, L5=0, l=l)
    gam = np.round(num.gamma_threshold(c) * rng.uniform(0.5, 0.999, tries), 4)
    X, Y, D, Q = np.ones(tries), 1 / L4**2, np.ones(tries), -np.ones(tries)
    P = gam * ((1 / gam - l) * X + Q)  # eq23 with equality
    nz = (1 + gam * L2) * np.sqrt(X) + gam * L4 * np.sqrt(Y)  # eq34 with equality
    dz2 = np.sqrt(np.maximum(nz**2 - P**2, 0.0))
    Z, E = nz**2, (1 - P) ** 2 + dz2**2
    dPhi = E / gam - (1 / gam - l) * X / 2  # eq265 with equality
    k1 = num.K1(gam, c)
    args = (X, Y, Z, P, D, Q, E, dPhi, gam, l, L2, L4, k1, num.K2(gam, c))
    hyps = {name: sp.lambdify(CHAIN_ARGS + (chain.sx, chain.sy), e, "numpy")(*args, np.sqrt(X), np.sqrt(Y)) + 0 * X
            for name, (e, _) in chain.HYPOTHESES.items()}
    fp, fd = gap_functions()[label]
    pg, dg = fp(*args) + 0 * X, fd(*args) + 0 * X
    valid = (k1 > 0) & (np.abs(P) <= nz + 1e-12) & np.all([h > -1e-9 for h in hyps.values()], axis=0) & (pg < 0)
    if not valid.any():
        return None
    i = int(np.argmin(np.where(valid, pg, np.inf)))
    return rounded({"L2*": L2[i], "L4*": L4[i], "l": l[i], "gamma": gam[i], "K1": k1[i],
               "vectors": {"x^{t+1}-x^t": [1.0, 0.0], "y^{t+1}-y^t": [-1 / L4[i], 0.0], "d": [-1.0, 0.0],
                           "z^t-z^{t-1}": [P[i], dz2[i]]},
               "dPhi": dPhi[i], "premise_gaps": {key: h[i] for key, h in hyps.items()},
               "printed_gap": pg[i], "derived_gap": dg[i], "evidence": "premises",
               "meaning": f"all premises of the proof hold (gaps >= 0) but the printed {label} fails: "
                          "the step is not implied (no violation on actual STAM iterates was found)"})


# --------------------------------------------------------------------------------------------
# shared by several items
# --------------------------------------------------------------------------------------------


def es_lemma_instance(a, cc, lam, x, y, b):
    """Exact E||g~ + grad_y H||^2 over b-nice sampling (all subsets of size b enumerated) for
    ``G_i = (a_i/2)(y - c_i)^2`` in R^1, ``H = (lam/2)(x - y)^2``; also the lemma's ingredients."""
    N = len(a)
    grads = a * (y - cc)
    gH = lam * (y - x)
    subsets = list(itertools.combinations(range(N), b))
    lhs = np.mean([(sum(grads[list(S)]) / b + gH) ** 2 for S in subsets])
    ystar = np.sum(a * cc) / np.sum(a)
    Ginf = float(np.mean(a / 2 * (ystar - cc) ** 2))
    G = float(np.mean(a / 2 * (y - cc) ** 2))
    H = lam / 2 * (x - y) ** 2
    delta_inf = Ginf  # (G+H)^inf = G^inf (x = y), G_i^inf = H^inf = 0
    m = float(np.max(a) * N / b)
    return {"lhs": float(lhs), "excess": G + H - Ginf, "delta_inf": delta_inf, "m": m}




def stationarity_terms(srch: dict) -> dict:
    """Per (t, r): eta_t, the two terms of the stationarity measure and ||z^t - z^{t-1}||^2."""
    inst, tr = srch["inst"], srch["traj"]
    lam, mu, a, gam = (inst[key][:, None] for key in ("lam", "mu", "a", "gamma"))
    y, x, u, z = (tr[key][:-1] for key in ("y", "x", "u", "z"))
    zprev = np.concatenate([tr["zm1"][None], tr["z"][:-2]])
    gG = a * (y - inst["g0"])
    eta = dot(gG + lam * (y - x), gG + lam * (y - x))
    g_u = dot(gG + lam * (y - u), gG + lam * (y - u))
    dist2 = dot(lam * (u - y) + mu * (u - inst["c"]), lam * (u - y) + mu * (u - inst["c"]))
    Z = dot(z - zprev, z - zprev)
    return {"eta": eta, "grad_u": g_u, "dist2": dist2, "Z": Z}
