"""Items of Section 2 (sec:convergence): the estimator, expected smoothness, Assumption ass2, the
statements of Lemmas es-lemma, ES-GH, conv-lemma, Remark Rem=09836 and the constant K1 of (k1).
The statements of Theorems conv and conv-rate are in :mod:`.appendix_b`, next to their proofs."""

from __future__ import annotations

import numpy as np
import sympy as sp

from stam.theory.symbolic import chain
from stam.theory.symbolic import constants as k
from stam.theory.symbolic import numeric as num
from stam.theory.symbolic import symbols as s
from stam.theory.papercheck.statementsearch import statement_search_result
from stam.theory.papercheck.items.common import SEED, rounded, es_lemma_instance, premise_witness
from stam.theory.symbolic.stamruns import chain_counterexample, pretty
from stam.theory.papercheck.items.declare import Corrected, Gap, Occurrence, Result, Tex, item


@item("ass1, stochastic G (b-nice sampling is unbiased)", covers=("ass1", "ass-unbiased", "stochastic G"))
def unbiased() -> Result:
    """Definition ass1 for eq. (stochastic G) with b-nice sampling: ``v_i = 1_{i in S}/p_i``,
    ``P(i in S) = C(N-1, b-1)/C(N, b)`` derived, so ``E v_i = 1`` and ``E grad~G = grad G``."""
    p_in = sp.combsimp(sp.binomial(s.N - 1, s.b - 1) / sp.binomial(s.N, s.b))
    ev = sp.simplify(p_in * s.N / s.b)
    ce = None if ev == 1 else {"E v_i": str(ev), "meaning": "b-nice sampling with p_i = b/N is biased"}
    return Result("E[v_i] = P(i in S)/p_i with p_i = b/N", sp.Eq(sp.Symbol("E[v_i]"), ev, evaluate=False), ce,
                  note=f"P(i in S) = {pretty(p_in)} (derived), so E[v_i] = {pretty(ev)} and eq. (ass-unbiased) holds.")


@item("eq500 (G_i(x) for G_i(y))", covers=("eq500",))
def eq500() -> Result:
    """eq. (eq500) prints ``G(y) = (1/N) sum_i G_i(x)``: the right side does not depend on y."""
    x, y = sp.symbols("x y", real=True)
    Gi = sp.Function("G_i")
    printed, derived = Gi(x), Gi(y)
    same = sp.simplify(printed - derived) == 0
    ce = None
    if not same:  # G_i(t) = t, N = 1: G(1) = 1 but the printed right side at x = 0 is 0
        val = {"x": 0, "y": 1, "G_1(t)": "t", "N": 1, "G(y) = G_1(y)": 1, "printed right side G_1(x)": 0,
               "meaning": "with N = 1, G_1(t) = t the printed right side is G(x), not G(y)"}
        ce = val
    used = sp.Function("grad G_i")(y)  # eq. (stochastic G) and eq. (eq100) use grad G_i(y)
    return Result(sp.Eq(sp.Function("G")(y), printed, evaluate=False), sp.Eq(sp.Function("G")(y), derived, evaluate=False),
                  ce, (Occurrence("eq. (stochastic G): grad G_i(y)", used.free_symbols == derived.free_symbols),),
                  note="the summands are functions of y (eq. (stochastic G), eq. (eq100)).")


@item("422 / rem1 (ES contains bounded variance)", covers=("ass3", "422", "rem1"))
def es_contains_bv() -> Result:
    """Remark rem1: bounded variance is a special case of Assumption ass3.  With
    ``g~ = grad G + xi``, ``E xi = 0``, ``E xi^2 <= sigma^2``: ``E g~^2 = g^2 + E xi^2`` (derived),
    so eq. (422) holds with ``(A0, B0, C0) = (0, 1, sigma^2)``."""
    g, xi, Exi2, sig2 = sp.symbols("g xi E[xi^2] sigma^2", real=True)
    second = sp.expand((g + xi) ** 2)
    E = second.subs(xi**2, Exi2).subs(xi, 0)  # E xi = 0, E xi^2 = Exi2
    bound = 2 * 0 * sp.Symbol("G-G^inf") + 1 * g**2 + sig2
    slack = sp.simplify(bound - E.subs(Exi2, sig2))
    ce = None if slack == 0 else {"slack": str(slack)}
    return Result("E||g~||^2 <= 2 A0 (G - G^inf) + B0 ||grad G||^2 + C0 (an assumption)",
                  sp.Eq(sp.Symbol("E||g~||^2"), E, evaluate=False), ce,
                  note="bounded variance E||g~ - grad G||^2 <= sigma^2 gives eq. (422) with A0 = 0, B0 = 1, C0 = sigma^2.")


# ---------------------------------------------------------------------------------------------
# Lemma es-lemma
# ---------------------------------------------------------------------------------------------

@item("eq101 (Lemma es-lemma A, C)", covers=("es-lemma", "eq101"))
def es_lemma(seed: int = SEED) -> Result:
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
            ce = rounded({"N": N, "b": b, "G_i": "(a_i/2)(y - c_i)^2", "a_i": a, "c_i": cc,
                     "H": "(lam/2)(x-y)^2", "lam": lam, "x": x, "y": y,
                     "E||g~ + grad_y H||^2 (enumerated)": e["lhs"], "printed 2A(...)+C": rhs_p,
                     "derived 2A(...)+C": rhs_d, "printed A": A_p, "derived A": A_d,
                     "meaning": "the ES inequality of Lemma es-lemma fails with the printed A"})
            break
    esl = k.es_lemma()
    # the paper's other prints of A: the statement of the lemma and the coefficient of eq101's line 3
    line3 = (4 * s.m_v + s.L3) / 2
    same = lambda e: sp.simplify(e - esl["A"]) == 0  # noqa: E731
    corrected = lambda: Corrected(  # noqa: E731
        "Lemma es-lemma",
        [Tex(r"G=\tfrac1N\sum_{i=1}^N G_i,\ G_i\ge G_i^{\inf}>-\infty,\ \nabla G_i\ L_1^i\text{-Lipschitz}"),
         Tex(r"H \text{ satisfies (a2), (a3) of Assumption ass2 and } H\ge H^{\inf}>-\infty"),
         Tex(r"\mathbb{E}[v_i^2]<\infty \text{ for all } i,\quad m:=\max_i L_1^i\,\mathbb{E}[v_i^2]"),
         Tex(r"\Delta^{\inf}=(G+H)^{\inf}-\tfrac1N\sum_i\big(G_i^{\inf}+H^{\inf}\big)\ (\ge 0)")],
        Tex(r"\mathbb{E}\|\tilde\nabla G(y)+\nabla_y H(x,y)\|^2\le 2A\,\big(G(y)+H(x,y)-(G+H)^{\inf}\big)+C"),
        {"A": esl["A"], "C": esl["C"]}, "A = 2 max(m, L3*) (printed (4 m + L3*)/2)")
    return Result(
        "A = " + pretty(k.ES_LEMMA_A_PRINTED) + ", C = 2 A Delta_inf   (m = max_i L1^i E[v_i^2])",
        f"A = {pretty(esl['A'])}, C = {pretty(esl['C'])}; E[v_i^2] = {pretty(k.ev2_nice_without_replacement())} "
        f"(b-nice), {pretty(k.ev2_with_replacement())} (with replacement)",
        ce, (Occurrence("statement of Lemma es-lemma", same(k.ES_LEMMA_A_PRINTED)),
             Occurrence("eq101 line 3 coefficient (4m + L3*)/N, halved", same(line3))),
        note="eq101 line 2 -> 3: (4/N) sum [m g_i + L3* h] <= 4 max(m, L3*) (1/N) sum (g_i + h), not (4m + L3*)(...).",
        corrected=corrected)


@item("G_i^inf (proof of Lemma es-lemma)", covers=("es-lemma",))
def gi_inf() -> Result:
    """The proof defines ``G_i^inf = inf_y G(y)``; Lemma Lip-lemma for ``G_i`` needs ``inf_y G_i``.
    Counterexample: ``G_1 = (y-1)^2/2, G_2 = (y+1)^2/2`` at ``y = 1`` (computed)."""
    y = sp.Symbol("y", real=True)
    G1, G2 = (y - 1) ** 2 / 2, (y + 1) ** 2 / 2
    G = (G1 + G2) / 2
    inf_G = G.subs(y, sp.solve(sp.diff(G, y), y)[0])
    inf_G1 = G1.subs(y, sp.solve(sp.diff(G1, y), y)[0])
    at = {y: 1}
    lhs = sp.diff(G1, y).subs(at) ** 2
    rhs_printed, rhs_derived = 2 * 1 * (G1.subs(at) - inf_G), 2 * 1 * (G1.subs(at) - inf_G1)
    ce = None
    if lhs > rhs_printed:
        ce = {"G_1": "(y-1)^2/2", "G_2": "(y+1)^2/2", "y": 1, "L_1^1": 1, "||grad G_1||^2": int(lhs),
              "2 L (G_1 - inf G)": float(rhs_printed), "2 L (G_1 - inf G_1)": float(rhs_derived),
              "meaning": "Lemma Lip-lemma fails for G_1 with the printed G_i^inf = inf G"}
    return Result("G_i^inf = inf_y G(y)", "G_i^inf = inf_y G_i(y)", ce,
                  (Occurrence("statement of Lemma es-lemma: 'each G_i bounded below by G_i^inf'", rhs_derived >= lhs),),
                  note="a slip in the proof; the statement has it right.")


# ---------------------------------------------------------------------------------------------
# Assumption ass2 and Lemma ES-GH
# ---------------------------------------------------------------------------------------------

@item("ass2 (a1)-(a3): G + H(x, .) is L-smooth", covers=("ass2", "G-lip", "H-ylip", "lip-const"))
def l_smooth() -> Result:
    """eq. (eq3) uses that ``y -> G(y) + H(x, y)`` has an L-Lipschitz gradient: by eq. (G-lip),
    eq. (H-ylip) and the triangle inequality its constant is ``L1 + L3(x) <= L1 + L3* <= L``."""
    L3x = sp.Symbol("L_3(x)", nonnegative=True)
    const = s.L1 + L3x
    slack = sp.simplify((s.L - const).subs(s.L, s.L1 + s.L3 + sp.Symbol("s", nonnegative=True)).subs(
        L3x, s.L3 - sp.Symbol("r", nonnegative=True)))
    ce = None if slack.is_nonnegative else {"slack": str(slack)}
    return Result("L3* + L1 <= L (eq. lip-const) gives the L-smoothness of G + H(x, .) used in eq3",
                  sp.Le(const, s.L, evaluate=False), ce,
                  note="sup_x L3(x) <= L3* and L3* + L1 <= L; l = L2* is admissible (an L2*-smooth H(., y) is "
                       "at most L2*-weakly convex).")


@item("ass2 (a3): L5* omitted from 'there exist'", covers=("lip-const", "Hy-ylip"))
def l5_omitted() -> Result:
    """(a3) quantifies ``L2*, L3*, L4* >= 0 and L > 0`` but then bounds ``sup_y L5(y) <= L5*``, a constant it never
    introduces.  Harmless: ``L5* = L4*`` always works.  One line: for ``C^1`` ``H`` the mixed second difference
    ``D = H(x+su, y+tv) - H(x, y+tv) - H(x+su, y) + H(x, y)`` is ``int_0^s <grad_x H(x+r u, y+tv) - grad_x H(x+r u, y), u> dr
    <= s t L4* |u||v|`` by (Hx-ylip), and ``D / t -> <grad_y H(x+su, y) - grad_y H(x, y), v>`` as ``t -> 0``, so
    ``||grad_y H(x+su, y) - grad_y H(x, y)|| <= L4* ||su||``: (Hy-ylip) holds with ``L5(y) = L4*``.  Checked in sympy:
    on a general quadratic ``H`` (any ``2 x 2`` blocks) the two constants are the norms of ``B`` and ``B'``, equal
    (``B'B`` and ``BB'`` have one characteristic polynomial), and the mixed difference of a general smooth ``H`` is
    the same double integral both ways (the order of its two first differences does not matter)."""
    b = sp.symbols("b0:4", real=True)
    B = sp.Matrix(2, 2, b)
    lam_ = sp.Symbol("mu")
    same_norm = sp.expand((B.T * B).charpoly(lam_).as_expr() - (B * B.T).charpoly(lam_).as_expr()) == 0
    x, y, s_, t_ = sp.symbols("x y s t", real=True)
    Hf = sp.Function("H")
    D_x_first = (Hf(x + s_, y + t_) - Hf(x, y + t_)) - (Hf(x + s_, y) - Hf(x, y))
    D_y_first = (Hf(x + s_, y + t_) - Hf(x + s_, y)) - (Hf(x, y + t_) - Hf(x, y))
    same_difference = sp.expand(D_x_first - D_y_first) == 0
    net = k.quadratic_coupling()
    ok = same_norm and same_difference and sp.simplify(net["L5"] - net["L4"]) == 0
    return Result(Tex(r"\text{(a3): there exist } L_2^*, L_3^*, L_4^* \ge 0,\ L>0 \text{ (no } L_5^*\text{) with }"
                      r"\sup_y L_5(y) \le L_5^*"),
                  "L5* = L4* satisfies sup_y L5(y) <= L5* for every H of (a2), (a3)",
                  None if ok else {"norms of B and B' equal": same_norm, "mixed differences equal": same_difference},
                  note="harmless omission: L5* = L4* always works (the mixed second difference, bounded through "
                       "(Hx-ylip), gives (Hy-ylip) with L5(y) = L4*); for H = (lam/2)||x-y||^2 both are lam.",
                  evidence="proof" if ok else "instance")


@item("gap: H bounded below (Lemma ES-GH, Lemma conv-lemma)", covers=("ES-GH", "gh-es", "ass2"))
def gap_h_inf() -> Result:
    """Lemma ES-GH and everything after it use ``H^inf`` and ``(G+H)^inf``; Assumption ass2 bounds
    only G below.  Witness: ``H(x, y) = -x`` satisfies (a2), (a3) (its gradient is constant) and
    ``H^inf = -infinity``, so ``C = 2A[(G+H)^inf - G^inf - H^inf] + 2C0`` is undefined."""
    x, y = sp.symbols("x y", real=True)
    H = -x
    grads = [sp.diff(H, v) for v in (x, y)]
    lips = [sp.diff(g_, v) for g_ in grads for v in (x, y)]
    inf = sp.limit(H, x, sp.oo)
    wit = {"H(x, y)": "-x", "second derivatives (L2..L5 may be any > 0)": [str(v) for v in lips],
           "H^inf": str(inf)}
    return Result("(G+H)^inf and H^inf finite", f"Assumption ass2 allows H^inf = {inf}", None,
                  gap=Gap("H^inf = inf H > -infinity (Lemma Lip-lemma for H, the constant C)",
                          "Assumption ass2 (a1) bounds G below; nothing bounds H (Lemma es-lemma assumes it)",
                          "add to Assumption ass2: H is bounded below by H^inf > -infinity", wit))


@item("Lemma ES-GH (gh-es)", covers=("ES-GH", "gh-es"))
def es_gh() -> Result:
    """Lemma ES-GH: derived constants equal the print; no violation on random instances with an
    enumerated estimator (G = (1/N) sum G_i, b-nice) whose A0, B0, C0 are computed exactly."""
    esgh = k.es_gh()
    printed_A = sp.Max(2 * s.A0 + 2 * s.B0 * s.L1, 2 * s.L3)
    printed_C = 2 * printed_A * s.gap + 2 * s.C0
    same = sp.simplify(esgh["A"] - printed_A) == 0 and sp.simplify(esgh["C"] - printed_C) == 0
    ce = None
    if not same:
        ce = {"printed A": str(printed_A), "derived A": str(esgh["A"]), "meaning": "the printed A, C are not derived"}
    corrected = lambda: Corrected(  # noqa: E731
        "Lemma ES-GH",
        [Tex(r"\tilde\nabla G \text{ satisfies Assumption ass3 (422) with } A_0,B_0,C_0\ge 0"),
         Tex(r"G, H \text{ satisfy Assumption ass2}"),
         Tex(r"H\ge H^{\inf}>-\infty \text{ (not stated in the paper)}")],
        Tex(r"\mathbb{E}\|\tilde\nabla G(y)+\nabla_y H(x,y)\|^2\le 2A\,\big(G(y)+H(x,y)-(G+H)^{\inf}\big)+C"),
        {"A": esgh["A"], "C": esgh["C"]})
    return Result(f"A = {pretty(printed_A)}, C = {pretty(printed_C)}", f"A = {pretty(esgh['A'])}, C = {pretty(esgh['C'])}",
                  ce, note="Young, eq. (422), Lemma Lip-lemma; property-tested in tests/test_theory_es.py.",
                  corrected=corrected)


# ---------------------------------------------------------------------------------------------
# K1 and Remark Rem=09836
# ---------------------------------------------------------------------------------------------

@item("k1 vs eq36 (K1)", covers=("k1",))
def k1() -> Result:
    derived = k.K1_expr()
    same_k1 = sp.simplify(chain.K1_PRINTED_K1 - derived) == 0
    same_36 = sp.simplify(chain.K1_PRINTED_EQ36 - derived) == 0
    ce = None
    if not (same_k1 and same_36):
        ce = {"(k1)": str(chain.K1_PRINTED_K1), "eq36": str(chain.K1_PRINTED_EQ36), "derived": str(derived),
              "meaning": "a printed K1 differs from the derived one"}
    return Result(pretty(chain.K1_PRINTED_K1) + "  |  eq36: " + pretty(chain.K1_PRINTED_EQ36), pretty(derived), ce,
                  note="eq. k1, Lemma par2 and eq36 give the same K1.")


@item("Rem=09836 (threshold of K1 > 0)", covers=("Rem=09836",))
def threshold(seed: int = SEED) -> Result:
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
        ce = rounded({"L2*": L2[i], "l": l[i], "printed_threshold": printed[i], "exact_threshold": exact[i], "gamma": g,
                 "K1(gamma)": float(num.K1(g, ci)),
                 "meaning": "gamma below the printed threshold with K1(gamma) <= 0"})
    # the remark's own recipe ("the quadratic formula") applied to the printed (k1)
    # (the same polynomial as the one whose positive root is derived: same root)
    numer = sp.expand(sp.numer(sp.together(chain.K1_PRINTED_K1)))
    own = sp.expand(numer - thr["numerator"]) == 0 or sp.expand(numer + thr["numerator"]) == 0
    # K1 = numer / (4 gamma) with numer -> 1 > 0 as gamma -> 0+
    lim = sp.oo if numer.subs(s.gamma, 0) > 0 and sp.denom(sp.together(chain.K1_PRINTED_K1)) == 4 * s.gamma else "?"
    b_def = f"  with b = {pretty(thr['b'])}"
    return Result(
        pretty(thr["printed_in_b"]) + b_def,
        pretty(thr["root_in_b"]) + b_def + " (positive root of 4 gamma K1) = " + pretty(thr["stable"])
        + "; at L2*=0: " + pretty(thr["at_L2_zero"]),
        ce, (Occurrence("the quadratic formula on the printed (k1) (a recipe: the root is printed nowhere)", own,
                        printed=False),),
        note="denominator 10 L2* should be 10 (L2*)^2 (agree only at L2* = 1); the print is undefined at L2* = 0. "
             f"K1 > 0 implies gamma*l < 1/10, so the strong convexity of eq260 holds; lim_(gamma->0+) K1 = {lim}.")


#: the hypotheses every corrected statement of Lemma conv-lemma and Theorems conv, conv-rate carries
#: (the gaps of their proofs, closed; see the gap items)
COMMON = [
    Tex(r"(y^t,x^t,u^t,z^t)_{t\ge 0} \text{ from Algorithm 1 started at } x^0=\operatorname{prox}_{\gamma H(\cdot,y^0)}"
        r"(z^{-1}),\ u^0=\operatorname{prox}_{\gamma F}(2x^0-z^{-1}),\ z^0=z^{-1}+u^0-x^0"),
    Tex(r"\mathbb{E}[\tilde\nabla G(y^t)\mid\mathcal{F}_t]=\nabla G(y^t) \text{ and (422) holds conditionally on } "
        r"\mathcal{F}_t \text{ (fresh samples at each } t)"),
    Tex(r"G, H \text{ satisfy Assumption ass2, and } H^{\inf}=\inf H>-\infty"),
    Tex(r"F \text{ proper, lower semicontinuous, bounded below};\ \partial F \text{ the limiting subdifferential}"),
    Tex(r"\mathcal{M}_0'=\mathbb{E}\big[\mathcal{M}_0-\inf_{t\ge 0}\mathcal{M}_t\big]<\infty"),
    Tex(r"\text{for every } t:\ G(y^t),\ H(x^t,y^t),\ H(x^{t+1},y^{t+1}),\ F(u^t),\ \mathcal{M}_t \text{ and } "
        r"\inf_{s\ge 0}\mathcal{M}_s \text{ are integrable (so that } \delta_t,\ \mathcal{M}_0' \text{ and the "
        r"expectations of eq. (eq5)--(eq46) are defined)}"),
]

#: the symbols the corrected statements of Lemma conv-lemma and Theorems conv, conv-rate use, defined
#: (the paper defines them in the proofs or not at all)
DEFINITIONS = {
    "eta_t": Tex(r"\eta_t:=\mathbb{E}\|\nabla G(y^t)+\nabla_y H(x^t,y^t)\|^2"),
    "delta_t": Tex(r"\delta_t:=\mathbb{E}\big[G(y^t)+H(x^t,y^t)\big]-(G+H)^{\inf}"),
    "M_t": Tex(r"\mathcal{M}_t:=F(u^t)+\frac{\|2x^t-u^t-z^t\|^2}{2\gamma}-\frac{\|x^t-z^t\|^2}{2\gamma}"
               r"-\frac{\|u^t-x^t\|^2}{\gamma}\ \text{(eq. (eq651))}"),
    "l, L_1, L_2^*, ..., L_5^*": Tex(r"\text{the constants of Assumption ass2 (eq. (G-lip)--(lip-const)); } "
                                     r"H(\cdot,y)+\tfrac{l}{2}\|\cdot\|^2 \text{ convex}"),
    "A_0, B_0, C_0": Tex(r"\text{the constants of Assumption ass3 (eq. (422))}"),
    "Delta_GH": Tex(r"\Delta_{GH}:=(G+H)^{\inf}-G^{\inf}-H^{\inf}\ (\ge 0)"),
    "G^inf, H^inf, (G+H)^inf": Tex(r"G^{\inf}:=\inf_y G(y)\ \text{(Assumption ass2 (a1))},\ H^{\inf}:=\inf_{x,y}H(x,y),\ "
                  r"(G+H)^{\inf}:=\inf_{x,y}\big[G(y)+H(x,y)\big]\ (\ge G^{\inf}+H^{\inf}>-\infty)"),
    "F_t": Tex(r"\mathcal{F}_t:=\sigma\big((y^s,x^s,u^s,z^s)_{s\le t}\big)\ \text{(the iterates up to } t)"),
    "T": Tex(r"T\ge 1 \text{ an integer (the number of steps)}"),
    "A, C (what they are)": Tex(r"\text{any constants with } \mathbb{E}\|\tilde\nabla G(y)+\nabla_y H(x,y)\|^2\le 2A\big(G(y)+H(x,y)"
                r"-(G+H)^{\inf}\big)+C \text{ for all } x,y \text{ (eq. (gh-es)): Lemma ES-GH gives them from "
                r"Assumption ass3, Lemma es-lemma (corrected) for a finite sum}"),
}


#: the integrability the one-step lemmas need (their expectations defined): Lemma par1 (G and H) and
#: Lemma par2 (H and M); the statements over T steps carry it for every t (:data:`COMMON`)
INTEGRABLE_DESCENT = Tex(r"G(y^t),\ G(y^{t+1}),\ H(x^t,y^t),\ H(x^t,y^{t+1}),\ H(x^{t+1},y^{t+1}) "
                         r"\text{ are integrable}")
INTEGRABLE_STEP = Tex(r"H(x^t,y^{t+1}),\ H(x^{t+1},y^{t+1}),\ \mathcal{M}_t,\ \mathcal{M}_{t+1} \text{ are integrable}")


def definitions() -> dict:
    """:data:`DEFINITIONS` with Lemma ES-GH's A, C and ``omega_t`` solved from its recurrence
    (eq. (eq47), :func:`stam.theory.symbolic.constants.omega`; any ``omega_{-1} > 0``)."""
    esgh = k.es_gh()
    return {**DEFINITIONS, "A": esgh["A"], "C": esgh["C"],
            "omega_t": k.omega(), "omega_{-1}": Tex(r"\omega_{-1}>0 \text{ arbitrary}")}


def constants_K() -> dict:
    """K1, K2, K3, M, L as derived (K3 in terms of K1, K2), and every other symbol the corrected
    statements use (:func:`definitions`)."""
    return {"K_1": k.K1_expr(), "K_2": k.K2_expr(), "K_3": k.K3_expr(False), "M": 2 * sp.Symbol("K_3"),
            "L": k.L_expr(), **definitions()}


@item("Lemma conv-lemma (K3, M = 2 K3)", covers=("conv-lemma", "ineq1"))
def conv_lemma(seed: int = SEED) -> Result:
    """The statement prints ``K3`` (hence ``M = 2 K3``) as in Lemma par2; the bound eq. (ineq1)
    itself is eq. (eq48) (see its item)."""
    printed, derived = k.K3_printed_expr(False), k.K3_expr(False)
    same = k.K3_printed_is_derived()
    ce = None if same else (chain_counterexample("eq39", seed) or premise_witness("eq39", seed))
    par2_same = sp.simplify(chain.K3_PRINTED - derived) == 0
    corrected = lambda: Corrected(  # noqa: E731
        "Lemma conv-lemma",
        COMMON + [sp.Gt(sp.Symbol("K_1"), 0, evaluate=False), sp.Gt(s.beta, 0, evaluate=False)],
        Tex(r"\sum_{t=0}^{T-1}\omega_t\eta_t+\frac{\beta\mathcal{K}_1}{\mathcal{K}_2}\sum_{t=0}^{T-1}\omega_t\,"
            r"\mathbb{E}\Big(\frac{\|z^t-z^{t-1}\|}{\gamma}\Big)^2\le\beta\omega_{-1}(\delta_0+\mathcal{M}_0')"
            r"+\frac{(L+M)C}{2\beta}\sum_{t=0}^{T-1}\omega_t"),
        constants_K(),
        "K3 = (L4*)^2 (1 + 5 gamma) + 5 K1 (L4*)^2/K2 (printed L4* (1 + 5 gamma L4*) + ...)")
    return Result(sp.Eq(s.M, 2 * printed, evaluate=False), sp.Eq(s.M, 2 * derived, evaluate=False), ce,
                  (Occurrence("K3 of Lemma par2", par2_same),),
                  note="M = 2 K3 (eq45 -> eq46) is right; K3 inherits eq25's L4* for (L4*)^2; the printed eq. (ineq1) "
                       "itself is checked on actual runs (search).", corrected=corrected,
                  search=lambda: statement_search_result("conv-lemma", seed))
