"""What the audit's items (:mod:`stam.theory.papercheck.items`), :mod:`stam.theory.papercheck.audit`, the adversarial search
(:mod:`stam.theory.papercheck.chainsearch`) and the Lyapunov search (:mod:`stam.theory.worstcase.templates`) share: tiny STAM runs, seeded
searches, counterexample records, rounding and display (public names: nothing private is imported across modules;
``tests/test_layering.py`` checks it).  The items' own helpers are :mod:`stam.theory.papercheck.items.common`, which re-exports
these names.

Counterexamples on iterates use tiny deterministic STAM runs on the instance
``G(y) = (a/2)||y - g0||^2``, ``H = (lam/2)||x - y||^2``, ``F(u) = (mu/2)||u - c||^2`` in R^2,
with the updates of Algorithm 1 for this H derived in sympy
(:func:`stam.theory.symbolic.constants.network_updates`; the u-step is the same prox with
``(lam, y) -> (mu, c)``), run by :func:`stam.steps.stam_step`, so that ``stam paper-check``
needs no torch; a test replays them through :mod:`stam.operators` (torch).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import sympy as sp

from stam.steps import stam_init, stam_step
from stam.theory.symbolic import chain
from stam.theory.symbolic import constants as k
from stam.theory.symbolic import numeric as num
from stam.theory.symbolic import symbols as s

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
    """``H = (lam/2)||x - y||^2`` for :mod:`stam.steps` on numpy arrays (``lam`` per run,
    shape ``(R,)``), with the x-step lambdified from the sympy derivation; F's prox comes from a
    subclass (the audit's quadratic F here, a projection onto Q in :mod:`stam.theory.papercheck.problemclasses`)."""

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


def quadratic_run(inst: dict, T: int) -> dict:
    """T steps of Algorithm 1 (deterministic gradient ``a (y - g0)``), run by the one STAM
    update :func:`stam.steps.stam_step` on numpy arrays from the start rule of
    :func:`stam.steps.stam_init`; returns arrays ``y, x, u, z`` of shape (T+1, R, n) and ``zm1``."""
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
    """The scalar quantities of :mod:`stam.theory.symbolic.chain` at every t = 0..T-1 (shape (T, R))."""
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
    tr = quadratic_run(inst, T)
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


def scaled_binary_projection(U):
    """The printed closed form of eq. (0412) for the paper's Q of eq. (eq01), one layer per last
    axis: ``s = ||U||_1/n``, ``Z = sign U`` (+1 at 0); the projection onto Q read as closed
    (``s >= 0``; :mod:`stam.theory.papercheck.items.wellposed`)."""
    U = np.asarray(U, dtype=float)
    return np.mean(np.abs(U), axis=-1, keepdims=True) * np.where(U >= 0, 1.0, -1.0)
