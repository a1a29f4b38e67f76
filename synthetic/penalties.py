"""The nonsmooth block ``F`` of the synthetic problems: value, exact prox (eq. (algu)) and the
exact distance term of the stationarity measure,

    dist2(u, g) = dist^2(0, g + dF(u))      (g = nabla_x H(u, y); dF the limiting subdifferential),

all per run (shape ``(R,)`` out of ``(R, n)`` in).

- :class:`L1Norm` ``F(u) = tau ||u||_1``.
- :class:`MCP` the minimax concave penalty with parameters ``tau`` and ``theta`` (needs
  ``gamma < theta`` for its prox; enforced).
- :class:`QuantizedIndicator` ``F = I_Q`` of eq. (eq01) (prox: the projection of
  :func:`stam.quantize.project_Q`).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from stam.steps import Scalar
from stam.operators import IndicatorQ
from stam.quantize import block_scales


def _interval_dist2(g: Tensor, center: Tensor, radius: Tensor | float, at_zero: Tensor) -> Tensor:
    """``sum_j dist^2(0, g_j + D_j)`` where ``D_j = {center_j}`` off zero and ``[-radius, radius]``
    at zero coordinates (then the distance is the soft threshold ``max(|g_j| - radius, 0)``)."""
    off = (g + center) ** 2
    on = torch.clamp(g.abs() - radius, min=0) ** 2
    return torch.where(at_zero, on, off).sum(dim=1)


class L1Norm:
    """``F(u) = tau ||u||_1``.

    prox (eq. (algu)): soft thresholding ``sign(v) max(|v| - gamma tau, 0)``, for every gamma > 0.
    Subdifferential (convex, = limiting): ``tau sign(u_j)`` if ``u_j != 0``, ``[-tau, tau]`` at 0."""

    def __init__(self, tau: float):
        if tau < 0:
            raise ValueError(f"tau must be >= 0, got {tau}")
        self.tau = float(tau)

    def value(self, u: Tensor) -> Tensor:
        return self.tau * u.abs().sum(dim=1)

    def prox_F(self, v: Tensor, gamma: Scalar) -> Tensor:
        return torch.sign(v) * torch.clamp(v.abs() - gamma * self.tau, min=0)

    def dist2(self, u: Tensor, g: Tensor) -> Tensor:
        return _interval_dist2(g, self.tau * torch.sign(u), self.tau, u == 0)

    def check_gamma(self, gamma: float) -> None:
        """Soft thresholding is the prox for every gamma > 0."""

    def describe(self) -> str:
        return f"l1 (tau={self.tau:g})"


class MCP:
    """Minimax concave penalty ``F(u) = sum_j p(u_j)`` with
    ``p(t) = tau |t| - t^2/(2 theta)`` for ``|t| <= theta tau`` and ``theta tau^2 / 2`` otherwise.

    ``p`` is ``(1/theta)``-weakly convex, so ``p + (1/(2 gamma))(. - v)^2`` is strongly convex iff
    ``gamma < theta``: the prox of eq. (algu) is then unique and is the firm threshold

        0                                       if |v| <= gamma tau,
        sign(v) (|v| - gamma tau)/(1 - gamma/theta)   if gamma tau < |v| <= theta tau,
        v                                       if |v| > theta tau

    (on ``0 < t <= theta tau`` the stationarity condition ``tau - t/theta + (t - v)/gamma = 0``
    gives the middle branch, which stays below ``theta tau`` iff ``v <= theta tau``).  For
    ``gamma >= theta`` the subproblem is not strongly convex; we refuse it.

    Limiting subdifferential: ``p'(t) = sign(t) max(tau - |t|/theta, 0)`` for ``t != 0`` and
    ``[-tau, tau]`` at ``t = 0`` (near 0, ``p(t) = tau|t| - t^2/(2 theta)``; the Frechet
    subgradients there are ``s`` with ``tau - |s| >= 0``, and limits of ``p'(t)`` as ``t -> 0``
    are ``+-tau``, already in the interval).
    """

    def __init__(self, tau: float, theta: float):
        if tau < 0 or theta <= 0:
            raise ValueError(f"MCP needs tau >= 0 and theta > 0, got tau={tau}, theta={theta}")
        self.tau, self.theta = float(tau), float(theta)

    def value(self, u: Tensor) -> Tensor:
        a = u.abs()
        inner = self.tau * a - a * a / (2 * self.theta)
        outer = torch.full_like(a, self.theta * self.tau**2 / 2)
        return torch.where(a <= self.theta * self.tau, inner, outer).sum(dim=1)

    def check_gamma(self, gamma: float) -> None:
        if float(gamma) >= self.theta:
            raise ValueError(f"the MCP prox needs gamma < theta = {self.theta:g}, got gamma = {float(gamma):g}")

    def prox_F(self, v: Tensor, gamma: Scalar) -> Tensor:
        self.check_gamma(float(gamma.max()) if isinstance(gamma, Tensor) else gamma)
        a = v.abs()
        mid = torch.sign(v) * (a - gamma * self.tau) / (1 - gamma / self.theta)
        out = torch.where(a <= self.theta * self.tau, mid, v)
        return torch.where(a <= gamma * self.tau, torch.zeros_like(v), out)

    def dist2(self, u: Tensor, g: Tensor) -> Tensor:
        slope = torch.sign(u) * torch.clamp(self.tau - u.abs() / self.theta, min=0)
        return _interval_dist2(g, slope, self.tau, u == 0)

    def describe(self) -> str:
        return f"mcp (tau={self.tau:g}, theta={self.theta:g})"


#: largest block with u = 0 for which the normal-cone distance is computed by enumeration
EXACT_ZERO_BLOCK = 20


class QuantizedIndicator(IndicatorQ):
    """``F = I_Q`` (eq. (eq01)): on block i every coordinate is ``s_i * (+-1)``, ``s_i >= 0``.

    prox: the projection onto Q (:func:`stam.quantize.project_Q`), for every gamma.

    Normal cone (``dF = N_Q``, limiting).  Q is a product of blocks, and the limiting normal cone
    of a product is the product of the blocks' cones.  A block of size ``m`` is the union of the
    ``2^{m-1}`` lines ``span(zeta)``, ``zeta in {-1, +1}^m`` (``s zeta`` and ``s (-zeta)`` lie on
    one line; for ``m = 1`` the block is all of R).  Two such lines meet only at 0, hence:

    - ``u_i != 0`` (``s_i > 0``; no coordinate is then zero): near ``u_i`` the block coincides with
      the single line through ``u_i``, so ``N(u_i) = zeta^perp`` with ``zeta = sign(u_i)``, and
      ``dist^2(0, g_i + N) = <g_i, zeta>^2 / m``.
    - ``u_i = 0`` (``s_i = 0``): the Frechet normal cone is the polar of the union of all lines,
      ``{0}`` (sign vectors span R^m); the limiting cone adds the limits of normals at nearby
      points ``s zeta`` (``s -> 0+``): ``N(0) = union over zeta of zeta^perp``, and
      ``dist^2(0, g_i + N(0)) = min_zeta <g_i, zeta>^2 / m`` (a number-partitioning problem).
      It is computed exactly by enumeration when ``m <= EXACT_ZERO_BLOCK``; above that the greedy
      partition gives an *upper* bound (which keeps ``bound / S >= 1`` a conservative check).
      Exactly-zero blocks are rare: ``project_Q`` gives ``s_i = 0`` only for an exactly-zero input.
    """

    def value(self, u: Tensor) -> Tensor:
        """0 on Q, +inf off Q: membership up to ``sqrt(eps) (1 + s)`` on the block magnitudes, for
        the machine epsilon ``eps`` of ``u``'s dtype (1.5e-8 in float64, 3.5e-4 in float32), far
        above the rounding of a projection and far below a point's distance from Q."""
        s = self.blocks.expand(block_scales(u, self.blocks))
        tol = torch.finfo(u.dtype).eps ** 0.5
        ok = ((u.abs() - s).abs() <= tol * (1 + s)).all(dim=1)
        return torch.where(ok, torch.zeros_like(ok, dtype=u.dtype), torch.full_like(ok, math.inf, dtype=u.dtype))

    def check_gamma(self, gamma: float) -> None:
        """The projection is the prox for every gamma > 0."""

    def dist2(self, u: Tensor, g: Tensor) -> Tensor:
        zeta = torch.where(u >= 0, 1.0, -1.0).to(g.dtype)
        inner = self.blocks.sums(g * zeta)
        counts = self.blocks.counts.to(g.dtype)
        per_block = inner**2 / counts
        scales = block_scales(u, self.blocks)
        for r, blk in (scales == 0).nonzero().tolist():  # rare: exactly-zero blocks
            per_block[r, blk] = min_partition(g[r, self.block_ids == blk]) ** 2 / counts[blk]
        return per_block.sum(dim=1)

    def describe(self) -> str:
        return f"indicator of Q ({self.num_blocks} blocks)"


def min_partition(g: Tensor) -> float:
    """``min over zeta in {-1,+1}^m of |<g, zeta>|``: exact by enumeration for
    ``m <= EXACT_ZERO_BLOCK``, otherwise the greedy value (an upper bound)."""
    m = g.numel()
    if m <= EXACT_ZERO_BLOCK:
        # zeta_1 = +1 without loss of generality (|<g, -zeta>| = |<g, zeta>|); bits give the rest
        codes = torch.arange(2 ** (m - 1), device=g.device)
        bits = (codes[:, None] >> torch.arange(m - 1, device=g.device)) & 1
        return float((g[0] + ((1 - 2 * bits).to(g.dtype) @ g[1:])).abs().min())
    total = 0.0
    for value in sorted(g.abs().tolist(), reverse=True):
        total = total - value if total > 0 else total + value
    return abs(total)


__all__ = ["L1Norm", "MCP", "QuantizedIndicator", "min_partition", "EXACT_ZERO_BLOCK"]
