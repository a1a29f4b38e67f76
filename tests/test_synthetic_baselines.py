"""The methods of `stam synthetic compare` (stam.synthetic.methods.REGISTRY): each runner is the
shared step of stam.steps in a loop, at the budget it declares."""

from __future__ import annotations

import pytest
import torch

from stam.steps import QuantizedState, bc_step, br_step, psgd_step, stam_step
from stam.synthetic import baselines
from stam.synthetic.methods import QUANTISATION_METHODS
from stam.synthetic.problems import make_problem
from stam.synthetic import methods


@pytest.fixture(scope="module")
def problem():
    return make_problem("binary", n=5, N=12, b=3, seed=0, dtype=torch.float64)


def _by_hand(problem, name, iters, R, gamma, beta, seed):
    """The method written out from the paper's equations with the shared steps."""
    gen = torch.Generator().manual_seed(seed)
    F, lr = problem.F, 1 / beta
    if name == "stam":
        s = problem.start(R, gamma)
        for _ in range(iters):
            s = stam_step(s, problem.stochastic_grad(s.y, gen), problem, gamma, beta)
        return s.u, s.y
    U = problem.y0.expand(R, -1).clone()
    s = QuantizedState(U, U if name == "psgd" else F.prox_F(U, lr))
    lam, rho, switch = 1.0, 1.02 ** (problem.sampling.b / problem.sampling.N), iters // 4
    for t in range(iters):
        g = problem.stochastic_grad(s.w, gen)
        if name == "psgd":
            s = psgd_step(s, g, F, lr)
        elif name == "bc":
            s = bc_step(s, g, F, lr)
        else:
            s = br_step(s, g, F, lr, lam, relaxed=t < switch)
            lam = lam * rho if t < switch else lam
    return F.prox_F(s.w, lr), s.u


@pytest.mark.parametrize("name", ["stam", "psgd", "bc", "br"])
def test_each_runner_is_the_shared_step_in_a_loop(problem, name):
    budget, R, gamma, beta = 60, 3, 0.3, 40.0
    got = baselines.run_method(problem, name, budget, R, gamma, beta, seed=5)
    u, y = _by_hand(problem, name, budget // problem.sampling.b, R, gamma, beta, 5)
    assert got["iterations"] == 20 and got["grad_evals"] == 60
    assert got["final_S"] == pytest.approx(float(problem.stationarity(u, y).mean()), rel=1e-12)
    assert got["objective"] == pytest.approx(float(problem.objective(u, y).mean()), rel=1e-12)


def test_the_deterministic_method_spends_the_budget_on_full_gradients(problem):
    got = baselines.run_method(problem, "stam-det", 60, 2, 0.3, 40.0)
    assert got["iterations"] == 5 and got["grad_evals"] == 60  # 5 full gradients of N = 12


def test_registry_declares_names_and_needs(problem):
    assert methods.METHODS == tuple(m.name for m in methods.REGISTRY)
    assert set(QUANTISATION_METHODS) == {"psgd", "bc", "br"}
    from stam.registry import load

    assert all(callable(load(m.runner)) for m in methods.REGISTRY)  # every declared runner exists
    from stam.dnn import catalog

    assert all(methods.method(n).label == catalog.algorithm(n).label for n in QUANTISATION_METHODS)
    sparse = make_problem("sparse-l1", n=5, N=12, b=3, seed=0, dtype=torch.float64)
    with pytest.raises(ValueError, match="bc needs F = I_Q"):
        baselines.run_method(sparse, "bc", 30, 1, 0.3, 40.0)
    with pytest.raises(ValueError, match="unknown method 'adam'"):
        baselines.run_method(problem, "adam", 30, 1, 0.3, 40.0)


@pytest.mark.parametrize("fields", [{}, {"gamma_fraction": 0.3}, {"gamma": 0.2, "beta": 5.0, "allow_inadmissible": True}])
def test_step_sizes_object_and_keywords_run_the_same(problem, fields):
    """run_rates and compare pass the rule's arguments through: one StepSizes or its fields by keyword (the
    old calls) give the same result, wall times aside; compare runs any pair (allow_inadmissible set)."""
    from stam.synthetic.rates import run_rates
    from stam.theory.symbolic.numeric import StepSizes

    same = dict(R=2, seed=1, progress=False)
    assert run_rates(problem, [3, 8], step_sizes=StepSizes(**fields), **same) == run_rates(problem, [3, 8], **fields, **same)
    mine = {k: v for k, v in fields.items() if k != "allow_inadmissible"}
    timeless = lambda r: dict(r, rows=[dict(row, wall_time=None) for row in r["rows"]])  # noqa: E731
    by_object = timeless(baselines.compare(problem, 24, step_sizes=StepSizes(**mine), **same))
    assert by_object == timeless(baselines.compare(problem, 24, **mine, **same))
    assert by_object["params"]["admissible"] == ("beta" not in fields)


def test_a_misspelt_step_size_keyword_is_refused_before_anything_runs():
    from stam.synthetic.rates import run_rates

    for name, call in (("run_rates", lambda: run_rates(None, [1], gama=0.1)),  # no problem needed: refused first
                       ("compare", lambda: baselines.compare(None, 1, gama=0.1))):
        with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'gama'$"):
            call()
