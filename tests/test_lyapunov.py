"""Automated Lyapunov search (stam.theory.worstcase.lyapunov, `stam pep --region`): known answers first,
then STAM against Theorem conv, against `stam pep`, and along simulated runs."""

import functools
import json
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("cvxpy")

from stam.steps import stam_init, stam_step  # noqa: E402
from stam.cli import main  # noqa: E402
from stam.theory.worstcase import lyapunov as ly  # noqa: E402
from stam.theory.worstcase import sdp, sdpproof
from stam.theory.worstcase import templates


# ----------------------------------------------------------------------------- known answers
@pytest.mark.parametrize("method", [templates.gradient_descent, templates.proximal_gradient])
@pytest.mark.parametrize("L", [1.0, 2.5])
def test_gradient_and_proximal_gradient_are_certified_exactly_below_2_over_L(method, L):
    for gamma in (0.3 / L, 1.0 / L, 1.9 / L):
        c = method(L, gamma)
        assert c.certified and c.status == "optimal" and c.rho > 1e-3 / L
    for gamma in (2.0 / L, 2.2 / L, 5.0 / L):
        c = method(L, gamma)
        assert not c.certified and c.status == "optimal" and c.rho is None and c.details["solver_rho"] < 1e-7
    lo, hi, _ = ly._bisect(lambda g: method(L, g).certified, 0.1 / L, 10 / L, 0.01)
    assert lo < 2 / L <= hi and hi / lo <= 1.01


def test_gradient_descent_rate_beats_the_descent_lemma():
    """The descent lemma gives rho = gamma (1 - L gamma / 2) with V = f; the search finds at least that."""
    for gamma in (0.5, 1.0, 1.5):
        assert templates.gradient_descent(1.0, gamma).rho >= gamma * (1 - gamma / 2) - 1e-7


def test_autolyap_agrees_on_gradient_descent():
    """The one case both can express (module docstring): AutoLyap's gradient method on a smooth
    nonconvex function, its optimality measure ||grad f||^2 and its decrease condition only
    (C2 dropped: AutoLyap has no f^inf), switches at the same gamma = 2/L as this module."""
    autolyap = pytest.importorskip("autolyap")
    from autolyap.algorithms import GradientMethod
    from autolyap.problemclass import InclusionProblem, Smooth

    opts = autolyap.SolverOptions(backend="cvxpy", cvxpy_solver="CLARABEL")
    for gamma, expected in ((1.0, True), (1.95, True), (2.05, False), (3.0, False)):
        algo = GradientMethod(gamma)
        P, p, T, t = autolyap.IterationIndependent.SublinearConvergence.get_parameters_optimality_measure(algo)
        r = autolyap.IterationIndependent.search_lyapunov(InclusionProblem([Smooth(1.0)]), algo, P, T, p=p, t=t,
                                                          rho=1.0, remove_C2=True, solver_options=opts, verbosity=0)
        assert (r["status"] == "feasible") is expected
        assert templates.gradient_descent(1.0, gamma).certified is expected


def test_the_lower_bound_is_imposed():
    """V >= b Phi^inf + (a-b) G^inf (the lower-bound form >= 0) is part of every general certificate: the
    verification finds it positive definite off its null directions, and the same point with P made indefinite
    (the potential unbounded below) is no certificate."""
    lam, gamma, beta = 1.0, 0.5, 50.0
    step = templates.stam_step_sdp(lam, gamma, beta, f_class="convex")
    c = sdp.search(step, free_P=True, order=("a", "b"), rho_min=ly.rate_floor(beta))
    assert c.certified and c.residual["lower_min_eig"] > 0
    lay = sdp.layout(step, True)
    names = lay["names"]
    point = np.array([c.rho, c.theta["a"], c.theta["b"], *c.details["multipliers"].values(),
                      *[c.P[i][j] for i, j in lay["pairs"]]])
    assert sdp.verify(lay, point, (1, 2), None, ly.rate_floor(beta))[1] is not None
    bent = point.copy()
    bent[names.index("P") + lay["pairs"].index((1, 1))] -= 10.0  # the weight of ||g_t||^2 in V: far below zero
    assert sdp.verify(lay, bent, (1, 2), None, ly.rate_floor(beta))[1] is None


# ----------------------------------------------------------------------------- STAM vs Theorem conv and stam pep
ADMISSIBLE = [(1.0, 0.1, 250.0), (2.0, 0.05, 330.0)]


@pytest.mark.parametrize("lam,gamma,beta", ADMISSIBLE)
def test_where_theorem_conv_holds_the_paper_form_is_certified_with_a_better_constant(lam, gamma, beta):
    from stam.theory.worstcase import pep

    assert pep.paper_bound(lam, gamma, beta, 1)["admissible"]
    paper = ly.certify_stam(lam, gamma, beta, template="paper")
    assert paper.certified and paper.status == "optimal"
    # min_{t<T} S_t <= (delta0 + M0'_T) / (rho T); Theorem conv: 2 (1 + (L+M)A/beta^2)^T beta (...) / T >= 2 beta (...) / T
    assert 1 / paper.rho <= 2 * beta
    for T in (1, 5, 50):
        assert 1 / (paper.rho * T) <= pep.paper_bound(lam, gamma, beta, T)["bound"]
    general = ly.certify_stam(lam, gamma, beta)  # contains the paper's V = delta + M (gamma lam <= 1)
    assert general.certified and general.rho >= paper.rho * (1 - 1e-4)


@pytest.mark.parametrize("lam,gamma,beta", [(1.0, 0.1, 250.0), (0.5, 1.6, 1000.0), (4.0, 0.2, 50.0)])
def test_paper_form_certificate_bounds_stam_pep(lam, gamma, beta):
    """Both use delta0 + M0'_T: a paper-form certificate is an upper bound of the exact worst case."""
    from stam.theory.worstcase import pep

    c = ly.certify_stam(lam, gamma, beta, template="paper")
    assert c.certified
    for T in (1, 2):
        r = pep.stam_pep(lam, gamma, beta, T)
        assert r.optimal and r.worst_case <= 1 / (c.rho * T) * (1 + 1e-4)


@pytest.mark.parametrize("lam,gamma,beta", [(1.0, 1.6, 250.0), (0.5, 8.0, 1000.0)])
def test_where_stam_pep_is_unbounded_no_paper_form_certificate_exists(lam, gamma, beta):
    from stam.theory.worstcase import pep

    assert pep.stam_pep(lam, gamma, beta, 1).status == "unbounded"
    c = ly.certify_stam(lam, gamma, beta, template="paper")
    assert c.status == "optimal" and not c.certified and c.rho is None and c.details["solver_rho"] < 1e-7


@pytest.mark.parametrize("f_class", ["convex", "lsc"])
def test_paper_form_stops_at_gamma_lam_1_general_form_goes_far_beyond_for_convex_F_only(f_class):
    """The identity of the module docstring: delta + M = Phi(u, y) - G^inf + (gamma/2)(1 - gamma lam)||r||^2.
    With convex F other potentials certify far beyond gamma lam = 1; with nonconvex F none does."""
    assert ly.certify_stam(1.0, 0.95, 1e4, template="paper", f_class=f_class).certified
    assert not ly.certify_stam(1.0, 1.05, 1e4, template="paper", f_class=f_class).certified
    for lam, gamma, beta in [(1.0, 2.0, 50.0), (0.5, 8.0, 1000.0), (4.0, 15.0, 1e4)]:  # gamma lam = 2, 4, 60
        c = ly.certify_stam(lam, gamma, beta, f_class=f_class)
        assert c.status == "optimal" and c.certified == (f_class == "convex")


def test_delta_plus_M_identity():
    rng = np.random.default_rng(3)
    lam, gamma = 0.7, 2.3
    y, zp, s = rng.normal(size=(3, 4))
    x = (zp + gamma * lam * y) / (1 + gamma * lam)
    u = 2 * x - zp - gamma * s
    z = zp + u - x
    Fu = 1.3  # any value: it cancels
    M = Fu + np.sum((2 * x - u - z) ** 2) / (2 * gamma) - np.sum((x - z) ** 2) / (2 * gamma) - np.sum((u - x) ** 2) / gamma
    delta_plus_M = lam / 2 * np.sum((x - y) ** 2) + M  # with G(y) - G^inf = 0
    r = (zp - z) / gamma
    Phi = Fu + lam / 2 * np.sum((u - y) ** 2)
    assert delta_plus_M == pytest.approx(Phi + gamma / 2 * (1 - gamma * lam) * np.sum(r**2))


class _Ops:
    """H = (lam/2)||x-y||^2 and F = kappa ||u - c||_1 on numpy arrays; keeps the prox's subgradient."""

    def __init__(self, lam, c, kappa):
        self.lam, self.c, self.kappa, self.s = lam, c, kappa, None

    def grad_y_H(self, x, y):
        return self.lam * (y - x)

    def prox_H(self, z, y, gamma):
        return (z + gamma * self.lam * y) / (1 + gamma * self.lam)

    def prox_F(self, v, gamma):
        d = v - self.c
        u = self.c + np.sign(d) * np.maximum(np.abs(d) - gamma * self.kappa, 0)
        self.s = (v - u) / gamma
        return u


@functools.lru_cache(maxsize=None)
def cert(lam, gamma, beta, template):
    return ly.certify_stam(lam, gamma, beta, template=template, f_class="convex")  # F below is convex


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(point=st.sampled_from([(1.0, 0.1, 250.0, "paper"), (1.0, 0.1, 250.0, "general"), (1.0, 0.5, 50.0, "paper"),
                              (1.0, 2.0, 50.0, "general"), (0.5, 8.0, 1000.0, "general"), (2.0, 3.0, 20.0, "general")]),
       seed=st.integers(0, 2**31 - 1))
def test_certificate_holds_along_simulated_runs(point, seed):
    """V_{t+1} - V_t + rho S_t <= 0 along STAM runs (stam.steps) on random instances:
    G(y) = sum_i a_i cos(y_i + phi_i) (L1 = 1 smooth, nonconvex), F = kappa ||u - c||_1; and for the
    general template V_t >= b Phi(u^t, y^t)-bound of the module docstring."""
    lam, gamma, beta, template = point
    c = cert(lam, gamma, beta, template)
    assert c.certified
    rng = np.random.default_rng(seed)
    n = 3
    amp, ph, cc, kappa = rng.uniform(-1, 1, n), rng.uniform(0, 6, n), rng.normal(0, 3, n), rng.uniform(0, 2)
    G = lambda y: float(np.sum(amp * np.cos(y + ph)))  # noqa: E731
    gG = lambda y: -amp * np.sin(y + ph)  # noqa: E731
    F = lambda u: float(kappa * np.abs(u - cc).sum())  # noqa: E731
    ops = _Ops(lam, cc, kappa)
    zp = rng.normal(0, 5, n)
    state = stam_init(rng.normal(0, 5, n), ops, gamma, z_prev=zp)
    s = ops.s
    a, b = c.theta["a"], c.theta["b"]

    def V(st, zprev, sub):
        if template == "general":
            xi = [st.y - zprev, gG(st.y), sub]
            P = np.array(c.P)
            return a * G(st.y) + b * F(st.u) + sum(P[i, j] * xi[i] @ xi[j] for i in range(3) for j in range(3))
        M = (F(st.u) + np.sum((2 * st.x - st.u - st.z) ** 2) / (2 * gamma) - np.sum((st.x - st.z) ** 2) / (2 * gamma)
             - np.sum((st.u - st.x) ** 2) / gamma)
        return a * (G(st.y) + lam / 2 * np.sum((st.x - st.y) ** 2)) + b * M

    for _ in range(40):
        g = gG(state.y)
        S = np.sum((g + lam * (state.y - state.u)) ** 2) + np.sum((lam * (state.u - state.y) + s) ** 2)
        v0 = V(state, zp, s)
        new = stam_step(state, g, ops, gamma, beta)
        v1 = V(new, state.z, ops.s)
        assert v1 - v0 + c.rho * S <= 1e-6 * (1 + abs(v0))
        if template == "general":  # V_t - b (F(u)+G(y)+m) - (a-b)(G(y) - ||g||^2/(2 L1)) >= 0
            d = state.u - state.y
            m = lam / 2 * d @ d - np.sum((g - lam * d) ** 2) / (2 * (1 + lam))
            assert v0 - b * (F(state.u) + G(state.y) + m) - (a - b) * (G(state.y) - g @ g / 2) >= -1e-6 * (1 + abs(v0))
        zp, state, s = state.z, new, ops.s


# ----------------------------------------------------------------------------- statuses, input
def test_solver_status_is_never_hidden():
    c = ly.certify_stam(1.0, 0.1, 250.0, solver="clarabel", solver_options={"CLARABEL": {"max_iter": 2}})
    assert c.status == "user_limit" and not c.certified and c.rho is None
    c = ly.certify_stam(1.0, 0.1, 250.0, solver_options={"CLARABEL": {"max_iter": 2}})  # falls back to SCS
    assert c.details["fallback_from"] == ["CLARABEL: user_limit"] and c.solver == "SCS"
    # SCS's answer, verified in numpy (SCS is looser than Clarabel): certified exactly when a rate is proven
    assert c.certified == (c.status == "optimal" and c.rho is not None and c.rho >= ly.rate_floor(250.0))
    assert c.rho is None or c.rho <= c.details["solver_rho"]


def test_api_rejects_bad_constants():
    from stam.errors import UsageError

    with pytest.raises(UsageError, match="gamma=-1"):
        ly.certify_stam(1.0, -1.0, 10.0)
    with pytest.raises(UsageError, match="template"):
        ly.certify_stam(1.0, 0.1, 10.0, template="mine")


def test_module_imports_neither_torch_nor_pepit():
    code = ("import sys; from stam.theory.worstcase import lyapunov as ly; c = ly.certify_stam(1.0, 0.1, 250.0); "
            "assert c.certified; assert 'torch' not in sys.modules and 'PEPit' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


# ----------------------------------------------------------------------------- the region, the command, the figure
SMALL = ["--lams", "1", "--betas", "100,10000", "--gamma-range", "0.01:100:51"]


@pytest.fixture(scope="module")
def small_region(tmp_path_factory):
    out = tmp_path_factory.mktemp("region") / "region.json"
    assert main(["pep", "--region", *SMALL, "--out", str(out)]) == 0
    return out


def test_region_rows_are_jobs_of_the_one_engine_and_a_rerun_reuses_them(small_region, monkeypatch, capsys):
    """`stam pep --region --out FILE.json` runs its lambdas through stam.jobs.run_jobs with the store FILE-jobs
    beside the file (one row per lambda): the same command again computes nothing and writes the same rows."""
    from stam.theory.pep_cli import region_store

    store = region_store(small_region)
    assert store == small_region.with_name("region-jobs") and len(list(store.glob("*.json"))) == 1
    first = json.loads(small_region.read_text())
    monkeypatch.setattr(ly, "region_row", lambda *a, **k: pytest.fail("a stored row was computed again"))
    assert main(["pep", "--region", *SMALL, "--out", str(small_region), "--workers", "1"]) == 0
    capsys.readouterr()
    assert json.loads(small_region.read_text())["rows"] == first["rows"]


def test_region_brackets(small_region):
    data = json.loads(small_region.read_text())
    assert data["kind"] == "lyapunov-region" and len(data["rows"]) == 1
    row = data["rows"][0]
    assert row["gamma_theorem"] == pytest.approx(1 / (2 + np.sqrt(4 + 5)))
    assert data["f_class"] == "lsc" and data["sampling"]["N"] == 2 and data["sampling"]["b"] == 1
    paper, general, refuted = row["convex"]["paper"], row["convex"]["general"], row["convex"]["refuted"]
    assert paper["lo"] < 1.0 <= paper["hi"] and paper["hi"] / paper["lo"] <= 1.03  # gamma lam < 1
    assert 1.3 < refuted["hi"] < 1.45 and refuted["hi"] / refuted["lo"] <= 1.03
    assert general["lo"] >= 10 * paper["lo"]  # far beyond gamma lam = 1 (convex F)
    assert paper["lo"] > row["gamma_theorem"]
    # the paper's class (any proper lsc F): never more than convex F; no potential beyond gamma lam = 1
    for key in ("paper", "general", "sampled"):
        part = row[key]
        assert part["f_class"] == "lsc" and part["lo"] <= row["convex"]["paper" if key == "sampled" else key]["lo"]
        assert row["gamma_theorem"] < part["lo"] < part["hi"] <= 1.03  # gamma lam <= 1 (lam = 1)
    assert row["refuted"]["hi"] <= refuted["hi"]
    assert all(k.split(", ")[0] in ("optimal", "optimal_inaccurate", "infeasible", "unbounded", "user_limit")
               or k.startswith("solver")
               for part in (paper, general, row["paper"], row["general"], row["sampled"]) for k in part["statuses"])
    assert refuted["statuses"].get("unbounded", 0) > 0 and row["refuted"]["statuses"].get("unbounded", 0) > 0
    # Theorem conv's own region, certified for the paper's class at the theorem's beta, full and sampled
    th = row["theorem"]
    assert th["certified"] and {(p["N"], p["b"]) for p in th["points"]} == {(1, 1), (2, 1)}
    assert 1 <= th["max_inv_rho_beta"] <= 2  # 1/rho <= 2 beta: at least as good as the theorem's constant


def test_region_command_states_the_normalisation_and_the_theorem(small_region, capsys):
    """The table's notes say what "refuted" and "?" mean and that the refutation is with M0'_T."""
    from stam.theory.pep_cli import REGION_NOTES

    assert any("M0'_T" in line and "printed" in line for line in REGION_NOTES)
    assert main(["pep", "--region", "--lams", "1", "--betas", "100", "--gamma-range", "0.5:2:9", "--out",
                 str(small_region.with_name("again.json"))]) == 0
    out = capsys.readouterr().out
    assert all(line in out for line in REGION_NOTES) and "Theorem conv" in out and "yes (" in out


def test_region_file_is_a_result_the_figures_read(small_region, tmp_path):
    from stam.figures.results import load_file

    res = load_file(small_region)
    assert res.kind == "lyapunov-region"
    data = json.loads(small_region.read_text())
    data["rows"][0]["general"]["lo"] = "far"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    from stam.errors import UsageError

    with pytest.raises(UsageError, match=r"rows\[0\]\.general\.lo"):
        load_file(bad)


def test_figure_draws_the_two_zones(small_region):
    """`stam plot admissible FILE` / `stam report`: the figure takes the region from the results."""
    from stam.figures.report import make_figure
    from stam.figures.results import load_results

    fig = make_figure("admissible", load_results([small_region]))
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    # one lambda: the limits as points, no zone (a zone needs two lambdas to have an area; issue 37)
    assert any(t.startswith("limit of the paper-form") for t in labels)
    assert not any(t.startswith(("certified", "refuted")) for t in labels)
    # two lambdas: both zones drawn and named
    data = json.loads(small_region.read_text())
    data["rows"] = [data["rows"][0], {**data["rows"][0], "lam": 2 * data["rows"][0]["lam"]}]
    two = small_region.with_name("two.json")
    two.write_text(json.dumps(data))
    fig = make_figure("admissible", load_results([two]))
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any(t.startswith("certified") for t in labels) and any(t.startswith("refuted") for t in labels)


@pytest.mark.parametrize("argv", [
    ["pep", "--region", "--out", "x.json", "--lam", "1"],
    ["pep", "--region", "--out", "x.json", "--T", "2"],
    ["pep", "--region", "--out", "x.json", "--free-start"],
    ["pep", "--region"],  # no --out
    ["pep", "--region", "--out", "x.json", "--lams", "1,-2"],
    ["pep", "--region", "--out", "x.json", "--gamma-range", "5:1:3"],
    ["pep", "--region", "--out", "x.json", "--gamma-range", "5"],
    ["pep", "--lam", "1", "--gamma", "0.1", "--beta", "250", "--T", "1", "--lams", "1"],
    ["pep", "--gamma", "0.1", "--beta", "250", "--T", "1"],
    ["pep", "--region", "--out", "x.json", "--lams", "1e200", "--betas", "10", "--gamma-range", "1:2:3"],
])
def test_region_bad_input_is_one_line_and_exit_2(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "error:" in err and "Traceback" not in err
    assert not (tmp_path / "x.json").exists()


def test_region_in_two_processes_is_the_same_region(capsys):
    """`--workers 2` (the default on 2 CPUs) computes the lambdas in two processes: the same rows, in order."""
    kw = dict(lams=(1.0, 4.0), betas=(100.0,), gamma_range=(0.5, 2.0))
    seen = []
    one = ly.region(**kw)
    two = ly.region(**kw, workers=2, progress=lambda row: seen.append(row["lam"]))

    def strip(value):  # everything but the timings
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("seconds", "slowest_solve")}
        return value

    assert seen == [1.0, 4.0] and two["workers"] == 2
    assert [strip(r) for r in one["rows"]] == [strip(r) for r in two["rows"]]
    code = main(["pep", "--lam", "1", "--gamma", "0.1", "--beta", "250", "--T", "1", "--workers", "2"])
    assert code == 2 and "--workers: only with --region" in capsys.readouterr().err


def test_a_poisoned_stored_row_is_named_and_computed_again_never_blamed_on_the_result(small_region, tmp_path,
                                                                                       monkeypatch, capsys):
    """Issue 40: a stored row with a bracket lo > hi (a poisoned job file) is refused by the row's own
    type when the store is read: one line naming the job file, the row computed again, the result
    written; before, region.json was blamed and every later run failed the same way."""
    import shutil

    from stam.theory.pep_cli import region_store

    out = tmp_path / "region.json"
    shutil.copytree(region_store(small_region), region_store(out))
    job = next(region_store(out).glob("*.json"))
    stored = json.loads(job.read_text())
    good_row = json.loads(json.dumps(stored["result"]))
    lo, hi = stored["result"]["general"]["lo"], stored["result"]["general"]["hi"]
    stored["result"]["general"].update(lo=hi * 2, hi=lo)
    job.write_text(json.dumps(stored))
    calls = []
    monkeypatch.setattr(ly, "region_row", lambda *a, **k: calls.append(1) or good_row)
    capsys.readouterr()
    assert main(["pep", "--region", *SMALL, "--out", str(out), "--workers", "1"]) == 0
    err = capsys.readouterr().err
    assert calls == [1] and str(job) in err and "general" in err, err
    assert json.loads(out.read_text())["rows"] == json.loads(small_region.read_text())["rows"]


def test_a_region_with_a_store_makes_no_temporary_folder(small_region, tmp_path, monkeypatch, capsys):
    """Issue 40: with the store beside the output file, no TemporaryDirectory is made in $TMPDIR
    (a killed run left an empty one there)."""
    import tempfile

    monkeypatch.setattr(tempfile, "TemporaryDirectory", lambda *a, **k: pytest.fail("a temporary folder was made"))
    assert main(["pep", "--region", *SMALL, "--out", str(small_region), "--workers", "1"]) == 0
    capsys.readouterr()


# ----------------------------------------------------------------------------- certified means proven (issue 39)
def _exact_step(lam, gamma, beta, template, f_class, N=1, b=1):
    if (N, b) != (1, 1):
        return templates.stam_step_sdp_sampled(lam, gamma, beta, f_class=f_class, N=N, b=b, exact=True)
    return templates.stam_step_sdp(lam, gamma, beta, template=template, f_class=f_class, exact=True)


PROOF_POINTS = [(1.0, 0.9, 1000.0, "paper", "lsc", 1, 1), (1.0, 0.9, 1000.0, "general", "lsc", 1, 1),
                (0.01, 50.0, 1e4, "general", "lsc", 1, 1), (0.01, 0.12499609399412154, 161.0, "paper", "lsc", 2, 1),
                (3.511, 0.098, 1000.0, "paper", "indicator", 1, 1), (1.0, 2.0, 50.0, "general", "convex", 1, 1),
                (1.0, 0.5, 100.0, "paper", "lsc", 3, 2)]


@pytest.mark.parametrize("point", PROOF_POINTS)
def test_every_certificate_is_proven_in_exact_arithmetic(point):
    """certify_stam's certificate is proven by ly.prove, and the proof is checked again here with sympy's rationals
    from the exact forms: the function values' identity L x = 0, D N = 0, -D negative... definite off N (sympy's own
    test), the multipliers and weights within their bounds; at lambda 1, gamma 0.9, beta 1000 (the point the issue
    proved by hand, rho = 9.8355e-4 there) the proven rate is at least that."""
    lam, gamma, beta, template, f_class, N, b = point
    c = ly.certify_stam(lam, gamma, beta, template=template, f_class=f_class, N=N, b=b)
    assert c.certified and c.details["proof"]["exact"] is True
    step = _exact_step(lam, gamma, beta, template, f_class, N, b)
    free_P, order = template == "general", (("a", "b") if template == "general" else None)
    proof = sdpproof.prove(step, c.point, free_P, order, step.growth[2] if step.growth else None, c.residual.get("near", ()))
    assert proof["proven"] and proof["rho"] == c.rho
    cols, lins, names, _, k, low = sdp.forms(step, free_P)
    x = [sp.Rational(v.numerator, v.denominator) for v in proof["x"]]
    R = lambda m: sp.Matrix([[sp.Rational(v.numerator, v.denominator) for v in row] for row in np.atleast_2d(m)])  # noqa: E731
    D = sum((xv * (R(cm) + R(cm).T) / 2 for xv, cm in zip(x, cols)), sp.zeros(step.basis.nb))
    assert sum((xv * R(lv).T for xv, lv in zip(x, lins)), sp.zeros(step.basis.nv, 1)) == sp.zeros(step.basis.nv, 1)
    Nm = sp.Matrix([[sp.Rational(v.numerator, v.denominator) for v in u] for u in proof["null"]]).T
    if Nm.shape[1]:
        assert D * Nm == sp.zeros(step.basis.nb, Nm.shape[1])
        comp = Nm.T.nullspace()  # the orthogonal complement of N: x' D x = b' (comp' D comp) b there
        Cm = sp.Matrix.hstack(*comp)
    else:
        Cm = sp.eye(step.basis.nb)
    assert (-(Cm.T * D * Cm)).is_positive_definite
    assert all(v >= 0 for v, n in zip(x, names) if n not in ("rho", "P")) and x[0] == sp.Rational(c.rho) > 0
    assert all(v <= 1 for v, n in zip(x, names) if n not in ("rho", "P", "mu", "kappa"))
    if low is not None:
        Wx = sum((xv * R(w) for xv, w in zip(x, low)), sp.zeros(k))
        Cl = sp.Matrix([[sp.Rational(v.numerator, v.denominator) for v in u] for u in proof["low_null"]]).T
        if Cl.shape[1]:
            assert Wx * Cl == sp.zeros(k, Cl.shape[1])
            Wx = sp.Matrix.hstack(*Cl.T.nullspace()).T * Wx * sp.Matrix.hstack(*Cl.T.nullspace())
        assert Wx.is_positive_definite and x[names.index("a")] >= x[names.index("b")]
    if step.growth is not None:
        assert x[names.index("kappa")] <= sp.Rational(step.growth[2]) * x[0] and x[names.index("a")] >= sp.Rational(1, 2)
    if point[:4] == (1.0, 0.9, 1000.0, "paper"):
        assert c.rho >= 983554437e-12


@pytest.mark.parametrize("template", ["paper", "general"])
def test_a_point_off_the_certificate_is_not_proven(template):
    """The exact test decides: the verified point with its rate raised by 2 %, or (general template) its P scaled down
    so that the lower bound fails, is not proven."""
    c = ly.certify_stam(1.0, 0.5, 100.0, template=template)
    assert c.certified
    step = _exact_step(1.0, 0.5, 100.0, template, "lsc")
    free_P, order = template == "general", (("a", "b") if template == "general" else None)
    names = sdp.forms(step, free_P)[2]
    up = [c.point[0] * 1.02] + c.point[1:]
    r = sdpproof.prove(step, up, free_P, order)
    assert not r["proven"] and "decrease form" in r["reason"]
    if template == "general":
        bent = [v - 10.0 if n == "P" and i == len(names) - 6 else v for i, (v, n) in enumerate(zip(c.point, names))]
        assert not sdpproof.prove(step, bent, free_P, order)["proven"]


def test_numerical_only_is_never_certified(monkeypatch):
    """A certificate the float verification accepts but the exact proof does not is 'numerical only': not certified,
    counted apart in the region's statuses, and no bracket counts it."""
    monkeypatch.setattr(ly, "prove", lambda *a, **k: {"proven": False, "rho": None, "reason": "no"})
    c = ly.certify_stam(1.0, 0.5, 100.0, template="paper")
    assert not c.certified and c.details["numerical_only"] and c.details["proof"] == {
        "exact": False, "seconds": c.details["proof"]["seconds"], "reason": "no"}
    part = ly.certified_gamma(1.0, "paper", betas=(100.0,), gamma_range=(0.4, 0.6))
    assert part["lo"] is None and set(part["statuses"]) == {f"optimal, {sdpproof.NUMERICAL_ONLY}"}


def test_a_float_in_the_exact_forms_is_refused():
    """prove never takes a rounded coefficient as exact: a float among the forms makes the proof fail."""
    c = ly.certify_stam(1.0, 0.5, 100.0, template="paper")
    step = _exact_step(1.0, 0.5, 100.0, "paper", "lsc")
    assert sdpproof.prove(step, c.point)["proven"]
    step.S[0, 0] = float(step.S[0, 0]) + 0.0
    r = sdpproof.prove(step, c.point)
    assert not r["proven"] and r["reason"] == "a float entered the exact forms"
