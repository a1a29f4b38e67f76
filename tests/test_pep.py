"""Performance estimation of deterministic STAM (stam.theory.worstcase.pep, `stam pep`).  T <= 3 throughout."""

import functools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("PEPit")
pytest.importorskip("cvxpy")

from stam.steps import stam_init, stam_step  # noqa: E402
from stam.operators import Composite, QuadraticCoupling  # noqa: E402
from stam.theory.symbolic import numeric
from stam.theory.worstcase import pep  # noqa: E402

#: (lam, gamma, beta) with a finite worst case; the first two satisfy Theorem conv's conditions (L1 = 1).
PARAMS = [(1.0, 0.1, 250.0), (2.0, 0.05, 330.0), (0.5, 0.2, 50.0)]
#: Table para's Our1 (gamma = 8, lam = 0.5, beta = 1e3) with L1 = 1: far outside the admissible set.
OUR1 = (0.5, 8.0, 1000.0)


@functools.lru_cache(maxsize=None)
def worst(lam, gamma, beta, T, free_start=False):
    r = pep.stam_pep(lam, gamma, beta, T, free_start=free_start)
    assert r.optimal, r
    return r.worst_case


# ----------------------------------------------------------------------------- machinery
@pytest.mark.parametrize("L,n", [(1.0, 1), (1.0, 3), (2.5, 2)])
def test_gradient_descent_reproduces_pepit_known_rate(L, n):
    """PEPit's nonconvex GD example: gamma = 1/L gives exactly 4L/(3n)."""
    r = pep.gradient_descent_pep(L, 1.0 / L, n)
    assert r.optimal
    assert r.worst_case == pytest.approx(4 * L / (3 * n), abs=1e-3)


def test_unbounded_status_is_reported_without_a_number():
    r = pep.gradient_descent_pep(1.0, 3.0, 2)  # gamma L = 3 > 2: f0 - fn <= 1 bounds nothing
    assert r.status == "unbounded" and r.worst_case is None and not r.optimal
    r = pep.stam_pep(*OUR1, 1)
    assert r.status == "unbounded" and r.worst_case is None and "metrics" not in r.details


def test_iteration_limit_is_reported_as_such():
    r = pep.stam_pep(1.0, 0.1, 250.0, 2, solver="clarabel", solver_options={"CLARABEL": {"max_iter": 2}})
    assert r.status == "user_limit" and not r.optimal
    r = pep.stam_pep(1.0, 0.1, 250.0, 2, solver_options={"CLARABEL": {"max_iter": 2}})  # auto: falls back to SCS
    assert r.optimal and r.solver == "SCS" and r.details["fallback_from"] == ["CLARABEL: user_limit"]
    assert r.worst_case == pytest.approx(worst(1.0, 0.1, 250.0, 2), rel=1e-3)


# ----------------------------------------------------------------------------- lemmas the PEP rests on
def cos_G(c, s, Q):
    """G(y) = sum_j c_j (1 - cos((Q y)_j - s_j)): max_j c_j-smooth, nonconvex, inf G = 0."""

    def value(y):
        return float((c * (1 - torch.cos(Q @ y - s))).sum())

    def grad(y):
        return Q.T @ (c * torch.sin(Q @ y - s))

    return value, grad


def instance(data, d=3):
    seed = data.draw(st.integers(0, 2**31 - 1))
    g = torch.Generator().manual_seed(seed)
    L1 = 1.0
    c = torch.rand(d, generator=g, dtype=torch.float64) * L1 + 1e-3
    c[0] = L1
    Q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    s = torch.randn(d, generator=g, dtype=torch.float64) * 3
    scale = data.draw(st.sampled_from([0.1, 1.0, 3.0]))
    y0 = torch.randn(d, generator=g, dtype=torch.float64) * scale
    mu = data.draw(st.sampled_from([0.0, 0.3, 2.0]))
    p = torch.randn(d, generator=g, dtype=torch.float64)
    return cos_G(c, s, Q), (mu, p), y0, L1


@given(st.data())
def test_lip_lemma_and_deterministic_es_gh(data):
    """Lemma Lip-lemma (||grad G||^2 <= 2 L1 (G - inf G), the PEP's f_* constraint) and Lemma ES-GH
    with the full gradient: ||grad G(y) + lam (y - x)||^2 <= 2A (G(y) + H(x, y) - G^inf), A = 2 max(L1, lam)."""
    (G, gradG), _, y, L1 = instance(data)
    lam = data.draw(st.floats(0.01, 10.0))
    x = y + torch.randn_like(y) * data.draw(st.floats(0.0, 3.0))
    gy = gradG(y)
    assert float(gy @ gy) <= 2 * L1 * G(y) + 1e-12
    A, C = numeric.deterministic_es(L1, lam)
    assert C == 0.0
    v = gy + lam * (y - x)
    assert float(v @ v) <= 2 * A * (G(y) + lam / 2 * float((x - y) @ (x - y))) + 1e-12


def _lower_hull(xs, ys):
    hull = []
    for p in zip(xs, ys):
        while len(hull) >= 2 and (hull[-1][0] - hull[-2][0]) * (p[1] - hull[-2][1]) - (hull[-1][1] - hull[-2][1]) * (
            p[0] - hull[-2][0]
        ) <= 0:
            hull.pop()
        hull.append(p)
    hx, hy = zip(*hull)
    return np.interp(xs, hx, hy)


@given(st.data())
@settings(max_examples=25)
def test_lower_bound_constraint_is_exact_in_1d(data):
    """The docstring's exactness argument for f_* <= f_i - g_i^2/(2L): the L-smooth interpolant
    conv(min_i q_i) - (L/2) x^2 passes through the data and stays above min_i (f_i - g_i^2/(2L))."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    L = 1.0
    a, s = rng.uniform(0.3, 1.0, size=3), rng.normal(size=3) * 3
    c = L * rng.dirichlet(np.ones(3)) / a**2  # f'' = sum_j c_j a_j^2 cos(.) lies in [-L, L]

    def f(x):
        return (c[:, None] * (1 - np.cos(a[:, None] * x[None, :] - s[:, None]))).sum(0)

    def df(x):
        return (c[:, None] * a[:, None] * np.sin(a[:, None] * x[None, :] - s[:, None])).sum(0)

    pts = np.sort(rng.uniform(-6, 6, size=data.draw(st.integers(1, 5))))
    grid = np.union1d(np.linspace(-30, 30, 12001), pts)
    fi, gi = f(pts), df(pts)
    q = (fi[:, None] + gi[:, None] * (grid[None, :] - pts[:, None]) + L / 2 * (grid[None, :] - pts[:, None]) ** 2)
    F_hat = _lower_hull(grid, q.min(axis=0) + L / 2 * grid**2) - L / 2 * grid**2
    assert np.allclose(F_hat[np.searchsorted(grid, pts)], fi, atol=1e-5)
    assert F_hat.min() >= (fi - gi**2 / (2 * L)).min() - 1e-6


class L1Prox:
    """F(u) = mu ||u - p||_1 (closed, convex)."""

    def __init__(self, mu, p):
        self.mu, self.p = mu, p

    def F(self, u):
        return self.mu * float((u - self.p).abs().sum())

    def prox_F(self, v, gamma):
        d = v - self.p
        return self.p + torch.sign(d) * torch.clamp(d.abs() - gamma * self.mu, min=0.0)


def run_stam(lam, gamma, beta, T, G, gradG, Fp, y0, z_prev):
    """min_{t<T} S_t and delta0 + M0'_T of one concrete run of the project's STAM update."""
    H = QuadraticCoupling(lam)
    ops = Composite(H, Fp)
    state, zp = stam_init(y0[None], ops, gamma, z_prev=z_prev[None]), z_prev[None]
    S, M = [], []
    for t in range(T + 1):
        x, u, z, y = state.x[0], state.u[0], state.z[0], state.y[0]
        M.append(Fp.F(u) + float((2 * x - u - z) @ (2 * x - u - z) - (x - z) @ (x - z)) / (2 * gamma)
                 - float((u - x) @ (u - x)) / gamma)
        if t == T:
            break
        gF = (2 * x - zp[0] - u) / gamma
        a, b = gradG(y) + lam * (y - u), lam * (u - y) + gF
        S.append(float(a @ a + b @ b))
        zp = state.z
        state = stam_step(state, gradG(y)[None], ops, gamma, beta)
    x0 = stam_init(y0[None], ops, gamma, z_prev=z_prev[None]).x[0]
    delta0 = G(y0) + lam / 2 * float((x0 - y0) @ (x0 - y0))
    return min(S), delta0 + M[0] - min(M)


@given(st.data())
def test_no_concrete_instance_beats_the_pep(data):
    """Every L1-smooth G, convex F and start give min_t S_t <= worst case * (delta0 + M0'_T)
    (the PEP is homogeneous of degree 2), run through stam.steps itself."""
    lam, gamma, beta = data.draw(st.sampled_from(PARAMS))
    T = data.draw(st.integers(1, 3))
    free = data.draw(st.booleans())
    (G, gradG), (mu, p), y0, L1 = instance(data)
    z_prev = y0 + torch.randn_like(y0) if free else y0
    S, norm = run_stam(lam, gamma, beta, T, G, gradG, L1Prox(mu, p), y0, z_prev)
    assert norm >= -1e-12
    assert S <= worst(lam, gamma, beta, T, free) * norm * (1 + 1e-6) + 1e-9


def test_worst_case_shrinks_with_T_and_free_start_is_no_better():
    lam, gamma, beta = PARAMS[0]
    w = [worst(lam, gamma, beta, T) for T in (1, 2, 3)]
    assert w[0] > w[1] > w[2] > 0
    assert worst(lam, gamma, beta, 2, True) >= w[1] * (1 - 1e-6)


def test_worst_case_scales_like_the_problem():
    """Scaling G, H, F by s (L1 -> s L1, lam -> s lam, gamma -> gamma/s, beta -> s beta) leaves the
    iterates unchanged, multiplies S_t by s^2 and delta0 + M0'_T by s: the worst case by s.
    (Theorem conv's conditions are not invariant: K1 mixes gamma with 1, see docs/studies/band.md.)"""
    lam, gamma, beta = PARAMS[0]
    s = 2.0
    scaled = pep.stam_pep(s * lam, gamma / s, s * beta, 2, L1=s)
    assert scaled.optimal
    assert scaled.worst_case == pytest.approx(s * worst(lam, gamma, beta, 2), rel=1e-5)


def test_minibatch_noise_changes_the_worst_case_at_small_beta():
    """docs/pep.md's stochastic example and its reading: at beta = 250 (T = 2, N = 3, b = 1) the worst case is the deterministic
    one (the y-step hardly moves; the worst instance spends its budget on M0'_T); at beta = 1 the noise costs."""
    from stam.theory.worstcase.pep import stam_pep

    for beta, more in ((250.0, False), (1.0, True)):
        sampled = stam_pep(1.0, 0.1, beta, 2, N=3, b=1)
        full = stam_pep(1.0, 0.1, beta, 2)
        assert sampled.status == full.status == "optimal"
        if more:
            assert sampled.worst_case > 1.15 * full.worst_case
        else:
            assert sampled.worst_case == pytest.approx(full.worst_case, rel=1e-4)
