"""Baselines on the synthetic problems, with equal budgets of stochastic gradient evaluations.

The budget is counted in evaluations of sample gradients ``nabla G_i``: an iteration with a
minibatch of ``b`` costs ``b``, a full gradient costs ``N``.  For a budget ``E``:

- ``stam``: Algorithm 1 (:func:`stam.steps.stam_step`), ``E // b`` iterations;
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
  epoch 250 of 1000), then ``W+ = Proj_Q(U+)``; ``lam_0 = 1``, ``rho`` =
  :data:`stam.steps.BR_RHO` (Table para's 1.02) per epoch of ``N/b`` iterations.
  Each is its update rule's synthetic form (:mod:`stam.rules`, :func:`run_rule`): every rule
  that declares one is a method.

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

import dataclasses
import math
import time

import torch
from tqdm import tqdm

from stam import rules
from stam.steps import stam_step
from stam.io import bar_disable
from stam.synthetic.methods import METHODS, REGISTRY, method
from stam.synthetic.problems import ThreeBlockProblem
from stam.synthetic.sampling import Sampling
from stam.theory.symbolic import numeric
from stam.theory.symbolic.numeric import StepSizes
from stam.theory.settings import no_other


def theory_beta(problem: ThreeBlockProblem, T: int, gamma: float) -> float:
    """``max{sqrt((L+M) A T), 2 K2/K1}`` (Theorem conv-rate, no eps) for this problem's sampling:
    the beta of :func:`stam.theory.symbolic.numeric.admissible_parameters`."""
    return numeric.admissible_parameters(problem.theory_constants(), T,
                                         step_sizes=StepSizes(gamma=gamma, allow_inadmissible=True)).beta


def _report(problem, u, y, seconds, evals):
    quant = float(problem.G.value(u).mean()) if problem.quantised else None
    return {
        "final_S": float(problem.stationarity(u, y).mean()),
        "objective": float(problem.objective(u, y).mean()),
        "quantised_objective": quant,
        "wall_time": seconds,
        "grad_evals": evals,
    }


def run_stam(problem, iters, R, gamma, beta, gen):
    """Algorithm 1: :func:`stam.steps.stam_step` ``iters`` times."""
    state = problem.start(R, gamma)
    for _ in range(iters):
        state = stam_step(state, problem.stochastic_grad(state.y, gen), problem, gamma, beta)
    return state.u, state.y


def run_spring(problem, iters, R, gamma, beta, gen):
    """Stochastic PALM (module docstring), ``eta_y = 1/beta``, ``eta_x = 1/(1.1 L2*)``."""
    eta_x, eta_y = 1 / (1.1 * problem.constants()["L2"]), 1 / beta
    problem.F.check_gamma(eta_x)
    y = problem.y0.expand(R, -1).clone()
    x = problem.prox_F(y if problem.z_prev is None else problem.z_prev.expand(R, -1).clone(), eta_x)
    for _ in range(iters):
        x = problem.prox_F(x - eta_x * problem.H.grad_x_H(x, y), eta_x)
        y = y - eta_y * (problem.stochastic_grad(y, gen) + problem.grad_y_H(x, y))
    return x, y


def run_rule(problem, iters, R, gamma, beta, gen, rule: str):
    """A quantisation method on ``min G(W) + I_Q(W)`` with lr ``1/beta``: the update rule ``rule``
    of :mod:`stam.rules` in a loop, from its :meth:`~stam.rules.UpdateRule.synthetic_start` at
    ``U^0 = y^0`` and by its :meth:`~stam.rules.UpdateRule.synthetic_step` (its shared step of
    :mod:`stam.steps`, the gradient taken at its forward weights ``W``); its output is
    ``(Proj_Q(W^T), U^T)``."""
    r = rules.rule(rule)
    F, lr = problem.F, 1 / beta
    state = r.synthetic_start(problem.y0.expand(R, -1).clone(), F, lr)
    epoch = problem.sampling.N / problem.sampling.b
    for t in range(iters):
        state = r.synthetic_step(state, problem.stochastic_grad(r.forward_weights(state), gen), F, lr, t, iters, epoch)
    return F.prox_F(r.forward_weights(state), lr), r.float_weights(state)


def run_method(problem: ThreeBlockProblem, name: str, budget: int, R: int, gamma: float, beta: float | None,
               seed: int = 0) -> dict:
    """Run one method for ``budget`` sample-gradient evaluations per run (module docstring).
    ``beta=None``: the theory beta of each STAM variant at its own iteration count and sampling
    (for the other methods, that of stochastic STAM)."""
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; known: {', '.join(METHODS)}")
    m = method(name)
    if m.quantised and not problem.quantised:
        raise ValueError(f"{name} needs F = I_Q (problem 1, 'binary'); {problem.name} has F = {problem.F.describe()}")
    gen = torch.Generator(device=problem.y0.device).manual_seed(seed)
    run_on = problem.with_sampling(Sampling(problem.sampling.N, problem.sampling.N)) if m.deterministic else problem
    iters = budget // run_on.sampling.b
    beta = theory_beta(run_on, max(iters, 1), gamma) if beta is None else beta
    start = time.perf_counter()
    u, y = m.run(run_on, iters, R, gamma, beta, gen)
    if problem.y0.is_cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    out = {"method": name, "iterations": iters}
    out.update(_report(problem, u, y, seconds, iters * run_on.sampling.b))
    return out


def compare(problem: ThreeBlockProblem, budget: int, R: int = 8, *, step_sizes: StepSizes | None = None, seed: int = 0,
            methods=None, progress: bool = True, **fields) -> dict:
    """All applicable methods at an equal budget; the ``synthetic-compare`` result dict.  STAM's (gamma, beta):
    ``step_sizes`` (a :class:`~stam.theory.symbolic.numeric.StepSizes`, or its fields ``gamma``, ``beta``,
    ``gamma_fraction`` by keyword) by the one rule :func:`stam.theory.symbolic.numeric.admissible_parameters` at STAM's
    ``T = budget // b``; any pair is run (``allow_inadmissible`` is set: the result says whether Theorem conv
    applies)."""
    step_sizes = dataclasses.replace(StepSizes.of(step_sizes, fields), allow_inadmissible=True)
    no_other(fields, "compare")
    gamma, beta = step_sizes.gamma, step_sizes.beta
    if budget < problem.sampling.b:
        raise ValueError(f"budget {budget} is smaller than one minibatch (b = {problem.sampling.b})")
    c = problem.theory_constants()
    if gamma is not None:
        problem.check_gamma(gamma)
    T = budget // problem.sampling.b
    chosen = numeric.admissible_parameters(c, T, step_sizes=step_sizes,
                                           remedy="any beta given with --beta is run (the output says whether Theorem conv applies)")
    gamma = chosen.gamma
    problem.check_gamma(gamma)
    beta_rule = (f"theory: {numeric.BETA_RULE} at STAM's T (stam-det: at its own T and A)" if beta is None
                 else "given (all methods)")
    step = 1 / chosen.beta
    if methods is None:
        methods = [m.name for m in REGISTRY if problem.quantised or not m.quantised]
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


__all__ = [ "run_method", "compare", "format_table", "theory_beta"]
