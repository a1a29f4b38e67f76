"""The paper's own problem class (issue 22): nonconvex F through its proximal step, and stochastic
STAM through the enumerated minibatches of one step (stam.theory.worstcase.pep, stam.theory.worstcase.lyapunov)."""

import functools
import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("PEPit")
pytest.importorskip("cvxpy")

from stam.steps import stam_init, stam_step  # noqa: E402
from stam.cli import main  # noqa: E402
from stam.theory.params import SCAN_MAX_STEPS  # noqa: E402
from stam.theory.worstcase import lyapunov as ly  # noqa: E402
from stam.theory.worstcase import sdp
from stam.theory.worstcase import templates  # noqa: E402
from stam.theory.worstcase import pep  # noqa: E402
from stam.theory.worstcase import pepsolve
from stam.theory.params import DEFAULT_F_CLASS
from stam.theory.params import F_CLASSES


@functools.lru_cache(maxsize=None)
def worst(lam, gamma, beta, T, f_class, N=1, b=1):
    return pep.stam_pep(lam, gamma, beta, T, f_class=f_class, N=N, b=b)


@functools.lru_cache(maxsize=None)
def cert(lam, gamma, beta, template, f_class, N=1, b=1):
    return ly.certify_stam(lam, gamma, beta, template=template, f_class=f_class, N=N, b=b)


# ----------------------------------------------------------------------------- the interpolation lemma
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), gamma=st.floats(0.05, 5.0), indicator=st.booleans())
def test_prox_interpolation_conditions_are_exact(seed, gamma, indicator):
    """Necessity: triples from the prox of an arbitrary finite-valued F on a finite set (lsc, nonconvex)
    satisfy F_i + |u_i - v_i|^2/(2 gamma) <= F_j + |u_j - v_i|^2/(2 gamma).  Sufficiency: triples that
    satisfy them are reproduced by the prox of F = F_i at u_i, +infinity elsewhere."""
    rng = np.random.default_rng(seed)
    n, m, k = 2, 6, 5
    support = rng.normal(0, 2, (m, n))
    values = np.zeros(m) if indicator else rng.normal(0, 2, m)

    def prox(v, pts, vals):
        costs = vals + np.sum((pts - v) ** 2, axis=1) / (2 * gamma)
        i = int(np.argmin(costs))
        return pts[i], vals[i], costs

    vs = rng.normal(0, 3, (k, n))
    triples = [(v, *prox(v, support, values)[:2]) for v in vs]
    for (vi, ui, Fi), (_, uj, Fj) in itertools.product(triples, repeat=2):
        assert Fi + np.sum((ui - vi) ** 2) / (2 * gamma) <= Fj + np.sum((uj - vi) ** 2) / (2 * gamma) + 1e-9
    # the same condition in the subgradient form the SDPs use: F_j >= F_i + <s_i, u_j - u_i> - |u_j - u_i|^2/(2 gamma)
    for (vi, ui, Fi), (_, uj, Fj) in itertools.product(triples, repeat=2):
        s = (vi - ui) / gamma
        assert Fj >= Fi + s @ (uj - ui) - np.sum((uj - ui) ** 2) / (2 * gamma) - 1e-9
    pts = np.array([u for _, u, _ in triples])
    vals = np.array([F for _, _, F in triples])
    for v, u, F in triples:  # sufficiency: u is a minimiser of the finite F's prox at v
        _, _, costs = prox(v, pts, vals)
        assert F + np.sum((u - v) ** 2) / (2 * gamma) <= costs.min() + 1e-9


# ----------------------------------------------------------------------------- known answers
@pytest.mark.parametrize("f_class", ["lsc", "indicator"])
@pytest.mark.parametrize("L", [1.0, 2.5])
def test_nonconvex_proximal_gradient_is_certified_exactly_below_1_over_L(f_class, L):
    """Proximal gradient with a nonconvex F: the sufficient decrease of Attouch-Bolte-Svaiter /
    Bolte-Sabach-Teboulle holds for gamma < 1/L, and the search finds exactly that limit (half the
    convex one, 2/L)."""
    for gamma in (0.3 / L, 0.9 / L):
        c = templates.proximal_gradient(L, gamma, f_class=f_class)
        assert c.certified and c.status == "optimal"
    for gamma in (1.1 / L, 1.9 / L):
        c = templates.proximal_gradient(L, gamma, f_class=f_class)
        assert not c.certified and c.status == "optimal"
        assert templates.proximal_gradient(L, gamma, f_class="convex").certified
    lo, hi, _ = ly._bisect(lambda g: templates.proximal_gradient(L, g, f_class=f_class).certified, 0.1 / L, 10 / L, 0.01)
    assert lo < 1 / L <= hi and hi / lo <= 1.01


def test_sufficient_decrease_rate_is_found():
    """Phi(x+) <= Phi(x) - (1/gamma - L)|x+ - x|^2/2 with S = |x - x+|^2/gamma^2: rho >= gamma (1 - gamma L)/2."""
    for gamma in (0.2, 0.5, 0.8):  # the verified rate: at most a share 1e-3 below the solver's optimum
        c = templates.proximal_gradient(1.0, gamma, f_class="lsc")
        assert c.details["solver_rho"] >= gamma * (1 - gamma) / 2 - 1e-7
        assert c.rho >= (1 - sdp.VERIFY_SHARES[1]) * gamma * (1 - gamma) / 2 - 1e-7


# ----------------------------------------------------------------------------- nonconvex never certifies more
POINTS = [(1.0, 0.1, 250.0), (1.0, 0.5, 50.0), (0.5, 1.6, 1000.0), (4.0, 0.2, 50.0), (1.0, 2.0, 50.0)]


@pytest.mark.parametrize("lam,gamma,beta", POINTS)
def test_lsc_class_never_certifies_more_than_convex_or_indicator(lam, gamma, beta):
    for template in ("paper", "general"):
        lsc = cert(lam, gamma, beta, template, "lsc")
        assert lsc.status == "optimal"
        for other in ("convex", "indicator"):
            c = cert(lam, gamma, beta, template, other)
            assert c.status == "optimal"
            rho, other_rho = lsc.details["solver_rho"], c.details["solver_rho"]
            assert rho <= other_rho * (1 + 1e-3) + 1e-7, (template, other, rho, other_rho)  # solver tolerance
            assert not (lsc.certified and not c.certified)


@pytest.mark.parametrize("lam,gamma,beta,T", [(1.0, 0.1, 250.0, 1), (1.0, 0.1, 250.0, 2), (0.5, 1.0, 1000.0, 2)])
def test_lsc_worst_case_is_at_least_the_convex_and_indicator_worst_case(lam, gamma, beta, T):
    lsc = worst(lam, gamma, beta, T, "lsc")
    for other in ("convex", "indicator"):
        r = worst(lam, gamma, beta, T, other)
        assert r.status == "optimal"
        assert lsc.status == "unbounded" or (lsc.optimal and lsc.worst_case >= r.worst_case * (1 - 1e-4)), (other, lsc, r)


def test_theorem_conv_bounds_the_lsc_worst_case_where_admissible():
    """Theorem conv is stated for the paper's class: its bound must hold for nonconvex F."""
    for lam, gamma, beta in [(1.0, 0.1, 250.0), (2.0, 0.05, 330.0)]:
        for T in (1, 3):
            row = pep.compare(lam, gamma, beta, T, f_class="lsc")
            assert row["admissible"] and row["status"] == "optimal"
            assert row["worst_case"] <= row["bound"]


# ----------------------------------------------------------------------------- sampled gradients
@pytest.mark.parametrize("f_class", ["lsc", "convex"])
@pytest.mark.parametrize("lam,gamma,beta", [(1.0, 0.1, 250.0), (0.5, 1.0, 100.0), (4.0, 0.2, 50.0)])
def test_one_sample_reproduces_the_deterministic_certificate(lam, gamma, beta, f_class):
    """N = 1 (and N = b = 2: the average of two L1-smooth functions is every L1-smooth function): the
    enumerated step has one branch, the exact gradient; the rate equals the deterministic one."""
    det = cert(lam, gamma, beta, "paper", f_class)
    for N, b in ((1, 1), (2, 2)):
        c = sdp.search(templates.stam_step_sdp_sampled(lam, gamma, beta, f_class=f_class, N=N, b=b))
        assert c.status == "optimal" and det.status == "optimal"
        assert c.certified == det.certified
        assert c.details["solver_rho"] == pytest.approx(det.details["solver_rho"], rel=1e-4, abs=1e-9)


@pytest.mark.parametrize("lam,gamma,beta,T", [(1.0, 0.1, 250.0, 1), (1.0, 0.1, 250.0, 2), (0.5, 1.0, 1000.0, 2)])
def test_one_sample_reproduces_the_deterministic_worst_case(lam, gamma, beta, T):
    det = worst(lam, gamma, beta, T, "lsc")
    full = worst(lam, gamma, beta, T, "lsc", N=2, b=2)
    assert det.optimal and full.optimal
    assert full.worst_case == pytest.approx(det.worst_case, rel=1e-4)
    assert full.details["gram_size"] == pep.gram_size(T, N=2, b=2)


def test_minibatch_noise_needs_the_growth_term(monkeypatch):
    """b < N: the variance of the minibatch gradient is only bounded through the G_i^inf (Lemma
    es-lemma), so without the growth term kappa D_t nothing is certified; with it (kappa <= 2 (L1 + lam) A rho / beta)
    the paper form is.  The worst case of stam pep is never below the full gradient's."""
    lam, gamma, beta = 1.0, 0.1, 250.0
    c = cert(lam, gamma, beta, "paper", "lsc", 2, 1)
    assert c.status == "optimal" and c.certified
    assert 0 < c.details["kappa"] <= templates.growth_cap(lam, beta, 1.0, 2, 1) * c.rho * (1 + 1e-3) + 1e-9
    monkeypatch.setattr(templates, "GROWTH_PER_RATE", 0.0)  # read where it is declared (stam.theory.worstcase.templates)
    c0 = ly.certify_stam(lam, gamma, beta, template="paper", f_class="lsc", N=2, b=1)
    assert c0.status == "optimal" and not c0.certified
    r1, r2 = worst(lam, gamma, beta, 2, "lsc"), worst(lam, gamma, beta, 2, "lsc", 2, 1)
    assert r2.optimal and r2.worst_case >= r1.worst_case * (1 - 1e-4)
    assert r2.details["gram_size"] == pep.gram_size(2, N=2, b=1)


# ----------------------------------------------------------------------------- actual STAM runs, binary Q
class _BinaryOps:
    """H = (lam/2)|x - y|^2 and F = the indicator of Q = {-q, q}^n (the paper's binary set): the
    proximal step is the projection (sign); keeps the proximal subgradient (v - u)/gamma."""

    def __init__(self, lam, q):
        self.lam, self.q, self.s = lam, q, None

    def grad_y_H(self, x, y):
        return self.lam * (y - x)

    def grad_x_H(self, x, y):
        return self.lam * (x - y)

    def prox_H(self, z, y, gamma):
        return (z + gamma * self.lam * y) / (1 + gamma * self.lam)

    def prox_F(self, v, gamma):
        u = np.where(v >= 0, self.q, -self.q)
        self.s = (v - u) / gamma
        return u


def _instance(rng, N, n):
    """G_i(y) = sum_j a_ij cos(y_j + phi_ij), |a_ij| <= 1: L1 = 1 smooth, nonconvex, G_i^inf = -sum_j |a_ij|."""
    amp, ph = rng.uniform(-1, 1, (N, n)), rng.uniform(0, 2 * np.pi, (N, n))
    Gi = lambda i, y: float(np.sum(amp[i] * np.cos(y + ph[i])))  # noqa: E731
    gi = lambda i, y: -amp[i] * np.sin(y + ph[i])  # noqa: E731
    return Gi, gi, -np.abs(amp).sum(axis=1)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), point=st.sampled_from([(1.0, 0.1, 250.0, 2, 1), (0.5, 1.0, 100.0, 2, 1),
                                                                (1.0, 0.1, 250.0, 3, 2), (1.0, 0.3, 100.0, 1, 1)]))
def test_no_binary_instance_exceeds_the_certified_bounds(seed, point):
    """Actual STAM runs (stam.steps.stam_step) with F = I_Q, Q binary, and random smooth G_i, every
    minibatch of every step enumerated (expectations exact): the one-step certificate's inequality
    E_t V_{t+1} - V_t + rho S_t <= kappa D_t holds at every visited state, and min_{t<T} E S_t never
    exceeds the exact worst case of stam pep times the instance's delta0 + Delta + M0'_T."""
    lam, gamma, beta, N, b = point
    rng = np.random.default_rng(seed)
    n, q = 3, float(rng.uniform(0.2, 2.0))
    Gi, gi, Ginf = _instance(rng, N, n)
    G = lambda y: np.mean([Gi(i, y) for i in range(N)])  # noqa: E731
    ops = _BinaryOps(lam, q)
    batches = list(itertools.combinations(range(N), b))
    y0 = rng.normal(0, 2, n)
    root = stam_init(y0, ops, gamma)
    s_root = ops.s

    def children(state):
        out = []
        for batch in batches:
            g = np.mean([gi(i, state.y) for i in batch], axis=0)
            new = stam_step(state, g, ops, gamma, beta)
            out.append((new, ops.s))
        return out

    def S(state, s):
        g = np.mean([gi(i, state.y) for i in range(N)], axis=0)
        return float(np.sum((g + lam * (state.y - state.u)) ** 2) + np.sum((lam * (state.u - state.y) + s) ** 2))

    def M(state):  # F(u) = 0 on Q
        x, u, z = state.x, state.u, state.z
        return float(np.sum((2 * x - u - z) ** 2) / (2 * gamma) - np.sum((x - z) ** 2) / (2 * gamma)
                     - np.sum((u - x) ** 2) / gamma)

    def H(state):
        return lam / 2 * float(np.sum((state.x - state.y) ** 2))

    # the one-step certificate along a random path
    c = cert(lam, gamma, beta, "paper", "indicator", N, b)
    assert c.certified
    a, bb, kappa = c.theta["a"], c.theta["b"], c.details.get("kappa", 0.0)
    state, s = root, s_root
    for _ in range(15):
        kids = children(state)
        V0 = a * (G(state.y) + H(state)) + bb * M(state)
        EV1 = np.mean([a * (G(k.y) + H(k)) + bb * M(k) for k, _ in kids])
        D = G(state.y) + H(state) - float(np.mean(Ginf))
        assert EV1 - V0 + c.rho * S(state, s) <= kappa * D + 1e-7 * (1 + abs(V0))
        state, s = kids[rng.integers(len(kids))]

    # the exact worst case for T = 2
    T = 2
    r = worst(lam, gamma, beta, T, "indicator", N, b)
    assert r.optimal
    paths = [[(root, s_root)]]
    for _ in range(T):
        paths = [p + [kid] for p in paths for kid in children(p[-1][0])]
    ES = [np.mean([S(*p[t]) for p in paths]) for t in range(T)]
    M0_prime = np.mean([M(root) - min(M(st_) for st_, _ in p) for p in paths])
    norm = G(y0) + H(root) - float(np.mean(Ginf)) + M0_prime
    assert min(ES) <= r.worst_case * norm * (1 + 1e-4) + 1e-9


# ----------------------------------------------------------------------------- the command
def run(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_classes_match_the_library():
    from stam.cli import build_parser

    parser = build_parser()  # (stam pep's flags are built with it: register's build=, stam.cli's parsers)
    action = next(a for a in parser._subparsers._group_actions[0].choices["pep"]._actions if "--F" in a.option_strings)
    from stam.theory.params import METHOD_F_CLASSES

    # STAM's classes (the library's), and F = 0, which the baselines' PEPs take too (stam pep --algo)
    assert tuple(action.choices) == METHOD_F_CLASSES and METHOD_F_CLASSES[:len(F_CLASSES)] == F_CLASSES
    assert action.default == DEFAULT_F_CLASS


@pytest.mark.parametrize("argv", [
    ["pep", "--lam", "1", "--gamma", "0.1", "--beta", "250", "--T", "1", "--N", "2"],
    ["pep", "--lam", "1", "--gamma", "0.1", "--beta", "250", "--T", "1", "--b", "2"],
    ["pep", "--lam", "1", "--gamma", "0.1", "--beta", "250", "--T", "1", "--N", "2", "--b", "3"],
    ["pep", "--lam", "1", "--gamma", "0.1", "--beta", "250", "--T", "1", "--N", "0", "--b", "1"],
    ["pep", "--lam", "1", "--gamma", "0.1", "--beta", "250", "--T", "1", "--F", "weird"],
    ["pep", "--lam", "1", "--gamma", "0.1", "--beta", "250", "--T", "6", "--N", "3", "--b", "1"],
])
def test_bad_sampling_or_class_is_one_line_and_exit_2(argv, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "error:" in err


def test_cli_prints_class_and_gradient(capsys):
    code, out, _ = run(["pep", "--lam", "1", "--gamma", "0.1", "--beta", "250", "--T", "1", "--N", "2", "--b", "1",
                        "--F", "indicator"], capsys)
    assert code == 0
    assert "b-nice minibatches N=2 b=1" in out and "indicator" in out and "delta0 + Delta + M0'_T = 1" in out
    assert "status: optimal" in out


def _worst_ratio(c, lam, gamma, beta, template, seeds, steps=40):
    """max over binary-Q STAM runs (full gradient) of (V_{t+1} - V_t + rho S_t) / (rho S_t): <= 0 when the
    certificate holds."""
    a, b = c.theta["a"], c.theta["b"]
    P = np.array(c.P) if c.P is not None else None
    worst_ratio = -np.inf
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        n, q = 3, rng.uniform(0.1, 3)
        Gi, gi, _ = _instance(rng, 1, n)
        ops = _BinaryOps(lam, q)
        zp = rng.normal(0, 5, n)
        state = stam_init(rng.normal(0, 5, n), ops, gamma, z_prev=zp)
        s = ops.s

        def V(st, zprev, sub):
            if template == "general":  # F = 0 on Q
                xi = [st.y - zprev, gi(0, st.y), sub]
                return a * Gi(0, st.y) + sum(P[i, j] * xi[i] @ xi[j] for i in range(3) for j in range(3))
            M = (np.sum((2 * st.x - st.u - st.z) ** 2) / (2 * gamma) - np.sum((st.x - st.z) ** 2) / (2 * gamma)
                 - np.sum((st.u - st.x) ** 2) / gamma)
            return a * (Gi(0, st.y) + lam / 2 * np.sum((st.x - st.y) ** 2)) + b * M

        for _ in range(steps):
            g = gi(0, state.y)
            S = np.sum((g + lam * (state.y - state.u)) ** 2) + np.sum((lam * (state.u - state.y) + s) ** 2)
            new = stam_step(state, g, ops, gamma, beta)
            worst_ratio = max(worst_ratio, (V(new, state.z, ops.s) - V(state, zp, s) + c.rho * S) / (c.rho * S))
            zp, state, s = state.z, new, ops.s
    return worst_ratio


@pytest.mark.parametrize("lam,gamma,beta,template", [(1.0, 0.5, 50.0, "general"), (1.0, 0.5, 50.0, "paper"),
                                                     (1.0, 0.95, 1e4, "paper"), (0.1874, 2.0, 1e3, "paper")])
def test_lsc_certificates_hold_along_binary_runs(lam, gamma, beta, template):
    """Full gradient, F = I_Q: every lsc certificate's one-step inequality holds along actual runs (to
    floating-point rounding of the runs: 1e-6 of rho S; the certificates are verified)."""
    c = cert(lam, gamma, beta, template, "lsc")
    assert c.certified
    assert _worst_ratio(c, lam, gamma, beta, template, seeds=20) <= 1e-6


def test_a_convex_certificate_fails_on_the_binary_set():
    """Why the class matters: at lam = 0.09, gamma = 20, beta = 1e4 (gamma lam = 1.8) the convex certificate's
    inequality is violated by far on binary-Q runs, and lsc F is not certified there; at gamma = 5 (gamma lam =
    0.45) both are, and the lsc one holds."""
    lam, beta = 0.09, 1e4
    convex, lsc = cert(lam, 20.0, beta, "general", "convex"), cert(lam, 20.0, beta, "general", "lsc")
    assert convex.certified and not lsc.certified
    assert _worst_ratio(convex, lam, 20.0, beta, "general", seeds=30) > 1  # violated by more than rho S
    lsc = cert(lam, 5.0, beta, "general", "lsc")
    assert lsc.certified and _worst_ratio(lsc, lam, 5.0, beta, "general", seeds=20) <= 1e-6


@pytest.mark.parametrize("lam", [0.1, 1.0, 7.3])
@pytest.mark.parametrize("N,b", [(1, 1), (2, 1), (3, 2)])
def test_theorem_conv_region_is_certified_for_the_papers_class(lam, N, b):
    """Inside Theorem conv's hypotheses (gamma < gamma_max, beta = ceil(2 K2/K1)) the paper form is
    certified for any proper lsc F, with 1/rho <= 2 beta (the theorem's constant is >= 2 beta) and, with
    minibatches, a noise floor kappa/rho below the theorem's 2 (L+M) A / beta."""
    from stam.theory.symbolic import numeric

    c = numeric.quadratic_coupling(lam, L1=1.0)
    for frac in (0.5, 0.95):
        gamma = frac * float(numeric.gamma_max(c))
        beta = float(math.ceil(2 * float(numeric.K2(gamma, c)) / float(numeric.K1(gamma, c))))
        r = cert(lam, gamma, beta, "paper", "lsc", N, b)
        assert r.certified and 1 / r.rho <= 2 * beta
        if b < N:
            A, _ = numeric.finite_sum(1.0, N, b, lam, 0.0)
            M = float(numeric.M(gamma, numeric.quadratic_coupling(lam, L1=1.0, A=float(A), C=0.0)))
            assert r.details["kappa"] / r.rho <= 2 * (1.0 + lam + M) * float(A) / beta


def test_huge_sampling_or_range_is_refused_or_bounded(capsys):
    """A fuzzed --N must not enumerate C(N, b) branches; a huge --gamma-range is scanned in at most
    SCAN_MAX_STEPS steps."""
    code, out, err = run(["pep", "--lam", "1", "--gamma", "0.1", "--beta", "250", "--T", "1", "--N",
                          "99999999999999999999999", "--b", "50000000000000000000000"], capsys)
    assert code == 2 and "at most 8" in err
    calls = []
    lo, hi, n = ly._first_gap(lambda g: calls.append(g) or True, 1e-300, 1e300, 0.02)
    assert hi is None and lo == 1e300 and n <= SCAN_MAX_STEPS + 2


def test_gram_size_is_closed_form_for_huge_horizons():
    assert pep.gram_size(10**22) == 2 * 10**22 + 2  # no loop over T
    assert pep.gram_size(10**22, N=2, b=1) == math.inf
    assert pep.gram_size(3, N=2, b=1) == 30 and pep.gram_size(2, N=3, b=1) == 26


# ----------------------------------------------------------------------------- small lambda: what is not certified says so
def test_small_lambda_spurious_certificates_are_gone():
    """At lam = 0.01 the former search returned 'certificates' whose inequality failed along binary-Q runs (general
    template, lsc F: gamma = 1e4, beta = 1e3 by 10 % of rho S; gamma = 199.46, beta = 10 by 2.2 rho S; gamma = 127.9,
    beta = 1e5 by 0.8 %).  They came from the method's fixed points, where every form of the SDP vanishes: a
    negative semidefinite decrease form must vanish there (D N = 0), the solver's was off by its accuracy, and the
    rate fed on it.  With D N = 0 imposed (:func:`_null_space`) the solver's rate there is zero."""
    for gamma, beta in ((1e4, 1e3), (199.46, 10.0), (127.895, 1e5)):
        c = ly.certify_stam(0.01, gamma, beta, template="general", f_class="lsc")
        assert c.status == "optimal" and not c.certified and c.rho is None and c.details["solver_rho"] < 1e-7


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lam=st.floats(0.005, 0.05), gamma_lam=st.floats(0.05, 1.2), beta=st.sampled_from([10.0, 1e3, 1e5]),
       template=st.sampled_from(["general", "paper"]))
def test_small_lambda_certificates_hold_along_binary_runs(lam, gamma_lam, beta, template):
    """Every certificate at small lambda is verified (:func:`stam.theory.worstcase.sdp.verify`): along actual STAM runs
    with binary Q its one-step inequality holds (to floating-point rounding of the runs, 1e-6 of rho S)."""
    c = ly.certify_stam(lam, gamma_lam / lam, beta, template=template, f_class="lsc")
    assert c.status == "optimal"
    if c.certified:
        assert _worst_ratio(c, lam, gamma_lam / lam, beta, template, seeds=10) <= 1e-6


def test_the_small_lambda_region_end_holds_along_binary_runs():
    """The general template's certificate at the end of the default region's bracket for lambda = 0.01
    (benchmarks/results/lyapunov_region.json) holds along 100 binary-Q runs."""
    import json

    row = min(json.loads((RESULTS / "lyapunov_region.json").read_text())["rows"], key=lambda r: r["lam"])
    part = row["general"]
    c = cert(row["lam"], part["lo"], part["beta"], "general", "lsc")
    assert c.certified and same_rate(c, part["rho"]), (c.rho, c.details["solver_rho"], part["rho"])
    assert not same_rate(c, part["rho"] * 1.005)  # the guard bites: half a percent is no share and no solver's digit
    assert _worst_ratio(c, row["lam"], part["lo"], part["beta"], "general", seeds=100) <= 1e-6


def test_an_unverified_bracket_end_is_marked():
    """Convex F, general template, lambda = 31.6: the scan ends where the solver's optimal rate (rho beta about
    2e-3) fails the verification: the bracket does not read as the template's limit; its end is marked unverified
    ('?') and the statuses count the rejections."""
    from stam.theory.pep_cli import _fmt_bracket

    r = ly.certified_gamma(ly.REGION_LAMS[-1], "general", gamma_range=(8.6, 8.9), f_class="convex")
    assert r["lo"] is not None and r["hi_unverified"] and r["hi_rejected_rho_beta"] >= ly.RHO_BETA_MIN
    assert r["statuses"].get(f"optimal, {ly.UNVERIFIED}", 0) >= 1
    assert _fmt_bracket(r).endswith(")?")


def test_an_unverified_start_is_marked(monkeypatch):
    """Where the first gamma's optimal rate fails the verification, the interval is sought from the first
    certified gamma of the scan up, and the bracket says so ('*', 'start' in the result)."""
    from stam.theory.pep_cli import _fmt_bracket

    real = ly.certify_stam

    def first_unverified(lam, gamma, beta, **kw):
        c = real(lam, gamma, beta, **kw)
        if gamma < 2e-3:  # as if the verification had failed there
            c.certified = False
            c.details.update(unverified=True, solver_rho=1.0 / beta)
        return c

    monkeypatch.setattr(ly, "certify_stam", first_unverified)
    r = ly.certified_gamma(1.0, "paper", betas=(100.0, 1000.0), gamma_range=(1e-3, 1e-1, 5))
    assert r["start_unverified"] and r["start"] > 1e-3 and r["lo"] is not None and r["lo"] >= r["start"]
    assert _fmt_bracket(r).endswith("*")


# ----------------------------------------------------------------------------- the stored tables recomputed
RESULTS = __import__("pathlib").Path(__file__).parents[1] / "benchmarks" / "results"


def solver_accuracy(value: float, solver: str = "CLARABEL") -> float:
    """How far two solves of one SDP may report its optimum apart, from the solver's own stopping rule: Clarabel
    stops when the duality gap of the objective is below ``tol_gap_abs`` or below ``tol_gap_rel`` times
    ``max(1, |objective|)`` (:data:`stam.theory.worstcase.pepsolve.SOLVER_DEFAULTS`), so each reported value lies within that of
    the optimum, and two within twice it.  A stored number is a regression guard, not a definition: the last
    digits move with the machine (BLAS, threads), 1.4e-6 and 1.3e-5 relative on another of this kind (issue 37).
    The objective of :func:`stam.theory.worstcase.sdp.search` is ``rho`` itself (below 1, so the bound is absolute
    there); of a PEP the worst case."""
    assert solver == "CLARABEL", f"the stored numbers were solved by Clarabel, not {solver}"
    tol = pepsolve.SOLVER_DEFAULTS[solver]
    return 2 * max(tol["tol_gap_abs"], tol["tol_gap_rel"] * max(1.0, abs(value)))


def same_rate(c, stored_rho: float) -> bool:
    """A proven rate recomputed: the certificate's is ``(1 - share)`` times the solver's optimal rate for the first
    share of :data:`stam.theory.worstcase.sdp.VERIFY_SHARES` at which the verification passes (which share that is can
    move with the solver's last digits), and the solver's optimum is known to :func:`solver_accuracy`."""
    tol = solver_accuracy(stored_rho, c.solver)
    return any(abs((1 - s) * c.details["solver_rho"] - stored_rho) <= tol for s in sdp.VERIFY_SHARES)


@pytest.mark.parametrize("name, row", [("pep_grid_lsc.json", 16), ("pep_grid.json", 16), ("pep_grid_lsc.json", 4)])
def test_stored_pep_grid_rows_are_recomputed(name, row):
    """docs/studies/band.md's generated tables come from these files: a row of each, recomputed, gives the stored worst case."""
    import json

    data = json.loads((RESULTS / name).read_text())
    r = data["admissible"][row]
    got = worst(r["lam"], r["gamma"], r["beta"], r["T"], data.get("f_class", "convex"))  # the older file: convex F
    assert got.status == r["status"] == "optimal"
    assert got.worst_case == pytest.approx(r["worst_case"], abs=solver_accuracy(r["worst_case"], got.solver))


def test_stored_region_rows_are_recomputed():
    """benchmarks/results/lyapunov_region.json (drawn in the figures, tabled in the report and docs): at the
    largest lambda the paper form's bracket end and its certificate, and Theorem conv's point, recomputed."""
    import json

    data = json.loads((RESULTS / "lyapunov_region.json").read_text())
    row = max(data["rows"], key=lambda r: r["lam"])
    lo, hi = row["paper"]["lo"], row["paper"]["hi"]
    c = cert(row["lam"], lo, row["paper"]["beta"], "paper", data["f_class"])
    assert c.certified and same_rate(c, row["paper"]["rho"]), (c.rho, c.details["solver_rho"], row["paper"]["rho"])
    assert not any(cert(row["lam"], hi, beta, "paper", data["f_class"]).certified for beta in data["betas"])
    p = row["theorem"]["points"][-1]
    t = cert(row["lam"], p["gamma"], p["beta"], "paper", data["f_class"], p["N"], p["b"])
    assert t.certified == p["certified"] is True and same_rate(t, p["rho"]), (t.rho, t.details["solver_rho"], p["rho"])
