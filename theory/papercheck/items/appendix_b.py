"""Items of Appendix B and the statements of Theorems conv and conv-rate: eq49 -> eq52 (with the
gap of eq51), eq400 -> eq403, eq700 -> eq705, the conditions on beta and T, and the corrected
theorems with all their hypotheses."""

from __future__ import annotations

import numpy as np
import sympy as sp

from stam.theory.symbolic import constants as k
from stam.theory.symbolic import numeric as num
from stam.theory.symbolic import symbols as s
from stam.theory.papercheck.statementsearch import statement_search_result
from stam.theory.papercheck.items.common import SEED, premise_witness, rounded, stationarity_terms
from stam.theory.symbolic.stamruns import iterate_search, pretty, run_counterexample, quadratic_run
from stam.theory.papercheck.items.declare import Corrected, Gap, Network, Occurrence, Result, Tex, item
from stam.theory.papercheck.items.steps import identity_result, step_result
from stam.theory.papercheck.items.section2 import COMMON, constants_K


def _constants() -> dict:
    return constants_K()


STATIONARITY = (r"\min_{0\le t\le T-1}\Big[\mathbb{E}\|\nabla G(y^t)+\nabla_y H(u^t,y^t)\|^2+\mathbb{E}\,"
                r"\operatorname{dist}^2\big(0,\nabla_x H(u^t,y^t)+\partial F(u^t)\big)\Big]")


def _conv_corrected() -> Corrected:
    return Corrected(
        "Theorem conv", COMMON + [sp.Gt(sp.Symbol("K_1"), 0, evaluate=False), sp.Le(k.second_condition(), 1),
                                  sp.Ge(s.beta * s.K1 / s.K2, 2, evaluate=False)],
        Tex(STATIONARITY + r"\le " + sp.latex(k.theorem_rhs())),
        _constants(), "M = 2 K3 with the corrected K3")


@item("eq49, eq50 (weighted average, W_T)", covers=("eq49", "eq50"))
def eq49(seed: int = SEED) -> Result:
    """eq49: each min is at most its omega-weighted average (property checked on random data);
    eq50: ``W_T >= T omega_{T-1} = T omega_{-1}/(1+q)^T`` with omega solved from its recurrence."""
    rng = np.random.default_rng(seed)
    a, w = rng.normal(0, 1, (200, 7)), rng.uniform(0.01, 1, (200, 7))
    worst = float(np.min((a * w).sum(1) / w.sum(1) - a.min(1)))
    om = k.omega()
    q = (s.L + s.M) * s.A / s.beta**2
    printed50 = s.omega_m1 / (1 + q) ** s.T
    ident = identity_result(sp.simplify(om.subs(s.t, s.T - 1) - printed50), "eq50: omega_{T-1} from the recurrence")
    if worst < -1e-12:
        ident.counterexample = {"min - weighted average": worst, "meaning": "a min exceeds its weighted average"}
    ident.note += f"; eq49: min_t a_t <= sum omega_t a_t / W_T on 200 random cases (smallest slack {worst:.3g})"
    if ident.counterexample is None:
        ident.evidence = "sampled"  # eq50 is exact, eq49 sampled
    return ident


@item("gap: eq51 takes min_t of a sum from a sum of mins", covers=("eq51",))
def gap_eq51() -> Result:
    """eq49 bounds ``min_t eta_t + c min_t E_t``; eq51 states a bound on ``min_t (eta_t + 2 E_t)``, which
    is larger (``min(a + b) >= min a + min b``).  eq51 is true, by the weighted average of the sum
    (eq48 divided by W_T), not by eq49."""
    a, b = np.array([0.0, 1.0]), np.array([1.0, 0.0])
    wit = {"a_t (eta_t)": a.tolist(), "b_t (2 E(...)^2)": b.tolist(), "min a + min b": float(a.min() + b.min()),
           "min (a + b)": float((a + b).min())}
    return Result("min_t [eta_t + 2 E(||z^t - z^{t-1}||/gamma)^2] <= (1+q)^T/T beta (delta_0 + M'_0) + (L+M)C/(2 beta)",
                  "min_t [eta_t + 2 E_t] <= sum_t omega_t (eta_t + (beta K1/K2) E_t)/W_T <= the same right side", None,
                  gap=Gap("min_t (a_t + b_t) <= min_t a_t + min_t b_t (swapping min and +)",
                          "eq49 bounds min_t eta_t + (beta K1/K2) min_t E_t",
                          "divide eq48 by W_T and bound min_t (eta_t + 2 E_t) by the weighted average of the sum "
                          "(beta K1/K2 >= 2)", wit))


@item("eq400 (Young, Hy-ylip)", covers=("eq400", "Hy-ylip"))
def eq400() -> Result:
    a, b_ = sp.symbols("a b", real=True)  # grad G + grad_y H(x^t, y^t),  grad_y H(u^t,.) - grad_y H(x^t,.)
    Z = sp.Symbol("Z", nonnegative=True)
    printed = 2 * a**2 + 2 * s.L5**2 * Z - (a + b_) ** 2
    derived = (a - b_) ** 2 + 2 * (s.L5**2 * Z - b_**2)  # square + 2 (Hy-ylip squared, u - x = z^t - z^{t-1})
    return step_result(printed, derived, "||a - b||^2 >= 0 and ||b||^2 <= (L5*)^2 ||u^t - x^t||^2, u^t - x^t = z^t - z^{t-1}")


@item("eq16, eq17, eq401 (optimality of the u-step)", covers=("eq16", "eq17", "eq401"))
def eq17() -> Result:
    x0, u0, zm, Hx0 = sp.symbols("x0 u0 zm Hx0", real=True)
    z0 = zm + u0 - x0  # algz
    p = -(u0 - 2 * x0 + zm) / s.gamma  # the element of dF(u^t) given by eq16
    Hx0_ = (zm - x0) / s.gamma  # eq13 at t-1
    return identity_result((Hx0_ + p) - (zm - z0) / s.gamma, "eq17 = eq16 + eq13 (t-1) with algz; eq401 adds the same "
                           "vector to both sides")


@item("eq402 (dist^2)", covers=("eq402",))
def eq402() -> Result:
    v, b_ = sp.symbols("v b", real=True)  # (z^{t-1} - z^t)/gamma,  grad_x H(u^t,.) - grad_x H(x^t,.)
    Z = sp.Symbol("Z", nonnegative=True)
    dist2 = (v + b_) ** 2  # dist^2(0, S) <= ||element||^2 (eq401)
    printed = 2 * Z / s.gamma**2 + 2 * s.L2**2 * Z - dist2
    derived = (v - b_) ** 2 + 2 * (Z / s.gamma**2 - v**2) + 2 * (s.L2**2 * Z - b_**2)
    return step_result(printed, derived, "||v - b||^2 >= 0, ||v||^2 = Z/gamma^2, ||b||^2 <= (L2*)^2 ||u^t - x^t||^2")


@item("gap: dF is not defined for a nonconvex F", covers=("eq16", "con-inequality"))
def gap_subdifferential() -> Result:
    """eq16 is Fermat's rule for the u-step; it holds for the Frechet/limiting subdifferential, not for
    the convex one.  Witness: ``F(u) = -u^2``, gamma = 1/4, v = 1: the minimiser is u* = 2; the
    convex subdifferential of F at 2 is empty (sympy), the Frechet one is {-4} and eq16 holds."""
    u, vv, gg, tt = sp.symbols("u v g t", real=True)
    gam, v = sp.Rational(1, 4), 1
    F = -(u**2)
    ustar = sp.solve(sp.diff(F + (u - v) ** 2 / (2 * gam), u), u)[0]
    fenchel = sp.expand(F.subs(u, ustar + tt) - (F.subs(u, ustar) + gg * tt))  # >= 0 for all t needed
    frechet = sp.diff(F, u).subs(u, ustar)
    wit = {"F(u)": "-u^2", "gamma": float(gam), "v": v, "u*": float(ustar),
           "F(u*+t) - F(u*) - g t": str(fenchel), "(negative for large t whatever g)": True,
           "Frechet gradient at u*": float(frechet), "eq16 residual": float(frechet + (ustar - v) / gam)}
    return Result("0 in dF(u^t) + (u^t - 2x^t + z^{t-1})/gamma, and dist(0, grad_x H + dF) in Theorem conv",
                  "true for the Frechet/limiting subdifferential of a proper lsc F", None,
                  gap=Gap("a subdifferential for which Fermat's rule and the sum rule hold for nonconvex F",
                          "dF is never defined (F is not assumed convex)",
                          "define dF as the limiting (Mordukhovich) subdifferential", wit))


@item("eq403", covers=("eq403",))
def eq403(seed: int = SEED) -> Result:
    srch = iterate_search(seed)
    st = stationarity_terms(srch)
    lam, gam = srch["inst"]["lam"], srch["inst"]["gamma"]
    lhs = st["grad_u"] + st["dist2"]
    printed = 2 * st["eta"] + 2 * (st["Z"] / gam) ** 2 + 4 * lam**2 * st["Z"]
    derived = 2 * st["eta"] + 2 * st["Z"] / gam**2 + 4 * lam**2 * st["Z"]
    rel = (printed - lhs) / (1 + lhs)
    t, r = np.unravel_index(np.argmin(rel), rel.shape)
    ce = run_counterexample(rel[t, r] < 0, srch["inst"], srch["traj"], r, t,
                         {"LHS": lhs[t, r], "printed middle line": printed[t, r], "derived middle line": derived[t, r],
                          "meaning": "LHS of eq403 exceeds its printed middle line"})
    # the last line of eq403: 2 eta + 4 Z/gamma^2 >= the derived middle line when (L2^2 + L5^2) gamma^2 <= 1
    et_, Z, sig = sp.symbols("eta Z sigma", nonnegative=True)  # sigma = ((L2*)^2 + (L5*)^2) gamma^2 <= 1
    mid = 2 * et_ + 2 * Z / s.gamma**2 + 2 * sig / s.gamma**2 * Z
    last = 2 * et_ + 4 * Z / s.gamma**2
    agrees = sp.factor(sp.expand((last - mid).subs(sig, 1 - sp.Symbol("r", nonnegative=True)))).is_nonnegative
    return Result("2 eta_t + 2 E(||z^t-z^{t-1}||^2/gamma)^2 + 2((L2*)^2+(L5*)^2) E||z^t-z^{t-1}||^2",
                  "2 eta_t + 2 E(||z^t-z^{t-1}||/gamma)^2 + 2((L2*)^2+(L5*)^2) E||z^t-z^{t-1}||^2 "
                  "<= 2 eta_t + 4 E(||z^t-z^{t-1}||/gamma)^2", ce,
                  (Occurrence("the last line of eq403 (and eq400, eq402)", bool(agrees)),),
                  note="the last line of eq403 (and Theorem conv) is right; only the middle line squares the norm twice.")


#: the power of dist in the printed stationarity measures (eq52 prints dist; Theorem conv and eq701 dist^2)
DIST_POWER = {"eq52": 1, "con-inequality (Theorem conv)": 2, "eq701": 2}


@item("eq52", covers=("eq52",))
def eq52(seed: int = SEED) -> Result:
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
    tr = quadratic_run(one, 1)
    st1 = stationarity_terms({"inst": one, "traj": tr})
    lhs_printed = float(st1["grad_u"][0, 0] + np.sqrt(st1["dist2"][0, 0]))
    lhs_derived = float(st1["grad_u"][0, 0] + st1["dist2"][0, 0])
    rhs = float(2 * (st1["eta"][0, 0] + 2 * st1["Z"][0, 0] / one["gamma"][0] ** 2))
    ce = run_counterexample(lhs_printed > rhs, one, tr, 0, 0,
                         {"T": 1, "data scaled by": scale, "printed LHS (with dist)": lhs_printed,
                          "derived LHS (with dist^2)": lhs_derived, "2 min[eta + 2 E(||dz||/gamma)^2]": rhs,
                          "meaning": "the first inequality of eq52 fails with dist in place of dist^2"})
    derived_power = 2  # eq403 bounds dist^2
    return Result("min_t [E||grad G + grad_y H(u^t,y^t)||^2 + E dist(0, ...)] <= ...",
                  "min_t [E||grad G + grad_y H(u^t,y^t)||^2 + E dist^2(0, ...)] <= 2 (1+(L+M)A/beta^2)^T/T "
                  "beta (delta0+M0') + (L+M)C/beta", ce,
                  tuple(Occurrence(where, p == derived_power) for where, p in DIST_POWER.items() if where != "eq52"),
                  note="Theorem conv states dist^2 (correct); eq52 drops the square.")


#: :func:`conv_network`: the lambdas and the fractions of gamma_max(lambda) where Theorem conv is proven for the network
#: coupling (the theorem's own beta = ceil(2 K2/K1), full gradient, any proper lsc F)
CONV_NETWORK_LAMS = (1.0, 3.511)
CONV_NETWORK_FRACTIONS = (0.5, 0.99)


def conv_network() -> Network | None:
    """Theorem conv as printed, for the network coupling ``H = (lam/2)||x - y||^2`` with the full gradient and any
    proper lsc ``F``, at ``gamma = frac * gamma_max(lam)`` and the theorem's ``beta = ceil(2 K2/K1)``: a certificate of
    the paper form (:func:`stam.theory.worstcase.lyapunov.certify_stam`, proven in exact rational arithmetic) gives
    ``min_{t<T} S_t <= (delta0 + M0'_T)/(rho T) <= (delta0 + M0')/(rho T)``, and with ``1/rho <= 2 beta`` that is at
    most the printed right-hand side ``2 (1 + (L+M)A/beta^2)^T beta (delta0 + M0')/T`` (``C = 0``) whatever ``M``
    (so whatever K3) is; the theorem's own measure (with ``dist^2``) is at most ``S_t``.  None where the SDP solver
    (the ``pep`` extra) is not installed."""
    import math

    try:
        from stam.theory.worstcase import lyapunov

        points = []
        for lam in CONV_NETWORK_LAMS:
            c = num.quadratic_coupling(lam, L1=1.0)
            for frac in CONV_NETWORK_FRACTIONS:
                gamma = frac * float(num.gamma_max(c))
                beta = float(math.ceil(2 * float(num.K2(gamma, c)) / float(num.K1(gamma, c))))
                cert = lyapunov.certify_stam(lam, gamma, beta, template="paper", f_class="lsc")
                proven = bool(cert.certified and cert.details.get("proof", {}).get("exact"))
                points.append({"lam": lam, "gamma": gamma, "gamma / gamma_max": frac, "beta": beta, "proven": proven,
                               "1/(rho beta)": 1 / (cert.rho * beta) if proven else None})
    except ImportError:
        return None
    holds = all(p["proven"] and p["1/(rho beta)"] <= 2 for p in points)
    return Network(holds, "certificate",
                   "the paper form V = a (G + H) + b M_t certified at each point (full gradient, any proper lsc F, "
                   "the theorem's beta), proven exactly, with 1/rho <= 2 beta: min_t S_t <= (delta0 + M0')/(rho T) is "
                   "below the printed bound whatever K3 is", tuple(points))


@item("Theorem conv (con-inequality, M from K3)", covers=("conv", "con-inequality"))
def theorem_conv(seed: int = SEED) -> Result:
    """The bound of Theorem conv is the derived one (``theorem_rhs``), with ``M = 2 K3``; the printed
    K3 makes M too small when ``L4* > 1`` (the proof does not give the printed bound there)."""
    rhs = k.theorem_rhs()
    printed_rhs = 2 * (1 + (s.L + s.M) * s.A / s.beta**2) ** s.T / s.T * s.beta * (s.delta0 + s.M0) + (s.L + s.M) * s.C / s.beta
    same_form = sp.simplify(rhs - printed_rhs) == 0
    lam_, gam = 2.0, 0.01
    c = num.quadratic_coupling(lam_, L1=1.0, A=1.0, C=0.1)
    beta, T = 1e3, 100
    rp = float(num.theorem_rhs(T, gam, beta, c, 1.0, 0.0, as_printed=True))
    rd = float(num.theorem_rhs(T, gam, beta, c, 1.0, 0.0))
    ce = None
    if not same_form or rp < rd:
        ce = rounded({"lam (= L4*)": lam_, "gamma": gam, "beta": beta, "T": T, "delta0": 1.0, "M0'": 0.0,
                 "M printed": float(num.M(gam, c, True)), "M derived": float(num.M(gam, c)),
                 "bound with printed M": rp, "bound with derived M": rd,
                 "eq39 premise witness": premise_witness("eq39", seed),
                 "meaning": "the printed bound (M = 2 K3 printed) is below the one the proof gives; eq39, which "
                            "defines K3, is not implied by its premises"})
    k3_conv_lemma = k.K3_printed_is_derived()
    return Result(sp.Le(sp.Symbol("min_{0<=t<=T-1} S_t"), printed_rhs.subs(s.M, 2 * k.K3_printed_expr(False)), evaluate=False),
                  sp.Le(sp.Symbol("min_{0<=t<=T-1} S_t"), rhs.subs(s.M, 2 * k.K3_expr(False)), evaluate=False), ce,
                  (Occurrence("M of Lemma conv-lemma", k3_conv_lemma),), evidence="premises",
                  search=lambda: statement_search_result("conv", seed), network=conv_network,
                  note=f"the form 2 (1+q)^T beta (delta0+M0')/T + (L+M)C/beta is derived ({'same' if same_form else 'differs'}); "
                       "M inherits K3; the printed conclusion itself is checked on actual runs (search).",
                  corrected=_conv_corrected)


class _NoCoupling:
    """``H = 0`` and ``F = 0`` for :mod:`stam.steps`: both proxes are the identity."""

    def grad_y_H(self, x, y):
        return 0 * y

    def prox_H(self, z, y, gamma):
        return z

    def prox_F(self, v, gamma):
        return v


#: the instance of the conv-rate counterexamples: G = y^2/2 in R^1, H = F = 0, exact gradients
_RATE_INSTANCE = {"G": "y^2/2 (R^1, L1 = 1)", "H": "0", "F": "0", "gradients": "exact (A0 = 0, B0 = 1, C0 = 0)",
                  "y^0": 1.0, "z^{-1}": 0.0}


def rate_run(beta: float, gamma: float, eps: float, T: int, replay: int = 200) -> dict:
    """Theorem conv-rate on an actual run of Algorithm 1 for :data:`_RATE_INSTANCE` (all of
    Assumption ass2 holds: ``L1 = 1``, ``L2* = ... = L5* = 0``, ``l = 0``, ``(A, C) = (2, 0)`` by
    Lemma ES-GH): the first ``replay`` steps through :func:`stam.steps.stam_step`, the rest by
    the closed form ``y^t = (1 - 1/beta)^t y^0`` (sympy's ``rsolve`` of eq. (algy)), checked
    against the replayed steps.  ``x = u = z = 0`` throughout, so ``dist(0, ...) = 0``, ``M_t = 0``
    (``M0' = 0``) and the stationarity measure is ``|grad G(y^t)| = |y^t|``; the conclusion fails
    iff ``min_{t < T} |y^t| > eps``."""
    from stam.steps import stam_init, stam_step

    tt = sp.Symbol("t", integer=True, nonnegative=True)
    yf, b_, y0 = sp.Function("y"), sp.Symbol("beta", positive=True), sp.Symbol("y0")
    closed = sp.rsolve(yf(tt + 1) - (yf(tt) - yf(tt) / b_), yf(tt), {yf(0): y0})  # eq. (algy), grad G(y) = y
    ops, y_0 = _NoCoupling(), np.array([_RATE_INSTANCE["y^0"]])
    st = stam_init(y_0, ops, gamma, z_prev=np.array([_RATE_INSTANCE["z^{-1}"]]))
    ys = [float(st.y[0])]
    for _ in range(min(replay, T) - 1):
        st = stam_step(st, st.y, ops, gamma, beta)
        ys.append(float(st.y[0]))
        if not np.isfinite(ys[-1]) or abs(ys[-1]) > 1e12:
            break
    assert float(np.max(np.abs(st.x)) + np.max(np.abs(st.u)) + np.max(np.abs(st.z))) == 0.0
    rate = 1 - 1 / beta  # the base of the closed form, |y^t| = |rate|^t |y^0|
    assert sp.simplify(closed - y0 * (1 - 1 / b_) ** tt) == 0
    replayed = np.array(ys)
    assert np.allclose(replayed, y_0[0] * rate ** np.arange(len(ys)), rtol=1e-9)
    logs = np.log(abs(rate)) * np.arange(T) if T <= 10**7 else None  # log |y^t| - log |y^0|, t < T
    min_abs = float(abs(y_0[0]) * np.exp(np.min(logs))) if logs is not None else float("nan")
    hit = None
    if abs(rate) < 1:  # the first t with |y^t| <= eps
        hit = int(np.ceil(np.log(eps / abs(y_0[0])) / np.log(abs(rate))))
    return {"instance": dict(_RATE_INSTANCE), "beta": beta, "gamma": gamma, "eps": eps, "T": T,
            "closed form": f"y^t = {sp.sstr(closed)}", "replayed steps (stam_step)": len(ys),
            "|y^t| at t = 0..4": replayed[:5].tolist(), "min_(t<T) |grad G(y^t)|": min_abs,
            "first t with |grad G(y^t)| <= eps": hit, "conclusion fails": bool(min_abs > eps), "evidence": "run"}


def rate_setting(eps: float = 0.1, gamma: float = 0.1) -> dict:
    """The constants of :data:`_RATE_INSTANCE` (Lemma ES-GH for exact gradients, eq. (eq705)'s
    T_min, the three lower bounds on beta) and ``delta0 = G(y^0) - G^inf`` (``M0' = 0``)."""
    A, C = num.deterministic_es(1.0, 0.0)
    c = num.Constants(L1=1.0, L2=0.0, L3=0.0, L4=0.0, L5=0.0, l=0.0, A=float(A), C=float(C))
    delta0 = _RATE_INSTANCE["y^0"] ** 2 / 2
    T = int(num.T_min(gamma, c, delta0, 0.0, eps))
    bounds = {key: float(v) for key, v in num.beta_lower_bounds(T, gamma, c, eps).items()}
    return {"c": c, "delta0": delta0, "T": T, "bounds": bounds, "admissible gamma": bool(num.admissible_gamma(gamma, c)),
            "gamma": gamma, "eps": eps}


@item("conv-rate beta conditions", covers=("conv-rate", "eq700"))
def beta_conditions() -> Result:
    """``beta > min{...}`` admits a beta below all three bounds: for exact gradients C = 0, so the
    minimum is 0, and ``beta = 0.4`` makes Algorithm 1 diverge (:func:`rate_run`), although T = T_min."""
    bc = k.beta_conditions()
    rs = rate_setting()
    beta = 0.4
    ce = None
    if rs["admissible gamma"] and min(rs["bounds"].values()) < beta:
        run = rate_run(beta, rs["gamma"], rs["eps"], rs["T"])
        if run["conclusion fails"]:
            ce = rounded({**run, "beta_bounds": rs["bounds"], "delta0": rs["delta0"], "M0'": 0.0,
                     "meaning": "gamma admissible, T = T_min, beta > min{...} = 0 as printed, yet no t < T has "
                                "|grad G(y^t)| <= eps: the iterates diverge"})
    # the proof's own requirements (eq700, Theorem conv's beta K1/K2 >= 2, eq702), all needed: their conjunction
    bb = sp.Symbol("bb", positive=True)
    reqs = [sp.solve(sp.Eq(bb**2, (s.L + s.M) * s.A * s.T), bb)[0], 2 * s.K2 / s.K1,
            sp.solve(sp.Eq(bb, 2 * s.C * (s.L + s.M) / s.eps**2), bb)[0]]
    proof_needs = sp.Max(*reqs)
    agrees = sp.simplify(proof_needs - sp.Max(*bc.values())) == 0
    return Result("beta > min{sqrt((L+M)AT), 2K2/K1, 2(L+M)C/eps^2}",
                  "beta >= max{" + ", ".join(pretty(v) for v in bc.values()) + "}", ce,
                  (Occurrence("the proof: eq700, eq701 (beta >= 2K2/K1), eq702 each required (their max is printed "
                              "nowhere)", agrees, printed=False),),
                  note="the proof (eq700, eq51, eq702) needs all three bounds: max, not min; with exact gradients "
                       "(C = 0) the printed min is 0 and beta = 0.4 lets STAM diverge.")


@item("conv-rate upper bound on beta (eq703)", covers=("conv-rate", "eq701", "eq702", "eq703"))
def beta_window() -> Result:
    """eq703 requires ``T >= 12 beta (delta0 + M0')/eps^2``, an upper bound on beta that the statement
    drops: with ``beta`` far above its lower bounds at ``T = T_min`` the bound eq701 exceeds eps^2.
    The window ``max{...} <= beta <= eps^2 T/(12 (delta0 + M0'))`` is nonempty iff ``T >= T_min``
    (each bound of eq705 is where one lower bound meets the upper one, :func:`constants.T_lower_bounds`)."""
    rs = rate_setting()
    lower = max(rs["bounds"].values())
    beta = 1e9
    ce = None
    if rs["admissible gamma"] and beta >= lower:
        run = rate_run(beta, rs["gamma"], rs["eps"], rs["T"])
        at_max = rate_run(lower, rs["gamma"], rs["eps"], rs["T"])
        if run["conclusion fails"]:
            ce = rounded({**run, "beta_bounds": rs["bounds"], "delta0": rs["delta0"], "M0'": 0.0,
                     "at beta = max": {"beta": lower, "first t with |grad G(y^t)| <= eps":
                                       at_max["first t with |grad G(y^t)| <= eps"]},
                     "meaning": "gamma admissible, T = T_min, beta >= max{...} (so also > min), yet no t < T has "
                                "|grad G(y^t)| <= eps: beta needs the upper bound eps^2 T/(12 (delta0 + M0'))"})
    # eq701 from Theorem conv with (1+q)^T <= 3; eq702, eq703 solved (sympy)
    e3 = sp.Symbol("e3")
    rhs = k.theorem_rhs().subs((1 + (s.L + s.M) * s.A / s.beta**2) ** s.T, e3).subs(e3, 3)
    printed701 = (s.L + s.M) * s.C / s.beta + 6 * s.beta / s.T * (s.delta0 + s.M0)
    ok701 = sp.simplify(rhs - printed701) == 0
    Tt = sp.Symbol("Tt", positive=True)
    upper = sp.solve(sp.Eq(6 * s.beta * (s.delta0 + s.M0) / Tt, s.eps**2 / 2), Tt)[0]
    printed703 = 12 * s.beta * (s.delta0 + s.M0) / s.eps**2
    ok703 = sp.simplify(upper - printed703) == 0
    corrected = lambda: Corrected(  # noqa: E731
        "Theorem conv-rate", COMMON + [sp.Gt(sp.Symbol("K_1"), 0, evaluate=False), sp.Le(k.second_condition(), 1),
                                       sp.Gt(s.eps, 0, evaluate=False),
                                       sp.Ge(s.T, k.T_min_expr()),
                                       sp.Ge(s.beta, sp.Max(*k.beta_conditions().values())),
                                       sp.Le(s.beta, s.eps**2 * s.T / (12 * (s.delta0 + s.M0)))],
        Tex(r"\exists\,t_0\in\{0,\dots,T-1\}:\ \mathbb{E}\|\nabla G(y^{t_0})+\nabla_y H(u^{t_0},y^{t_0})\|\le"
            r"\epsilon \text{ and } \mathbb{E}\operatorname{dist}\big(0,\nabla_x H(u^{t_0},y^{t_0})+\partial F(u^{t_0})\big)"
            r"\le\epsilon"),
        {**_constants(), "T_min": k.T_min_expr()},
        "beta >= max (printed min) and beta <= eps^2 T / (12 (delta0 + M0')) (dropped); T_min = O(eps^-4)")
    note = ("the statement drops beta <= eps^2 T/(12 (delta0 + M0')), which eq703 needs; "
            f"eq701 from Theorem conv with (1+q)^T <= 3: {'same' if ok701 else 'differs'}; eq702, eq703 solved: "
            f"{'same' if ok703 else 'differs'}")
    return Result("beta > min{...}, T >= (eq705)   (no upper bound on beta)",
                  sp.And(sp.Ge(s.beta, sp.Max(*k.beta_conditions().values())),
                         sp.Le(s.beta, s.eps**2 * s.T / (12 * (s.delta0 + s.M0)))),
                  ce, (Occurrence("eq703: T >= 12 beta (delta0 + M0')/eps^2, a step of the proof that the statement's T "
                              "(eq705) does not give; the bound on beta is printed nowhere", ok703, printed=False),),
                  note=note, corrected=corrected)


@item("eq700 ((1+q)^T <= e <= 3)", covers=("eq700",))
def eq700() -> Result:
    x = sp.Symbol("x", nonnegative=True)
    f = x - sp.log(1 + x)  # >= 0: f(0) = 0, f' = x/(1+x) >= 0
    mono = sp.simplify(sp.diff(f, x))
    ok = f.subs(x, 0) == 0 and sp.factor(mono).is_nonnegative and bool(sp.E < 3)
    ce = None if ok else {"f'": str(mono), "meaning": "log(1+x) <= x not derived"}
    return Result("(1 + (L+M)A/beta^2)^T <= exp((L+M)AT/beta^2) <= e <= 3 for beta^2 >= (L+M)AT",
                  f"log(1+x) <= x (derivative of x - log(1+x) is {mono} >= 0), e = {float(sp.E):.6f} < 3", ce,
                  note="(1+q)^T <= exp(qT) <= e <= 3 once beta^2 >= (L+M)AT.")


@item("eq704 -> eq705 (T bound)", covers=("eq704", "eq705"))
def T_bound() -> Result:
    derived = k.T_lower_bounds()
    printed_terms = [12 * (s.L + s.M) * (s.delta0 + s.M0) / s.eps**2 * f for f in
                     (12 * (s.delta0 + s.M0) * s.A / s.eps**2, 2 * s.K2 / (s.K1 * (s.L + s.M)), 2 * s.C / s.eps**2)]
    diffs = [sp.simplify(p - d) for p, d in zip(printed_terms, derived.values())]
    rate = k.T_min_rate()["limit"]
    ce = None
    if any(d != 0 for d in diffs):
        ce = {"printed - derived": [str(d) for d in diffs], "meaning": "a printed T bound is not the derived one"}
    return Result(pretty(k.T_MIN_PRINTED),
                  "max{" + ", ".join(pretty(v) for v in derived.values()) + "};  lim eps^4 T_min = " + pretty(rate),
                  ce, note="eq704's first bound has T on both sides; squared out it is eq705's first term. "
                           "T_min = O(eps^-4).")


@item("conv-rate conclusion (Jensen)", covers=("conv-rate",))
def conv_rate_conclusion() -> Result:
    """From ``E a^2 + E d^2 <= eps^2`` at some t0: ``E a <= sqrt(E a^2) <= eps`` (Jensen), the same for d."""
    Ea2, Ed2, e = sp.symbols("Ea2 Ed2 epsilon", nonnegative=True)
    # Jensen: (E a)^2 <= E a^2; with E a^2 <= eps^2 - E d^2 <= eps^2
    slack = sp.expand(e**2 - Ea2)  # >= Ed2 >= 0 under the hypothesis
    ok = sp.expand((e**2 - Ea2 - Ed2) + Ed2 - slack) == 0
    return Result("E||grad G + grad_y H(u^t0, y^t0)|| <= eps and E dist(0, ...) <= eps",
                  "each E X <= sqrt(E X^2) <= sqrt(eps^2) = eps (Jensen; the two squared terms sum to <= eps^2)",
                  None if ok else {"meaning": "Jensen step not derived"},
                  note="E X <= sqrt(E X^2) (Jensen) for each of the two terms summing to <= eps^2.")
