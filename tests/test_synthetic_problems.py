"""stam.synthetic: the constants of every problem (Assumption ass2, Lemma es-lemma) and the
sampling (Definition ass1, eq. (stochastic G)).

Every claimed Lipschitz constant is checked on sampled point pairs: never exceeded, and
approached (ratio > 0.5 on pairs found by a search along the top singular vector of the
Jacobian at sampled points), so the constants are not vacuous."""

import functools
import itertools
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from stam.synthetic.families import NAMES as PROBLEM_NAMES
from stam.synthetic.problems import PROBLEMS, make_problem
from stam.synthetic.sampling import Sampling

SMALL = dict(n=6, N=12, b=3)


@functools.lru_cache(maxsize=None)
def problem(name, seed=0):
    return make_problem(name, seed=seed, **SMALL)


def maps(p):
    """name of the constant -> (map, which argument varies) with x, y of the problem's sizes."""
    G, H = p.G, p.H
    return {
        "L1": lambda x, y: G.grad(y),
        "L2": lambda x, y: H.grad_x_H(x, y),
        "L3": lambda x, y: H.grad_y_H(x, y),
        "L4": lambda x, y: H.grad_x_H(x, y),
        "L5": lambda x, y: H.grad_y_H(x, y),
    }


VARIES = {"L1": "y", "L2": "x", "L3": "y", "L4": "y", "L5": "x"}


def dims(p):
    n = p.G.n
    m = n if p.z_prev is None else p.z_prev.numel()
    return m, n


def base_points(p, gen, count=6):
    """Points where the search starts: 0, the reference near-minimiser, and random points at
    several scales (uniform on [-pi, pi] too, for the periodic coupling)."""
    m, n = dims(p)
    x_ref, y_ref = (v[0] for v in p.reference)
    pts = [(torch.zeros(m, dtype=torch.float64), torch.zeros(n, dtype=torch.float64)), (x_ref, y_ref)]
    for k in range(count):
        scale = [0.1, 1.0, 3.0][k % 3]
        pts.append((scale * torch.randn(m, generator=gen, dtype=torch.float64),
                    scale * torch.randn(n, generator=gen, dtype=torch.float64)))
        pts.append(((torch.rand(m, generator=gen, dtype=torch.float64) * 2 - 1) * math.pi,
                    y_ref + 0.01 * torch.randn(n, generator=gen, dtype=torch.float64)))
    return pts


def ratio(f, x1, y1, x2, y2):
    num = (f(x1[None], y1[None]) - f(x2[None], y2[None])).norm()
    den = (x1 - x2).norm() + (y1 - y2).norm()
    return float(num / den)


def searched_ratio(f, which, x, y, eps=1e-6):
    """Largest ratio on the pairs (w + t v, w + t v + eps v), t on a grid in [-4, 4], with v the top
    right singular vector of the Jacobian at w (a line search along the direction of largest
    change)."""
    if which == "y":
        J = torch.autograd.functional.jacobian(lambda v: f(x[None], v[None])[0], y)
        v = torch.linalg.svd(J).Vh[0]
        return max(ratio(f, x, y + t * v, x, y + (t + eps) * v) for t in torch.linspace(-4, 4, 33).tolist())
    J = torch.autograd.functional.jacobian(lambda v: f(v[None], y[None])[0], x)
    v = torch.linalg.svd(J).Vh[0]
    return max(ratio(f, x + t * v, y, x + (t + eps) * v, y) for t in torch.linspace(-4, 4, 33).tolist())


@pytest.mark.parametrize("name", PROBLEM_NAMES)
def test_each_family_of_the_registry_builds_what_it_declares(name):
    """A family's declaration (stam.synthetic.families) agrees with the instance its builder makes:
    its name, a lambda where it declares one, F = I_Q where it declares quantised."""
    from stam.synthetic.families import family

    f = family(name)
    p = make_problem(name, n=4, N=8, b=2)
    assert p.name == name and ("lam" in p.params) == f.lam and p.quantised == f.quantised
    assert f.quadratic_coupling == (type(p.H).__name__ == "Quadratic")
    with pytest.raises(KeyError, match="choose one of: " + ", ".join(PROBLEM_NAMES)):
        make_problem("nope")
    assert tuple(PROBLEMS) == PROBLEM_NAMES  # the dict is built from the registry


@pytest.mark.parametrize("builder, spec, given", [
    ("binary", "BinarySpec", dict(lam=2.5, blocks=3, replacement=True)),
    ("sparse", "SparseSpec", dict(penalty="mcp", m=4, theta=3.0)),
    ("cosine", "CosineSpec", dict(mu=3.0, noise=0.2)),
])
def test_a_builders_keywords_are_its_spec(builder, spec, given):
    """A builder's keyword form is its spec built (the same instance, to the bit; its params the
    spec's fields in their order, ``m``, ``k`` resolved); the spec is frozen, an unknown keyword a
    TypeError, ``device``/``dtype`` only where it is built."""
    import dataclasses

    from stam.synthetic import problems as P

    build, Spec = getattr(P, builder), getattr(P, spec)
    s = Spec(**SMALL, seed=2, **given)
    a, b = build(**SMALL, seed=2, **given), s.build()
    assert a.name == b.name and a.params == b.params and a.quantised == b.quantised
    assert list(a.params) == [f.name for f in dataclasses.fields(Spec)]
    assert {k: v for k, v in a.params.items() if k not in ("m", "k")} == {k: v for k, v in dataclasses.asdict(s).items() if k not in ("m", "k")}
    for part in ("G", "H", "F"):
        for key, val in vars(getattr(a, part)).items():
            if isinstance(val, torch.Tensor):
                assert torch.equal(val, getattr(getattr(b, part), key)), (part, key)
    assert torch.equal(a.y0, b.y0)
    assert build(**SMALL, dtype=torch.float32).y0.dtype == torch.float32
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.n = 3
    with pytest.raises(TypeError, match="nope"):
        build(nope=1)


def test_paper_presets_are_table_paras_first_epoch():
    from stam.dnn.presets import paper_presets

    assert paper_presets() == {"paper-our1": (0.5, 8.0, 1000.0), "paper-our2": (4.0, 15.0, 1000.0)}


@pytest.mark.parametrize("name", PROBLEM_NAMES)
def test_lipschitz_constants_are_approached(name):
    p = problem(name)
    c = p.constants()
    gen = torch.Generator().manual_seed(1)
    pts = base_points(p, gen)
    for key, f in maps(p).items():
        best = max(searched_ratio(f, VARIES[key], x, y) for x, y in pts)
        assert best <= c[key] * (1 + 1e-6), (key, best, c[key])
        assert best > 0.5 * c[key], (key, best, c[key])
    # per-sample L1^i: the largest, approached by its own G_i
    i_max = int(p.G.L1_i().argmax())
    g_i = lambda x, y: p.G.grad_batch(y, torch.tensor([[i_max]]).expand(y.shape[0], 1))  # noqa: E731
    best = max(searched_ratio(g_i, "y", x, y) for x, y in pts)
    assert 0.5 * c["L1_i_max"] < best <= c["L1_i_max"] * (1 + 1e-6)


@pytest.mark.parametrize("name", PROBLEM_NAMES)
def test_weak_convexity_constant_l_is_exact(name):
    """<grad_x H(x1,y) - grad_x H(x2,y), x1 - x2> >= -l ||x1 - x2||^2, with near-equality somewhere."""
    p = problem(name)
    l = p.constants()["l"]
    gen = torch.Generator().manual_seed(2)
    lowest = math.inf
    for x, y in base_points(p, gen):
        Hxx = torch.autograd.functional.jacobian(lambda v: p.H.grad_x_H(v[None], y[None])[0], x)
        v = torch.linalg.eigh(0.5 * (Hxx + Hxx.T)).eigenvectors[:, 0]
        for d in (1e-6 * v, torch.randn(x.shape, generator=gen, dtype=torch.float64)):
            dg = p.H.grad_x_H((x + d)[None], y[None]) - p.H.grad_x_H(x[None], y[None])
            lowest = min(lowest, float((dg[0] * d).sum() / (d * d).sum()))
    assert lowest >= -l - 1e-6
    assert lowest <= -l + 0.5 * abs(l) + 1e-6


@pytest.mark.parametrize("name", PROBLEM_NAMES)
@given(seed=st.integers(0, 2**31 - 1), scale=st.sampled_from([0.01, 1.0, 10.0]))
def test_constants_never_exceeded_on_random_pairs(name, seed, scale):
    p = problem(name)
    c = p.constants()
    m, n = dims(p)
    gen = torch.Generator().manual_seed(seed)
    r = lambda k: scale * torch.randn(k, generator=gen, dtype=torch.float64)  # noqa: E731
    x1, x2, y1, y2 = r(m), r(m), r(n), r(n)
    for key, f in maps(p).items():
        got = ratio(f, x1, y1, x1, y2) if VARIES[key] == "y" else ratio(f, x1, y1, x2, y1)
        assert got <= c[key] * (1 + 1e-9) + 1e-12, key
    # lower bounds: H >= H_inf, G >= G_inf_lb, G + H >= GH_inf_lb
    assert float(p.H.H(x1[None], y1[None])) >= c["H_inf"] - 1e-12
    assert float(p.G.value(y1[None])) >= c["G_inf_lb"]
    assert float(p.G.values_i(y1[None]).min()) >= 0.0


def test_H_inf_is_attained_where_claimed():
    p = problem("cosine")
    x = torch.full((1, SMALL["n"]), math.pi, dtype=torch.float64)
    assert float(p.H.H(x, x)) == pytest.approx(p.constants()["H_inf"])
    for name in ("binary", "sparse-l1"):
        q = problem(name)
        m, n = dims(q)
        assert float(q.H.H(torch.zeros(1, m, dtype=torch.float64), torch.zeros(1, n, dtype=torch.float64))) == 0.0


def test_mcp_problem_enforces_gamma_below_theta():
    p = problem("sparse-mcp")
    with pytest.raises(ValueError, match="gamma < theta"):
        p.check_gamma(p.F.theta)
    with pytest.raises(ValueError, match="gamma < theta"):
        p.prox_F(torch.zeros(1, 6, dtype=torch.float64), 2 * p.F.theta)


def test_cosine_problem_enforces_gamma_l_below_one():
    p = problem("cosine")
    with pytest.raises(ValueError, match="gamma\\*l < 1"):
        p.check_gamma(1.0 / p.constants()["l"])


# --- sampling ------------------------------------------------------------------------------------
def outcomes(sampling):
    """All equally likely draws (as index tuples) of a sampling."""
    if sampling.replacement:
        return list(itertools.product(range(sampling.N), repeat=sampling.b))
    return list(itertools.combinations(range(sampling.N), sampling.b))


@pytest.mark.parametrize("replacement", [False, True])
@pytest.mark.parametrize("N,b", [(5, 1), (5, 2), (6, 3), (4, 4)])
def test_estimator_unbiased_and_second_moment_by_enumeration(N, b, replacement):
    s = Sampling(N, b, replacement)
    idx = torch.tensor(outcomes(s))
    v = s.weights(idx)
    assert torch.allclose(v.mean(0), torch.ones(N, dtype=torch.float64))  # E v_i = 1
    assert torch.allclose((v**2).mean(0), torch.full((N,), s.second_moment(), dtype=torch.float64))
    from stam.theory.symbolic.numeric_generated import ev2_nice, ev2_replacement

    assert s.second_moment() == pytest.approx((ev2_replacement if replacement else ev2_nice)(N, b))
    for name in ("binary", "sparse-l1"):
        p = make_problem(name, n=4, N=N, b=b, replacement=replacement, seed=3)
        y = torch.randn(1, 4, dtype=torch.float64).expand(len(idx), -1)
        est = p.G.grad_batch(y, idx)
        assert torch.allclose(est.mean(0), p.G.grad(y[:1])[0], atol=1e-12)  # Definition ass1
        # the minibatch average is the unified form (1/N) sum_i v_i grad G_i
        per_i = torch.stack([p.G.grad_batch(y[:1], torch.tensor([[i]]))[0] for i in range(N)])
        assert torch.allclose(est, v.to(per_i.dtype) @ per_i / N, atol=1e-12)


@pytest.mark.parametrize("path", ["dense", "gather", "chunked-rows", "chunked-runs"])
@pytest.mark.parametrize("link,mu", [("robust", 0.0), ("logistic", 0.3)])
def test_grad_batch_paths_are_the_sampled_average(path, link, mu, monkeypatch):
    """Every evaluation route of grad_batch (all residuals by one GEMM; one gather; gathers in
    blocks of rows, or of runs) is ``(1/b) sum_k nabla G_{i_k}(y)``, repeats counted twice."""
    from stam.synthetic import losses

    R, b, n, N = 3, 5, 7, 60 if path != "dense" else 12  # dense iff N <= DENSE_RATIO * b = 40
    gen = torch.Generator().manual_seed(1)
    G = losses.FiniteSumLoss(torch.randn(N, n, generator=gen, dtype=torch.float64),
                             torch.randn(N, generator=gen, dtype=torch.float64),
                             losses.ROBUST if link == "robust" else losses.LOGISTIC, mu)
    y = torch.randn(R, n, generator=gen, dtype=torch.float64)
    idx = torch.randint(0, N, (R, b), generator=gen)
    idx[0, 1] = idx[0, 0]  # a repeat, as with replacement
    element = 8  # float64
    cap = {"chunked-rows": 2 * R * n, "chunked-runs": 2 * n}.get(path)  # numbers per gathered block
    if cap:
        monkeypatch.setattr(losses, "GATHER_BYTES", cap * element)
    calls = []
    for route in ("_grad_dense", "_grad_rows"):
        monkeypatch.setattr(G, route, lambda *a, f=getattr(G, route), route=route: (calls.append(route), f(*a))[1])
    got = G.grad_batch(y, idx)
    # the route taken is the one meant: blocks of 2 rows for all runs (3 blocks), or 2 runs x 1 row (2 x 5)
    assert calls == {"dense": ["_grad_dense"], "gather": ["_grad_rows"], "chunked-rows": ["_grad_rows"] * 3,
                     "chunked-runs": ["_grad_rows"] * 10}[path]
    ref = torch.stack([sum(G.link.deriv(G.A[i] @ y[r] - G.t[i]) * G.A[i] for i in idx[r].tolist()) / b for r in range(R)])
    if mu:
        ref = ref + mu * 2 * y / (1 + y * y) ** 2
    assert torch.allclose(got, ref, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("replacement", [False, True])
def test_sampler_draws_match_the_distribution(replacement):
    s = Sampling(10, 4, replacement)
    idx = s.draw(40000, torch.Generator().manual_seed(0))
    assert idx.shape == (40000, 4) and int(idx.min()) >= 0 and int(idx.max()) < 10
    if not replacement:
        assert all(len(set(row)) == 4 for row in idx[:500].tolist())
    v = s.weights(idx)
    se = v.std(0) / 200  # standard error of the mean over 40000 draws
    assert torch.all((v.mean(0) - 1).abs() < 5 * se)
    assert float((v**2).mean()) == pytest.approx(s.second_moment(), rel=0.03)


def test_sampling_rejects_bad_sizes():
    with pytest.raises(ValueError):
        Sampling(5, 6)
    with pytest.raises(ValueError):
        Sampling(0, 1)
    assert Sampling(5, 6, replacement=True).second_moment() == pytest.approx(5 / 6 + 5 / 6)


@pytest.mark.parametrize("name", PROBLEM_NAMES)
@pytest.mark.parametrize("replacement", [False, True])
def test_expected_smoothness_of_es_lemma_by_enumeration(name, replacement):
    """Lemma es-lemma (corrected A, C; certified bounds): exact expectation over all draws."""
    p = make_problem(name, n=4, N=5, b=2, replacement=replacement, seed=4)
    c = p.constants()
    idx = torch.tensor(outcomes(p.sampling))
    m, n = dims(p)
    gen = torch.Generator().manual_seed(5)
    for scale in (0.1, 1.0, 5.0):
        x = scale * torch.randn(1, m, generator=gen, dtype=torch.float64)
        y = scale * torch.randn(1, n, generator=gen, dtype=torch.float64)
        g = p.G.grad_batch(y.expand(len(idx), -1), idx) + p.H.grad_y_H(x, y)
        lhs = float((g * g).sum(1).mean())
        rhs = 2 * c["A"] * float(p.G.value(y) + p.H.H(x, y) - c["GH_inf_lb"]) + c["C"]
        assert lhs <= rhs


def test_delta_upper_bound_is_a_function_value():
    p = problem("binary")
    c = p.constants()
    x, y = p.reference
    assert c["GH_inf_ub"] == pytest.approx(float(p.G.value(y) + p.H.H(x, y)))
    assert c["GH_inf_lb"] <= c["GH_inf_ub"]
    assert c["A"] == 2 * max(c["L1_i_max"] * c["Ev2"], c["L3"])
    assert c["C"] == pytest.approx(2 * c["A"] * c["Delta_ub"])
