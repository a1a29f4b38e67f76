"""``stam paper-check``: the paper audit.

The items live in :mod:`stam.theory.items` (one small function per item, found through a
registry); each returns what the paper prints, what is derived in :mod:`stam.theory.constants` /
:mod:`stam.theory.chain` and a counterexample or None, and the verdict follows by one rule
(:func:`stam.theory.items.verdict`): ``ok``, ``misprint`` (the print fails on an instance but
the paper prints the derived form elsewhere: a slip), ``false`` (the print fails on an instance of
the stated class, for iterates on an actual STAM run, and the right form is printed nowhere),
``unproven`` (a witness satisfies every premise the proof step uses but is not reachable, and a
stated search over actual runs found no counterexample), ``gap`` (the proof uses something the
paper does not state) or ``failed to derive``; each names its evidence kind.
This module holds the machinery the items share (tiny STAM runs, seeded searches, rounding,
display) and the command's output.

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
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import sympy as sp

from stam.algorithm import stam_init, stam_step
from stam.io import atomic_write_json, dumps, provenance
from stam.theory import chain
from stam.theory import constants as k
from stam.theory import numeric as num
from stam.theory import symbols as s
from stam.theory.items import EVIDENCE, VERDICTS, evaluate, evidence, registry
from stam.theory.items.coverage import coverage, coverage_text, read_paper
from stam.theory.items.numbering import printed_numbers, printed_text
from stam.theory.mathml import latex, mathml

SEED = 20240601


@dataclass
class Finding:
    """One evaluated item as reported: the first five fields are the JSON keys of old; the rest
    are added to the JSON (``covers``, ``gap``, ``elsewhere``, ``error``, MathML and LaTeX)."""

    label: str
    printed: str
    derived: str
    verdict: str  # ok | misprint | false | unproven | gap | failed to derive
    counterexample: dict | None
    note: str = ""
    covers: tuple = ()
    gap: dict | None = None
    elsewhere: list = field(default_factory=list)
    error: str = ""
    math: dict = field(default_factory=dict)  # printed/derived as MathML and LaTeX (where sympy)
    evidence: str = "none"  # what the verdict rests on (stam.theory.items.EVIDENCE)
    search: dict | None = None  # the search on actual runs (Search.as_json()), where the item made one

    def as_json(self) -> dict:
        d = {"label": self.label, "printed": self.printed, "derived": self.derived, "verdict": self.verdict,
             "counterexample": self.counterexample, "covers": list(self.covers), "gap": self.gap,
             "elsewhere": self.elsewhere, "evidence": self.evidence, "search": self.search}
        if self.error:
            d["error"] = self.error
        d.update(self.math)
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
    if isinstance(expr, sp.Equality):  # sstr would write Eq(a, b)
        return f"{pretty(expr.lhs)} = {pretty(expr.rhs)}"
    sub = {sym: sp.Symbol(name) for sym, name in _DISPLAY.items() if sym in expr.free_symbols}
    return sp.sstr(expr.xreplace(sub))  # structural renaming: no re-evaluation (relations stay as printed)


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


class _DerivedOps(DerivedCoupling):
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
    ce["evidence"] = "run"
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
    eta = _dot(gG + lam * (y - x), gG + lam * (y - x))
    g_u = _dot(gG + lam * (y - u), gG + lam * (y - u))
    dist2 = _dot(lam * (u - y) + mu * (u - inst["c"]), lam * (u - y) + mu * (u - inst["c"]))
    Z = _dot(z - zprev, z - zprev)
    return {"eta": eta, "grad_u": g_u, "dist2": dist2, "Z": Z}




# --------------------------------------------------------------------------------------------
# the items, evaluated
# --------------------------------------------------------------------------------------------


def _text(x) -> str:
    return x if isinstance(x, str) else pretty(x)


def _math(x) -> dict:
    """MathML (sympy's presentation printer) and LaTeX of a sympy object; {} for text."""
    if isinstance(x, str) or x is None:
        return {}
    try:
        return {"mathml": mathml(x), "latex": latex(x)}
    except Exception:  # noqa: BLE001 - a formula that does not print stays text
        return {}


def finding(ev) -> Finding:
    """The reported form of one :class:`stam.theory.items.Evaluated`."""
    from dataclasses import asdict

    it, res = ev.item, ev.result
    if res is None:
        return Finding(it.label, "", "", ev.verdict, None, f"failed to derive: {ev.error}", it.covers,
                       error=ev.error)
    kind, ce = evidence(res)
    srch = res.search_result()
    math = {}
    for key, val in (("printed", res.printed), ("derived", res.derived)):
        m = _math(val)
        if m:
            math[f"{key}_mathml"], math[f"{key}_latex"] = m["mathml"], m["latex"]
    gap = asdict(res.gap) if res.gap is not None else None
    if gap is not None and gap.get("witness") is not None:
        gap["witness"] = _r(gap["witness"])
    note = res.note
    if res.gap is not None:
        note = (note + " " if note else "") + f"Gap: uses {res.gap.uses}; stated: {res.gap.states}; " \
               f"closes it: {res.gap.closes}"
    return Finding(it.label, _text(res.printed), _text(res.derived), ev.verdict, ce, note, it.covers, gap,
                   [{"where": o.where, "agrees": bool(o.agrees), "printed": bool(o.printed)} for o in res.elsewhere],
                   math=math, evidence=kind, search=_r(srch.as_json()) if srch is not None else None)


@lru_cache(maxsize=None)
def evaluated() -> tuple:
    """Every registered item evaluated once per process (:func:`stam.theory.items.evaluate`)."""
    return tuple(evaluate(it) for it in registry())


@lru_cache(maxsize=None)
def findings(seed: int = SEED) -> tuple[Finding, ...]:
    """All audited items, in the order of the paper (computed once per process)."""
    if seed != SEED:
        raise ValueError(f"the audit's searches are seeded with {SEED}")
    return tuple(_safe_finding(ev) for ev in evaluated())


def _safe_finding(ev) -> Finding:
    """:func:`finding`, or a ``failed to derive`` row if even reporting the item raises."""
    try:
        return finding(ev)
    except Exception as exc:  # noqa: BLE001 - one item must not stop the audit
        err = f"{type(exc).__name__}: {exc} (while reporting it)"
        return Finding(ev.item.label, "", "", "failed to derive", None, f"failed to derive: {err}", ev.item.covers,
                       error=err)


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
        keep = {**{key: inst[key] for key in ("lam", "gamma", "beta") if key in inst}, "t": ce.get("t"), **keep}
    return "; ".join(f"{key}={v}" for key, v in keep.items() if key != "t" or v is not None)


def _vw(items) -> int:
    return max([8] + [len(f.verdict) for f in items])


def counts(items) -> dict:
    """verdict -> number of items, in the order of :data:`VERDICTS`."""
    return {v: sum(f.verdict == v for f in items) for v in VERDICTS}


def search_text(srch: dict | None) -> str:
    """One line: what a search on actual runs tried and found."""
    if not srch:
        return ""
    found = "found a counterexample" if srch.get("found") else "no counterexample"
    closest = srch.get("closest") or {}
    near = f", smallest relative printed gap {closest['relative printed gap']:.3g}" if "relative printed gap" in closest else ""
    return (f"{found} in {srch['instances']} actual runs ({srch['steps']} steps; {'; '.join(srch['classes'])}; "
            f"{srch['method']}{near})")


def summary(items, cov: dict | None = None) -> str:
    """The count of each verdict and, with ``cov`` (:func:`stam.theory.items.coverage.coverage`), the coverage."""
    n = counts(items)
    text = f"{len(items)} items: " + ", ".join(f"{c} {v}" for v, c in n.items()
                                               if c or v in ("ok", "misprint", "false", "unproven"))
    text += (". false: fails on an instance (a STAM run where it speaks of iterates); unproven: its proof does not give "
             "it, no counterexample on actual runs. The toolkit computes with the derived forms (stam stepsize "
             "--as-printed uses the printed ones).")
    if cov is not None:
        text += f"\nCoverage: {coverage_text(cov)}, counted in the paper's LaTeX source"
        if cov["missing"]:
            text += "; not audited: " + ", ".join(cov["missing"])
        if cov["unknown"]:
            text += "; items cover labels the paper lacks there: " + ", ".join(cov["unknown"])
    return text


def paper_refs(f, tex: str | None = None) -> str:
    """The printed numbers (Lemma 6, (17), ...) of the labels item ``f`` covers, computed from the
    paper's source (:func:`stam.theory.items.numbering.printed_text`); ``-`` where it covers none."""
    if not f.covers:
        return "-"
    return printed_text(f.covers, tex if tex is not None else read_paper())


def _assumed_note(items, tex: str | None) -> str:
    nums = printed_numbers(tex if tex is not None else read_paper())
    assumed = sorted({n.name for f in items for lab in f.covers if (n := nums.get(lab)) and not n.declared})
    if not assumed:
        return ""
    return (f"Paper numbers computed from the LaTeX source (jmlr2e.sty, article); * {', '.join(assumed)}: the source "
            "declares no such environment, numbered here by its own counter (\\newtheorem{assumption}{Assumption}).")


def table(items, as_printed: bool = False, cov: dict | None = None, tex: str | None = None) -> str:
    lines = []
    w, vw = max(len(f.label) for f in items), _vw(items)
    lines.append(f"{'label':<{w}}  {'verdict':<{vw}}  printed  ->  derived")
    lines.append("-" * (w + 40))
    pad = f"{'':<{w}}  {'':<{vw}}  "
    for f in items:
        lines.append(f"{f.label:<{w}}  {f.verdict:<{vw}}  printed: {f.printed}")
        lines.append(f"{pad}derived: {f.derived}")
        lines.append(f"{pad}paper:   {paper_refs(f, tex)}")
        if f.note:
            lines.append(f"{pad}note:    {f.note}")
        lines.append(f"{pad}evidence: {f.evidence} ({EVIDENCE.get(f.evidence, '?')})")
        if f.counterexample is not None:
            lines.append(f"{pad}counterexample: {_short(f.counterexample)}")
        if f.search is not None:
            lines.append(f"{pad}search: {search_text(f.search)}")
        if f.gap is not None and f.gap.get("witness") is not None:
            lines.append(f"{pad}gap witness: {_short(f.gap['witness'])}")
    lines += ["", summary(items, cov)]
    note = _assumed_note(items, tex)
    lines += [note] if note else []
    if as_printed:
        lines += ["", _as_printed_effect()]
    return "\n".join(lines)


def brief(items, cov: dict | None = None, tex: str | None = None) -> str:
    """One line per item: label, the paper's printed numbers of what it covers, verdict, its
    evidence kind and what is wrong (the note's first clause; for an unproven item, what the search
    on actual runs tried)."""
    refs = [paper_refs(f, tex) for f in items]
    w, vw, pw = max(len(f.label) for f in items), _vw(items), max([5] + [len(r) for r in refs])
    ew = max([8] + [len(f.evidence) for f in items])
    lines = [f"{'label':<{w}}  {'paper':<{pw}}  {'verdict':<{vw}}  {'evidence':<{ew}}  note"]
    for f, ref in zip(items, refs):
        note = f.note.split(" (derived by")[0]
        if f.verdict == "unproven" and f.search:
            note += (f" [no counterexample in {f.search['instances']} actual runs, {f.search['steps']} steps]")
        lines.append(f"{f.label:<{w}}  {ref:<{pw}}  {f.verdict:<{vw}}  {f.evidence:<{ew}}  {note}")
    if cov is not None:
        lines += ["", summary(items, cov)]
    note = _assumed_note(items, tex)
    return "\n".join(lines + ([note] if note else []))


def _as_printed_effect() -> str:
    """What the printed forms change in ``stam stepsize`` for a reference network setting."""
    c = num.quadratic_coupling(0.5, L1=1.0, A=1.0, C=0.1)
    a, b = num.recommend(c, 2.3, 0.0, 0.1), num.recommend(c, 2.3, 0.0, 0.1, as_printed=True)
    rows = [f"Effect of the printed forms on stam stepsize (H = (0.5/2)||x-y||^2, L1=1, A=1, C=0.1, "
            f"delta0+M0'=2.3, eps=0.1):", f"  {'':<10} {'derived':>14} {'as printed':>14}"]
    for key in ("gamma_max", "gamma", "K3", "M", "beta_min", "T_min"):
        rows.append(f"  {key:<10} {a[key]:>14.6g} {b[key]:>14.6g}")
    return "\n".join(rows)


def rows(items, tex: str | None = None) -> list:
    """The JSON rows of ``items``, each with ``paper``: the printed numbering of the labels it covers."""
    nums = printed_numbers(tex if tex is not None else read_paper())
    out = []
    for f in items:
        row = f.as_json()
        row["paper"] = {lab: nums[lab].text for lab in f.covers if lab in nums}
        out.append(row)
    return out


def result(items, cov: dict | None = None, tex: str | None = None) -> dict:
    """The ``paper-check`` result (what ``stam paper-check --out`` writes) of the findings ``items``,
    with the coverage of the paper's labelled displays (computed from the bundled paper if not given)."""
    tex = tex if tex is not None else read_paper()
    cov = cov if cov is not None else coverage(registry(), tex)
    return {"kind": "paper-check", "provenance": provenance(), "items": rows(items, tex), "coverage": cov}


def run(args) -> int:
    """Handler of ``stam paper-check`` (output locations are checked by :mod:`stam.theory.cli`)."""
    tex = args.paper_text if getattr(args, "paper_text", None) is not None else None
    if tex is None:
        from stam.theory.items.coverage import read_paper

        tex = read_paper()
    items = findings()
    cov = coverage(registry(), tex)
    json_rows = rows(items, tex)
    if getattr(args, "corrected", None):
        from stam.theory import corrected

        corrected.write(args.corrected, evaluated())
    if getattr(args, "out", None):
        atomic_write_json(args.out, result(items, cov, tex))
    if args.json:
        print(dumps(json_rows))
    elif getattr(args, "brief", False):
        print(brief(items, cov, tex) + ("\n\n" + _as_printed_effect() if args.as_printed else ""))
    else:
        print(table(items, as_printed=args.as_printed, cov=cov, tex=tex))
    if getattr(args, "corrected", None) and not args.json:
        print(f"Corrected statements: {args.corrected}/corrected.tex, {args.corrected}/corrected.md")
    return 0
