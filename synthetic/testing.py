"""Property tests of one's own lemmas about STAM: hypothesis strategies that draw problem
instances with certified constants, admissible (or deliberately inadmissible) step sizes and STAM
trajectories with every quantity the proofs use, and :func:`check_inequality`, which holds a
user's inequality against them and returns the smallest counterexample hypothesis finds (shrunk)
or the number of instances it held on.  Worked example: ``docs/your-problem.md``.

A :class:`Trajectory` has, for ``t = 0 .. T`` (index t of each array; ``(T+1, d)`` for vectors):
``y, x, u, z`` (the iterates ``y^t, x^t, u^t, z^t`` of eq. (alg:stamm), started by the rule of
:mod:`stam.steps`), ``z_prev`` (``z^{t-1}``; ``z^{-1}`` at t = 0), the scalars
``Z = ||z^t - z^{t-1}||^2``, ``eta = ||nabla G(y^t) + nabla_y H(x^t, y^t)||^2``, ``S`` (the
stationarity measure of Theorem conv at ``(u^t, y^t)``), ``M`` (``M_t`` of Lemma conv-lemma),
``Phi`` (``F(u^t) + G(y^t) + H(u^t, y^t)``), and for ``t = 0 .. T-1`` the differences
``dx2 = ||x^{t+1} - x^t||^2``, ``dy2``, ``du2``; and the scalars ``gamma, beta, K1, K2, K3``, the
constants ``c`` (:meth:`~stam.synthetic.problems.ThreeBlockProblem.constants`), ``admissible``
and the instance's ``family`` and ``params``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from stam.steps import stam_step
from stam.synthetic.families import NAMES
from stam.synthetic.problems import make_problem
from stam.theory.symbolic import numeric


@st.composite
def problems(draw, families=NAMES, max_n: int = 6, max_N: int = 12):
    """A built-in family instance (all its constants certified), small sizes, float64."""
    name = draw(st.sampled_from(tuple(families)))
    n = draw(st.integers(2, max_n))
    N = draw(st.integers(2, max_N))
    b = draw(st.integers(1, N))
    seed = draw(st.integers(0, 2**16))
    return make_problem(name, n=n, N=N, b=b, seed=seed)


@st.composite
def parameters(draw, problem, T: int, admissible: bool = True):
    """``(gamma, beta)``: by the one rule :func:`stam.theory.symbolic.numeric.admissible_parameters` at a drawn
    fraction of gamma_max (admissible), or with beta cut below its bound by a drawn factor
    (deliberately inadmissible)."""
    fraction = draw(st.floats(0.05, 0.95))
    p = numeric.admissible_parameters(problem.theory_constants(), T, gamma_fraction=fraction)
    problem.check_gamma(p.gamma)
    if admissible:
        return p.gamma, p.beta
    return p.gamma, p.beta * draw(st.floats(0.01, 0.5))


@dataclass
class Trajectory:
    """One STAM run and the quantities of the proofs (module docstring); numpy float64."""

    family: str
    params: dict
    gamma: float
    beta: float
    admissible: bool
    c: dict
    K1: float
    K2: float
    K3: float
    arrays: dict = field(repr=False)

    def __getattr__(self, name):
        arrays = self.__dict__.get("arrays", {})
        if name in arrays:
            return arrays[name]
        raise AttributeError(name)

    def summary(self) -> str:
        return (f"{self.family} {self.params}, gamma = {self.gamma:.4g}, beta = {self.beta:.4g}, T = {len(self.S) - 1}, "
                f"admissible = {self.admissible}")


def run_trajectory(problem, gamma: float, beta: float, T: int, seed: int = 0) -> Trajectory:
    """STAM for ``T`` steps (one run) and every quantity of the module docstring."""
    gen = torch.Generator().manual_seed(seed)
    state = problem.start(1, gamma)
    z_prev = (problem.y0 if problem.z_prev is None else problem.z_prev)[None]
    states, zprevs = [state], [z_prev]
    for _ in range(T):
        new = stam_step(state, problem.stochastic_grad(state.y, gen), problem, gamma, beta)
        zprevs.append(state.z)
        states.append(new)
        state = new
    sq = lambda v: float((v * v).sum())  # noqa: E731
    rows = {k: [] for k in ("y", "x", "u", "z", "z_prev", "Z", "eta", "S", "M", "Phi")}
    for s, zp in zip(states, zprevs):
        y, x, u, z = s
        for k, v in (("y", y), ("x", x), ("u", u), ("z", z), ("z_prev", zp)):
            rows[k].append(v[0].double().numpy())
        rows["Z"].append(sq(z - zp))
        rows["eta"].append(sq(problem.G.grad(y) + problem.H.grad_y_H(x, y)))
        rows["S"].append(float(problem.stationarity(u, y)[0]))
        rows["M"].append(float(problem.lyapunov(s, gamma)[0]))
        rows["Phi"].append(float(problem.objective(u, y)[0]))
    arrays = {k: np.array(v) for k, v in rows.items()}
    for k in ("x", "y", "u"):
        d = np.diff(arrays[k], axis=0)
        arrays[f"d{k}2"] = (d * d).sum(axis=1)
    c = problem.theory_constants()
    return Trajectory(problem.name, dict(problem.params), float(gamma), float(beta),
                      bool(numeric.check(gamma, beta, c)["admissible"]), problem.constants(),
                      float(numeric.K1(gamma, c)), float(numeric.K2(gamma, c)), float(numeric.K3(gamma, c)), arrays)


@st.composite
def trajectories(draw, families=NAMES, admissible: bool = True, max_T: int = 30):
    """A :class:`Trajectory` of STAM on a drawn instance (:func:`problems`) with drawn parameters
    (:func:`parameters`), horizon and sampling seed."""
    problem = draw(problems(families))
    T = draw(st.integers(1, max_T))
    gamma, beta = draw(parameters(problem, T, admissible))
    return run_trajectory(problem, gamma, beta, T, draw(st.integers(0, 2**16)))


@dataclass
class Verdict:
    """What :func:`check_inequality` found: ``held`` instances before it stopped, and the smallest
    counterexample (shrunk by hypothesis) with the indices ``t`` where it fails, or ``None``."""

    held: int
    counterexample: Trajectory | None = None
    failing_t: list = field(default_factory=list)

    @property
    def holds(self) -> bool:
        return self.counterexample is None

    def __str__(self) -> str:
        if self.holds:
            return f"held on all {self.held} instances"
        return f"counterexample: {self.counterexample.summary()}, fails at t = {self.failing_t}"


def _holds(inequality, tr: Trajectory) -> np.ndarray:
    out = np.atleast_1d(np.asarray(inequality(tr)))
    return np.where(np.isnan(out.astype(float)), False, out.astype(bool))


def check_inequality(inequality, strategy=None, max_examples: int = 100, seed: int = 0) -> Verdict:
    """Hold ``inequality(trajectory) -> bool or array of bools (one per t)`` against ``strategy``
    (default :func:`trajectories`), up to ``max_examples`` instances; a failure is shrunk by
    hypothesis to the smallest instance that still fails."""
    strategy = trajectories() if strategy is None else strategy
    count = [0]

    def fails(tr):
        ok = bool(_holds(inequality, tr).all())
        count[0] += ok
        return not ok

    conf = settings(max_examples=max_examples, database=None, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck),
                    phases=[Phase.generate, Phase.shrink])
    del seed  # derandomized: the same examples every call
    try:
        found = find(strategy, fails, settings=conf)
    except NoSuchExample:
        return Verdict(count[0])
    bad = [int(t) for t in np.flatnonzero(~_holds(inequality, found))]
    return Verdict(count[0], found, bad)


__all__ = ["problems", "parameters", "trajectories", "run_trajectory", "Trajectory", "check_inequality", "Verdict"]
