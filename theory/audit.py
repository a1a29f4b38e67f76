"""``stam paper-check``: the paper audit.

For each audited item the printed closed form is compared with the one derived in
:mod:`stam.theory.constants` / :mod:`stam.theory.chain`; where they differ, a seeded search
finds a concrete counterexample (numbers).  Verdicts:

- ``ok``: the print equals (or is implied by) the derivation;
- ``misprint``: a slip in writing down a formula whose own derivation gives another one (the
  argument is sound once the formula is corrected; e.g. a wrong power or denominator);
- ``error``: a step that does not follow from its premises (the statement needs a different
  constant; the correction changes what the toolkit computes).

Counterexamples on iterates use tiny deterministic STAM runs on the instance
``G(y) = (a/2)||y - g0||^2``, ``H = (lam/2)||x - y||^2``, ``F(u) = (mu/2)||u - c||^2`` in R^2,
with the updates of Algorithm 1 for this H derived in sympy
(:func:`stam.theory.constants.network_updates`; the u-step is the same prox with
``(lam, y) -> (mu, c)``), so that ``stam paper-check`` needs no torch; a test replays them
through :func:`stam.algorithm.stam_step`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np
import sympy as sp

from stam.theory import chain
from stam.theory import constants as k
from stam.theory import numeric as num
from stam.theory import symbols as s

SEED = 20240601


@dataclass
class Finding:
    label: str
    printed: str
    derived: str
    verdict: str  # ok | misprint | error
    counterexample: dict | None
    note: str = ""

    def as_json(self) -> dict:
        d = asdict(self)
        d.pop("note")
        return d


# --------------------------------------------------------------------------------------------
# display helpers
# --------------------------------------------------------------------------------------------

_DISPLAY = {
    s.L2: "(L2*)", s.L3: "(L3*)", s.L4: "(L4*)", s.L5: "(L5*)", s.L1: "L1", s.A0: "A0", s.B0: "B0", s.C0: "C0",
    s.delta0: "delta0", s.M0: "M0'", s.eps: "eps", s.gap: "Delta_GH", s.delta_inf: "Delta_inf",
    s.K1: "K1", s.K2: "K2", s.lam: "lam",
}


def pretty(expr) -> str:
    if isinstance(expr, str):
        return expr
    sub = {sym: sp.Symbol(name) for sym, name in _DISPLAY.items() if sym in expr.free_symbols}
    return sp.sstr(expr.subs(sub))


def _r(x, digits=6):
    """Round for the report (floats, arrays, nested)."""
    if isinstance(x, dict):
        return {key: _r(v, digits) for key, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_r(v, digits) for v in x]
    if isinstance(x, np.ndarray):
        return _r(x.tolist(), digits)
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


class _DerivedOps:
    """The operators of the audit's instances for :mod:`stam.algorithm`, on numpy arrays:
    ``H = (lam/2)||x - y||^2`` with the x-step lambdified from the sympy derivation, and
    ``F(u) = (mu/2)||u - c||^2``, whose prox is the same x-step with ``(y, lam) -> (c, mu)``."""

    def __init__(self, inst: dict):
        self.lam = inst["lam"][:, None]
        self.mu = inst["mu"][:, None]
        self.c = inst["c"]
        _, self.x_step = derived_updates()

    def grad_y_H(self, x, y):
        return self.lam * (y - x)

    def prox_H(self, z, y, gamma):
        return self.x_step(y, z, gamma, self.lam)

    def prox_F(self, v, gamma):
        return self.x_step(self.c, v, gamma, self.mu)


def run_stam(inst: dict, T: int) -> dict:
    """T steps of Algorithm 1 (deterministic gradient ``a (y - g0)``), run by the one STAM
    update :func:`stam.algorithm.stam_step` on numpy arrays from the start rule of
    :func:`stam.algorithm.stam_init`; returns arrays ``y, x, u, z`` of shape (T+1, R, n) and ``zm1``."""
    from stam.algorithm import stam_init, stam_step

    gam, beta, a = (inst[key][:, None] for key in ("gamma", "beta", "a"))
    ops = _DerivedOps(inst)
    state = stam_init(inst["y0"], ops, gam, z_prev=inst["zm1"])
    traj = [state]
    for _ in range(T):
        state = stam_step(state, a * (state.y - inst["g0"]), ops, gam, beta)
        traj.append(state)
    out = {key: np.stack([getattr(st, key) for st in traj]) for key in ("y", "x", "u", "z")}
    out["zm1"] = inst["zm1"]
    return out


def _dot(a, b):
    return np.sum(a * b, axis=-1)


def chain_quantities(inst: dict, tr: dict) -> dict:
    """The scalar quantities of :mod:`stam.theory.chain` at every t = 0..T-1 (shape (T, R))."""
    lam, gam, mu = inst["lam"], inst["gamma"], inst["mu"]
    y, x, u, z = tr["y"], tr["x"], tr["u"], tr["z"]
    zprev = np.concatenate([tr["zm1"][None], z[:-1]])  # z^{t-1}
    dx, dy, dz = x[1:] - x[:-1], y[1:] - y[:-1], z[:-1] - zprev[:-1]
    d = -lam[:, None] * dy  # grad_x H(x^t, y^{t+1}) - grad_x H(x^t, y^t) = -lam (y^{t+1} - y^t)

    def phi(xx, uu, zz, yy):
        return (lam / 2 * _dot(xx - yy, xx - yy) + mu / 2 * _dot(uu - inst["c"], uu - inst["c"])
                + _dot(2 * xx - uu - zz, 2 * xx - uu - zz) / (2 * gam) - _dot(xx - zz, xx - zz) / (2 * gam)
                - _dot(uu - xx, uu - xx) / gam)

    return {
        "X": _dot(dx, dx), "Y": _dot(dy, dy), "Z": _dot(dz, dz), "P": _dot(dz, dx), "D": _dot(d, d),
        "Q": _dot(d, dx), "E": _dot(x[1:] - u[:-1], x[1:] - u[:-1]),
        "dPhi": phi(x[1:], u[1:], z[1:], y[1:]) - phi(x[:-1], u[:-1], z[:-1], y[1:]),
    }


_CHAIN_ARGS = (chain.X, chain.Y, chain.Z, chain.P, chain.D, chain.Q, chain.E, chain.dPhi,
               s.gamma, s.l, s.L2, s.L4, s.K1, s.K2)


@lru_cache(maxsize=None)
def _gap_functions():
    out = {}
    for st in chain.steps():
        out[st.label] = tuple(sp.lambdify(_CHAIN_ARGS, e, "numpy") for e in (st.printed, st.derived))
    return out


def chain_gaps(inst: dict, q: dict) -> dict:
    """label -> (printed gap, derived gap), arrays (T, R); a gap < 0 means the inequality fails."""
    lam, gam = inst["lam"], inst["gamma"]
    c_net = num.quadratic_coupling(lam)
    args = (q["X"], q["Y"], q["Z"], q["P"], q["D"], q["Q"], q["E"], q["dPhi"],
            gam, -lam, lam, lam, num.K1(gam, c_net), num.K2(gam, c_net))
    return {label: (fp(*args) + 0 * q["X"], fd(*args) + 0 * q["X"]) for label, (fp, fd) in _gap_functions().items()}


def _scale(q):
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


def _counterexample(violated: bool, inst, tr, r, t, fields: dict) -> dict | None:
    """``None`` if nothing is violated, else the replayable instance of run r at step t with ``fields``."""
    if not violated:
        return None
    ce = _instance_record(inst, tr, r, t)
    ce.update(_r(fields))
    return ce


def _instance_record(inst, tr, r, t) -> dict:
    """The numbers a reader needs to replay run r around step t."""
    pick = lambda v: v[r] if np.ndim(v) == 1 else v[r]  # noqa: E731
    zprev = tr["zm1"][r] if t == 0 else tr["z"][t - 1, r]
    return _r({
        "instance": {"G": "(a/2)||y-g0||^2", "H": "(lam/2)||x-y||^2", "F": "(mu/2)||u-c||^2",
                     **{key: pick(inst[key]) for key in ("a", "g0", "lam", "mu", "c", "gamma", "beta", "y0", "zm1")}},
        "t": t,
        "iterates": {"y^t": tr["y"][t, r], "y^{t+1}": tr["y"][t + 1, r], "x^t": tr["x"][t, r],
                     "x^{t+1}": tr["x"][t + 1, r], "u^t": tr["u"][t, r], "z^{t-1}": zprev, "z^t": tr["z"][t, r]},
    })


def chain_counterexample(label: str, seed: int = SEED) -> dict | None:
    """The most violated (relative to the size of the terms) printed step ``label`` over the
    seeded search, with the printed and derived gaps there; None if the print never fails."""
    srch = iterate_search(seed)
    printed, derived = srch["gaps"][label]
    rel = printed / _scale(srch["q"])
    t, r = np.unravel_index(np.argmin(rel), rel.shape)
    if rel[t, r] >= -1e-9:
        return None
    rec = _instance_record(srch["inst"], srch["traj"], r, t)
    rec["quantities"] = _r({key: v[t, r] for key, v in srch["q"].items()})
    rec["printed_gap"] = _r(printed[t, r])
    rec["derived_gap"] = _r(derived[t, r])
    rec["meaning"] = f"printed {label} written as gap >= 0 is negative here; the derived one holds"
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
    hyps = {name: sp.lambdify(_CHAIN_ARGS + (chain.sx, chain.sy), e, "numpy")(*args, np.sqrt(X), np.sqrt(Y)) + 0 * X
            for name, (e, _) in chain.HYPOTHESES.items()}
    fp, fd = _gap_functions()[label]
    pg, dg = fp(*args) + 0 * X, fd(*args) + 0 * X
    valid = (k1 > 0) & (np.abs(P) <= nz + 1e-12) & np.all([h > -1e-9 for h in hyps.values()], axis=0) & (pg < 0)
    if not valid.any():
        return None
    i = int(np.argmin(np.where(valid, pg, np.inf)))
    return _r({"L2*": L2[i], "L4*": L4[i], "l": l[i], "gamma": gam[i], "K1": k1[i],
               "vectors": {"x^{t+1}-x^t": [1.0, 0.0], "y^{t+1}-y^t": [-1 / L4[i], 0.0], "d": [-1.0, 0.0],
                           "z^t-z^{t-1}": [P[i], dz2[i]]},
               "dPhi": dPhi[i], "premise_gaps": {key: h[i] for key, h in hyps.items()},
               "printed_gap": pg[i], "derived_gap": dg[i],
               "meaning": f"all premises of the proof hold (gaps >= 0) but the printed {label} fails: "
                          "the step is not implied (no violation on actual STAM iterates was found)"})


# --------------------------------------------------------------------------------------------
# the audited items
# --------------------------------------------------------------------------------------------


def item_threshold(seed: int = SEED) -> Finding:
    thr = k.gamma_threshold()
    rng = np.random.default_rng(seed)
    L2 = np.round(rng.uniform(0.05, 4, 1000), 2)
    l = np.round(rng.uniform(-L2, 2), 2)
    c = num.Constants(L1=None, L2=L2, L3=0, L4=0, L5=0, l=l)
    exact, printed = num.gamma_threshold(c), num.gamma_threshold(c, as_printed=True)
    hits = np.flatnonzero(printed > exact * 1.01)
    ce = None
    if hits.size:
        i = int(hits[0])
        g = float(f"{(exact[i] + printed[i]) / 2:.4g}")
        ci = num.Constants(L1=None, L2=float(L2[i]), L3=0, L4=0, L5=0, l=float(l[i]))
        ce = _r({"L2*": L2[i], "l": l[i], "printed_threshold": printed[i], "exact_threshold": exact[i], "gamma": g,
                 "K1(gamma)": float(num.K1(g, ci)),
                 "meaning": "gamma below the printed threshold with K1(gamma) <= 0"})
    b_def = f"  with b = {pretty(thr['b'])}"
    return Finding(
        "Rem=09836 (threshold of K1 > 0)", pretty(thr["printed_in_b"]) + b_def,
        pretty(thr["root_in_b"]) + b_def + " (positive root of 4 gamma K1) = " + pretty(thr["stable"])
        + "; at L2*=0: " + pretty(thr["at_L2_zero"]), "misprint", ce,
        "denominator 10 L2* should be 10 (L2*)^2 (agree only at L2* = 1); the print is undefined at L2* = 0. "
        "K1 > 0 implies gamma*l < 1/10, so the strong convexity of eq260 holds.",
    )


def item_k1() -> Finding:
    derived = k.K1_expr()
    same_k1 = sp.simplify(chain.K1_PRINTED_K1 - derived) == 0
    same_36 = sp.simplify(chain.K1_PRINTED_EQ36 - derived) == 0
    return Finding("k1 vs eq36 (K1)", pretty(chain.K1_PRINTED_K1) + "  |  eq36: " + pretty(chain.K1_PRINTED_EQ36),
                   pretty(derived), "ok" if same_k1 and same_36 else "error", None,
                   "eq. k1, Lemma par2 and eq36 give the same K1.")


_CHAIN_ORIGIN = "eq25"


def item_chain(seed: int = SEED) -> list[Finding]:
    out = []
    for st in chain.steps():
        cmp = chain.compare(st.printed, st.derived, seed=seed)
        follows = chain.compare(st.printed, st.printed_from_printed, seed=seed).verdict in ("same", "weaker")
        if cmp.verdict in ("same", "weaker"):
            verdict, ce, note = "ok", None, f"derived by: {st.rule}"
        else:
            verdict = "error"
            ce = chain_counterexample(st.label, seed) or premise_witness(st.label, seed)
            origin = ("follows from the printed predecessors: error propagated from eq25" if follows
                      else "the error enters here: (Hx-ylip) gives (L4*)^2 ||dy||^2, not L4* ||dy||^2")
            note = f"{origin}; printed - derived = {pretty(cmp.residual)} (derived by: {st.rule})"
        out.append(Finding(st.label, pretty(st.printed) + " >= 0", pretty(st.derived) + " >= 0", verdict, ce, note))
    return out


def item_K3(seed: int = SEED) -> Finding:
    printed, derived = k.K3_printed_expr(False), k.K3_expr(False)
    same = sp.simplify(printed - derived) == 0
    ce = None
    if not same:
        lam_, gam = 2.0, 0.1
        c = num.quadratic_coupling(lam_)
        ce = _r({"lam": lam_, "gamma": gam, "K3_printed": float(num.K3(gam, c, True)),
                 "K3_derived": float(num.K3(gam, c)),
                 "eq39": chain_counterexample("eq39", seed) or premise_witness("eq39", seed),
                 "meaning": "with the printed K3, eq39 is not implied by the premises of its proof"})
    return Finding("K3 (eq39), M = 2 K3", pretty(printed), pretty(derived), "ok" if same else "error", ce,
                   "M = 2 K3 (eq45 -> eq46) is ok; K3 inherits eq25's (L4*)^2.")


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


def item_es_lemma(seed: int = SEED) -> Finding:
    rng = np.random.default_rng(seed)
    ce = None
    for _ in range(2000):
        N = int(rng.integers(2, 5))
        b = int(rng.integers(1, N))  # b < N: a genuinely random minibatch
        a = np.round(rng.uniform(0.01, 2, N), 2)
        cc = np.round(rng.normal(0, 1, N), 2)
        lam = float(np.round(rng.uniform(0.1, 5), 2))
        x, y = (float(v) for v in np.round(rng.normal(0, 2, 2), 2))
        e = es_lemma_instance(a, cc, lam, x, y, b)
        A_p, A_d = float(num.g.es_lemma_A_printed(lam, e["m"])), float(num.g.es_lemma_A(lam, e["m"]))
        rhs_p = 2 * A_p * e["excess"] + 2 * A_p * e["delta_inf"]
        rhs_d = 2 * A_d * e["excess"] + 2 * A_d * e["delta_inf"]
        if e["lhs"] > rhs_p * (1 + 1e-9) + 1e-12:
            ce = _r({"N": N, "b": b, "G_i": "(a_i/2)(y - c_i)^2", "a_i": a, "c_i": cc,
                     "H": "(lam/2)(x-y)^2", "lam": lam, "x": x, "y": y,
                     "E||g~ + grad_y H||^2 (enumerated)": e["lhs"], "printed 2A(...)+C": rhs_p,
                     "derived 2A(...)+C": rhs_d, "printed A": A_p, "derived A": A_d,
                     "meaning": "the ES inequality of Lemma es-lemma fails with the printed A"})
            break
    esl = k.es_lemma()
    return Finding(
        "eq101 (Lemma es-lemma A, C)",
        "A = " + pretty(k.ES_LEMMA_A_PRINTED) + ", C = 2 A Delta_inf   (m = max_i L1^i E[v_i^2])",
        f"A = {pretty(esl['A'])}, C = {pretty(esl['C'])}; E[v_i^2] = {pretty(k.ev2_nice_without_replacement())} "
        f"(b-nice), {pretty(k.ev2_with_replacement())} (with replacement)",
        "error", ce,
        "eq101 line 2 -> 3: (4/N) sum [m g_i + L3* h] <= 4 max(m, L3*) (1/N) sum (g_i + h), not (4m + L3*)(...).",
    )


def item_es_gh(seed: int = SEED) -> Finding:
    """Lemma ES-GH: derived constants equal the print; no violation on random instances with an
    enumerated estimator (G = (1/N) sum G_i, b-nice) whose A0, B0, C0 are computed exactly."""
    esgh = k.es_gh()
    printed_A = sp.Max(2 * s.A0 + 2 * s.B0 * s.L1, 2 * s.L3)
    printed_C = 2 * printed_A * s.gap + 2 * s.C0
    same = sp.simplify(esgh["A"] - printed_A) == 0 and sp.simplify(esgh["C"] - printed_C) == 0
    return Finding("Lemma ES-GH (gh-es)", f"A = {pretty(printed_A)}, C = {pretty(printed_C)}",
                   f"A = {pretty(esgh['A'])}, C = {pretty(esgh['C'])}", "ok" if same else "error", None,
                   "Young, eq. (422), Lemma Lip-lemma; property-tested in tests/test_theory_es.py.")


def stationarity_terms(srch: dict) -> dict:
    """Per (t, r): eta_t, the two terms of the stationarity measure and ||z^t - z^{t-1}||^2."""
    inst, tr = srch["inst"], srch["traj"]
    lam, mu, a, gam = (inst[key][:, None] for key in ("lam", "mu", "a", "gamma"))
    y, x, u, z = (tr[key][:-1] for key in ("y", "x", "u", "z"))
    zprev = np.concatenate([tr["zm1"][None], tr["z"][:-2]])
    gG = a * (y - inst["g0"])
    eta = _dot(gG + lam * (y - x), gG + lam * (y - x))
    g_u = _dot(gG + lam * (y - u), gG + lam * (y - u))
    dist2 = _dot(lam * (u - y) + mu * (u - inst["c"]), lam * (u - y) + mu * (u - inst["c"]))
    Z = _dot(z - zprev, z - zprev)
    return {"eta": eta, "grad_u": g_u, "dist2": dist2, "Z": Z}


def item_eq403(seed: int = SEED) -> Finding:
    srch = iterate_search(seed)
    st = stationarity_terms(srch)
    lam, gam = srch["inst"]["lam"], srch["inst"]["gamma"]
    lhs = st["grad_u"] + st["dist2"]
    printed = 2 * st["eta"] + 2 * (st["Z"] / gam) ** 2 + 4 * lam**2 * st["Z"]
    derived = 2 * st["eta"] + 2 * st["Z"] / gam**2 + 4 * lam**2 * st["Z"]
    rel = (printed - lhs) / (1 + lhs)
    t, r = np.unravel_index(np.argmin(rel), rel.shape)
    ce = _counterexample(rel[t, r] < 0, srch["inst"], srch["traj"], r, t,
                         {"LHS": lhs[t, r], "printed middle line": printed[t, r], "derived middle line": derived[t, r],
                          "meaning": "LHS of eq403 exceeds its printed middle line"})
    return Finding("eq403", "2 eta_t + 2 E(||z^t-z^{t-1}||^2/gamma)^2 + 2((L2*)^2+(L5*)^2) E||z^t-z^{t-1}||^2",
                   "2 eta_t + 2 E(||z^t-z^{t-1}||/gamma)^2 + 2((L2*)^2+(L5*)^2) E||z^t-z^{t-1}||^2 "
                   "<= 2 eta_t + 4 E(||z^t-z^{t-1}||/gamma)^2", "misprint", ce,
                   "the last line of eq403 (and Theorem conv) is right; only the middle line squares the norm twice.")


def item_eq52(seed: int = SEED) -> Finding:
    """With ``T = 1`` the min over t is the value at t = 0.  All updates are affine in the data
    ``(g0, c, y0, z^{-1})`` with no constant term, so scaling the data by ``s`` scales squared
    terms by ``s^2`` and ``dist`` by ``s``: a small enough ``s`` breaks the printed line."""
    srch = iterate_search(seed)
    st = stationarity_terms(srch)
    gam = srch["inst"]["gamma"]
    dist, excess = np.sqrt(st["dist2"][0]), 2 * (st["eta"][0] + 2 * st["Z"][0] / gam**2) - st["grad_u"][0]
    ratio = np.where(excess > 0, dist / np.maximum(excess, 1e-300), np.inf)  # violated iff s < ratio
    r = int(np.argmax(np.where(np.isfinite(ratio), ratio, -1)))
    scale = float(f"{0.5 * min(ratio[r], 1.0):.1g}")
    one = {key: (v[r:r + 1] * (scale if key in ("g0", "c", "y0", "zm1") else 1.0)) for key, v in srch["inst"].items()}
    tr = run_stam(one, 1)
    st1 = stationarity_terms({"inst": one, "traj": tr})
    lhs_printed = float(st1["grad_u"][0, 0] + np.sqrt(st1["dist2"][0, 0]))
    lhs_derived = float(st1["grad_u"][0, 0] + st1["dist2"][0, 0])
    rhs = float(2 * (st1["eta"][0, 0] + 2 * st1["Z"][0, 0] / one["gamma"][0] ** 2))
    ce = _counterexample(lhs_printed > rhs, one, tr, 0, 0,
                         {"T": 1, "data scaled by": scale, "printed LHS (with dist)": lhs_printed,
                          "derived LHS (with dist^2)": lhs_derived, "2 min[eta + 2 E(||dz||/gamma)^2]": rhs,
                          "meaning": "the first inequality of eq52 fails with dist in place of dist^2"})
    return Finding("eq52", "min_t [E||grad G + grad_y H(u^t,y^t)||^2 + E dist(0, ...)] <= ...",
                   "min_t [E||grad G + grad_y H(u^t,y^t)||^2 + E dist^2(0, ...)] <= 2 (1+(L+M)A/beta^2)^T/T "
                   "beta (delta0+M0') + (L+M)C/beta", "misprint", ce,
                   "Theorem conv states dist^2 (correct); eq52 drops the square.")


def item_beta(seed: int = SEED) -> Finding:
    bc = k.beta_conditions()
    c = num.quadratic_coupling(0.5, L1=1.0, A=1.0, C=0.1)
    delta0, M0, eps = 2.3, 0.0, 0.1
    r = num.recommend(c, delta0, M0, eps)
    T = r["T_min"]
    bounds = num.beta_lower_bounds(T, r["gamma"], c, eps)
    beta_p = 1.01 * min(bounds.values())
    # log10 of Theorem conv's RHS, 2 (1+q)^T beta D / T + (L+M) C / beta, without overflow
    LM = c.L + r["M"]
    q = LM * c.A / beta_p**2
    log_rhs = np.logaddexp(T * np.log1p(q) + np.log(2 * beta_p * (delta0 + M0) / T), np.log(LM * c.C / beta_p))
    rep = num.check(r["gamma"], beta_p, c, T=T, eps=eps, delta0=delta0, M0=M0)
    ce = _r({"constants": {"lam": 0.5, "L1": 1.0, "A": 1.0, "C": 0.1, "delta0": delta0, "M0'": M0, "eps": eps},
             "gamma": r["gamma"], "T": T, "beta_bounds": bounds, "beta = 1.01 min": beta_p,
             "log10 Theorem conv RHS": float(log_rhs / np.log(10)), "log10 eps^2": float(np.log10(eps**2)), "violated": [v["condition"] for v in rep["violations"]],
             "meaning": "beta > min{...} holds but the bound of Theorem conv exceeds eps^2"})
    return Finding("conv-rate beta conditions", "beta > min{sqrt((L+M)AT), 2K2/K1, 2(L+M)C/eps^2}",
                   "beta >= max{" + ", ".join(pretty(v) for v in bc.values()) + "}", "misprint", ce,
                   "the proof (eq700, eq51, eq702) needs all three bounds: max, not min.")


def item_T() -> Finding:
    derived = k.T_lower_bounds()
    printed_terms = [12 * (s.L + s.M) * (s.delta0 + s.M0) / s.eps**2 * f for f in
                     (12 * (s.delta0 + s.M0) * s.A / s.eps**2, 2 * s.K2 / (s.K1 * (s.L + s.M)), 2 * s.C / s.eps**2)]
    same = all(sp.simplify(p - d) == 0 for p, d in zip(printed_terms, derived.values()))
    rate = k.T_min_rate()["limit"]
    return Finding("eq704 -> eq705 (T bound)", pretty(k.T_MIN_PRINTED),
                   "max{" + ", ".join(pretty(v) for v in derived.values()) + "};  lim eps^4 T_min = " + pretty(rate),
                   "ok" if same else "error", None,
                   "eq704's first bound has T on both sides; squared out it is eq705's first term. T_min = O(eps^-4).")


def item_stamm() -> Finding:
    nu = k.network_updates()
    sy = nu["symbols"]
    dW = sp.simplify(nu["printed"]["W"] - nu["derived"]["W"])
    same_U = sp.simplify(nu["printed"]["U"] - nu["derived"]["U"]) == 0
    ok_if_fixed = sp.simplify(dW.subs({sy["W~^t"]: sy["U^t"], sy["gradL(W^T)"]: sy["gradL(W^t)"]})) == 0
    # numbers: one W-step, reading W~^t as the quantised iterate V^t
    lam, beta = 0.5, 1000.0
    W, U, V, g = 0.3, 0.1, 0.25, 0.02
    derived_W = ((beta - lam) * W + lam * U - g) / beta
    printed_W = ((beta - lam) * W + lam * V - g) / beta
    ce = _r({"lam": lam, "beta": beta, "W^t": W, "U^t (= x^t)": U, "V^t (quantised, read as W~^t)": V,
             "gradL(W^t)": g, "W^{t+1} Algorithm 1": derived_W, "W^{t+1} printed": printed_W,
             "meaning": "the printed W-update differs from Algorithm 1's y-step (eq. algy) unless W~^t = U^t; "
                        "grad L(W^T) would need the last iterate"})
    derived = (f"W^{{t+1}} = {pretty(nu['derived']['W'])}; U^{{t+1}} = {pretty(nu['derived']['U'])}; "
               f"V^{{t+1}} = {nu['derived']['V']}; X^{{t+1}} = {nu['derived']['X']}")
    printed = (f"W^{{t+1}} = {pretty(nu['printed']['W'])}; U^{{t+1}} = {pretty(nu['printed']['U'])}; "
               f"V^{{t+1}} = {nu['printed']['V']}; X^{{t+1}} = {nu['printed']['X']}")
    verdict = "misprint" if (same_U and ok_if_fixed) else "error"
    return Finding("alg:stamm vs Algorithm 1", printed, derived, verdict, ce,
                   "W-update: lambda*U^t (x^t) for lambda*W~^t and grad L(W^t) for grad L(W^T); U, V, X updates agree.")


def item_network_constants() -> Finding:
    qc = k.quadratic_coupling()
    return Finding("network constants (H = (lam/2)||x-y||^2)", "L2* = L3* = L4* = L5* = lam (not printed), l = L2*",
                   ", ".join(f"{key} = {pretty(v)}" for key, v in qc.items()), "ok", None,
                   "the paper's 'one can always take l = L2*' is valid but not the smallest; l = -lam is.")


@lru_cache(maxsize=None)
def findings(seed: int = SEED) -> tuple[Finding, ...]:
    """All audited items, in the order of the paper (computed once per process)."""
    return (
        item_es_lemma(seed), item_es_gh(seed), item_k1(), item_threshold(seed), *item_chain(seed), item_K3(seed),
        item_eq403(seed), item_eq52(seed), item_beta(seed), item_T(), item_stamm(), item_network_constants(),
    )


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def _short(ce: dict | None) -> str:
    if ce is None:
        return ""
    keep = {key: v for key, v in ce.items() if key not in ("instance", "iterates", "quantities", "eq39", "vectors",
                                                           "premise_gaps")}
    if "instance" in ce:
        inst = ce["instance"]
        keep = {"lam": inst["lam"], "gamma": inst["gamma"], "beta": inst["beta"], "t": ce.get("t"), **keep}
    return "; ".join(f"{key}={v}" for key, v in keep.items() if key != "t" or v is not None)


def table(items, as_printed: bool = False) -> str:
    lines = []
    w = max(len(f.label) for f in items)
    lines.append(f"{'label':<{w}}  {'verdict':<8}  printed  ->  derived")
    lines.append("-" * (w + 40))
    for f in items:
        lines.append(f"{f.label:<{w}}  {f.verdict:<8}  printed: {f.printed}")
        lines.append(f"{'':<{w}}  {'':<8}  derived: {f.derived}")
        if f.note:
            lines.append(f"{'':<{w}}  {'':<8}  note:    {f.note}")
        if f.counterexample is not None:
            lines.append(f"{'':<{w}}  {'':<8}  counterexample: {_short(f.counterexample)}")
    counts = {v: sum(f.verdict == v for f in items) for v in ("ok", "misprint", "error")}
    lines.append("")
    lines.append(f"{len(items)} items: {counts['ok']} ok, {counts['misprint']} misprint, {counts['error']} error. "
                 "The toolkit computes with the derived forms (stam stepsize --as-printed uses the printed ones).")
    if as_printed:
        lines += ["", _as_printed_effect()]
    return "\n".join(lines)


def brief(items) -> str:
    """One line per item: label, verdict and what is wrong (the note's first clause)."""
    w = max(len(f.label) for f in items)
    lines = [f"{'label':<{w}}  {'verdict':<8}  counterexample  note"]
    for f in items:
        note = f.note.split(" (derived by")[0]
        lines.append(f"{f.label:<{w}}  {f.verdict:<8}  {'found' if f.counterexample else '-':<14}  {note}")
    return "\n".join(lines)


def _as_printed_effect() -> str:
    """What the printed forms change in ``stam stepsize`` for a reference network setting."""
    c = num.quadratic_coupling(0.5, L1=1.0, A=1.0, C=0.1)
    a, b = num.recommend(c, 2.3, 0.0, 0.1), num.recommend(c, 2.3, 0.0, 0.1, as_printed=True)
    rows = [f"Effect of the printed forms on stam stepsize (H = (0.5/2)||x-y||^2, L1=1, A=1, C=0.1, "
            f"delta0+M0'=2.3, eps=0.1):", f"  {'':<10} {'derived':>14} {'as printed':>14}"]
    for key in ("gamma_max", "gamma", "K3", "M", "beta_min", "T_min"):
        rows.append(f"  {key:<10} {a[key]:>14.6g} {b[key]:>14.6g}")
    return "\n".join(rows)


def result(items) -> dict:
    """The ``paper-check`` result (what ``stam paper-check --out`` writes) of the findings ``items``."""
    from stam.io import provenance

    return {"kind": "paper-check", "provenance": provenance(), "items": [f.as_json() for f in items]}


def run(args) -> int:
    """Handler of ``stam paper-check``."""
    from stam.io import atomic_write_json, dumps

    items = findings()
    rows = [f.as_json() for f in items]
    if getattr(args, "out", None):
        atomic_write_json(args.out, result(items))
    if args.json:
        print(dumps(rows))
    elif getattr(args, "brief", False):
        print(brief(items) + ("\n\n" + _as_printed_effect() if args.as_printed else ""))
    else:
        print(table(items, as_printed=args.as_printed))
    return 0
