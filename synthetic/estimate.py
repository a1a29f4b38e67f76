"""Estimators of the constants of Assumption ass2 and of Lemma es-lemma for blocks that do not
know them in closed form.

Every estimate here is a *lower* estimate of the true constant (a largest observed curvature, a
smallest observed function value used as the infimum): step sizes computed from it are **not
certified**.  :class:`stam.synthetic.problems.ThreeBlockProblem` labels each constant it reports
``"certified"`` (a closed form the block derived) or ``"estimated (not a guarantee)"`` (this
module), with the estimator and its :class:`EstimatorSettings`.

Lipschitz constants of a gradient map ``g`` (``L1``, ``L1^i``, ``L2*``, ``L3*``; the cross
constants ``L4*``, ``L5*`` are the norms of the mixed second derivatives):

1. *power iteration* on Hessian-vector products ``J v ~ [g(p + h v) - g(p - h v)] / (2h)``
   (central differences, ``h = 1e-5 (1 + ||p||/sqrt(d))``; for the cross constants on ``J^T J``
   with the transposed mixed derivative), batched over all start points at once;
2. a *line scan* of the curvature ``||J(p + t v) v||`` along the final direction ``v`` over
   ``t in [-4, 4]`` from the ``line_starts`` start points of largest value (the extreme
   curvature of a ridge function ``phi(a^T y - b)`` lies on such a line);
3. *sampled secant ratios* ``||g(p) - g(q)|| / ||p - q||`` at random pairs at several distances.

The estimate is the largest value any of them saw.  ``l`` (the smallest real with
``H(., y) + (l/2)||.||^2`` convex) is ``max(-lambda_min)`` of ``nabla_xx^2 H`` found by power
iteration on ``sigma I - J`` and the same line scan.  Infima (``G^inf``, ``H^inf``,
``(G+H)^inf``, the mean of ``G_i^inf``) are the smallest values reached by a multi-start local
minimisation (accelerated gradient descent, step ``1/L`` from the estimated L, gradient
restart; one value-and-gradient evaluation per step), batched over the starts.

Start points: ``0``, the problem's ``y^0`` (and ``z^{-1}``), and random points uniform on
``[-pi, pi]^d`` (for periodic terms) and ``N(0, s^2 I)`` for ``s in {0.1, 1, 3}``, cycled.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable

import torch
from torch import Tensor

ESTIMATED = "estimated (not a guarantee)"
CERTIFIED = "certified"


@dataclass(frozen=True)
class EstimatorSettings:
    """What the estimators spend (each output states these)."""

    points: int = 8  # start points of the curvature search
    power_iters: int = 20  # power iterations per start point
    line_points: int = 33  # curvature evaluations along each final direction, t in [-4, 4]
    line_starts: int = 2  # start points (those of largest power-iteration value) scanned along their line
    secant_pairs: int = 32  # random pairs in all (round robin over the start points), at distances 1e-3, 1e-1, 1
    samples: int = 256  # terms G_i on which L1^i and G_i^inf are estimated (all if N is smaller)
    starts: int = 3  # starts of each multi-start minimisation
    min_steps: int = 60  # gradient steps of each minimisation
    seed: int = 0

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in asdict(self).items())

    @classmethod
    def for_size(cls, n: int, N: int) -> "EstimatorSettings":
        """The default settings for the constants of ``G`` on ``R^n`` with ``N`` terms (H's are
        cheap and always get the full ones).  Up to :data:`LARGE` numbers in G's data (``n N``)
        the full :class:`EstimatorSettings`; above, where one full gradient costs a pass over ``n N``
        numbers, a lean profile with a fixed number of evaluations (about 130 rows of full
        gradients for ``L1``, 120 for ``G^inf``, 64 terms for ``L1^i`` and ``G_i^inf``), so
        estimation stays within seconds to a minute; every output states the settings it used.
        On the built-in families the lean profile reaches at least 0.8 of the attained constants
        (the full one 0.9; tests/test_user_problem.py)."""
        if n * N <= LARGE:
            return cls()
        return cls(points=4, power_iters=10, line_points=17, line_starts=1, secant_pairs=8, samples=64, starts=3,
                   min_steps=40)


#: above this many numbers in G's data (``n N``), :meth:`EstimatorSettings.for_size` gives the lean profile
LARGE = 2**22


def start_points(d: int, count: int, gen: torch.Generator, dtype, device, anchors=()) -> Tensor:
    """``(count, d)`` start points: the anchors (e.g. 0 and y^0), then random points uniform on
    [-pi, pi] and at scales 0.1, 1, 3, cycled."""
    rows = [a.reshape(-1).to(device=device, dtype=dtype) for a in anchors][:count]
    k = 0
    while len(rows) < count:
        kind = (k + 3) % 4  # uniform first: periodic terms reach their extreme curvature there
        if kind == 3:
            rows.append((torch.rand(d, generator=gen, dtype=torch.float64) * 2 - 1).to(device, dtype) * math.pi)
        else:
            rows.append(torch.randn(d, generator=gen, dtype=torch.float64).to(device, dtype) * (0.1, 1.0, 3.0)[kind])
        k += 1
    return torch.stack(rows)


def _unit(v: Tensor) -> Tensor:
    return v / v.norm(dim=1, keepdim=True).clamp_min(1e-300)


def central_difference(g, p: Tensor, v: Tensor, ids: Tensor) -> Tensor:
    """Central difference ``[g(p + h v) - g(p - h v)] / (2h)`` per row, in one call of ``g``."""
    h = 1e-5 * (1 + p.norm(dim=1, keepdim=True) / math.sqrt(p.shape[1]))
    out = g(torch.cat([p + h * v, p - h * v]), torch.cat([ids, ids]))
    R = p.shape[0]
    return (out[:R] - out[R:]) / (2 * h)


def _line(points: Tensor, v: Tensor, settings: EstimatorSettings, chosen: Tensor):
    """The points ``p + t v`` for ``t`` in ``[-4, 4]`` (t-major) of the start points ``chosen``,
    their start ids and directions."""
    d = points.shape[1]
    ts = torch.linspace(-4, 4, settings.line_points, dtype=points.dtype, device=points.device)
    line = (points[chosen][None] + ts[:, None, None] * v[chosen][None]).reshape(-1, d)
    return line, chosen.repeat(len(ts)), v[chosen].repeat(len(ts), 1), len(ts)


#: numbers (rows times dimension) of one block of line-scan points
LINE_NUMBERS = 2**23


def _scan_max(best: Tensor, values: Tensor, ids: Tensor) -> Tensor:
    """``best`` raised to the largest of ``values`` per start id."""
    return best.scatter_reduce(0, ids, values, reduce="amax")


def lipschitz(g, points: Tensor, settings: EstimatorSettings, gen: torch.Generator, gt=None, scan_all: bool = False) -> Tensor:
    """Per start point, the largest local Lipschitz ratio of ``g`` seen (module docstring).

    ``g(p, ids)`` maps ``(R, d)`` to ``(R, d')``, where row r belongs to start point ``ids[r]``
    (so a map may depend on the start: a fixed other argument, a sample index).  For a symmetric
    Jacobian (a Hessian) leave ``gt`` out; otherwise ``gt(p, w, ids)`` returns ``J(p)^T w``.
    ``scan_all``: the line scan from every start point (where each is its own problem, e.g. one
    term G_i per row), not only from the ``line_starts`` best.  Returns ``(K,)``."""
    K, d = points.shape
    ids = torch.arange(K, device=points.device)
    v = _unit(torch.randn(points.shape, generator=gen, dtype=torch.float64).to(points))
    best = torch.zeros(K, dtype=points.dtype, device=points.device)
    for _ in range(settings.power_iters):
        Jv = central_difference(g, points, v, ids)
        best = torch.maximum(best, Jv.norm(dim=1))
        v = _unit(Jv if gt is None else gt(points, Jv, ids))
    chosen = best.argsort(descending=True)[: K if scan_all else max(1, settings.line_starts)]
    step = max(1, LINE_NUMBERS // (2 * settings.line_points * d))  # start points per block (memory)
    for i in range(0, len(chosen), step):
        line, lids, lv, _ = _line(points, v, settings, chosen[i:i + step])
        best = _scan_max(best, central_difference(g, line, lv, lids).norm(dim=1), lids)
    m = max(1, settings.secant_pairs)
    scales = torch.tensor([1e-3, 1e-1, 1.0], dtype=points.dtype, device=points.device)
    dirs = _unit(torch.randn(m, d, generator=gen, dtype=torch.float64).to(points))
    dist = scales[torch.arange(m, device=points.device) % 3][:, None]
    sids = torch.arange(m, device=points.device) % K
    p = points[sids]
    both = g(torch.cat([p, p + dist * dirs]), torch.cat([sids, sids]))
    return _scan_max(best, (both[:m] - both[m:]).norm(dim=1) / dist[:, 0], sids)


def min_curvature(g, points: Tensor, sigma: Tensor, settings: EstimatorSettings, gen: torch.Generator) -> Tensor:
    """Per start point, the smallest curvature ``v^T J v`` of the symmetric Jacobian of ``g`` seen
    (power iteration on ``sigma I - J``, ``sigma >= ||J||``, then a line scan); ``(K,)``."""
    K, d = points.shape
    ids = torch.arange(K, device=points.device)
    v = _unit(torch.randn(points.shape, generator=gen, dtype=torch.float64).to(points))
    s = 1.01 * sigma.reshape(-1, 1).to(points) + 1e-12  # sigma I - J positive definite: v never vanishes
    lo = torch.full((K,), math.inf, dtype=points.dtype, device=points.device)
    for _ in range(settings.power_iters):
        Jv = central_difference(g, points, v, ids)
        lo = torch.minimum(lo, (v * Jv).sum(dim=1))
        v = _unit(s * v - Jv)
    chosen = lo.argsort()[: max(1, settings.line_starts)]
    line, lids, lv, _ = _line(points, v, settings, chosen)
    q = (lv * central_difference(g, line, lv, lids)).sum(dim=1)
    return lo.scatter_reduce(0, lids, q, reduce="amin")


def minimise(fg: Callable[[Tensor], tuple[Tensor, Tensor]], starts: Tensor, L: float, steps: int) -> Tensor:
    """Accelerated gradient descent with step ``1/L`` and gradient restart (O'Donoghue and
    Candes, 2015: momentum is reset when ``<grad, x+ - x> > 0``), one run per row of ``starts``;
    ``fg(y)`` returns the values and gradients at the rows of ``y`` together (one evaluation per
    step).  Returns the smallest value each run reached, ``(K,)``.  A run whose value stops
    being finite goes back to its last good point with its momentum reset."""
    step = 1.0 / max(float(L), 1e-12)
    x = starts.clone()
    y = x.clone()
    best = torch.full((x.shape[0],), math.inf, dtype=x.dtype, device=x.device)
    t = torch.ones(x.shape[0], 1, dtype=x.dtype, device=x.device)
    for _ in range(steps):
        fy, gy = fg(y)
        bad = ~torch.isfinite(fy) | ~torch.isfinite(gy).all(dim=1)
        best = torch.where(bad, best, torch.fmin(best, fy))
        x_new = torch.where(bad[:, None], x, y - step * gy)
        restart = bad | ((gy * (x_new - x)).sum(dim=1) > 0)
        t_new = (1 + torch.sqrt(1 + 4 * t * t)) / 2
        y = torch.where(restart[:, None], x_new, x_new + ((t - 1) / t_new) * (x_new - x))
        t = torch.where(restart[:, None], torch.ones_like(t), t_new)
        x = x_new
    return best


def value_and_grad(f: Callable[[Tensor], Tensor], grad: Callable[[Tensor], Tensor]):
    """``fg`` for :func:`minimise` from separate value and gradient maps."""
    return lambda y: (f(y), grad(y))


__all__ = ["EstimatorSettings", "ESTIMATED", "CERTIFIED", "central_difference", "start_points", "lipschitz",
           "min_curvature", "minimise", "value_and_grad", "LARGE"]
