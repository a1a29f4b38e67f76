"""Items of the chain of Lemma par2 (eq24 -> eq39, :mod:`stam.theory.symbolic.chain`) and of what follows
it in Appendix A: K3, eq38, the statement eq250, eq43/eq44, and the proof of Lemma conv-lemma
(eq45 -> eq48), with the gap on M'_0."""

from __future__ import annotations

import sympy as sp

from stam.theory.symbolic import chain
from stam.theory.symbolic import constants as k
from stam.theory.symbolic import numeric as num
from stam.theory.symbolic import symbols as s
from stam.theory.papercheck.chainsearch import runs_search
from stam.theory.papercheck.items.common import SEED, rounded, premise_witness
from stam.theory.symbolic.stamruns import chain_counterexample, pretty
from stam.theory.papercheck.items.declare import Corrected, Gap, Network, Occurrence, Result, Tex, item
from stam.theory.papercheck.items.steps import identity_result, step_result
from stam.theory.papercheck.items.section2 import COMMON, INTEGRABLE_STEP, definitions

_ORIGIN = "eq25"
#: the unproven chain steps whose print is proven for the network coupling (:func:`step_network`)
NETWORK_STEPS = ("eq36", "eq39")


def _implied(printed, derived) -> bool:
    return chain.compare(printed, derived, seed=SEED).verdict in ("same", "weaker")


def _k3_same() -> bool:
    return k.K3_printed_is_derived()


def _dependents(label: str) -> list:
    """The later steps whose certificate (``Step.rule``) uses ``label``, transitively."""
    import re

    out, frontier = [], {label}
    for st in chain.steps():
        used = set(re.findall(r"eq\d+", st.rule))
        if st.label not in frontier and used & frontier:
            out.append(st)
            frontier.add(st.label)
    return out


def eq25_network() -> dict:
    """eq25 for the network coupling ``H = (lam/2)||x - y||^2`` (``L4* = lam``): with the x-step eq. (algx) (derived in
    sympy, :func:`stam.theory.symbolic.stamruns.derived_updates`) ``z^t - z^{t-1} = (1 + gamma lam) dx - gamma lam dy``
    (``dx = x^{t+1} - x^t``, ``dy = y^{t+1} - y^t``), so ``P = (1 + gamma lam) X - gamma lam <dx, dy>`` and the printed
    gap is exactly ``(lam/2)||dx - dy||^2 + (lam + 1 + 2l) X / 2``: on runs it fails only when ``l < -(lam + 1)/2``
    (the counterexample's ``l = -lam``, the smallest admissible, with ``lam > 1``); with the paper's own ``l = L2* =
    lam`` it holds.  (One dimension suffices: every term is an isotropic form in ``dx, dy``.)"""
    from stam.theory.symbolic.stamruns import derived_updates

    x_step = derived_updates()[1]
    y0, y1, z0, zm1 = sp.symbols("y0 y1 z0 zm1", real=True)
    dx_, dy_ = sp.symbols("dx dy", real=True)
    dx_expr = x_step(y1, z0, s.gamma, s.lam) - x_step(y0, zm1, s.gamma, s.lam)  # x^{t+1} - x^t (eq. algx)
    dz = sp.solve(sp.Eq(dx_expr.subs(y1, y0 + dy_), dx_), z0)[0] - zm1  # z^t - z^{t-1}
    printed = chain.step("eq25").printed
    net = printed.subs({s.L4: s.lam, chain.P: sp.expand(dz * dx_), chain.X: dx_**2, chain.Y: dy_**2})
    closed = s.lam / 2 * (dx_ - dy_) ** 2 + (s.lam + 1 + 2 * s.l) * dx_**2 / 2
    same = sp.simplify(net - closed) == 0
    return {"same": same, "gap": closed, "threshold": -(s.lam + 1) / 2,
            "note": ("for H = (lam/2)||x-y||^2 the printed gap is (lam/2)||dx - dy||^2 + (lam + 1 + 2l) ||dx||^2/2 "
                     "(sympy, through the x-step): it fails on runs only when l < -(lam+1)/2 (here l = -lam, lam > 1); "
                     "with the paper's own l = L2* = lam it holds") if same else
                    "the network form of the printed gap was not derived"}


#: :func:`step_network`: the lambdas and fractions of gamma_max(lambda) (with the theorem's beta) where a printed step of
#: the chain is proven for the network coupling
STEP_NETWORK_LAMS = (0.1, 1.0, 3.511)
STEP_NETWORK_FRACTIONS = (0.5, 0.99)


def step_network_proof(label: str, lam: float, gamma: float, beta: float) -> bool:
    """Whether the printed chain step ``label`` (a gap linear in ``X, Y, Z, dPhi``, :mod:`stam.theory.symbolic.chain`) holds
    for every STAM step of the network coupling ``H = (lam/2)||x - y||^2``, every ``L1``-smooth ``G`` and every proper
    lsc ``F``, at these parameters (network constants of ``stam.theory.symbolic.constants``: ``L2* = L4* = lam``, ``l = -lam``),
    proven in exact rational arithmetic: one step is run by the project's ``stam_init``/``stam_step`` on the exact
    coefficient basis of :func:`stam.theory.worstcase.templates.stam_step_sdp` (``y^t - z^{t-1}``, the gradients, the
    subgradients; ``y^{t+1} - y^t`` free), the printed gap is written as a quadratic form plus ``-(F(u^{t+1}) - F(u^t))``,
    and the u-step's inequality (eq. (eq261): ``F(u^{t+1}) + ||u^{t+1} - v^{t+1}||^2/(2 gamma) <= F(u^t) + ||u^t -
    v^{t+1}||^2/(2 gamma)``) with multiplier 1 cancels the function values; the form that remains must be positive
    semidefinite, decided exactly (its kernel computed exactly, an exact ``LDL^T`` on a complement)."""
    from fractions import Fraction

    from stam.steps import stam_init, stam_step
    from stam.theory.worstcase import templates
    from stam.theory.worstcase import sdpstep
    from stam.theory.worstcase import rational as rq

    lamF, gamF, betaF = Fraction(lam), Fraction(gamma), Fraction(beta)
    B = sdpstep.Basis(5, 4, exact=True)
    w, g0, s0, g1, s1 = (B.vec(i) for i in range(5))
    ops = templates.SymbolicOps(lamF, [s0, s1])
    st0 = stam_init(w, ops, gamF, z_prev=B.zero())  # z^{t-1} = 0: y^t - z^{t-1} = w
    st1 = stam_step(st0, g0, ops, gamF, betaF)

    def H(x, y):
        return sdpstep.scaled(sdpstep.sq(x - y), lamF / 2)

    def M(st):  # the quadratic part of M_t (eq. (eq651)); its F(u) is the function value
        x, u, z = st.x, st.u, st.z
        return (sdpstep.scaled(sdpstep.sq(2 * x - u - z), div=2 * gamF) - sdpstep.scaled(sdpstep.sq(x - z), div=2 * gamF)
                - sdpstep.scaled(sdpstep.sq(u - x), div=gamF))

    forms = {chain.X: sdpstep.sq(st1.x - st0.x), chain.Y: sdpstep.sq(st1.y - st0.y), chain.Z: sdpstep.sq(st0.z),
             chain.dPhi: H(st1.x, st1.y) + M(st1) - H(st0.x, st1.y) - M(st0)}  # dPhi: plus F(u^{t+1}) - F(u^t)
    R = lambda v: sp.Rational(v.numerator, v.denominator)  # noqa: E731
    expr = chain.step(label).printed.subs({s.K1: k.K1_expr(), s.K2: k.K2_expr()})
    expr = expr.subs({s.L2: R(lamF), s.L4: R(lamF), s.l: -R(lamF), s.gamma: R(gamF)})
    if not expr.free_symbols <= set(forms) or sp.diff(expr, chain.dPhi) != -1:
        return False  # not a gap linear in X, Y, Z, dPhi with -dPhi: not this certificate's shape
    Mx = B.zeros((5, 5))
    for sym, form in forms.items():
        cf = sp.nsimplify(sp.diff(expr, sym))
        if cf != 0:
            num_, den_ = sp.fraction(cf)
            Mx = Mx + sdpstep.scaled(form, Fraction(int(num_), int(den_)))
    Mx = Mx + sdpstep.inner(s1, st0.u - st1.u) - sdpstep.scaled(sdpstep.sq(st0.u - st1.u), div=2 * gamF)  # eq261, multiplier 1
    if any(isinstance(e, float) for e in Mx.flat):
        return False
    Mq = rq.symmetric_part(Mx)
    return rq.positive_definite(rq.congruent(rq.complement(rq.nullspace(Mq, 5), 5), Mq))


def step_network(label: str):
    """The :class:`Network` statement of a printed chain step (eq36, eq39): proven for ``H = (lam/2)||x - y||^2`` at
    :data:`STEP_NETWORK_LAMS` x :data:`STEP_NETWORK_FRACTIONS` (the theorem's beta) by :func:`step_network_proof`."""
    import math

    points = []
    for lam in STEP_NETWORK_LAMS:
        c = num.quadratic_coupling(lam, L1=1.0)
        for frac in STEP_NETWORK_FRACTIONS:
            gamma = frac * float(num.gamma_max(c))
            beta = float(math.ceil(2 * float(num.K2(gamma, c)) / float(num.K1(gamma, c))))
            points.append({"lam": lam, "gamma": gamma, "gamma / gamma_max": frac, "beta": beta,
                           "proven": step_network_proof(label, lam, gamma, beta)})
    return Network(all(p["proven"] for p in points), "one-step certificate",
                   f"printed {label} = (quadratic form) - [F(u^(t+1)) - F(u^t)]; adding the u-step's inequality eq261 "
                   "(multiplier 1) leaves a form proven positive semidefinite in exact arithmetic, for every L1-smooth G, "
                   "every proper lsc F and every state, at each point (L2* = L4* = lam, l = -lam)", tuple(points))


def _chain_item(label: str):
    def run(seed: int = SEED) -> Result:
        st = chain.step(label)
        cmp = chain.compare(st.printed, st.derived, seed=seed)
        later = _dependents(label)
        elsewhere = [Occurrence(f"printed {o.label}", _implied(o.printed, o.derived)) for o in later]
        elsewhere.append(Occurrence("K3 of Lemma par2 and Lemma conv-lemma", _k3_same()))
        srch = None
        if cmp.verdict in ("same", "weaker"):
            ce, note = None, f"derived by: {st.rule}"
        else:
            srch = lambda: runs_search(st.label, seed)  # noqa: E731
            ce = chain_counterexample(st.label, seed) or premise_witness(st.label, seed)
            follows = _implied(st.printed, st.printed_from_printed)
            origin = (f"follows from the printed predecessors: error propagated from {_ORIGIN}" if follows
                      else "the error enters here: (Hx-ylip) gives (L4*)^2 ||dy||^2, not L4* ||dy||^2")
            if label == "eq25":  # before the derivation's rule, which the brief leaves out
                origin += "; " + eq25_network()["note"]
            note = f"{origin}; printed - derived = {pretty(cmp.residual)} (derived by: {st.rule})"
        network = (lambda: step_network(label)) if label in NETWORK_STEPS else None  # noqa: E731
        return Result(sp.Ge(st.printed, 0, evaluate=False), sp.Ge(st.derived, 0, evaluate=False), ce,
                      tuple(elsewhere), note=note, search=srch, network=network)

    run.__name__ = f"chain_{label}"
    return run


for _st in ("eq24", "eq25", "eq26", "eq27", "eq300", "eq35", "eq36", "eq39"):
    item(_st, covers=(_st,))(_chain_item(_st))


@item("K3 (eq39), M = 2 K3", covers=("eq39",))
def K3(seed: int = SEED) -> Result:
    printed, derived = k.K3_printed_expr(False), k.K3_expr(False)
    same = k.K3_printed_is_derived()
    ce, ev = None, ""
    if not same:
        lam_, gam = 2.0, 0.1
        c = num.quadratic_coupling(lam_)
        ce = rounded({"lam": lam_, "gamma": gam, "K3_printed": float(num.K3(gam, c, True)),
                 "K3_derived": float(num.K3(gam, c)),
                 "eq39": chain_counterexample("eq39", seed) or premise_witness("eq39", seed),
                 "meaning": "with the printed K3, eq39 is not implied by the premises of its proof"})
        ev = ce["eq39"]["evidence"]
    return Result(printed, derived, ce, (Occurrence("K3 of Lemma conv-lemma", _k3_same()),),
                  note="M = 2 K3 (eq45 -> eq46) is ok; K3 inherits eq25's (L4*)^2.", evidence=ev,
                  search=lambda: runs_search("eq39", seed))


@item("eq38 (eq36 rearranged)", covers=("eq38",))
def eq38(seed: int = SEED) -> Result:
    """eq38 is eq36 with ``-K1 ||dx||^2`` moved to the left: printed with ``L4*(1 + 5 gamma L4*)``."""
    d36 = chain.step("eq36").derived
    k1 = chain.derivation()["K1"]
    derived = sp.expand(d36 + k1 * chain.X - s.K1 * chain.X)  # K1 named
    printed = sp.expand(-chain.dPhi + s.L4 * (1 + 5 * s.gamma * s.L4) * chain.Y - s.K1 * chain.X)
    r = step_result(printed, derived, "eq36 with K1 := -(coefficient of ||x^{t+1} - x^t||^2)", seed=seed)
    if r.counterexample is not None:
        r.counterexample = chain_counterexample("eq36", seed) or premise_witness("eq36", seed) or r.counterexample
        r.evidence = r.counterexample.get("evidence", "premises")
        r.search = lambda: runs_search("eq36", seed)
    r.elsewhere = (Occurrence("printed eq36", _implied(chain.PRINTED["eq36"], d36)),
                   Occurrence("K3 of Lemma par2", _k3_same()))
    return r


@item("Lemma par2 (eq250, K3)", covers=("par2", "eq250"))
def par2(seed: int = SEED) -> Result:
    """The statement of Lemma par2 prints ``K3``; its bound is eq44 (see eq43, eq44)."""
    printed, derived = chain.K3_PRINTED, k.K3_expr(False)
    ce = None if _k3_same() else (chain_counterexample("eq39", seed) or premise_witness("eq39", seed))

    def corrected():
        return Corrected(
            "Lemma par2", [COMMON[0], COMMON[2], COMMON[3], sp.Gt(sp.Symbol("K_1"), 0, evaluate=False), INTEGRABLE_STEP],
            Tex(r"\mathbb{E}\Big(\frac{\|z^t-z^{t-1}\|}{\gamma}\Big)^2\le\frac{\mathcal{K}_2}{\mathcal{K}_1}\Big("
                r"\mathbb{E}\big[H(x^t,y^{t+1})-H(x^{t+1},y^{t+1})\big]+\mathbb{E}[\mathcal{M}_t-\mathcal{M}_{t+1}]"
                r"+\mathcal{K}_3\,\mathbb{E}\|y^{t+1}-y^t\|^2\Big)"),
            {"K_1": k.K1_expr(), "K_2": k.K2_expr(), "K_3": derived,
             **{key: v for key, v in definitions().items() if key in ("M_t", "l, L_1, L_2^*, ..., L_5^*")}},
            "K3 = (L4*)^2 (1 + 5 gamma) + 5 K1 (L4*)^2/K2 (printed L4* (1 + 5 gamma L4*) + ...); for t = 0 the start rule; "
            "integrability")

    return Result(sp.Eq(sp.Symbol("K_3"), printed, evaluate=False), sp.Eq(sp.Symbol("K_3"), derived, evaluate=False),
                  ce, (Occurrence("K3 of Lemma conv-lemma", _k3_same()),), corrected=corrected,
                  note="K1 and K2 of Lemma par2 are right (item k1 vs eq36); K3 carries eq25's L4*.",
                  search=lambda: runs_search("eq39", seed))


dH, dM = sp.symbols("dH dM", real=True)  # H(x^t, y^{t+1}) - H(x^{t+1}, y^{t+1}),  M_t - M_{t+1}
K3s = sp.Symbol("K_3", real=True)
EZ, EY, eta = sp.symbols("E[Z] E[Y] eta_t", nonnegative=True)
_eq39 = -chain.dPhi + K3s * chain.Y - s.K1 / s.K2 * chain.Z / s.gamma**2  # eq39 with K3 named


@item("eq43, eq44 (Phi expanded, expectation)", covers=("eq43", "eq44"))
def eq43() -> Result:
    """eq43 = eq39 with ``Phi_t - Phi_{t+1} = dH + dM`` (eq651); eq44 = E[eq43] * K2/K1 (K1 > 0)."""
    printed43 = dH + dM + K3s * chain.Y - s.K1 / s.K2 * chain.Z / s.gamma**2
    derived43 = _eq39.subs(chain.dPhi, -(dH + dM))
    k1p = sp.Symbol("K_1", positive=True)
    printed44 = (s.K2 / k1p * (dH + dM + K3s * EY) - EZ / s.gamma**2)
    derived44 = (s.K2 / k1p * derived43).subs({chain.Y: EY, chain.Z: EZ, s.K1: k1p})
    return identity_result(sp.expand(printed43 - derived43) + sp.expand(printed44 - derived44),
                           "eq43 from eq39 and Phi = H + M; eq44 = (K2/K1) E[eq43]")


_q = (s.L + s.M) * s.A / s.beta**2
_c = (s.L + s.M) * s.C / (2 * s.beta**2)
d0, d1, Mp0, Mp1 = sp.symbols("delta_t delta_{t+1} M'_t M'_{t+1}", nonnegative=True)
EdH = sp.Symbol("E[dH]", real=True)
_eq200 = (1 + _q) * d0 - d1 + _c - EdH - eta / s.beta - s.M / 2 * EY  # eq200 as a gap (E[H(x^{t+1},.) - H(x^t,.)] = -E dH)
_eq44 = EdH + (Mp0 - Mp1) + K3s * EY - s.K1 / s.K2 * EZ / s.gamma**2  # (K1/K2) * eq44, dM = M'_t - M'_{t+1}


@item("eq45, eq46 (M = 2 K3)", covers=("eq45", "eq46"))
def eq45() -> Result:
    printed45 = ((1 + _q) * d0 - d1 + _c - EdH + EdH + K3s * EY + (Mp0 - Mp1)
                 - (eta / s.beta + s.M / 2 * EY + s.K1 / s.K2 * EZ / s.gamma**2))
    printed46 = (1 + _q) * d0 - d1 + Mp0 - Mp1 + _c - (eta / s.beta + s.K1 / s.K2 * EZ / s.gamma**2)
    derived46 = (_eq200 + _eq44).subs(s.M, 2 * K3s)
    return identity_result(sp.expand(printed45 - (_eq200 + _eq44)) + sp.expand(printed46.subs(s.M, 2 * K3s) - derived46),
                           "eq45 = eq200 + (K1/K2) eq44; eq46 = eq45 at M = 2 K3")


@item("eq47, eq48 (weights, telescoping) = ineq1", covers=("eq47", "eq48"))
def eq47() -> Result:
    """eq47 = beta omega_t eq46 + beta (omega_{t-1} - omega_t) M'_t (>= 0: omega decreasing,
    M'_t >= 0), with ``(1 + q) omega_t = omega_{t-1}``; eq48 telescopes it over t = 0..T-1 (checked at
    T = 4 with indexed symbols) and drops ``beta omega_{T-1} (delta_T + M'_T) >= 0``."""
    w = sp.Symbol("omega_t", positive=True)
    wm = (1 + _q) * w
    eq46 = (1 + _q) * d0 - d1 + Mp0 - Mp1 + _c - (eta / s.beta + s.K1 / s.K2 * EZ / s.gamma**2)
    printed47 = (s.beta * wm * d0 - s.beta * w * d1 + (s.L + s.M) * s.C / (2 * s.beta) * w + s.beta * wm * Mp0
                 - s.beta * w * Mp1 - (w * eta + s.beta * s.K1 / s.K2 * w * EZ / s.gamma**2))
    derived47 = s.beta * w * eq46 + s.beta * (wm - w) * Mp0
    T = 4
    om = sp.symbols(f"w_m1 w0:{T}", positive=True)
    de = sp.symbols(f"d0:{T + 1}", nonnegative=True)
    mp = sp.symbols(f"m0:{T + 1}", nonnegative=True)
    terms = sum(s.beta * om[t] * de[t] - s.beta * om[t + 1] * de[t + 1] + s.beta * om[t] * mp[t]
                - s.beta * om[t + 1] * mp[t + 1] for t in range(T))
    tele = terms - (s.beta * om[0] * (de[0] + mp[0]) - s.beta * om[T] * (de[T] + mp[T]))
    step = step_result(printed47, derived47, "beta omega_t * eq46 + beta (omega_{t-1} - omega_t) M'_t")
    ident = identity_result(tele, "the telescoping sum of eq48 (T = 4)")
    if ident.counterexample is not None:
        return ident
    step.note += "; eq48: telescoping checked, the dropped terms beta omega_{T-1}(delta_T + M'_T) are >= 0"
    return step


@item("gap: M'_0 may be infinite (inf_t M_t)", covers=("eq46", "eq48", "ineq1", "conv-lemma"))
def gap_m0() -> Result:
    """``M'_0 = E[M_0 - inf_t M_t]`` enters every bound from eq46 on; nothing bounds ``M_t`` below.
    Witness: with F = 0, ``M(x, u, z)`` is a quadratic form with a negative eigenvalue (sympy), so the
    stated hypotheses do not make ``inf_t M_t`` finite (the bound of Lemma conv-lemma and of Theorem
    conv is then void, and the T of Theorem conv-rate infinite)."""
    x, u, z = sp.symbols("x u z", real=True)
    Mq = (2 * x - u - z) ** 2 / (2 * s.gamma) - (x - z) ** 2 / (2 * s.gamma) - (u - x) ** 2 / s.gamma
    Hm = sp.hessian(Mq, (x, u, z))
    eig = [sp.simplify(e) for e in Hm.eigenvals()]
    neg = [e for e in eig if (e.subs(s.gamma, 1) < 0)]
    wit = {"F": 0, "Hessian eigenvalues of M (gamma = 1)": [float(e.subs(s.gamma, 1)) for e in eig],
           "along u = x + r, z = x": str(sp.simplify(Mq.subs({u: x + sp.Symbol('r'), z: x})))}
    return Result("M'_0 = E[M_0 - inf_(t>=0) M_t] (finite)", "M is unbounded below on (x, u, z); finiteness of "
                  "inf_t M_t is neither assumed nor shown", None,
                  gap=Gap("M'_0 < infinity (inf_t M_t > -infinity)", "M'_0 is defined, never bounded",
                          "assume inf_t M_t >= M_low > -infinity almost surely (e.g. F bounded below and the iterates "
                          "bounded), or state the theorems with M'_0 possibly infinite", wit if neg else None))
