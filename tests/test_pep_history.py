"""Closing the band (issue 39, point 1): potentials with history (stam.theory.worstcase.history: k-step decrease conditions,
quadratic forms over past iterates), proven in exact arithmetic below the threshold c_beta, and the exact 2-periodic
run of STAM (stam.theory.worstcase.onset.two_cycle) that ends every O(1/T) bound from c_beta on; the minibatch PEP's onset."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stam.errors import UsageError
from stam.theory.worstcase.history import certify_history, stam_window_sdp
from stam.theory.worstcase.onset import cycle_threshold, onset_by_horizon, two_cycle

C_STAR = (1 + math.sqrt(3)) / 2


def test_the_threshold_in_closed_form():
    """c_beta = (2 beta - L1 - lam) / (2 beta - L1), exactly; none where the y-step overshoots (2 beta <= L1 + lam)."""
    assert cycle_threshold(10) == Fraction(18, 19)
    assert cycle_threshold(1000, 1, 1) == Fraction(1998, 1999)
    assert cycle_threshold(2, 1, 1) == Fraction(2, 3)
    assert cycle_threshold(1, 1, 1) is None and cycle_threshold(0.5, 0.75, 0.25) is None


@settings(max_examples=12, deadline=None)
@given(beta=st.fractions(min_value=2, max_value=10**4), lam=st.fractions(min_value=Fraction(1, 10), max_value=3),
       L1=st.fractions(min_value=Fraction(1, 10), max_value=3), above=st.fractions(min_value=0, max_value=2))
def test_the_two_cycle_is_a_run_of_stam_from_the_threshold_on(beta, lam, L1, above):
    """For every beta, lam, L1 with 2 beta > L1 + lam and every gamma*lam >= c_beta, the orbit of two_cycle is a run
    of the project's stam_step (checked in exact arithmetic: antiperiodic, periodic, the x-step the sympy derivation
    of eq. (algx)) with S_t > 0 and M_t constant; just below c_beta there is none."""
    cb = cycle_threshold(beta, lam, L1)
    if cb is None:
        assert 2 * beta <= L1 + lam
        return
    run = two_cycle(lam, (cb + above) / lam, beta, L1)
    assert run is not None and run["holds"], run["checks"]
    assert run["S"] > 0 and run["delta0"] > 0 and run["threshold"] == cb
    assert two_cycle(lam, cb * (1 - Fraction(1, 10**6)) / lam, beta, L1) is None


def test_the_cycle_bounds_the_free_start_pep_below_at_every_horizon():
    """At gamma*lam = 1 > c_10 = 18/19 the PEP of stam pep --free-start (the orbit is a run from its own start) is at
    least S / delta0 at T = 1, 2, 4: the worst case does not decay, so T W(T) grows like T."""
    from stam.theory.worstcase.pep import stam_pep

    run = two_cycle(1, 1, 10)
    floor = float(run["S"] / run["delta0"])
    for T in (1, 2, 4):
        r = stam_pep(1.0, 1.0, 10.0, T, free_start=True)
        assert r.optimal and r.worst_case >= floor * (1 - 1e-6), (T, r.worst_case, floor)


@pytest.mark.parametrize("template, k, h", [("paper", 2, 0), ("general", 2, 0), ("general", 2, 1), ("general", 1, 2)])
def test_a_history_certificate_is_proven_exactly_below_the_threshold(template, k, h):
    """At beta = 10, gamma*lam = 0.93 < c_10 = 0.947 a k-step potential (paper's, or a quadratic form over h past
    iterates) is certified and its point proven in rational arithmetic."""
    cert = certify_history(1.0, 0.93 if template == "paper" else 0.945, 10.0, k, h, template=template)
    assert cert.certified and cert.rho > 0 and cert.details["proof"]["exact"], cert.details
    assert cert.details["k"] == k and cert.details["h"] == h


@pytest.mark.parametrize("template, k, h", [("paper", 3, 0), ("general", 2, 1), ("general", 3, 0)])
def test_no_history_certificate_above_the_threshold(template, k, h):
    """Just above c_10 = 0.947 (and at 1.2, inside the former open band) no potential with history is certified:
    the 2-cycle forbids any, and the SDP agrees (its optimal rate is zero up to the solver's accuracy)."""
    for c in (0.96, 1.2):
        cert = certify_history(1.0, c, 10.0, k, h, template=template)
        assert cert.status == "optimal" and not cert.certified and abs(cert.details["solver_rho"]) < 1e-6


def test_one_step_window_is_the_one_step_search():
    """k = 1, h = 0 is the one-step search of stam.theory.worstcase.lyapunov (the same rate, both templates)."""
    from stam.theory.worstcase.lyapunov import certify_stam

    for template in ("paper", "general"):
        a = certify_stam(1.0, 0.9, 10.0, template=template)
        b = certify_history(1.0, 0.9, 10.0, 1, 0, template=template)
        assert a.certified and b.certified and b.rho == pytest.approx(a.rho, rel=1e-4)


def test_window_sizes_and_refusals():
    step = stam_window_sdp(1.0, 0.9, 10.0, 3, 1, template="general")
    assert step.basis.nb == 1 + 2 * 5 and len(step.interp) == 2 * 5 * 4 and step.xi_t.shape[0] == 5
    for kw, needle in [({"k": 0}, "k=0"), ({"k": 2, "h": 1, "template": "paper"}, "no history"),
                       ({"k": 6, "h": 2, "template": "general"}, "at most"), ({"k": 1, "template": "other"}, "template")]:
        with pytest.raises(UsageError, match=needle):
            stam_window_sdp(1.0, 0.9, 10.0, **kw)


def test_the_minibatch_pep_is_unbounded_from_c_star_at_T1():
    """The stochastic PEP (N = 2, b = 1) at T = 1 turns unbounded at (1 + sqrt 3)/2, as the full gradient does (an
    unbounded direction has every gradient zero, so no noise); a horizon beyond MAX_GRAM is refused unsolved."""
    (row,) = onset_by_horizon([1], 10.0, lo=1.3, hi=1.45, tol=5e-3, N=2, b=1)
    assert row["lo"] <= C_STAR < row["hi"] and (row["N"], row["b"]) == (2, 1)
    with pytest.raises(ValueError, match="points"):
        onset_by_horizon([4], 10.0, N=2, b=1)


@pytest.mark.parametrize("lam, L1, beta", [(2.0, 0.5, 10.0), (1.0, 3.0, 10.0)])
def test_the_threshold_is_where_certificates_end(lam, L1, beta):
    """Away from lam = L1 = 1 too, the general template is certified (and proven) at 0.995 c_beta and not at 1.005
    c_beta: the certificates end where the 2-cycle begins."""
    cb = float(cycle_threshold(beta, lam, L1))
    inside = certify_history(lam, 0.995 * cb / lam, beta, 2, 0, L1=L1, template="general")
    assert inside.certified and inside.details["proof"]["exact"]
    above = certify_history(lam, 1.005 * cb / lam, beta, 2, 0, L1=L1, template="general")
    assert not above.certified and abs(above.details["solver_rho"]) < 1e-6
    assert two_cycle(lam, 1.005 * cb / lam, beta, L1)["holds"]


@pytest.mark.parametrize("beta", [100.0, 1000.0])
def test_the_band_is_closed_to_1e5(beta):
    """At c_beta - 1e-5 the one-step general template is certified at the default rate floor and proven exactly, while
    at c_beta the 2-cycle is a run: the band between proven and refuted is narrower than 1e-5."""
    cb = cycle_threshold(beta)
    cert = certify_history(1.0, float(cb) - 1e-5, beta, 1, 0, template="general")
    assert cert.certified and cert.details["proof"]["exact"] and cert.rho * beta >= 1e-3
    assert two_cycle(1, cb, beta)["holds"]
