"""Three-block problems ``min F(x) + G(y) + H(x, y)`` (eq. (model)) whose constants are known.

A :class:`ThreeBlockProblem` combines a finite sum ``G`` (:mod:`stam.synthetic.losses`), a
coupling ``H`` (:mod:`stam.synthetic.couplings`), a nonsmooth ``F``
(:mod:`stam.synthetic.penalties`) and a sampling (:mod:`stam.synthetic.sampling`).  It provides
the operators :func:`stam.algorithm.stam_step` needs, the stationarity measure of Theorem conv,
the Lyapunov term ``M_t`` of Lemma conv-lemma and every constant of Assumption ass2 and Lemma
es-lemma.

Expected smoothness (Lemma es-lemma, corrected; see ``stam paper-check``): from eq. (eq100),
Jensen and Lemma Lip-lemma,

    E||tilde-nabla G + nabla_y H||^2 <= (2/N) sum_i E[v_i^2] ||nabla G_i||^2 + 2 ||nabla_y H||^2
      <= (4/N) sum_i [E[v_i^2] L1^i (G_i - G_i^inf) + L3* (H - H^inf)]
      <= 4 m [G + H - (G+H)^inf + Delta^inf],   m = max(max_i L1^i E[v_i^2], L3*),

so ``A = 2 m`` and ``C = 2 A Delta^inf``.  We use certified bounds where the infima are not
known in closed form: ``G_i^inf >= 0`` (all our ``G_i >= 0``), ``H^inf`` exact, and
``(G+H)^inf <= (G+H)(x_ref, y_ref)`` at a numerically found near-minimiser (an *upper* bound: a
function value).  So ``Delta_ub = (G+H)(x_ref, y_ref) - 0 - H^inf >= Delta^inf`` and ``C`` stays
valid; and ``(G+H)^inf >= G^inf_lb + H^inf`` is the certified *lower* bound used for ``delta_0``.

Problems (declared in :mod:`stam.synthetic.families`; sizes are keyword arguments):

1. ``binary``: binary-quantised robust regression, the paper's network model eq. (binary-model)
   in miniature.  ``G`` = robust loss ``log(1 + r^2/2)`` of ``a_i^T y - b_i``, ``H`` =
   ``(lam/2)||x - y||^2``, ``F`` = indicator of Q (per-block scaled signs, ``s >= 0``).
2. ``sparse-l1`` / ``sparse-mcp``: coupled sparse problem.  ``G`` = logistic loss +
   ``mu sum y_j^2/(1 + y_j^2)``, ``H = (1/2)||A x - B y||^2`` with random A, B, ``F`` = l1 or MCP.
3. ``cosine``: ``H = (lam/2)||x - y||^2 + mu sum cos x_j`` is nonconvex in x, ``l = mu - lam > 0``;
   ``G`` the robust regression of problem 1; ``F`` = l1.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from stam.algorithm import Scalar, STAMState, stam_init
from stam.quantize import Blocks, block_ids_from_sizes, project_Q
from stam.synthetic.couplings import CosineCoupling, LinearCoupling, Quadratic
from stam.synthetic.families import FAMILIES, family
from stam.synthetic.losses import LOGISTIC, ROBUST, FiniteSumLoss
from stam.synthetic.penalties import MCP, L1Norm, QuantizedIndicator
from stam.synthetic.sampling import Sampling
from stam.theory import numeric
from stam.theory.numeric import Constants, es_lemma


@dataclasses.dataclass
class ThreeBlockProblem:
    """One instance of eq. (model); all runs of a batch share it, tensors are ``(R, n)``."""

    name: str
    G: FiniteSumLoss
    H: object
    F: object
    sampling: Sampling
    y0: Tensor  # (n,), the initial point y^0 shared by all runs
    z_prev: Tensor | None = None  # z^{-1} of the start rule (None: y^0)
    quantised: bool = False  # F = I_Q: report the quantised objective in comparisons
    params: dict = dataclasses.field(default_factory=dict)

    # --- operators of stam.algorithm ----------------------------------------------------
    def grad_y_H(self, x: Tensor, y: Tensor) -> Tensor:
        return self.H.grad_y_H(x, y)

    def prox_H(self, z: Tensor, y: Tensor, gamma: Scalar) -> Tensor:
        return self.H.prox_H(z, y, gamma)

    def prox_F(self, v: Tensor, gamma: Scalar) -> Tensor:
        return self.F.prox_F(v, gamma)

    def check_gamma(self, gamma: float) -> None:
        """Raise ``ValueError`` if the x- or u-step is not a well-posed exact minimisation at gamma,
        ``OverflowError`` if Lemma conv-lemma's ``K1, K2, K3`` at gamma are beyond floating point
        (a gamma like 1e-300: the theory's side of every run would be inf or nan)."""
        self.H.check_gamma(gamma)
        self.F.check_gamma(gamma)

        c = self.theory_constants()
        ks = [float(f(gamma, c)) for f in (numeric.K1, numeric.K2, numeric.K3)]
        if not all(math.isfinite(k) for k in ks):
            raise OverflowError(f"gamma = {float(gamma):g} gives K1, K2, K3 = {', '.join(f'{k:g}' for k in ks)}")

    # --- sampling -----------------------------------------------------------------------
    def stochastic_grad(self, y: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """``tilde-nabla G(y)`` of eq. (stochastic G), one independent draw per run."""
        return self.G.grad_batch(y, self.sampling.draw(y.shape[0], generator, y.device))

    def with_sampling(self, sampling: Sampling) -> "ThreeBlockProblem":
        clone = dataclasses.replace(self, sampling=sampling)
        if "reference" in self.__dict__:  # the near-minimiser does not depend on the sampling
            clone.__dict__["reference"] = self.reference
        return clone

    def start(self, R: int, gamma: Scalar) -> STAMState:
        """``R`` copies of the start of :func:`stam.algorithm.stam_init` at ``y^0``."""
        y0 = self.y0.expand(R, -1).clone()
        z_prev = None if self.z_prev is None else self.z_prev.expand(R, -1).clone()
        return stam_init(y0, self, gamma, z_prev)

    # --- the quantities of Lemma conv-lemma and Theorem conv -----------------------------
    def objective(self, x: Tensor, y: Tensor) -> Tensor:
        """``Phi(x, y) = F(x) + G(y) + H(x, y)`` per run."""
        return self.F.value(x) + self.G.value(y) + self.H.H(x, y)

    def stationarity(self, u: Tensor, y: Tensor) -> Tensor:
        """``S = ||nabla G(y) + nabla_y H(u, y)||^2 + dist^2(0, nabla_x H(u, y) + dF(u))`` per run:
        the quantity bounded by Theorem conv (eq. (con-inequality)), with the full gradient."""
        gy = self.G.grad(y) + self.H.grad_y_H(u, y)
        return (gy * gy).sum(dim=1) + self.F.dist2(u, self.H.grad_x_H(u, y))

    def lyapunov(self, state: STAMState, gamma: Scalar) -> Tensor:
        """``M_t = F(u) + ||2x - u - z||^2/(2 gamma) - ||x - z||^2/(2 gamma) - ||u - x||^2/gamma``
        (Lemma conv-lemma, eq. (eq651)) per run."""
        _, x, u, z = state
        sq = lambda v: (v * v).sum(dim=1)  # noqa: E731
        return self.F.value(u) + (sq(2 * x - u - z) - sq(x - z) - 2 * sq(u - x)) / (2 * gamma)

    # --- constants ------------------------------------------------------------------------
    @functools.cached_property
    def reference(self) -> tuple[Tensor, Tensor]:
        """A near-minimiser ``(x_ref, y_ref)`` of ``G(y) + H(x, y)`` (L-BFGS from ``y^0``); its value
        is the certified upper bound of ``(G+H)^inf`` used in ``Delta_ub``."""
        return _minimise_GH(self)

    @functools.cached_property
    def _constants(self) -> dict:
        c = dict(L1=self.G.L1())
        c.update(self.H.constants())
        L1_i = self.G.L1_i()
        c["L1_i_max"] = float(L1_i.max())
        c["Ev2"] = self.sampling.second_moment()
        c["G_inf_lb"] = self.G.inf_lower_bound
        c["GH_inf_lb"] = self.G.inf_lower_bound + c["H_inf"]
        x_ref, y_ref = self.reference
        c["GH_inf_ub"] = float((self.G.value(y_ref) + self.H.H(x_ref, y_ref))[0])
        c["Delta_ub"] = max(c["GH_inf_ub"] - self.G.inf_i_lower_bound - c["H_inf"], 0.0)
        A, C = es_lemma(L1_i.cpu().numpy(), c["Ev2"], c["L3"], c["Delta_ub"])
        c["A"], c["C"] = float(A), float(C)
        return c

    def constants(self) -> dict:
        """All constants (floats): L1, L1_i_max, L2..L5, l, H_inf, Ev2 (= E[v_i^2]), G_inf_lb,
        GH_inf_lb / GH_inf_ub (certified bounds of (G+H)^inf), Delta_ub, A, C (module docstring)."""
        return dict(self._constants)

    def theory_constants(self):
        """The :class:`stam.theory.numeric.Constants` of this problem and sampling."""
        c = self._constants
        return Constants(L1=c["L1"], L2=c["L2"], L3=c["L3"], L4=c["L4"], L5=c["L5"], l=c["l"], A=c["A"], C=c["C"])

    def describe(self) -> str:
        return f"{self.name}: n={self.G.n}, N={self.G.N}, F={self.F.describe()}, sampling {self.sampling.describe()}"


def _minimise_GH(problem: ThreeBlockProblem) -> tuple[Tensor, Tensor]:
    """L-BFGS (scipy) on the smooth ``(x, y) -> G(y) + H(x, y)``, started at ``(z^{-1}, y^0)``."""
    from scipy.optimize import minimize

    dev, dt = problem.y0.device, problem.y0.dtype
    n = problem.G.n
    m = n if problem.z_prev is None else problem.z_prev.numel()
    y_start = problem.y0.double().cpu()
    x_start = y_start if problem.z_prev is None else torch.zeros(m, dtype=torch.float64)

    def fun(w):
        x = torch.from_numpy(w[:m]).to(dev, dt)[None]
        y = torch.from_numpy(w[m:]).to(dev, dt)[None]
        val = problem.G.value(y) + problem.H.H(x, y)
        gx = problem.H.grad_x_H(x, y)
        gy = problem.G.grad(y) + problem.H.grad_y_H(x, y)
        return float(val[0]), np.concatenate([gx[0].double().cpu().numpy(), gy[0].double().cpu().numpy()])

    w0 = np.concatenate([x_start.numpy(), y_start.numpy()])
    res = minimize(fun, w0, jac=True, method="L-BFGS-B", options=dict(maxiter=500, gtol=1e-9))
    x = torch.from_numpy(res.x[:m]).to(dev, dt)[None]
    y = torch.from_numpy(res.x[m:]).to(dev, dt)[None]
    return x, y


# --- instance generators ---------------------------------------------------------------------
def _robust_data(n: int, N: int, gen: torch.Generator, noise: float, outliers: float, blocks: int):
    """Rows ``a_i ~ N(0, I/n)`` (so ``||a_i||^2 ~ 1``), a binary ground truth ``y* in Q``, targets
    ``a_i^T y* + noise`` with a fraction of gross outliers (what the robust loss is for)."""
    A = torch.randn(N, n, generator=gen, dtype=torch.float64) / math.sqrt(n)
    ids = block_ids_from_sizes(_block_sizes(n, blocks))
    y_star = project_Q(torch.randn(1, n, generator=gen, dtype=torch.float64), ids, blocks)[0]
    b = A @ y_star + noise * torch.randn(N, generator=gen, dtype=torch.float64)
    mask = torch.rand(N, generator=gen, dtype=torch.float64) < outliers
    b = torch.where(mask, b + 5.0 * torch.randn(N, generator=gen, dtype=torch.float64), b)
    return A, b, ids


def _block_sizes(n: int, blocks: int) -> list[int]:
    if not 1 <= blocks <= n:
        raise ValueError(f"blocks must be between 1 and n={n}, got {blocks}")
    q, r = divmod(n, blocks)
    return [q + (i < r) for i in range(blocks)]


def _finish(problem: ThreeBlockProblem, device, dtype) -> ThreeBlockProblem:
    """Move every tensor of a CPU float64 instance to ``device``/``dtype``."""
    conv = lambda t: t.to(device=device, dtype=dtype) if t.is_floating_point() else t.to(device)  # noqa: E731
    for part in (problem.G, problem.H, problem.F):
        for key, val in vars(part).items():
            if isinstance(val, Tensor):
                setattr(part, key, conv(val))
            elif isinstance(val, Blocks):
                setattr(part, key, val.to(device))
    problem.y0 = conv(problem.y0)
    if problem.z_prev is not None:
        problem.z_prev = conv(problem.z_prev)
    return problem


def binary(n=32, N=256, b=8, replacement=False, seed=0, lam=1.0, blocks=2, noise=0.1, outliers=0.1,
           device="cpu", dtype=torch.float64) -> ThreeBlockProblem:
    """Problem 1: ``min I_Q(x) + (1/N) sum_i log(1 + (a_i^T y - b_i)^2/2) + (lam/2)||x - y||^2``.
    Constants: ``L2* = L3* = L4* = L5* = lam``, ``l = -lam``, ``H_inf = 0``; L1 and L1^i of
    :mod:`stam.synthetic.losses` with ``phi'' in [-1/8, 1]``: ``L1 = ||A||^2/N``, ``L1^i = ||a_i||^2``."""
    gen = torch.Generator().manual_seed(seed)
    A, targets, ids = _robust_data(n, N, gen, noise, outliers, blocks)
    y0 = torch.randn(n, generator=gen, dtype=torch.float64)
    problem = ThreeBlockProblem(
        "binary", FiniteSumLoss(A, targets, ROBUST), Quadratic(lam), QuantizedIndicator(ids, blocks),
        Sampling(N, b, replacement), y0, None, quantised=True,
        params=dict(n=n, N=N, b=b, replacement=replacement, seed=seed, lam=lam, blocks=blocks, noise=noise, outliers=outliers),
    )
    return _finish(problem, device, dtype)


def sparse(n=32, N=256, b=8, replacement=False, seed=0, penalty="l1", m=None, k=None, mu=0.1, tau=0.05,
           theta=2.0, device="cpu", dtype=torch.float64) -> ThreeBlockProblem:
    """Problem 2: ``min F(x) + (1/N) sum_i log(1 + exp(-c_i a_i^T y)) + mu sum_j y_j^2/(1 + y_j^2)
    + (1/2)||A x - B y||^2``, ``F = tau ||x||_1`` or MCP(tau, theta) (then gamma < theta is
    enforced).  ``A`` is ``(k, m)``, ``B`` is ``(k, n)``, entries ``N(0, 1/k)``; by default
    ``m = n`` and ``k = 2n`` (so ``A^T A`` is well conditioned and ``l = -lambda_min(A^T A) < 0``).
    Constants: ``L1 = ||A_data||^2/(4N) + 2 mu``, ``L1^i = ||a_i||^2/4 + 2 mu``; the coupling's
    from spectral norms (:class:`stam.synthetic.couplings.LinearCoupling`)."""
    m = n if m is None else m
    k = 2 * n if k is None else k
    gen = torch.Generator().manual_seed(seed)
    feats = torch.randn(N, n, generator=gen, dtype=torch.float64) / math.sqrt(n)
    w = torch.randn(n, generator=gen, dtype=torch.float64) * (torch.rand(n, generator=gen, dtype=torch.float64) < 0.3)
    labels = torch.sign(feats @ w + 0.1 * torch.randn(N, generator=gen, dtype=torch.float64))
    labels[labels == 0] = 1.0
    Ac = torch.randn(k, m, generator=gen, dtype=torch.float64) / math.sqrt(k)
    Bc = torch.randn(k, n, generator=gen, dtype=torch.float64) / math.sqrt(k)
    y0 = torch.randn(n, generator=gen, dtype=torch.float64)
    if penalty == "l1":
        F = L1Norm(tau)
    elif penalty == "mcp":
        F = MCP(tau, theta)
    else:
        raise ValueError(f"penalty must be 'l1' or 'mcp', got {penalty!r}")
    problem = ThreeBlockProblem(
        f"sparse-{penalty}", FiniteSumLoss(feats * labels[:, None], torch.zeros(N, dtype=torch.float64), LOGISTIC, mu),
        LinearCoupling(Ac, Bc), F, Sampling(N, b, replacement), y0, torch.zeros(m, dtype=torch.float64),
        params=dict(n=n, N=N, b=b, replacement=replacement, seed=seed, penalty=penalty, m=m, k=k, mu=mu, tau=tau,
                    theta=theta),
    )
    return _finish(problem, device, dtype)


def cosine(n=32, N=256, b=8, replacement=False, seed=0, lam=1.0, mu=2.0, tau=0.05, noise=0.1, outliers=0.1,
           device="cpu", dtype=torch.float64) -> ThreeBlockProblem:
    """Problem 3: ``min tau||x||_1 + (1/N) sum_i log(1 + (a_i^T y - b_i)^2/2) + (lam/2)||x - y||^2
    + mu sum_j cos x_j``.  With ``mu > lam`` the coupling is nonconvex in x: ``l = mu - lam > 0``,
    ``L2* = lam + mu``, ``L3* = L4* = L5* = lam``, ``H_inf = -mu n``
    (:class:`stam.synthetic.couplings.CosineCoupling`)."""
    gen = torch.Generator().manual_seed(seed)
    A, targets, _ = _robust_data(n, N, gen, noise, outliers, 1)
    y0 = torch.randn(n, generator=gen, dtype=torch.float64)
    problem = ThreeBlockProblem(
        "cosine", FiniteSumLoss(A, targets, ROBUST), CosineCoupling(lam, mu, n), L1Norm(tau),
        Sampling(N, b, replacement), y0, None,
        params=dict(n=n, N=N, b=b, replacement=replacement, seed=seed, lam=lam, mu=mu, tau=tau, noise=noise,
                    outliers=outliers),
    )
    return _finish(problem, device, dtype)


#: name -> generator (from the registry :data:`stam.synthetic.families.FAMILIES`); every generator
#: takes n, N, b, replacement, seed, device, dtype
PROBLEMS: dict[str, Callable[..., ThreeBlockProblem]] = {f.name: f.make for f in FAMILIES}


def make_problem(name: str, **kwargs) -> ThreeBlockProblem:
    """The instance of the family ``name`` (:func:`stam.synthetic.families.family`); ``KeyError``
    with the known names if ``name`` is unknown."""
    return family(name).make(**kwargs)


__all__ = ["ThreeBlockProblem", "PROBLEMS", "make_problem", "binary", "sparse", "cosine"]
