"""stam.synthetic: the STAM steps are exact, the stationarity measure is exact, and the paper's
inequalities (Lemma par2 corrected, Theorem conv) hold along actual iterates."""

import functools
import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize, minimize_scalar

from stam.steps import stam_step
from stam.quantize import block_ids_from_sizes, project_Q
from stam.synthetic.families import NAMES as PROBLEM_NAMES
from stam.synthetic.couplings import CosineCoupling, LinearCoupling, Quadratic
from stam.synthetic.penalties import MCP, L1Norm, QuantizedIndicator, min_partition
from stam.synthetic.problems import make_problem
from stam.synthetic.rates import run_rates
from stam.theory.symbolic import numeric

f64 = dict(dtype=torch.float64)


@functools.lru_cache(maxsize=None)
def problem(name, seed=0, b=3):
    return make_problem(name, n=6, N=12, b=b, seed=seed)


# --- x-step (eq. algx) ------------------------------------------------------------------------
def couplings(gen):
    A = torch.randn(7, 4, generator=gen, **f64)
    B = torch.randn(7, 5, generator=gen, **f64)
    return [(Quadratic(0.7), 5, 5), (LinearCoupling(A, B), 4, 5), (CosineCoupling(1.0, 2.5, 5), 5, 5)]


@settings(max_examples=20)
@given(seed=st.integers(0, 2**31 - 1), gamma=st.floats(0.01, 0.6))
def test_x_step_is_the_exact_minimiser(seed, gamma):
    gen = torch.Generator().manual_seed(seed)
    for H, m, n in couplings(gen):
        z = 3 * torch.randn(1, m, generator=gen, **f64)
        y = 3 * torch.randn(1, n, generator=gen, **f64)
        x = H.prox_H(z, y, gamma)
        obj = lambda w: float(H.H(torch.from_numpy(w)[None], y) + ((torch.from_numpy(w) - z[0]) ** 2).sum() / (2 * gamma))  # noqa: E731
        # first-order condition eq. (eq13) and no better point found by scipy from several starts
        grad = H.grad_x_H(x, y) + (x - z) / gamma
        assert float(grad.abs().max()) < 1e-8 * (1 + float(z.abs().max()) / gamma)
        for start in (z[0].numpy(), np.zeros(m), x[0].numpy() + 1.0):
            best = minimize(obj, start, method="BFGS", options=dict(gtol=1e-10)).fun
            assert obj(x[0].numpy()) <= best + 1e-9 * (1 + abs(best))


# --- u-step (eq. algu) ------------------------------------------------------------------------
@settings(max_examples=25)
@given(seed=st.integers(0, 2**31 - 1), gamma=st.floats(0.01, 1.9))
def test_prox_of_l1_and_mcp_is_the_exact_minimiser(seed, gamma):
    """Against a dense grid of the 1-D objective refined by scipy's bounded minimiser."""
    gen = torch.Generator().manual_seed(seed)
    v = 3 * torch.randn(1, 8, generator=gen, **f64)
    grid = torch.linspace(-12, 12, 24001, **f64)[:, None]
    for F in (L1Norm(0.4), MCP(0.4, 2.0)):
        u = F.prox_F(v, gamma)
        pen = F.value(grid)
        for j in range(8):
            vj = float(v[0, j])
            f = lambda t: float(F.value(torch.tensor([[t]], **f64))) + (t - vj) ** 2 / (2 * gamma)  # noqa: E731
            t0 = float(grid[int((pen + (grid[:, 0] - vj) ** 2 / (2 * gamma)).argmin()), 0])
            ref = minimize_scalar(f, bounds=(t0 - 1e-3, t0 + 1e-3), method="bounded", options=dict(xatol=1e-12))
            assert f(float(u[0, j])) <= min(ref.fun, f(t0)) + 1e-10


@pytest.mark.parametrize("sizes", [[1], [3], [5], [2, 4], [3, 3, 4]])
@given(seed=st.integers(0, 2**31 - 1))
def test_u_step_for_I_Q_is_optimal_by_brute_force_over_signs_and_scales(sizes, seed):
    """The prox of I_Q at 2x - z (eq. algu) is a projection: brute force over every sign pattern
    of every block and a grid of scales (plus the best scale of each pattern)."""
    gen = torch.Generator().manual_seed(seed)
    n, B = sum(sizes), len(sizes)
    ids = block_ids_from_sizes(sizes)
    F = QuantizedIndicator(ids, B)
    v = torch.randn(1, n, generator=gen, **f64)
    u = F.prox_F(v, 0.3)
    assert float(F.value(u)) == 0.0
    best, start = 0.0, 0
    for m in sizes:
        blk = v[0, start:start + m]
        cand = []
        for signs in itertools.product([-1.0, 1.0], repeat=m):
            zeta = torch.tensor(signs, **f64)
            scales = torch.cat([torch.linspace(0, 3, 301, **f64), ((zeta @ blk) / m).clamp_min(0)[None]])
            cand.append(float(((scales[:, None] * zeta - blk) ** 2).sum(1).min()))
        best += min(cand)
        start += m
    assert float(((u - v) ** 2).sum()) <= best + 1e-12


# --- the stationarity measure ------------------------------------------------------------------
def _dist2_normal_cone_brute(u_blk, g_blk):
    """dist^2(0, g + N(u)) with N(u) = union of zeta^perp over the lines span(zeta) through u,
    found by enumeration, each projection computed by least squares on a basis of zeta^perp."""
    m = u_blk.numel()
    best = math.inf
    for signs in itertools.product([-1.0, 1.0], repeat=m):
        zeta = torch.tensor(signs, **f64)
        on_line = torch.linalg.matrix_rank(torch.stack([zeta, u_blk]), atol=1e-12) <= 1
        if not on_line:
            continue
        basis = torch.linalg.svd(zeta[None]).Vh[1:].T  # (m, m-1): zeta^perp
        if basis.shape[1] == 0:
            best = min(best, float((g_blk**2).sum()))
            continue
        coef = torch.linalg.lstsq(basis, -g_blk[:, None]).solution
        best = min(best, float(((g_blk + (basis @ coef)[:, 0]) ** 2).sum()))
    return best


@pytest.mark.parametrize("sizes", [[1], [4], [2, 3], [1, 3, 2]])
@given(seed=st.integers(0, 2**31 - 1), zero_block=st.booleans())
def test_dist_to_normal_cone_of_Q_against_brute_force(sizes, seed, zero_block):
    gen = torch.Generator().manual_seed(seed)
    n, B = sum(sizes), len(sizes)
    ids = block_ids_from_sizes(sizes)
    F = QuantizedIndicator(ids, B)
    u = project_Q(torch.randn(1, n, generator=gen, **f64), ids, B)
    if zero_block:
        u[0, ids == 0] = 0.0  # s = 0 on the first block: the limiting cone is a union of hyperplanes
    g = torch.randn(1, n, generator=gen, **f64)
    expected = sum(_dist2_normal_cone_brute(u[0, ids == k], g[0, ids == k]) for k in range(B))
    assert float(F.dist2(u, g)) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@given(seed=st.integers(0, 2**31 - 1))
def test_normal_cone_of_Q_at_nonzero_points_is_zeta_perp(seed):
    """Proximal normals: w is normal at u iff Proj_Q(u + eps w) = u for small eps; for u != 0 this
    holds exactly for w orthogonal to sign(u) (the cone used by dist2)."""
    gen = torch.Generator().manual_seed(seed)
    ids = block_ids_from_sizes([4])
    u = project_Q(torch.randn(1, 4, generator=gen, **f64), ids, 1)
    zeta = torch.sign(u)
    w = torch.randn(1, 4, generator=gen, **f64)
    w_perp = w - (w * zeta).sum() / 4 * zeta
    eps = 1e-3 * float(u.abs().max())
    assert torch.allclose(project_Q(u + eps * w_perp, ids, 1), u, atol=1e-12)
    assert not torch.allclose(project_Q(u + eps * zeta, ids, 1), u, atol=1e-9)


def test_min_partition_greedy_is_an_upper_bound_above_the_enumeration_limit():
    g = torch.arange(1, 25, **f64)  # sum 300: a perfect partition exists
    assert min_partition(g) >= 0.0
    assert min_partition(g[:20]) == pytest.approx(0.0)  # enumeration: 210 = 105 + 105
    assert min_partition(torch.tensor([3.0, 1.0, 1.0], **f64)) == pytest.approx(1.0)
    assert min_partition(torch.tensor([2.5], **f64)) == pytest.approx(2.5)


@given(seed=st.integers(0, 2**31 - 1))
def test_dist_to_subdifferential_of_l1_and_mcp_against_brute_force(seed):
    gen = torch.Generator().manual_seed(seed)
    u = torch.randn(1, 10, generator=gen, **f64)
    u[0, :3] = 0.0
    u[0, 3] = 5.0  # beyond theta*tau: MCP is flat there
    g = torch.randn(1, 10, generator=gen, **f64)
    tau, theta = 0.7, 2.0
    for F, sub in (
        (L1Norm(tau), lambda t: [tau * math.copysign(1, t)]),
        (MCP(tau, theta), lambda t: [math.copysign(max(tau - abs(t) / theta, 0.0), t)]),
    ):
        expected = 0.0
        for j in range(10):
            t, gj = float(u[0, j]), float(g[0, j])
            values = np.linspace(-tau, tau, 200001) if t == 0 else np.array(sub(t))
            expected += float(np.min((gj + values) ** 2))
        assert float(F.dist2(u, g)) == pytest.approx(expected, abs=1e-8)


# --- fixed points, Lemma par2, Theorem conv -----------------------------------------------------
@pytest.mark.parametrize("name", PROBLEM_NAMES)
def test_fixed_points_of_deterministic_stam_are_stationary(name):
    """Iterate STAM with full gradients to a fixed point (any gamma, beta): there S = 0."""
    p = make_problem(name, n=6, N=10, b=10, seed=1)
    c = p.constants()
    gamma = min(0.5 / c["L2"], 0.5 / c["l"] if c["l"] > 0 else math.inf, 1.0)
    beta = 2 * (c["L1"] + c["L3"])
    s = p.start(4, gamma)
    s = type(s)(s.y + torch.randn(s.y.shape, generator=torch.Generator().manual_seed(2), **f64), *s[1:])
    assert float(p.stationarity(s.u, s.y).min()) > 1e-3  # not stationary at the start
    for _ in range(20000):
        s1 = stam_step(s, p.G.grad(s.y), p, gamma, beta)
        residual = max(float((a - b).abs().max()) for a, b in zip(s, s1))
        s = s1
        if residual < 1e-12:
            break
    assert residual < 1e-12
    assert float((s.u - s.x).abs().max()) < 1e-10
    assert float(p.stationarity(s.u, s.y).max()) < 1e-18


def _par2_slack(p, gamma, beta, T, R, seed):
    """min over t and runs of RHS - LHS of Lemma par2 (eq. (eq43), corrected K3), per realisation."""
    c = p.theory_constants()
    K1, K2, K3 = (float(f(gamma, c)) for f in (numeric.K1, numeric.K2, numeric.K3))
    gen = torch.Generator().manual_seed(seed)
    s = p.start(R, gamma)
    z_prev = p.y0.expand(R, -1) if p.z_prev is None else p.z_prev.expand(R, -1)
    worst = math.inf
    for _ in range(T):
        s1 = stam_step(s, p.stochastic_grad(s.y, gen), p, gamma, beta)
        lhs = K1 / K2 * ((s.z - z_prev) ** 2).sum(1) / gamma**2
        rhs = (p.H.H(s.x, s1.y) - p.H.H(s1.x, s1.y) + p.lyapunov(s, gamma) - p.lyapunov(s1, gamma)
               + K3 * ((s1.y - s.y) ** 2).sum(1))
        worst = min(worst, float((rhs - lhs - 1e-9 * (1 + rhs.abs() + lhs.abs())).min()))
        z_prev, s = s.z, s1
    return worst


@pytest.mark.parametrize("name", PROBLEM_NAMES)
@given(seed=st.integers(0, 1000), frac=st.sampled_from([0.2, 0.6, 0.95]), beta=st.sampled_from([0.3, 1.0, 30.0]))
def test_sufficient_decrease_of_lemma_par2_along_iterates(name, seed, frac, beta):
    """Lemma par2 holds for every beta (it only uses the x-, u-, z-steps) at admissible gamma."""
    p = problem(name, seed=seed % 3)
    gamma = frac * numeric.gamma_max(p.theory_constants())
    assert _par2_slack(p, gamma, beta, T=15, R=8, seed=seed) >= 0


@pytest.mark.parametrize("name", PROBLEM_NAMES)
def test_theorem_conv_inequality_on_small_random_instances(name):
    for seed in (0, 1):
        p = problem(name, seed=seed)
        result = run_rates(p, [3, 12, 40], R=16, seed=seed, progress=False)
        for row in result["rows"]:
            assert row["admissible"] and row["bound"] is not None
            assert row["ratio"] >= 1.0, row
