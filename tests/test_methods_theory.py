"""Issue 60: the theory of PSGD, BC and BR beside STAM's (`stam pep --algo NAME`, `stam pep --region --algo NAME`)."""

import json
from fractions import Fraction

import pytest

pytest.importorskip("PEPit")
pytest.importorskip("cvxpy")

from stam.theory.worstcase import methods_pep, methods_region  # noqa: E402
from test_pep_cli import run  # noqa: E402  (stam's main in-process: exit code, stdout, stderr)


@pytest.mark.parametrize("L, gamma, n", [(1.0, 1.0, 5), (1.0, 0.5, 3), (2.0, 0.4, 4), (1.0, 1.5, 2), (1.0, 1.9, 3),
                                         (3.0, 0.1, 2)])
def test_pepit_gradient_descent_reproduced(L, gamma, n, capsys):
    """PSGD with F = 0 is gradient descent: PEPit's own example (computed here) and the command agree to 1e-4."""
    from PEPit.examples.nonconvex_optimization.gradient_descent import wc_gradient_descent

    pepit_tau, _ = wc_gradient_descent(L=L, gamma=gamma, n=n, verbose=-1)
    code, out, err = run(["pep", "--algo", "psgd", "--F", "zero", "--initial", "last-gap", "--L1", str(L),
                          "--gamma", str(gamma), "--T", str(n), "--json"], capsys)
    assert code == 0, err
    row = json.loads(out)
    assert row["status"] == "optimal"
    assert row["worst_case"] == pytest.approx(pepit_tau, rel=1e-4)


@pytest.mark.parametrize("h, n", [(0.2, 1), (0.7, 3), (1.0, 5), (0.5, 7)])
def test_closed_form_for_short_steps(h, n):
    """For h = gamma L <= 1 the PEP attains the bound 4 L / (n h (4 - h)) derived in methods_region (at h = 1 PEPit's
    4L/(3n))."""
    L = 2.0
    row = methods_pep.run_method("psgd", n, {"gamma": h / L}, L1=L, f_class="zero", initial="last-gap")
    bound = methods_region.gradient_descent_last_gap(Fraction(str(h)), n, Fraction(2))
    assert row["worst_case"] == pytest.approx(float(bound), rel=1e-5)


def test_closed_form_stops_at_one():
    """Above h = 1 the short-step formula is no longer the worst case (it is exceeded)."""
    row = methods_pep.run_method("psgd", 2, {"gamma": 1.5}, f_class="zero", initial="last-gap")
    assert row["worst_case"] > 1.2 * 4 / (2 * 1.5 * 2.5)


@pytest.mark.parametrize("h, T", [(0.5, 2), (1.0, 3), (1.8, 2)])
def test_descent_certificate_bounds_the_pep(h, T):
    """The exact descent-lemma certificate of methods_region bounds the PEP's worst case (gap normalisation)."""
    row = methods_pep.run_method("psgd", T, {"gamma": h}, f_class="lsc")
    cert = methods_region.certificate(Fraction(str(h)), T)
    assert row["status"] == "optimal"
    assert row["worst_case"] <= float(cert) * (1 + 1e-6)
    assert row["worst_case"] >= 0.3 * float(cert)  # and is not vacuous


@pytest.mark.parametrize("algo, hyper", [("bc", {"gamma": 0.6}), ("br", {"gamma": 0.6, "lam": 2.0, "rho": 1.0})])
def test_baselines_are_gradient_descent_when_F_is_zero(algo, hyper):
    """Built from their rules' theory forms, BC and BR with F = 0 give PSGD's worst case (gradient descent)."""
    ref = methods_pep.run_method("psgd", 3, {"gamma": 0.6}, f_class="zero")
    row = methods_pep.run_method(algo, 3, hyper, f_class="zero")
    assert row["worst_case"] == pytest.approx(ref["worst_case"], rel=1e-5)


def test_bc_with_a_set_does_not_converge_on_its_measure():
    """BC with F the indicator of a closed set: the PEP's worst case stays at 2 L1 as T grows (the run of
    methods_region reaches it), while gradient descent's falls."""
    values = [methods_pep.run_method("bc", T, {"gamma": 0.5}, f_class="indicator")["worst_case"] for T in (1, 3)]
    assert values[0] == pytest.approx(2.0, rel=1e-4) and values[1] == pytest.approx(2.0, rel=1e-4)
    gd = [methods_pep.run_method("psgd", T, {"gamma": 0.5}, f_class="indicator")["worst_case"] for T in (1, 3)]
    assert gd[1] < 0.6 * gd[0]


def test_refuting_runs_hold_and_can_fail():
    v = methods_region.verdict("bc", "indicator")
    assert v["certified"] is None and v["runs"] and all(r["held"] for r in v["runs"])
    assert all(r["ratios"][0] == 2 for r in v["runs"])
    br = methods_region.verdict("br", "lsc", lam=Fraction(1, 3), rho=Fraction(51, 50))
    assert all(r["held"] for r in br["runs"]) and br["runs"][0]["bound"] == Fraction(1, 8)
    # at h = 1 gradient descent converges: the same run does not stay above its bound
    assert not methods_region.refuting_run("psgd", "gd", Fraction(1))["held"]
    assert methods_region.verdict("br", "convex", rho=Fraction(51, 50))["refuted"] is None  # said, not guessed


def test_region_cli_all_three(capsys):
    for algo in ("psgd", "bc", "br"):
        code, out, err = run(["pep", "--region", "--algo", algo, "--json"], capsys)
        assert code == 0, err
        result = json.loads(out)
        assert [v["f_class"] for v in result["verdicts"]] == ["lsc", "indicator", "convex", "zero"]
    code, out, err = run(["pep", "--region", "--algo", "bc"], capsys)
    assert "none" in out and "every gamma > 0" in out


@pytest.mark.parametrize("argv, word", [
    (["pep", "--algo", "foo", "--gamma", "1", "--T", "2"], "'foo'"),
    (["pep", "--algo", "psgd", "--gamma", "1", "--beta", "2", "--T", "2"], "--beta"),
    (["pep", "--algo", "br", "--gamma", "1", "--lam", "1", "--rho", "0.5", "--T", "2"], "--rho"),
    (["pep", "--algo", "psgd", "--gamma", "1", "--T", "2", "--sweep-T", "1,2", "--out", "x.json"], "--sweep-T"),
    (["pep", "--region", "--algo", "bc", "--out", "x.json"], "--out"),
    (["pep", "--region", "--F", "zero", "--lams", "1", "--out", "x.json"], "--F"),
    (["pep", "--algo", "psgd", "--gamma", "1e300", "--T", "2"], "ordinary size"),
    (["pep", "--algo", "bc", "--gamma", "1", "--L1", "1e308", "--T", "2"], "ordinary size"),
])
def test_bad_input_is_one_line(argv, word, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert err.startswith("stam: error:") and word in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_every_rule_has_a_theory_form_and_stam_runs():
    assert {r.name for r in methods_pep.theory_rules()} == {"psgd", "bc", "br", "stam"}
    row = methods_pep.run_method("stam", 2, {"gamma": 0.5, "lam": 1.0, "beta": 4.0}, f_class="zero")
    assert row["status"] == "optimal" and row["worst_case"] > 0


@pytest.mark.parametrize("algo, f_class, lam", [("bc", "lsc", 1), ("bc", "convex", 1), ("br", "indicator", 0.5),
                                                ("psgd", "zero", 1)])
def test_every_refuting_run_is_below_the_pep(algo, f_class, lam):
    """A refuting run is one instance of the class, so the PEP's worst case over the class (same rule, same gamma, same
    normalisation G(w^0) - inf G <= 1, T = 2) is at least the run's min_{t<=2} measure / (G(w^0) - inf G)."""
    v = methods_region.verdict(algo, f_class, lam=Fraction(str(lam)))
    assert v["runs"]
    for r in v["runs"][:2]:
        hyper = {"gamma": float(r["h"]), "lam": float(lam), "rho": 1.0}
        hyper = {k: hyper[k] for k in methods_pep.theory_rule(algo).theory_params}
        row = methods_pep.run_method(algo, 2, hyper, f_class=f_class)
        assert row["status"] == "optimal"
        assert row["worst_case"] >= float(min(r["ratios"][:3])) * (1 - 1e-4)


def test_stam_theory_measure_is_theorem_convs_S_t():
    """STAM's declared measure, with g_F(u^t) = (x^t - z^t)/gamma, is the S_t of stam.theory.worstcase.pep (g_F = (v - u)/gamma
    recorded at the proximal step), on a numeric run with F = I_{-1,1}."""
    import numpy as np

    from stam.rules import rule

    stam = rule("stam")

    class Recorded:
        def prox_F(self, v, gamma):
            u = np.where(v >= 0, 1.0, -1.0)
            self.gF = (v - u) / gamma
            return u

    q, hyper = Recorded(), {"gamma": 0.7, "lam": 1.3, "beta": 3.0}
    state = stam.theory_start(np.array([0.3, -2.0]), hyper, q)
    for t in range(4):
        grad = 2.0 * (state.y - np.array([0.5, 0.1]))
        S = np.sum((grad + hyper["lam"] * (state.y - state.u)) ** 2) + np.sum((hyper["lam"] * (state.u - state.y) + q.gF) ** 2)
        declared = stam.theory_measure(state, grad, hyper)
        assert np.sum(declared) == pytest.approx(S, rel=1e-12)
        state = stam.theory_step(state, grad, hyper, q, t)


@pytest.mark.parametrize("h, lam, T", [(0.5, 1.0, 2), (1.5, 1.0, 4), (1.0, 0.25, 3), (1.9, 4.0, 2)])
def test_br_convex_certificate_bounds_the_pep(h, lam, T):
    """BR's relaxed phase with a convex F and lam fixed: the mirror-descent certificate 2 L1 (1 + lam)/(T h (2 - h))
    bounds the PEP's worst case of min_{t<=T} ||grad G(W~^t)||^2 (the min over t <= T-1 already)."""
    row = methods_pep.run_method("br", T, {"gamma": h, "lam": lam, "rho": 1.0}, f_class="convex")
    cert = methods_region.certificate(Fraction(str(h)), T, lam=Fraction(str(lam)))
    assert row["status"] == "optimal"
    assert row["worst_case"] <= float(cert) * (1 + 1e-6)
    v = methods_region.verdict("br", "convex", lam=Fraction(str(lam)))
    assert v["certified"] == [0, 2] and all(r["held"] for r in v["runs"])
    assert methods_region.verdict("br", "convex", rho=Fraction(51, 50))["certified"] is None  # a growing lam: not claimed
