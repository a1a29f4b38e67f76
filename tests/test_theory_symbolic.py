"""The sympy derivations (stam.theory.symbolic.chain, stam.theory.symbolic.constants) and the numeric layer
generated from them."""

import itertools
import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from stam.theory.symbolic import chain, codegen
from stam.theory.symbolic import constants as k
from stam.theory.symbolic import numeric as n
from stam.theory.symbolic import numeric_generated as g
from stam.theory.symbolic import symbols as s


def test_algebraic_identities_of_appendix_a():
    for name, expr in chain.identities().items():
        assert expr == 0, name


def test_chain_defines_K1_K2_K3():
    d = chain.derivation()
    assert sp.simplify(d["K1"] - chain.K1_PRINTED_K1) == 0  # eq. k1
    assert sp.simplify(d["K1"] - chain.K1_PRINTED_EQ36) == 0  # eq36 / Lemma par2
    assert sp.simplify(d["K2"] - chain.K2_PRINTED) == 0
    expected_K3 = s.L4**2 * (1 + 5 * s.gamma) + 5 * s.K1 * s.L4**2 / s.K2
    assert sp.simplify(d["K3"] - expected_K3) == 0
    assert sp.simplify(k.M_expr() - 2 * expected_K3) == 0  # M = 2 K3


def test_chain_locates_the_error_in_eq25():
    verdicts = {st_.label: chain.compare(st_.printed, st_.derived).verdict for st_ in chain.steps()}
    assert verdicts["eq24"] == "same" and verdicts["eq35"] == "same"
    for label in ("eq25", "eq26", "eq27", "eq300", "eq36", "eq39"):
        assert verdicts[label] == "not implied", label
    # eq26 .. eq39 follow from their printed predecessors: the error enters at eq25 only
    for st_ in chain.steps():
        follows = chain.compare(st_.printed, st_.printed_from_printed).verdict == "same"
        assert follows == (st_.label != "eq25"), st_.label
    residual = chain.compare(chain.step("eq25").printed, chain.step("eq25").derived).residual
    assert sp.simplify(residual - s.L4 * (1 - s.L4) * chain.Y / 2) == 0


def test_gamma_threshold_is_the_root_and_the_print_differs():
    thr = k.gamma_threshold()
    num = thr["numerator"]
    assert sp.simplify(num.subs(s.gamma, thr["stable"])) == 0
    assert sp.simplify(thr["printed"] - thr["stable"]) != 0
    # both agree at L2* = 1 only (the printed denominator is 10 L2* instead of 10 L2*^2)
    assert sp.simplify((thr["printed"] - thr["stable"]).subs(s.L2, 1)) == 0
    # K1 > 0 implies gamma l < 1/10: the slack 1 - 10 gamma l - numerator is >= 0
    assert thr["gamma_l_slack"].is_nonnegative


def test_T_lower_bounds_equal_eq705_and_are_order_eps_minus_4():
    derived = k.T_lower_bounds()
    D = s.delta0 + s.M0
    printed = [12 * (s.L + s.M) * D / s.eps**2 * f for f in
               (12 * D * s.A / s.eps**2, 2 * s.K2 / (s.K1 * (s.L + s.M)), 2 * s.C / s.eps**2)]
    for p, d in zip(printed, derived.values()):
        assert sp.simplify(p - d) == 0
    lim = k.T_min_rate()["limit"]
    val = lim.subs({s.A: 1, s.C: 0.5, s.L: 2, s.M: 1, s.delta0: 1, s.M0: 0})
    assert 0 < float(val) < math.inf


def test_es_constants():
    gh, esl = k.es_gh(), k.es_lemma()
    assert sp.simplify(gh["A"] - sp.Max(2 * s.A0 + 2 * s.B0 * s.L1, 2 * s.L3)) == 0
    assert esl["A"] == sp.Max(2 * s.m_v, 2 * s.L3)
    assert sp.simplify(esl["C"] - 2 * esl["A"] * s.delta_inf) == 0
    assert k.ev2_nice_without_replacement() == s.N / s.b


@pytest.mark.parametrize("N,b", [(3, 1), (4, 2), (5, 3), (5, 5)])
def test_ev2_by_enumeration(N, b):
    """E[v_i^2] = N/b for b-nice sampling without replacement; (N+b-1)/b with replacement."""
    without = [((N / b) * (0 in S)) ** 2 for S in itertools.combinations(range(N), b)]
    assert np.mean(without) == pytest.approx(float(k.ev2_nice_without_replacement().subs({s.N: N, s.b: b})))
    with_ = [((N / b) * draw.count(0)) ** 2 for draw in itertools.product(range(N), repeat=b)]
    assert np.mean(with_) == pytest.approx(float(k.ev2_with_replacement().subs({s.N: N, s.b: b})))


def test_network_specialisation():
    qc = k.quadratic_coupling()
    assert [qc[key] for key in ("L2", "L3", "L4", "L5", "l")] == [s.lam, s.lam, s.lam, s.lam, -s.lam]
    nu = k.network_updates()
    sy = nu["symbols"]
    assert sp.simplify(nu["printed"]["U"] - nu["derived"]["U"]) == 0
    dW = nu["printed"]["W"] - nu["derived"]["W"]
    assert sp.simplify(dW) != 0
    assert sp.simplify(dW.subs({sy["W~^t"]: sy["U^t"], sy["gradL(W^T)"]: sy["gradL(W^t)"]})) == 0


def test_omega_and_theorem_rhs():
    w = k.omega()
    q = (s.L + s.M) * s.A / s.beta**2
    assert sp.simplify(w - s.omega_m1 / (1 + q) ** (s.t + 1)) == 0
    rhs = k.theorem_rhs()
    expected = 2 * (1 + q) ** s.T / s.T * s.beta * (s.delta0 + s.M0) + (s.L + s.M) * s.C / s.beta
    assert sp.simplify(rhs - expected) == 0


_EXPRS = {name: expr for name, _, expr in codegen.functions()}
# an independent evaluation of the same sympy expressions: mpmath at 30 digits
_MP = {name: (codegen._args(e), sp.lambdify([sp.Symbol(a) for a in codegen._args(e)],
                                             e.subs({x: sp.Symbol(codegen.NAMES[x]) for x in e.free_symbols}), "mpmath"))
       for name, e in _EXPRS.items()}
pos = st.floats(0.01, 5, allow_nan=False)


@settings(max_examples=40)
@given(gamma=st.floats(1e-3, 0.2), L2=pos, L4=pos, dl=pos, L=pos, A=pos, C=pos, M=pos, d0=pos, M0=pos,
       eps=st.floats(1e-2, 1), beta=st.floats(1, 1e3), T=st.integers(1, 10**4))
def test_numeric_layer_equals_symbolic(gamma, L2, L4, dl, L, A, C, M, d0, M0, eps, beta, T):
    """The generated numpy code (stam.theory.symbolic.numeric_generated) equals the sympy expressions
    evaluated independently (mpmath, 30 digits) at random points."""
    import mpmath

    vals = {"gamma": gamma, "L2": L2, "L4": L4, "l": dl - L2, "L": L, "A": A, "C": C, "M": M, "delta0": d0,
            "M0": M0, "eps": eps, "beta": beta, "T": T, "K1": 1.3, "K2": 2.1, "L1": 1.0, "L3": 0.7, "L5": 0.3,
            "A0": 0.4, "B0": 0.9, "C0": 0.2, "gap": 0.1, "m": 2.0, "delta_inf": 0.3, "N": 10, "b": 3}
    with mpmath.workdps(30):
        for name, (args, f_mp) in _MP.items():
            exact = f_mp(*[mpmath.mpf(vals[a]) for a in args])
            with np.errstate(over="ignore"):  # (1+q)^T may exceed the float range: inf on both sides
                got = getattr(g, name)(*[vals[a] for a in args])
            assert float(got) == pytest.approx(float(exact), rel=1e-9), name


@settings(max_examples=20)
@given(lam=st.floats(0.05, 5), L1=st.floats(0, 5), A=st.floats(0.01, 5), C=st.floats(0, 5), u=st.floats(0.01, 0.99))
def test_T_min_times_eps4_stays_bounded(lam, L1, A, C, u):
    c = n.quadratic_coupling(lam, L1=L1, A=A, C=C)
    gam = u * n.gamma_max(c)
    eps = np.geomspace(1e-1, 1e-5, 9)
    scaled = n.T_min(gam, c, 1.0, 0.5, eps) * eps**4
    lim = max(144 * A * (c.L + n.M(gam, c)) * 1.5**2, 24 * C * (c.L + n.M(gam, c)) * 1.5)
    assert np.all(np.isfinite(scaled)) and scaled[-1] == pytest.approx(lim, rel=1e-3)
    assert np.all(scaled <= scaled[0] + lim * 1.001)


def test_gamma_lambda_limit_is_derived_from_the_threshold():
    """1/sqrt(5), the curve the maps draw, is derived: lambda times the threshold of K_1 > 0 for
    H = (lambda/2)||x - y||^2 tends to it from below as lambda grows (and is not reached)."""
    assert sp.simplify(k.gamma_lambda_limit() - 1 / sp.sqrt(5)) == 0
    assert n.GAMMA_LAMBDA_LIMIT == pytest.approx(1 / math.sqrt(5), rel=1e-15)
    lams = np.array([1.0, 10.0, 1e3, 1e6])
    prod = lams * n.gamma_threshold(n.Constants(L1=1.0, L2=lams, L3=lams, L4=lams, L5=lams, l=-lams))
    assert np.all(np.diff(prod) > 0) and np.all(prod < n.GAMMA_LAMBDA_LIMIT)
    assert prod[-1] == pytest.approx(n.GAMMA_LAMBDA_LIMIT, rel=1e-5)
