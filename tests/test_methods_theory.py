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
    row = methods_pep.pep_row("psgd", n, {"gamma": h / L}, L1=L, f_class="zero", initial="last-gap")
    bound = methods_region.gradient_descent_last_gap(Fraction(str(h)), n, Fraction(2))
    assert row["worst_case"] == pytest.approx(float(bound), rel=1e-5)


def test_closed_form_stops_at_one():
    """Above h = 1 the short-step formula is no longer the worst case (it is exceeded)."""
    row = methods_pep.pep_row("psgd", 2, {"gamma": 1.5}, f_class="zero", initial="last-gap")
    assert row["worst_case"] > 1.2 * 4 / (2 * 1.5 * 2.5)


@pytest.mark.parametrize("h, T", [(0.5, 2), (1.0, 3), (1.8, 2)])
def test_descent_certificate_bounds_the_pep(h, T):
    """The exact descent-lemma certificate of methods_region bounds the PEP's worst case (gap normalisation)."""
    row = methods_pep.pep_row("psgd", T, {"gamma": h}, f_class="lsc")
    cert = methods_region.certificate(Fraction(str(h)), T)
    assert row["status"] == "optimal"
    assert row["worst_case"] <= float(cert) * (1 + 1e-6)
    assert row["worst_case"] >= 0.3 * float(cert)  # and is not vacuous


@pytest.mark.parametrize("algo, hyper", [("bc", {"gamma": 0.6}), ("br", {"gamma": 0.6, "lam": 2.0, "rho": 1.0})])
def test_baselines_are_gradient_descent_when_F_is_zero(algo, hyper):
    """Built from their rules' theory forms, BC and BR with F = 0 give PSGD's worst case (gradient descent)."""
    ref = methods_pep.pep_row("psgd", 3, {"gamma": 0.6}, f_class="zero")
    row = methods_pep.pep_row(algo, 3, hyper, f_class="zero")
    assert row["worst_case"] == pytest.approx(ref["worst_case"], rel=1e-5)


def test_bc_with_a_set_does_not_converge_on_its_measure():
    """BC with F the indicator of a closed set: the PEP's worst case stays at 2 L1 as T grows (the run of
    methods_region reaches it), while gradient descent's falls."""
    values = [methods_pep.pep_row("bc", T, {"gamma": 0.5}, f_class="indicator")["worst_case"] for T in (1, 3)]
    assert values[0] == pytest.approx(2.0, rel=1e-4) and values[1] == pytest.approx(2.0, rel=1e-4)
    gd = [methods_pep.pep_row("psgd", T, {"gamma": 0.5}, f_class="indicator")["worst_case"] for T in (1, 3)]
    assert gd[1] < 0.6 * gd[0]


def test_refuting_runs_hold_and_can_fail():
    v = methods_region.verdict("bc", "indicator")
    assert v["certified"] is None and v["runs"] and all(r["held"] for r in v["runs"])
    assert all(r["ratios"][0] == 2 for r in v["runs"])
    br = methods_region.verdict("br", "lsc", lam=Fraction(1, 3), rho=Fraction(51, 50))
    assert all(r["held"] for r in br["runs"]) and br["runs"][0]["bound"] == Fraction(1, 8)
    # at h = 1 gradient descent converges: the same run does not stay above its bound
    assert not methods_region.refuting_run("psgd", "gd", Fraction(1))["held"]
    grown = methods_region.verdict("br", "convex", rho=Fraction(51, 50))  # refuted below h* and from 2, not between
    assert grown["certified"] is None and grown["refuted"] == [2, None] and grown["undetermined"]
    assert 0 < grown["refuted_below"] < Fraction(1, 10) and all(r["held"] for r in grown["runs"])


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
    row = methods_pep.pep_row("stam", 2, {"gamma": 0.5, "lam": 1.0, "beta": 4.0}, f_class="zero")
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
        row = methods_pep.pep_row(algo, 2, hyper, f_class=f_class)
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
    row = methods_pep.pep_row("br", T, {"gamma": h, "lam": lam, "rho": 1.0}, f_class="convex")
    cert = methods_region.certificate(Fraction(str(h)), T, lam=Fraction(str(lam)))
    assert row["status"] == "optimal"
    assert row["worst_case"] <= float(cert) * (1 + 1e-6)
    v = methods_region.verdict("br", "convex", lam=Fraction(str(lam)))
    assert v["certified"] == [0, 2] and all(r["held"] for r in v["runs"])
    assert methods_region.verdict("br", "convex", rho=Fraction(51, 50))["certified"] is None  # a growing lam: not claimed


# -- the common measure and BR's growing lambda (issue 60, point 1) ------------------------------------------------

def _proj(kind, v):
    """Q's projection written again here, coordinate by coordinate: {-1, 1} (ties to 1) or [-1, 1]."""
    return [(Fraction(1) if c >= 0 else Fraction(-1)) if kind == "pm1" else max(Fraction(-1), min(Fraction(1), c)) for c in v]


def _replay(algo, kind, h, lam):
    """The fixed-point run of methods_region replayed from the paper's equations, independently of stam.steps and of
    the rules: the start, one step, and the common measure at the output.  Returns (start, after one step, output,
    R(output), G(output))."""
    inst = methods_region.fixed_point_instance(1, lam if algo == "stam" else 1)
    A, c = inst["A"], list(inst["c"])
    grad = lambda w: [sum(A[i][j] * (w[j] - c[j]) for j in range(2)) for i in range(2)]  # noqa: E731
    G = lambda w: sum((w[i] - c[i]) * A[i][j] * (w[j] - c[j]) for i in range(2) for j in range(2)) / 2  # noqa: E731
    u = [Fraction(1), Fraction(-1)]
    if algo == "psgd":  # eq. (alg:PSGD): U <- U - gamma grad G(U), output Proj_Q(U)
        gamma = Fraction(h)
        start = [list(c)]
        after = [[a - gamma * g for a, g in zip(c, grad(c))]]
        out = _proj(kind, after[0])
    elif algo == "br":  # eq. (alg:BR), lam fixed: W~ = (lam Proj(U) + U)/(lam + 1), U <- U - gamma grad G(W~)
        gamma, lam = Fraction(h), Fraction(lam)
        U = [ci * (lam + 1) - lam * ui for ci, ui in zip(c, u)]
        W = [(lam * p + a) / (lam + 1) for p, a in zip(_proj(kind, U), U)]
        U1 = [a - gamma * g for a, g in zip(U, grad(W))]
        start, after, out = [U], [U1], _proj(kind, U1)
    else:  # Algorithm 1 with H = (lam/2)||x - y||^2, F = I_Q: eqs. (algy), (algx), (algu), (algz)
        lam, beta = Fraction(lam), Fraction(4)
        gamma = Fraction(h) / lam
        y = list(inst["W"])
        z_prev = [a + gamma * lam * (a - b) for a, b in zip(u, y)]
        x = [(zp + gamma * lam * yy) / (1 + gamma * lam) for zp, yy in zip(z_prev, y)]
        uu = _proj(kind, [2 * a - b for a, b in zip(x, z_prev)])
        z = [zp + a - b for zp, a, b in zip(z_prev, uu, x)]
        y1 = [yy - (g + lam * (yy - xx)) / beta for yy, g, xx in zip(y, grad(y), x)]
        x1 = [(zz + gamma * lam * a) / (1 + gamma * lam) for zz, a in zip(z, y1)]
        u1 = _proj(kind, [2 * a - b for a, b in zip(x1, z)])
        z1 = [zz + a - b for zz, a, b in zip(z, u1, x1)]
        start, after, out = [y, x, uu, z], [y1, x1, u1, z1], u1
    p = _proj(kind, [a - g for a, g in zip(out, grad(out))])  # prox_{F/L1}(w - grad G(w)/L1), L1 = 1
    R = sum((a - b) ** 2 for a, b in zip(out, p))
    return start, after, out, R, G(out)


@pytest.mark.parametrize("algo", ["psgd", "br", "stam"])
@pytest.mark.parametrize("f_class, kind", [("indicator", "pm1"), ("lsc", "pm1"), ("convex", "box")])
def test_common_measure_refutations_replayed(algo, f_class, kind):
    """PSGD, BR (lam fixed) and STAM have no certified region on the common measure for F an indicator, any lsc F or
    F convex: each run holds, and replayed from the paper's equations here (no stam.steps, no rule) its first step
    returns the start exactly, its output is u = (1, -1) and R(u) = 4 L1^2 > 0 with G(u) > 0, the ratio the run states."""
    lam = Fraction(1, 10) if algo == "stam" else Fraction(1)
    v = methods_region.verdict_common(algo, f_class, lam=lam)
    assert v["certified"] is None and v["refuted"] == [0, None] and len(v["runs"]) == len(methods_region.RUN_HS)
    for r in v["runs"]:
        assert r["held"] and r["fixed"]
        start, after, out, R, Gu = _replay(algo, kind, r["h"], lam)
        assert after == start and out == [1, -1] and R == 4 and Gu > 0
        assert r["bound"] == R / Gu and all(x == R / Gu for x in r["ratios"])


def test_the_fixed_point_run_can_fail():
    """Away from its fixed point (PSGD started elsewhere) the same check fails: the verdict's "held" is computed."""
    inst = methods_region.fixed_point_instance()
    q = methods_region._Exact1D("pm1")
    from stam.rules import rule

    state = rule("psgd").theory_start(inst["c"] + methods_region._Vec((1, 0)), {"gamma": Fraction(1, 2)}, q)
    after = rule("psgd").theory_step(state, methods_region._grad(inst, state.w), {"gamma": Fraction(1, 2)}, q, 0)
    assert after.u != state.u


def test_common_measure_undetermined_and_certified_where_said():
    assert methods_region.verdict_common("bc", "indicator")["refuted"] is None  # said, not guessed
    assert methods_region.verdict_common("br", "lsc", rho=Fraction(51, 50))["undetermined"]
    assert methods_region.verdict_common("stam", "zero")["undetermined"]
    for algo in ("psgd", "bc", "br"):
        v = methods_region.verdict_common(algo, "zero")
        assert v["certified"] == [0, 2] and all(r["held"] for r in v["runs"])


def test_growing_lambda_limit_is_the_exact_maximum():
    lam, rho = Fraction(1), Fraction(51, 50)
    hstar = methods_region.growing_lambda_limit(lam, rho)
    values = [t / (lam * rho ** t + 1) for t in range(200)]
    assert max(values) == 1 / hstar
    run = methods_region.growing_lambda_run(hstar / 2, 1, lam, rho)
    assert run["held"] and run["bound"] == 2 * (1 - Fraction(1, 2)) ** 2
    assert not methods_region.growing_lambda_run(hstar * 2, 1, lam, rho, steps=4)["held"]  # no bound claimed there


def test_region_cli_common_measure(capsys):
    for algo in ("psgd", "bc", "br", "stam"):
        code, out, err = run(["pep", "--region", "--algo", algo, "--measure", "common", "--json"], capsys)
        assert code == 0, err
        result = json.loads(out)
        assert result["measure_name"] == "common" and len(result["verdicts"]) == 4
    code, out, err = run(["pep", "--region", "--algo", "stam", "--measure", "common", "--lam", "0.1"], capsys)
    assert "every gamma, lam, beta > 0" in out and "free z^{-1}" in out
    code, out, err = run(["pep", "--region", "--algo", "stam", "--measure", "common", "--beta", "2"], capsys)
    assert code == 2 and "--beta" in err


def test_the_committed_regions_file_is_what_the_code_gives():
    """benchmarks/results/methods_regions.json is regions_result of the committed STAM region, verdict for verdict."""
    from pathlib import Path

    from stam.theory.worstcase.lyapunov import REGION

    root = Path(__file__).resolve().parents[1]
    committed = methods_region.METHODS_REGIONS.read(root / "benchmarks/results/methods_regions.json")
    src = committed["stam_natural"]["source"]
    fresh = methods_region.regions_result(REGION.read(root / src), src)
    assert [m["label"] for m in committed["methods"]] == [m["label"] for m in fresh["methods"]]
    for a, b in zip(committed["methods"], fresh["methods"]):
        assert a["natural"] == b["natural"] and a["common"] == b["common"]
    assert committed["stam_natural"] == json.loads(json.dumps(fresh["stam_natural"]))


@pytest.mark.parametrize("h", [Fraction(1, 3), Fraction(1), Fraction(19, 10)])
@pytest.mark.parametrize("lam", [None, Fraction(1, 2), Fraction(3)])
def test_the_certificates_are_exact_identities(h, lam):
    """The certified regions' certificates (descent lemma; BR's mirror descent), checked coefficient by coefficient in
    exact rationals: claim - sum of multipliers x inequalities = 0 in the scalars dG, S, DD, gg (gradient descent: S
    and DD substituted by gamma^2 gg), the multipliers >= 0, and the rate summed over T steps is certificate()."""
    L1 = Fraction(3, 2)
    m = methods_region.certificate_multipliers(h, L1, lam)
    gamma = h / L1
    # each inequality as coefficients of (dG, S, DD, gg)
    descent = {"dG": 1, "S": 1 / gamma, "DD": -L1 / 2, "gg": 0}
    strong = {"dG": 0, "S": -1, "DD": 1, "gg": 0}
    cocoercive = {"dG": 0, "S": -1, "DD": 0, "gg": gamma ** 2 / (1 + (lam or 0))}
    claim = {"dG": 1, "S": 0, "DD": 0, "gg": m["rho"]}
    residual = {k: claim[k] - m["descent"] * descent[k] - m["strong"] * strong[k] - m["cocoercive"] * cocoercive[k]
                for k in claim}
    if m["substitute"]:  # gradient descent: S = gamma^2 gg, DD = gamma^2 gg
        residual["gg"] += sum(residual[k] * c for k, c in m["substitute"].items())
        residual["S"] = residual["DD"] = 0
    assert all(v == 0 for v in residual.values()), residual
    assert min(m["descent"], m["strong"], m["cocoercive"], m["rho"]) >= 0
    T = 7
    assert 1 / (T * m["rho"]) == methods_region.certificate(h, T, L1, lam or 0)
