"""The numeric layer (stam.theory.symbolic.numeric): generated from the sympy expressions, vectorised,
and consistent with the conditions it reports."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stam.theory.symbolic import numeric as n

finite = dict(allow_nan=False, allow_infinity=False)


def test_generated_module_is_up_to_date():
    from stam.theory.symbolic import codegen

    assert codegen.TARGET.read_text(encoding="utf-8") == codegen.render(), "run python -m stam.theory.symbolic.codegen"


def test_network_specialisation_values():
    c = n.quadratic_coupling(0.5)
    assert (c.L2, c.L3, c.L4, c.L5, c.l) == (0.5, 0.5, 0.5, 0.5, -0.5)
    # b = 10(l + L2) + 4 = 4: root of 1 - 4 g - 1.25 g^2
    root = (-4 + math.sqrt(16 + 5)) / 2.5
    assert n.gamma_threshold(c) == pytest.approx(root, rel=1e-14)
    assert n.gamma_max(c) == pytest.approx(root, rel=1e-14)


def test_table_para_our1_is_not_admissible():
    rep = n.check(8.0, 1e3, n.quadratic_coupling(0.5))
    names = [v["condition"] for v in rep["violations"]]
    assert not rep["admissible"]
    assert any(s.startswith("K1 > 0") for s in names)
    assert any("gamma^2 <= 1" in s for s in names)


def test_unknown_constants_are_reported_not_violated():
    rep = n.check(0.1, 1e3, n.quadratic_coupling(0.5), T=100, eps=0.1)
    assert rep["admissible"]
    assert len(rep["unknown"]) == 3  # sqrt((L+M)AT), 2(L+M)C/eps^2, T >= ... (needs delta0, M0)


def test_invalid_constants_raise():
    with pytest.raises(ValueError, match="l=-2"):
        n.Constants(L1=1, L2=1, L3=1, L4=1, L5=1, l=-2)
    with pytest.raises(ValueError, match="L4"):
        n.Constants(L1=1, L2=1, L3=1, L4=-1, L5=1, l=0)
    with pytest.raises(ValueError, match="eps"):
        n.T_min(0.1, n.quadratic_coupling(1.0, L1=1, A=1, C=1), 1.0, 0.0, 0.0)


def test_recommendation_is_admissible_and_consistent():
    c = n.quadratic_coupling(0.5, L1=1.0, A=2.0, C=0.1)
    r = n.recommend(c, delta0=1.0, M0=0.0, eps=0.1)
    assert set(r) == {"gamma_max", "gamma", "K1", "K2", "K3", "M", "L", "beta_min", "binding", "T_min"}
    assert 0 < r["gamma"] <= r["gamma_max"] and r["K1"] > 0
    rep = n.check(r["gamma"], r["beta_min"] * (1 + 1e-12), c, T=r["T_min"], eps=0.1, delta0=1.0, M0=0.0)
    assert rep["admissible"], rep
    # and the recommended gamma is (near-)optimal for T_min over a grid of admissible gammas
    grid = np.linspace(1e-4, 1, 2000) * r["gamma_max"]
    assert r["T_min"] <= np.min(n.T_min(grid, c, 1.0, 0.0, 0.1)) * (1 + 1e-6)


def test_vectorised_over_a_grid():
    g = np.linspace(0.01, 0.3, 50)[:, None]
    c = n.quadratic_coupling(np.linspace(0.1, 3, 40)[None, :], L1=1.0, A=1.0, C=1.0)
    assert n.T_min(g, c, 1.0, 0.0, 0.1).shape == (50, 40)
    assert n.K3(g, c).shape == (50, 40)


@settings(max_examples=40)
@given(
    L2=st.floats(0, 5, **finite), dl=st.floats(0, 5, **finite), u=st.floats(1e-6, 1 - 1e-6, **finite),
)
def test_K1_positive_exactly_below_threshold(L2, dl, u):
    """K1 > 0 exactly on (0, gamma_threshold) (Remark Rem=09836, corrected)."""
    c = n.Constants(L1=None, L2=L2, L3=0, L4=0, L5=0, l=dl - L2)
    thr = n.gamma_threshold(c)
    assert n.K1(thr * u, c) > 0
    assert n.K1(thr * (1 + u), c) < 0
    assert abs(n.K1(thr, c)) * thr < 1e-9  # 4 gamma K1 is the numerator, 0 at the root


@settings(max_examples=40)
@given(L2=st.floats(0, 5, **finite), L5=st.floats(0, 5, **finite), dl=st.floats(0, 5, **finite),
       u=st.floats(1e-6, 1 - 1e-6, **finite))
def test_admissible_exactly_below_gamma_max(L2, L5, dl, u):
    """Both conditions on gamma of Theorem conv hold exactly on (0, gamma_max]."""
    c = n.Constants(L1=None, L2=L2, L3=0, L4=0, L5=L5, l=dl - L2)
    gm = n.gamma_max(c)
    assert n.admissible_gamma(gm * u, c)
    assert not n.admissible_gamma(gm * (1 + u), c)


# ------------------------------------------------------------------ the admissible-parameter rule

@given(st.floats(0.01, 20.0), st.floats(0.05, 0.95), st.lists(st.integers(1, 10**6), min_size=1, max_size=4))
def test_admissible_parameters_rule(lam, fraction, Ts):
    """gamma = fraction * gamma_max; each beta is the largest lower bound of Theorem conv-rate at
    its T (so every pair passes check(), and a slightly smaller beta fails)."""
    A, C = n.deterministic_es(1.0, lam)
    c = n.quadratic_coupling(lam, L1=1.0, A=float(A), C=float(C))
    p = n.admissible_parameters(c, Ts, gamma_fraction=fraction)
    assert p.gamma == pytest.approx(fraction * n.gamma_max(c), rel=1e-15) and p.gamma_rule == f"{fraction:g} * gamma_max"
    assert p.T == tuple(Ts) and all(p.admissible)
    for T, beta in zip(Ts, p.betas):
        assert beta == max(v for v in n.beta_lower_bounds(T, p.gamma, c).values() if v is not None)
        assert not n.check(p.gamma, beta * (1 - 1e-9), c, T=T)["admissible"]  # the binding bound, with its T


def test_deterministic_es_is_two_max_L1_L3():
    for L1, L3 in ((1.0, 0.5), (0.3, 4.0), (2.0, 2.0)):
        A, C = n.deterministic_es(L1, L3)
        assert float(A) == 2 * max(L1, L3) and float(C) == 0.0


def test_admissible_parameters_refusals_come_from_one_place():
    c = n.quadratic_coupling(0.5, L1=1.0, A=2.0, C=0.0)
    with pytest.raises(n.Inadmissible, match="prescribes no beta"):
        n.admissible_parameters(c, 10, gamma=8.0)  # Table para's Our1: K1 <= 0
    with pytest.raises(n.Inadmissible, match=r"violate Theorem conv \(beta >= 2 K2/K1.*; run them anyway$"):
        n.admissible_parameters(c, 10, gamma=0.05, beta=5.0, remedy="run them anyway")
    p = n.admissible_parameters(c, 10, gamma=0.05, beta=5.0, allow_inadmissible=True)
    assert p.admissible == [False] and p.beta_rule == "given"
    assert n.violations_text(p.verdicts[0]).startswith("beta >= 2 K2/K1")
    with pytest.raises(ValueError, match="gamma_fraction=1.5"):
        n.admissible_parameters(c, 10, gamma_fraction=1.5)


def _outcome(call):
    """What a call of the rule gives: its parameters, or the type and wording of its refusal (repr: a nan in a
    verdict compares equal to itself)."""
    try:
        return repr(call())
    except (ValueError, TypeError) as exc:
        return f"{type(exc).__name__}: {exc}"


@settings(max_examples=60, deadline=None)
@given(st.floats(0.01, 20.0), st.lists(st.integers(1, 10**6), min_size=1, max_size=3),
       st.fixed_dictionaries({}, optional={"gamma": st.floats(0.01, 1.5), "beta": st.floats(0.1, 1e4),
                                           "gamma_fraction": st.floats(0.01, 1.2), "allow_inadmissible": st.booleans()}))
def test_step_sizes_object_and_keywords_give_the_same_parameters(lam, Ts, fields):
    """The rule's arguments as one StepSizes or as keywords (the old form): the same parameters, or the same
    refusal; keywords given with an object are set on it (Settings.of).  ``gamma`` is a multiple of gamma_max (past
    it: refused or marked inadmissible), ``gamma_fraction`` reaches past (0, 1) (refused)."""
    A, C = n.deterministic_es(1.0, lam)
    c = n.quadratic_coupling(lam, L1=1.0, A=float(A), C=float(C))
    if "gamma" in fields:
        fields = dict(fields, gamma=fields["gamma"] * n.gamma_max(c))
    by_keywords = _outcome(lambda: n.admissible_parameters(c, Ts, **fields))
    assert by_keywords == _outcome(lambda: n.admissible_parameters(c, Ts, step_sizes=n.StepSizes(**fields)))
    first, rest = dict(list(fields.items())[:1]), dict(list(fields.items())[1:])
    assert by_keywords == _outcome(lambda: n.admissible_parameters(c, Ts, step_sizes=n.StepSizes(**first), **rest))
    assert n.StepSizes.of(n.StepSizes(**first), dict(rest)) == n.StepSizes(**fields)


def test_step_sizes_refuse_what_is_not_theirs():
    c = n.quadratic_coupling(0.5, L1=1.0, A=2.0, C=0.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'gama'"):
        n.admissible_parameters(c, 10, gama=0.05)
    with pytest.raises(TypeError, match="is not a StepSizes"):
        n.admissible_parameters(c, 10, step_sizes={"gamma": 0.05})
    with pytest.raises(TypeError):  # the old positional gamma: keyword-only now, never read as another field
        n.admissible_parameters(c, 10, 0.05)
