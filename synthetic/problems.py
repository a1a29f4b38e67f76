"""Three-block problems ``min F(x) + G(y) + H(x, y)`` (eq. (model)) whose constants are known.

A :class:`ThreeBlockProblem` combines a finite sum ``G`` (:mod:`stam.synthetic.losses`), a
coupling ``H`` (:mod:`stam.synthetic.couplings`), a nonsmooth ``F``
(:mod:`stam.synthetic.penalties`) and a sampling (:mod:`stam.synthetic.sampling`).  It provides
the operators :func:`stam.steps.stam_step` needs, the stationarity measure of Theorem conv,
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

Problems (declared in :mod:`stam.synthetic.families`; each defined by a frozen spec,
:class:`BinarySpec`, :class:`SparseSpec`, :class:`CosineSpec`, whose ``build`` makes the instance, and
built by keywords through ``binary``, ``sparse``, ``cosine``, the spec's fields):

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

from stam.steps import Scalar, STAMState, stam_init
from stam.quantize import Blocks, block_ids_from_sizes, project_Q
from stam.synthetic import estimate as E
from stam.synthetic.couplings import CosineCoupling, LinearCoupling, Quadratic
from stam.synthetic.families import FAMILIES, SIZE, family
from stam.synthetic.losses import LOGISTIC, ROBUST, FiniteSumLoss
from stam.synthetic.penalties import MCP, L1Norm, QuantizedIndicator
from stam.synthetic.sampling import Sampling
from stam.theory.symbolic import numeric
from stam.theory.symbolic.numeric import Constants, es_lemma


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
    gh_starts: int = 1  # L-BFGS starts of the near-minimiser of G + H (y^0 first; more: random points)
    settings: object = None  # stam.synthetic.estimate.EstimatorSettings of the estimators (None: the defaults)

    # --- operators of stam.steps -------------------------------------------------------
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
        for key in ("reference", "_estimates"):  # neither depends on the sampling
            if key in self.__dict__:
                clone.__dict__[key] = self.__dict__[key]
        return clone

    def start(self, R: int, gamma: Scalar) -> STAMState:
        """``R`` copies of the start of :func:`stam.steps.stam_init` at ``y^0``."""
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
    def _labelled(self) -> dict:
        """``name -> (value, status, how)``: every constant with ``"certified"`` (a closed form of
        its block, or a function value for an upper bound) or ``"estimated (not a guarantee)"``
        (:mod:`stam.synthetic.estimate`, where the block does not know it)."""
        est = lambda name: self.estimates([name])[name]  # noqa: E731
        out = {}

        def put(name, value, certified, what):
            out[name] = (float(value), E.CERTIFIED if certified else E.ESTIMATED, what)

        L1 = self.G.L1()
        put("L1", L1 if L1 is not None else est("L1"), L1 is not None,
            "closed form of G" if L1 is not None else f"max of {_EST['L1']}")
        hc = self.H.constants()
        for k in ("L2", "L3", "L4", "L5", "l", "H_inf"):
            put(k, hc[k] if k in hc else est(k), k in hc, "closed form of H" if k in hc else f"max of {_EST[k]}")
        L1_i = self.G.L1_i()
        put("L1_i_max", float(L1_i.max()) if L1_i is not None else est("L1_i_max"), L1_i is not None,
            "closed form of G" if L1_i is not None else f"max over terms of {_EST['L1_i_max']}")
        put("Ev2", self.sampling.second_moment(), True, f"E[v_i^2] of {self.sampling.describe()}")
        g_lb = getattr(self.G, "inf_lower_bound", None)
        put("G_inf_lb", g_lb if g_lb is not None else est("G_inf"), g_lb is not None,
            "lower bound given by G" if g_lb is not None else _EST["G_inf"])
        put("GH_inf_lb", out["G_inf_lb"][0] + out["H_inf"][0],
            out["G_inf_lb"][1] == E.CERTIFIED and out["H_inf"][1] == E.CERTIFIED, "G_inf_lb + H_inf")
        x_ref, y_ref = self.reference
        put("GH_inf_ub", float((self.G.value(y_ref) + self.H.H(x_ref, y_ref))[0]), True,
            f"(G+H) at a near-minimiser (L-BFGS, {self.gh_starts} start(s)): a function value, an upper bound")
        gi_lb = getattr(self.G, "inf_i_lower_bound", None)
        put("G_i_inf_lb", gi_lb if gi_lb is not None else est("G_i_inf"), gi_lb is not None,
            "lower bound given by G" if gi_lb is not None else _EST["G_i_inf"])
        put("Delta_ub", max(out["GH_inf_ub"][0] - out["G_i_inf_lb"][0] - out["H_inf"][0], 0.0),
            out["G_i_inf_lb"][1] == E.CERTIFIED and out["H_inf"][1] == E.CERTIFIED, "GH_inf_ub - G_i_inf_lb - H_inf")
        L1_i_arr = L1_i.cpu().numpy() if L1_i is not None else [out["L1_i_max"][0]]
        A, C = es_lemma(L1_i_arr, out["Ev2"][0], out["L3"][0], out["Delta_ub"][0])
        a_cert = out["L1_i_max"][1] == E.CERTIFIED and out["L3"][1] == E.CERTIFIED
        put("A", A, a_cert, "Lemma es-lemma (corrected): 2 max(max_i L1^i E[v_i^2], L3*)")
        put("C", C, a_cert and out["Delta_ub"][1] == E.CERTIFIED, "Lemma es-lemma: 2 A Delta_ub")
        return out

    @functools.cached_property
    def _constants(self) -> dict:
        return {k: v[0] for k, v in self._labelled.items() if k != "G_i_inf_lb"}

    def constants_report(self) -> dict:
        """Every constant as ``{"value", "status", "how"}``; ``status`` is ``"certified"`` or
        ``"estimated (not a guarantee)"`` (then ``how`` names the estimator and ``settings`` its
        settings, :class:`stam.synthetic.estimate.EstimatorSettings`)."""
        return {k: dict(value=v, status=s, how=h, **({} if s == "certified" else {"settings": self.estimator_settings(k)}))
                for k, (v, s, h) in self._labelled.items()}

    def certified(self) -> bool:
        """Whether every constant of the theory (L1 .. l, A, C) is certified."""
        rep = self._labelled
        return all(rep[k][1] == "certified" for k in ("L1", "L2", "L3", "L4", "L5", "l", "A", "C"))

    def estimator_settings(self, name: str | None = None) -> str:
        """The settings the estimate of constant ``name`` uses (default: those of G's constants)."""
        return _settings(self, "H" if name in _H_CONSTANTS else "G").describe()

    def estimates(self, names=None) -> dict:
        """Estimates (:mod:`stam.synthetic.estimate`) of the constants ``names`` (default all:
        L1, L1_i_max, L2 .. L5, l, H_inf, G_inf, G_i_inf), whether or not the blocks certify
        them; each computed once per problem.  An estimate is a lower estimate of the constant."""
        names = list(_EST) if names is None else list(names)
        cache = self.__dict__.setdefault("_estimates", {})
        todo = [k for k in names if k not in cache]
        if todo:
            cache.update(_estimate(self, todo))
        return {k: cache[k] for k in names}

    def constants(self) -> dict:
        """All constants (floats): L1, L1_i_max, L2..L5, l, H_inf, Ev2 (= E[v_i^2]), G_inf_lb,
        GH_inf_lb / GH_inf_ub (bounds of (G+H)^inf), Delta_ub, A, C (module docstring); which are
        certified and which estimated: :meth:`constants_report`."""
        return dict(self._constants)

    def theory_constants(self):
        """The :class:`stam.theory.symbolic.numeric.Constants` of this problem and sampling."""
        c = self._constants
        return Constants(L1=c["L1"], L2=c["L2"], L3=c["L3"], L4=c["L4"], L5=c["L5"], l=c["l"], A=c["A"], C=c["C"])

    def describe(self) -> str:
        return f"{self.name}: n={self.G.n}, N={self.G.N}, F={self.F.describe()}, sampling {self.sampling.describe()}"


def _minimise_GH(problem: ThreeBlockProblem) -> tuple[Tensor, Tensor]:
    """L-BFGS (scipy) on the smooth ``(x, y) -> G(y) + H(x, y)``, started at ``(z^{-1}, y^0)`` and,
    when ``problem.gh_starts > 1``, at further random points (:func:`stam.synthetic.estimate.start_points`);
    the best end point."""
    from scipy.optimize import minimize

    dev, dt = problem.y0.device, problem.y0.dtype
    n = problem.G.n
    m = n if problem.z_prev is None else problem.z_prev.numel()
    y_start = problem.y0.double().cpu()
    x_start = y_start if problem.z_prev is None else torch.zeros(m, dtype=torch.float64)

    both = getattr(problem.G, "value_and_grad", None)  # one pass over G's samples where G offers it

    def fun(w):
        x = torch.from_numpy(w[:m]).to(dev, dt)[None]
        y = torch.from_numpy(w[m:]).to(dev, dt)[None]
        g_val, g_grad = both(y) if both else (problem.G.value(y), problem.G.grad(y))
        val = g_val + problem.H.H(x, y)
        gx = problem.H.grad_x_H(x, y)
        gy = g_grad + problem.H.grad_y_H(x, y)
        return float(val[0]), np.concatenate([gx[0].double().cpu().numpy(), gy[0].double().cpu().numpy()])

    starts = [np.concatenate([x_start.numpy(), y_start.numpy()])]
    if problem.gh_starts > 1:
        from stam.synthetic.estimate import start_points

        gen = torch.Generator().manual_seed(_settings(problem).seed)
        extra = start_points(m + n, problem.gh_starts + 1, gen, torch.float64, "cpu", anchors=(torch.zeros(m + n),))
        starts += [row.numpy() for row in extra[: problem.gh_starts - 1]]
    best, evals = None, []
    for w0 in starts:
        res = minimize(fun, w0, jac=True, method="L-BFGS-B", options=dict(maxiter=500, gtol=1e-9))
        evals.append(res.nfev)
        if best is None or res.fun < best.fun:
            best = res
    x = torch.from_numpy(best.x[:m]).to(dev, dt)[None]
    y = torch.from_numpy(best.x[m:]).to(dev, dt)[None]
    return x, y


#: the constants estimated on H (its own, cheap evaluations: the full settings by default)
_H_CONSTANTS = ("L2", "L3", "L4", "L5", "l", "H_inf")


def _settings(problem, block: str = "G"):
    """The estimators' settings: the problem's own, else for G's constants
    :meth:`~stam.synthetic.estimate.EstimatorSettings.for_size` of its data and for H's the full ones."""
    if problem.settings is not None:
        return problem.settings
    return E.EstimatorSettings.for_size(problem.G.n, problem.G.N) if block == "G" else E.EstimatorSettings()


#: the constants :meth:`ThreeBlockProblem.estimates` estimates, and by what (stam.synthetic.estimate)
_EST = {
    "L1": "power iteration on finite-difference Hessian-vector products of grad G, a line scan and secant ratios",
    "L1_i_max": "power iteration on finite-difference Hessian-vector products of grad G_i, a line scan and secant "
                "ratios (on at most `samples` terms)",
    "L2": "the same for grad_x H in x",
    "L3": "the same for grad_y H in y",
    "L4": "power iteration on J^T J for J = d(grad_x H)/dy (finite differences), a line scan and secant ratios",
    "L5": "the same for J = d(grad_y H)/dx",
    "l": "max of -lambda_min(nabla_xx^2 H): power iteration on sigma I - J (finite differences) and a line scan",
    "H_inf": "smallest value of a multi-start local minimisation of H (accelerated gradient descent)",
    "G_inf": "smallest value of a multi-start local minimisation of G (an estimate of G^inf, used as its lower bound)",
    "G_i_inf": "mean over terms of the smallest values of multi-start local minimisations of each G_i (on at most "
               "`samples` terms; an estimate of (1/N) sum_i G_i^inf)",
}


def _estimate(problem: ThreeBlockProblem, names) -> dict:
    """The estimates of ``names`` (keys of :data:`_EST`); see :mod:`stam.synthetic.estimate`."""
    st, sh = _settings(problem, "G"), _settings(problem, "H")  # G's by its data size; H's in full (cheap)
    gen = torch.Generator().manual_seed(st.seed)
    G, H = problem.G, problem.H
    dev, dt = problem.y0.device, problem.y0.dtype
    n = G.n
    m = n if problem.z_prev is None else problem.z_prev.numel()
    K = max(st.points, sh.points)
    x_anchor = problem.y0 if problem.z_prev is None else problem.z_prev
    Y = E.start_points(n, K, gen, dt, dev, anchors=(torch.zeros(n), problem.y0))
    X = E.start_points(m, K, gen, dt, dev, anchors=(torch.zeros(m), x_anchor))
    Yg, X, Y = Y[: st.points], X[: sh.points], Y[: sh.points]  # G's start points; H's
    out = {}
    todo = set(names)
    if "L1" in todo or "G_inf" in todo:
        out["L1"] = float(E.lipschitz(lambda p, ids: G.grad(p), Yg, st, gen).max())
    if "L2" in todo:
        out["L2"] = float(E.lipschitz(lambda p, ids: H.grad_x_H(p, Y[ids]), X, sh, gen).max())
    if "L3" in todo or "H_inf" in todo:
        out["L3"] = float(E.lipschitz(lambda p, ids: H.grad_y_H(X[ids], p), Y, sh, gen).max())
    if "L4" in todo:
        out["L4"] = float(E.lipschitz(lambda p, ids: H.grad_x_H(X[ids], p), Y, sh, gen,
                                      gt=lambda p, w, ids: E.central_difference(lambda q, i: H.grad_y_H(q, p[i]), X[ids], w, ids)).max())
    if "L5" in todo:
        out["L5"] = float(E.lipschitz(lambda p, ids: H.grad_y_H(p, Y[ids]), X, sh, gen,
                                      gt=lambda p, w, ids: E.central_difference(lambda q, i: H.grad_x_H(p[i], q), Y[ids], w, ids)).max())
    if "l" in todo or "H_inf" in todo:
        gxx = lambda p, ids: H.grad_x_H(p, Y[ids])  # noqa: E731
        sigma = E.lipschitz(gxx, X, sh, gen)
        out["l"] = float(-E.min_curvature(gxx, X, sigma, sh, gen).min())
    if "H_inf" in todo:
        L = max(out["l"], 0.0) + 2 * out["L3"] + 1.0
        sx = E.start_points(m + n, sh.starts, gen, dt, dev, anchors=(torch.cat([x_anchor, problem.y0]),))
        f = lambda w: H.H(w[:, :m], w[:, m:])  # noqa: E731
        g = lambda w: torch.cat([H.grad_x_H(w[:, :m], w[:, m:]), H.grad_y_H(w[:, :m], w[:, m:])], dim=1)  # noqa: E731
        out["H_inf"] = float(E.minimise(E.value_and_grad(f, g), sx, L, sh.min_steps).min())
    if "G_inf" in todo:
        fg = getattr(G, "value_and_grad", None) or E.value_and_grad(G.value, G.grad)
        out["G_inf"] = float(E.minimise(fg, Yg[: st.starts], out["L1"], st.min_steps).min())
    if "L1_i_max" in todo or "G_i_inf" in todo:
        S = min(G.N, st.samples)
        terms = torch.randperm(G.N, generator=gen)[:S].to(dev) if S < G.N else torch.arange(G.N, device=dev)
        anchors = E.start_points(n, 3, gen, dt, dev, anchors=(torch.zeros(n), problem.y0))
        P = anchors.repeat_interleave(S, dim=0)  # (3S, n): each term at 0, y^0 and a random point
        T = terms.repeat(3)
        gi = lambda p, ids: G.grad_batch(p, T[ids][:, None])  # noqa: E731
        lip = E.lipschitz(gi, P, st, gen, scan_all=True).reshape(3, S).max(dim=0).values
        out["L1_i_max"] = float(lip.max())
        if "G_i_inf" in todo:
            Pm = E.start_points(n, st.starts, gen, dt, dev, anchors=(torch.zeros(n), problem.y0)).repeat_interleave(S, dim=0)
            Tm = terms.repeat(st.starts)[:, None]
            L = float(lip.max())
            both = getattr(G, "value_and_grad_batch", None)
            fg = (lambda p: both(p, Tm)) if both else E.value_and_grad(lambda p: G.value_batch(p, Tm), lambda p: G.grad_batch(p, Tm))
            vals = E.minimise(fg, Pm, L, st.min_steps)
            out["G_i_inf"] = float(vals.reshape(st.starts, S).min(dim=0).values.mean())
    return {k: out[k] for k in names}


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


def _robust_start(spec, blocks: int):
    """``(A, targets, block ids, y^0)`` of a robust-regression family (``spec``'s ``n``, ``N``,
    ``noise``, ``outliers``; :func:`_robust_data` in ``blocks`` blocks), then the start, from ``spec.seed``."""
    gen = torch.Generator().manual_seed(spec.seed)
    A, targets, ids = _robust_data(spec.n, spec.N, gen, spec.noise, spec.outliers, blocks)
    return A, targets, ids, torch.randn(spec.n, generator=gen, dtype=torch.float64)


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


@dataclasses.dataclass(frozen=True)
class ProblemSpec:
    """What defines an instance of every built-in family (the keywords its builder shares with the
    others, ``stam synthetic``'s ``--n --N --b --replacement --seed``): the dimension ``n`` of y (and
    x), the ``N`` terms of G, b-nice sampling (:class:`~stam.synthetic.sampling.Sampling`, with or
    without ``replacement``) and the ``seed`` of the data and the start.  A family's spec adds its own
    fields; :meth:`build` makes the instance (CPU float64, then moved to ``device``/``dtype``), whose
    ``params`` are the spec's fields in their order."""

    n: int = SIZE["n"]
    N: int = SIZE["N"]
    b: int = SIZE["b"]
    replacement: bool = False
    seed: int = 0

    def build(self, device="cpu", dtype=torch.float64) -> ThreeBlockProblem:
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class BinarySpec(ProblemSpec):
    """Problem 1: ``min I_Q(x) + (1/N) sum_i log(1 + (a_i^T y - b_i)^2/2) + (lam/2)||x - y||^2``
    (eq. (binary-model) in miniature), ``blocks`` blocks of Q, targets with ``noise`` and a share
    ``outliers`` of gross outliers.  Constants: ``L2* = L3* = L4* = L5* = lam``, ``l = -lam``,
    ``H_inf = 0``; L1 and L1^i of :mod:`stam.synthetic.losses` with ``phi'' in [-1/8, 1]``:
    ``L1 = ||A||^2/N``, ``L1^i = ||a_i||^2``."""

    lam: float = 1.0
    blocks: int = 2
    noise: float = 0.1
    outliers: float = 0.1

    def build(self, device="cpu", dtype=torch.float64) -> ThreeBlockProblem:
        A, targets, ids, y0 = _robust_start(self, self.blocks)
        problem = ThreeBlockProblem(
            "binary", FiniteSumLoss(A, targets, ROBUST), Quadratic(self.lam), QuantizedIndicator(ids, self.blocks),
            Sampling(self.N, self.b, self.replacement), y0, None, quantised=True, params=dataclasses.asdict(self),
        )
        return _finish(problem, device, dtype)


@dataclasses.dataclass(frozen=True)
class SparseSpec(ProblemSpec):
    """Problem 2: ``min F(x) + (1/N) sum_i log(1 + exp(-c_i a_i^T y)) + mu sum_j y_j^2/(1 + y_j^2)
    + (1/2)||A x - B y||^2``, ``F = tau ||x||_1`` (``penalty="l1"``) or MCP(tau, theta)
    (``"mcp"``; then gamma < theta is enforced).  ``A`` is ``(k, m)``, ``B`` is ``(k, n)``, entries
    ``N(0, 1/k)``; by default ``m = n`` and ``k = 2n`` (so ``A^T A`` is well conditioned and
    ``l = -lambda_min(A^T A) < 0``).  Constants: ``L1 = ||A_data||^2/(4N) + 2 mu``,
    ``L1^i = ||a_i||^2/4 + 2 mu``; the coupling's from spectral norms
    (:class:`stam.synthetic.couplings.LinearCoupling`)."""

    penalty: str = "l1"
    m: int | None = None
    k: int | None = None
    mu: float = 0.1
    tau: float = 0.05
    theta: float = 2.0

    def build(self, device="cpu", dtype=torch.float64) -> ThreeBlockProblem:
        n, N, penalty = self.n, self.N, self.penalty
        m = n if self.m is None else self.m
        k = 2 * n if self.k is None else self.k
        gen = torch.Generator().manual_seed(self.seed)
        feats = torch.randn(N, n, generator=gen, dtype=torch.float64) / math.sqrt(n)
        w = torch.randn(n, generator=gen, dtype=torch.float64) * (torch.rand(n, generator=gen, dtype=torch.float64) < 0.3)
        labels = torch.sign(feats @ w + 0.1 * torch.randn(N, generator=gen, dtype=torch.float64))
        labels[labels == 0] = 1.0
        Ac = torch.randn(k, m, generator=gen, dtype=torch.float64) / math.sqrt(k)
        Bc = torch.randn(k, n, generator=gen, dtype=torch.float64) / math.sqrt(k)
        y0 = torch.randn(n, generator=gen, dtype=torch.float64)
        if penalty == "l1":
            F = L1Norm(self.tau)
        elif penalty == "mcp":
            F = MCP(self.tau, self.theta)
        else:
            raise ValueError(f"penalty must be 'l1' or 'mcp', got {penalty!r}")
        problem = ThreeBlockProblem(
            f"sparse-{penalty}", FiniteSumLoss(feats * labels[:, None], torch.zeros(N, dtype=torch.float64), LOGISTIC, self.mu),
            LinearCoupling(Ac, Bc), F, Sampling(N, self.b, self.replacement), y0, torch.zeros(m, dtype=torch.float64),
            params=dict(dataclasses.asdict(self), m=m, k=k),
        )
        return _finish(problem, device, dtype)


@dataclasses.dataclass(frozen=True)
class CosineSpec(ProblemSpec):
    """Problem 3: ``min tau||x||_1 + (1/N) sum_i log(1 + (a_i^T y - b_i)^2/2) + (lam/2)||x - y||^2
    + mu sum_j cos x_j`` (the robust regression of problem 1, one block).  With ``mu > lam`` the
    coupling is nonconvex in x: ``l = mu - lam > 0``, ``L2* = lam + mu``, ``L3* = L4* = L5* = lam``,
    ``H_inf = -mu n`` (:class:`stam.synthetic.couplings.CosineCoupling`)."""

    lam: float = 1.0
    mu: float = 2.0
    tau: float = 0.05
    noise: float = 0.1
    outliers: float = 0.1

    def build(self, device="cpu", dtype=torch.float64) -> ThreeBlockProblem:
        A, targets, _, y0 = _robust_start(self, 1)
        problem = ThreeBlockProblem(
            "cosine", FiniteSumLoss(A, targets, ROBUST), CosineCoupling(self.lam, self.mu, self.n), L1Norm(self.tau),
            Sampling(self.N, self.b, self.replacement), y0, None, params=dataclasses.asdict(self),
        )
        return _finish(problem, device, dtype)


def binary(*, device="cpu", dtype=torch.float64, **definition) -> ThreeBlockProblem:
    """Problem 1 in its keyword form: ``BinarySpec(**definition).build(device, dtype)``
    (:class:`BinarySpec`: the problem, its constants and its keywords)."""
    return BinarySpec(**definition).build(device, dtype)


def sparse(*, device="cpu", dtype=torch.float64, **definition) -> ThreeBlockProblem:
    """Problem 2 in its keyword form: ``SparseSpec(**definition).build(device, dtype)``
    (:class:`SparseSpec`: the problem, its constants and its keywords)."""
    return SparseSpec(**definition).build(device, dtype)


def cosine(*, device="cpu", dtype=torch.float64, **definition) -> ThreeBlockProblem:
    """Problem 3 in its keyword form: ``CosineSpec(**definition).build(device, dtype)``
    (:class:`CosineSpec`: the problem, its constants and its keywords)."""
    return CosineSpec(**definition).build(device, dtype)


#: name -> generator (from the registry :data:`stam.synthetic.families.FAMILIES`); every generator
#: takes n, N, b, replacement, seed, device, dtype
PROBLEMS: dict[str, Callable[..., ThreeBlockProblem]] = {f.name: f.make for f in FAMILIES}


def make_problem(name: str, **kwargs) -> ThreeBlockProblem:
    """The instance of the family ``name`` (:func:`stam.synthetic.families.family`); ``KeyError``
    with the known names if ``name`` is unknown."""
    return family(name).make(**kwargs)


__all__ = ["ThreeBlockProblem", "PROBLEMS", "make_problem", "binary", "sparse", "cosine", "ProblemSpec", "BinarySpec", "SparseSpec",
           "CosineSpec"]
