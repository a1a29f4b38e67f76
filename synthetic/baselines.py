"""Baselines on the synthetic problems, with equal budgets of stochastic gradient evaluations.

The budget is counted in evaluations of sample gradients ``nabla G_i``: an iteration with a
minibatch of ``b`` costs ``b``, a full gradient costs ``N``.  For a budget ``E``:

- ``stam``: Algorithm 1 (:func:`stam.algorithm.stam_step`), ``E // b`` iterations;
- ``stam-det``: deterministic STAM (full gradient, ``E // N`` iterations);
- ``spring-sgd``: stochastic PALM (SPRING of Driggs et al. with the plain SGD estimator) on the
  same three-block model: ``x+ = prox_{eta_x F}(x - eta_x nabla_x H(x, y))``,
  ``y+ = y - eta_y (tilde-nabla G(y) + nabla_y H(x+, y))``, ``eta_x = 1/(1.1 L2*)``;
- on problems with ``F = I_Q`` (problem 1) the quantisation methods of Section 3.1, run on
  ``min L(W) + I_Q(W)`` (eq. (eq02)) with ``L = G``, lr ``eta``:
  ``psgd`` eq. (alg:PSGD) *as printed*: ``U+ = U - eta tilde-nabla L(U)``, ``W+ = Proj_Q(U+)``
  (the U-sequence is plain SGD on L; W is its projection);
  ``bc`` eq. (alg:BC): ``U+ = U - eta tilde-nabla L(W)``, ``W+ = Proj_Q(U+)``;
  ``br`` eq. (alg:BR): ``U+ = U - eta tilde-nabla L(W)`` and ``W+ = (lam_t Proj_Q(U+) + U+)/(lam_t + 1)``
  with ``lam_{t+1} = rho lam_t`` for the first quarter of the iterations (the paper switches at
  epoch 250 of 1000), then ``W+ = Proj_Q(U+)``; ``lam_0 = 1``, ``rho = 1.02`` per epoch of
  ``N/b`` iterations (Table para).

All y-steps (and the lr of PSGD/BC/BR) use the same step ``1/beta``: given (``--beta``), or by
default the beta that Theorem conv-rate prescribes to STAM at its iteration count
(deterministic STAM then takes the beta prescribed for its own iteration count and its ``A``,
with ``E[v_i^2] = 1``).  Every method reports, at its final point ``(u, y)`` (STAM:
``(u^T, y^T)``; SPRING: ``(x^T, y^T)``; PSGD/BC/BR: ``(Proj_Q(W^T), U^T)``), the stationarity
measure ``S`` of Theorem conv, the objective ``Phi(u, y) = F(u) + G(y) + H(u, y)`` of the
three-block model and, when ``F = I_Q``, the quantised objective ``G(u)`` (the loss of the
binary model).  Values are means over the R runs.  PSGD/BC/BR do not minimise Phi: their S
and Phi say how far their output is from a stationary point of the three-block model.
"""

from __future__ import annotations

import math
import time

import torch
from tqdm import tqdm

from stam.algorithm import QuantizedState, bc_step, br_step, psgd_step, stam_step
from stam.io import bar_disable
from stam.synthetic.problems import ThreeBlockProblem
from stam.synthetic.sampling import Sampling
from stam.theory import numeric

QUANTISATION_METHODS = ("psgd", "bc", "br")
METHODS = ("stam", "stam-det", "spring-sgd") + QUANTISATION_METHODS


def theory_beta(problem: ThreeBlockProblem, T: int, gamma: float) -> float:
    """``max{sqrt((L+M) A T), 2 K2/K1}`` (Theorem conv-rate, no eps) for this problem's sampling:
    the beta of :func:`stam.theory.numeric.admissible_parameters`."""
    return numeric.admissible_parameters(problem.theory_constants(), T, gamma, allow_inadmissible=True).beta


def _report(problem, u, y, seconds, evals):
    quant = float(problem.G.value(u).mean()) if problem.quantised else None
    return {
        "final_S": float(problem.stationarity(u, y).mean()),
        "objective": float(problem.objective(u, y).mean()),
        "quantised_objective": quant,
        "wall_time": seconds,
        "grad_evals": evals,
    }


def _stam(problem, iters, R, gamma, beta, gen):
    state = problem.start(R, gamma)
    for _ in range(iters):
        state = stam_step(state, problem.stochastic_grad(state.y, gen), problem, gamma, beta)
    return state.u, state.y


def _spring(problem, iters, R, eta_y, gen):
    eta_x = 1 / (1.1 * problem.constants()["L2"])
    problem.F.check_gamma(eta_x)
    y = problem.y0.expand(R, -1).clone()
    x = problem.prox_F(y if problem.z_prev is None else problem.z_prev.expand(R, -1).clone(), eta_x)
    for _ in range(iters):
        x = problem.prox_F(x - eta_x * problem.H.grad_x_H(x, y), eta_x)
        y = y - eta_y * (problem.stochastic_grad(y, gen) + problem.grad_y_H(x, y))
    return x, y


def _quantisation(problem, method, iters, R, lr, gen):
    """PSGD, BC or BR through the shared steps of :mod:`stam.algorithm` (eqs. (alg:PSGD),
    (alg:BC), (alg:BR)), with ``F = I_Q`` of the problem as the projection."""
    F = problem.F
    U = problem.y0.expand(R, -1).clone()
    state = QuantizedState(U, U if method == "psgd" else F.prox_F(U, lr))
    epoch = problem.sampling.N / problem.sampling.b
    rho, lam, switch = 1.02 ** (1 / epoch), 1.0, iters // 4
    for t in range(iters):
        grad = problem.stochastic_grad(state.w, gen)  # at U for PSGD, at W~ for BC and BR
        if method == "psgd":
            state = psgd_step(state, grad, F, lr)
        elif method == "bc":
            state = bc_step(state, grad, F, lr)
        else:
            state = br_step(state, grad, F, lr, lam, relaxed=t < switch)
            lam = lam * rho if t < switch else lam
    return F.prox_F(state.w, lr), state.u


def run_method(problem: ThreeBlockProblem, method: str, budget: int, R: int, gamma: float, beta: float | None,
               seed: int = 0) -> dict:
    """Run one method for ``budget`` sample-gradient evaluations per run (module docstring).
    ``beta=None``: the theory beta of each STAM variant at its own iteration count and sampling
    (for the other methods, that of stochastic STAM)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    if method in QUANTISATION_METHODS and not problem.quantised:
        raise ValueError(f"{method} needs F = I_Q (problem 1, 'binary'); {problem.name} has F = {problem.F.describe()}")
    gen = torch.Generator(device=problem.y0.device).manual_seed(seed)
    b, N = problem.sampling.b, problem.sampling.N
    start = time.perf_counter()
    if method == "stam-det":
        det = problem.with_sampling(Sampling(N, N))
        iters = budget // N
        u, y = _stam(det, iters, R, gamma, theory_beta(det, max(iters, 1), gamma) if beta is None else beta, gen)
        evals = iters * N
    else:
        iters = budget // b
        evals = iters * b
        beta = theory_beta(problem, iters, gamma) if beta is None else beta
        if method == "stam":
            u, y = _stam(problem, iters, R, gamma, beta, gen)
        elif method == "spring-sgd":
            u, y = _spring(problem, iters, R, 1 / beta, gen)
        else:
            u, y = _quantisation(problem, method, iters, R, 1 / beta, gen)
    if problem.y0.is_cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    out = {"method": method, "iterations": iters}
    out.update(_report(problem, u, y, seconds, evals))
    return out


def compare(problem: ThreeBlockProblem, budget: int, R: int = 8, gamma: float | None = None, beta: float | None = None,
            gamma_fraction: float = 0.5, seed: int = 0, methods=None, progress: bool = True) -> dict:
    """All applicable methods at an equal budget; the ``synthetic-compare`` result dict."""
    if budget < problem.sampling.b:
        raise ValueError(f"budget {budget} is smaller than one minibatch (b = {problem.sampling.b})")
    c = problem.theory_constants()
    if gamma is not None:
        problem.check_gamma(gamma)
    T = budget // problem.sampling.b
    chosen = numeric.admissible_parameters(c, T, gamma, beta, gamma_fraction, allow_inadmissible=True,
                                           remedy="any beta given with --beta is run (the output says whether Theorem conv applies)")
    gamma = chosen.gamma
    problem.check_gamma(gamma)
    beta_rule = (f"theory: {numeric.BETA_RULE} at STAM's T (stam-det: at its own T and A)" if beta is None
                 else "given (all methods)")
    step = 1 / chosen.beta
    if methods is None:
        methods = [m for m in METHODS if problem.quantised or m not in QUANTISATION_METHODS]
    rows = [run_method(problem, m, budget, R, gamma, beta, seed) for m in tqdm(methods, desc="compare", disable=bar_disable(progress),
                                                                            leave=False)]
    verdict = chosen.verdicts[-1]
    return {
        "kind": "synthetic-compare",
        "problem": problem.name,
        "params": dict(problem.params, budget=budget, R=R, seed=seed, gamma=gamma, beta=1 / step, beta_rule=beta_rule,
                       step=step, sampling=problem.sampling.describe(), F=problem.F.describe(),
                       admissible=bool(verdict["admissible"]),
                       violations=numeric.violations_text(verdict)),
        "rows": rows,
    }


def format_table(result: dict) -> str:
    """A fixed-width table of a ``synthetic-compare`` result."""
    head = f"{'method':<12} {'iters':>7} {'grad evals':>11} {'final S':>11} {'objective':>11} {'quantised':>11} {'wall s':>8}"
    lines = [head, "-" * len(head)]
    fmt = lambda v: "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.4g}"  # noqa: E731
    for r in result["rows"]:
        lines.append(f"{r['method']:<12} {r['iterations']:>7} {r['grad_evals']:>11} {fmt(r['final_S']):>11} "
                     f"{fmt(r['objective']):>11} {fmt(r['quantised_objective']):>11} {r['wall_time']:>8.2f}")
    return "\n".join(lines)


__all__ = ["METHODS", "QUANTISATION_METHODS", "run_method", "compare", "format_table", "theory_beta"]
