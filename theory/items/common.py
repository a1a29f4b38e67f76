"""What the audit's items, :mod:`stam.theory.audit` and :mod:`stam.theory.adversary` share: tiny
STAM runs, seeded searches, counterexample records, rounding and display (public names: nothing
private is imported across modules; ``tests/test_layering.py`` checks it).

Counterexamples on iterates use tiny deterministic STAM runs on the instance
``G(y) = (a/2)||y - g0||^2``, ``H = (lam/2)||x - y||^2``, ``F(u) = (mu/2)||u - c||^2`` in R^2,
with the updates of Algorithm 1 for this H derived in sympy
(:func:`stam.theory.constants.network_updates`; the u-step is the same prox with
``(lam, y) -> (mu, c)``), run by :func:`stam.algorithm.stam_step`, so that ``stam paper-check``
needs no torch; a test replays them through :mod:`stam.operators` (torch).
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import numpy as np
import sympy as sp

from stam.algorithm import stam_init, stam_step
from stam.theory import chain
from stam.theory import constants as k
from stam.theory import numeric as num
from stam.theory import symbols as s

SEED = 20240601


# --------------------------------------------------------------------------------------------
# display helpers
# --------------------------------------------------------------------------------------------

DISPLAY_NAMES = {
    s.L2: "(L2*)", s.L3: "(L3*)", s.L4: "(L4*)", s.L5: "(L5*)", s.L1: "L1", s.A0: "A0", s.B0: "B0", s.C0: "C0",
    s.delta0: "delta0", s.M0: "M0'", s.eps: "eps", s.gap: "Delta_GH", s.delta_inf: "Delta_inf",
    s.K1: "K1", s.K2: "K2", s.lam: "lam",
}


def pretty(expr) -> str:
    if isinstance(expr, str):
        return expr
    if isinstance(expr, sp.Equality):  # sstr would write Eq(a, b)
        return f"{pretty(expr.lhs)} = {pretty(expr.rhs)}"
    sub = {sym: sp.Symbol(name) for sym, name in DISPLAY_NAMES.items() if sym in expr.free_symbols}
    return sp.sstr(expr.xreplace(sub))  # structural renaming: no re-evaluation (relations stay as printed)


def rounded(x, digits=6):
    """Round for the report (floats, arrays, nested)."""
    if isinstance(x, dict):
        return {key: rounded(v, digits) for key, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [rounded(v, digits) for v in x]
    if isinstance(x, np.ndarray):
        return rounded(x.tolist(), digits)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if not math.isfinite(x) or x == 0 else float(f"{x:.{digits}g}")
    if isinstance(x, np.integer):
        return int(x)
    return x


# --------------------------------------------------------------------------------------------
# tiny STAM runs (the derived updates of Algorithm 1 for H = (lam/2)||x-y||^2)
# --------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def derived_updates():
    """numpy functions ``y_step(y, x, grad_G, beta, lam)`` (eq. (algy)) and
    ``x_step(y1, z, gamma, lam)`` (eq. (algx)) lambdified from :func:`constants.network_updates`."""
    nu = k.network_updates()
    sy = nu["symbols"]
    y_step = sp.lambdify((sy["W^t"], sy["U^t"], sy["gradL(W^t)"], s.beta, s.lam), nu["derived"]["W"], "numpy")
    x_step = sp.lambdify((sy["W^{t+1}"], sy["X^t"], s.gamma, s.lam), nu["derived"]["U"], "numpy")
    return y_step, x_step


def random_instances(R: int, rng: np.random.Generator, n: int = 2) -> dict:
    """R random instances (columns of arrays): step sizes with K1 > 0 and the second condition."""
    lam = rng.uniform(0.2, 6.0, R)
    c_net = num.quadratic_coupling(lam)
    gamma = rng.uniform(0.05, 0.99, R) * num.gamma_max(c_net)
    return {
        "lam": lam, "gamma": gamma, "beta": lam * np.exp(rng.uniform(np.log(0.5), np.log(50), R)),
        "a": rng.uniform(0, 2, R), "g0": rng.normal(0, 3, (R, n)), "mu": np.exp(rng.uniform(np.log(1e-2), np.log(1e4), R)),
        "c": rng.normal(0, 3, (R, n)), "y0": rng.normal(0, 3, (R, n)), "zm1": rng.normal(0, 3, (R, n)),
    }


class DerivedCoupling:
    """``H = (lam/2)||x - y||^2`` for :mod:`stam.algorithm` on numpy arrays (``lam`` per run,
    shape ``(R,)``), with the x-step lambdified from the sympy derivation; F's prox comes from a
    subclass (the audit's quadratic F here, a projection onto Q in :mod:`stam.theory.adversary`)."""

    def __init__(self, lam):
        self.lam = lam[:, None]
        _, self.x_step = derived_updates()

    def grad_y_H(self, x, y):
        return self.lam * (y - x)

    def prox_H(self, z, y, gamma):
        return self.x_step(y, z, gamma, self.lam)


class QuadraticOps(DerivedCoupling):
    """The operators of the audit's instances: :class:`DerivedCoupling` and
    ``F(u) = (mu/2)||u - c||^2``, whose prox is the same x-step with ``(y, lam) -> (c, mu)``."""

    def __init__(self, inst: dict):
        super().__init__(inst["lam"])
        self.mu = inst["mu"][:, None]
        self.c = inst["c"]

    def prox_F(self, v, gamma):
        return self.x_step(self.c, v, gamma, self.mu)


def run_stam(inst: dict, T: int) -> dict:
    """T steps of Algorithm 1 (deterministic gradient ``a (y - g0)``), run by the one STAM
    update :func:`stam.algorithm.stam_step` on numpy arrays from the start rule of
    :func:`stam.algorithm.stam_init`; returns arrays ``y, x, u, z`` of shape (T+1, R, n) and ``zm1``."""
    gam, beta, a = (inst[key][:, None] for key in ("gamma", "beta", "a"))
    ops = QuadraticOps(inst)
    state = stam_init(inst["y0"], ops, gam, z_prev=inst["zm1"])
    traj = [state]
    for _ in range(T):
        state = stam_step(state, a * (state.y - inst["g0"]), ops, gam, beta)
        traj.append(state)
    out = {key: np.stack([getattr(st, key) for st in traj]) for key in ("y", "x", "u", "z")}
    out["zm1"] = inst["zm1"]
    return out


def dot(a, b):
    return np.sum(a * b, axis=-1)


def chain_quantities(inst: dict, tr: dict) -> dict:
    """The scalar quantities of :mod:`stam.theory.chain` at every t = 0..T-1 (shape (T, R))."""
    lam, gam, mu = inst["lam"], inst["gamma"], inst["mu"]
    y, x, u, z = tr["y"], tr["x"], tr["u"], tr["z"]
    zprev = np.concatenate([tr["zm1"][None], z[:-1]])  # z^{t-1}
    dx, dy, dz = x[1:] - x[:-1], y[1:] - y[:-1], z[:-1] - zprev[:-1]
    d = -lam[:, None] * dy  # grad_x H(x^t, y^{t+1}) - grad_x H(x^t, y^t) = -lam (y^{t+1} - y^t)

    def phi(xx, uu, zz, yy):
        return (lam / 2 * dot(xx - yy, xx - yy) + mu / 2 * dot(uu - inst["c"], uu - inst["c"])
                + dot(2 * xx - uu - zz, 2 * xx - uu - zz) / (2 * gam) - dot(xx - zz, xx - zz) / (2 * gam)
                - dot(uu - xx, uu - xx) / gam)

    return {
        "X": dot(dx, dx), "Y": dot(dy, dy), "Z": dot(dz, dz), "P": dot(dz, dx), "D": dot(d, d),
        "Q": dot(d, dx), "E": dot(x[1:] - u[:-1], x[1:] - u[:-1]),
        "dPhi": phi(x[1:], u[1:], z[1:], y[1:]) - phi(x[:-1], u[:-1], z[:-1], y[1:]),
    }


CHAIN_ARGS = (chain.X, chain.Y, chain.Z, chain.P, chain.D, chain.Q, chain.E, chain.dPhi,
               s.gamma, s.l, s.L2, s.L4, s.K1, s.K2)


@lru_cache(maxsize=None)
def gap_functions():
    out = {}
    for st in chain.steps():
        out[st.label] = tuple(sp.lambdify(CHAIN_ARGS, e, "numpy") for e in (st.printed, st.derived))
    return out


def chain_gaps(inst: dict, q: dict) -> dict:
    """label -> (printed gap, derived gap), arrays (T, R); a gap < 0 means the inequality fails."""
    lam, gam = inst["lam"], inst["gamma"]
    c_net = num.quadratic_coupling(lam)
    args = (q["X"], q["Y"], q["Z"], q["P"], q["D"], q["Q"], q["E"], q["dPhi"],
            gam, -lam, lam, lam, num.K1(gam, c_net), num.K2(gam, c_net))
    return {label: (fp(*args) + 0 * q["X"], fd(*args) + 0 * q["X"]) for label, (fp, fd) in gap_functions().items()}


def relative_scale(q):
    return 1.0 + q["X"] + q["Y"] + q["Z"] + np.abs(q["P"]) + q["E"] + np.abs(q["dPhi"])


@lru_cache(maxsize=None)
def iterate_search(seed: int = SEED, R: int = 2000, T: int = 25) -> dict:
    """A seeded search over R tiny STAM runs; returns the instances, trajectories, quantities,
    chain gaps and the stationarity terms of eq. (eq403)/eq. (eq52)."""
    rng = np.random.default_rng(seed)
    inst = random_instances(R, rng)
    tr = run_stam(inst, T)
    q = chain_quantities(inst, tr)
    return {"inst": inst, "traj": tr, "q": q, "gaps": chain_gaps(inst, q)}


def run_counterexample(violated: bool, inst, tr, r, t, fields: dict) -> dict | None:
    """``None`` if nothing is violated, else the replayable instance of run r at step t with ``fields``."""
    if not violated:
        return None
    ce = instance_record(inst, tr, r, t)
    ce.update(rounded(fields))
    ce["evidence"] = "run"
    return ce


def instance_record(inst, tr, r, t) -> dict:
    """The numbers a reader needs to replay run r around step t."""
    zprev = tr["zm1"][r] if t == 0 else tr["z"][t - 1, r]
    return rounded({
        "instance": {"G": "(a/2)||y-g0||^2", "H": "(lam/2)||x-y||^2", "F": "(mu/2)||u-c||^2",
                     **{key: inst[key][r] for key in ("a", "g0", "lam", "mu", "c", "gamma", "beta", "y0", "zm1")}},
        "t": t,
        "iterates": {"y^t": tr["y"][t, r], "y^{t+1}": tr["y"][t + 1, r], "x^t": tr["x"][t, r],
                     "x^{t+1}": tr["x"][t + 1, r], "u^t": tr["u"][t, r], "z^{t-1}": zprev, "z^t": tr["z"][t, r]},
    })


def chain_counterexample(label: str, seed: int = SEED) -> dict | None:
    """The most violated (relative to the size of the terms) printed step ``label`` over the
    seeded search, with the printed and derived gaps there; None if the print never fails."""
    srch = iterate_search(seed)
    printed, derived = srch["gaps"][label]
    rel = printed / relative_scale(srch["q"])
    t, r = np.unravel_index(np.argmin(rel), rel.shape)
    if rel[t, r] >= -1e-9:
        return None
    rec = instance_record(srch["inst"], srch["traj"], r, t)
    rec["quantities"] = rounded({key: v[t, r] for key, v in srch["q"].items()})
    rec["printed_gap"] = rounded(printed[t, r])
    rec["derived_gap"] = rounded(derived[t, r])
    rec["meaning"] = f"printed {label} written as gap >= 0 is negative here; the derived one holds"
    rec["evidence"] = "run"
    return rec


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


def scaled_binary_projection(U):
    """The printed closed form of eq. (0412) for the paper's Q of eq. (eq01), one layer per last
    axis: ``s = ||U||_1/n``, ``Z = sign U`` (+1 at 0); the projection onto Q read as closed
    (``s >= 0``; :mod:`stam.theory.items.wellposed`)."""
    U = np.asarray(U, dtype=float)
    return np.mean(np.abs(U), axis=-1, keepdims=True) * np.where(U >= 0, 1.0, -1.0)
