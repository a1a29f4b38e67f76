"""The finite sums ``G(y) = (1/N) sum_i G_i(y)`` (eq. (eq500)) of the synthetic problems.

Every ``G_i`` here has the form

    G_i(y) = phi(a_i^T y - t_i) + mu * sum_j r(y_j),      r(s) = s^2 / (1 + s^2),

with a scalar *link* ``phi`` of bounded curvature, data rows ``a_i`` (the ``(N, n)`` matrix
``A``), offsets ``t_i`` and a weight ``mu >= 0`` of the bounded nonconvex regulariser ``r``.

Smoothness (Assumption ass2 (a1), Lemma es-lemma).  The Hessians are

    nabla^2 G_i(y) = phi''(a_i^T y - t_i) a_i a_i^T + mu diag(r''(y_j)),
    nabla^2 G(y)   = (1/N) A^T diag(phi''(A y - t)) A + mu diag(r''(y_j)).

If ``phi'' in [p_lo, p_hi]`` and ``r'' in [-1/2, 2]`` (below), then for ``S = ||A||_2^2 / N``
(``S_i = ||a_i||^2`` for ``G_i``) every eigenvalue of ``nabla^2 G`` lies in
``[min(p_lo, 0) S - mu/2, max(p_hi, 0) S + 2 mu]``, so ``nabla G`` is Lipschitz with

    L1   = max(max(p_hi, 0) S + 2 mu,  -min(p_lo, 0) S + mu/2),

and likewise ``L1^i`` with ``S_i``.  Both are attained wherever the extreme curvatures are
(the residuals at the maximiser of ``phi''``, and ``y = 0`` for ``r``), so they are not vacuous.

Regulariser: ``r'(s) = 2 s / (1 + s^2)^2``, ``r''(s) = (2 - 6 s^2) / (1 + s^2)^3``; with
``u = s^2``, ``d/du [(2 - 6u)/(1 + u)^3] = 12 (u - 1)/(1 + u)^4``, so ``r''`` decreases from
``r''(0) = 2`` to its minimum ``r''(+-1) = -1/2`` and then increases to 0: ``r'' in [-1/2, 2]``.
``0 <= r < 1``.

Links (both ``>= 0``, so ``G_i >= 0`` and ``G >= 0``: ``0`` is a certified lower bound of
``G_i^inf`` and ``G^inf``):

- ``robust``: ``phi(s) = log(1 + s^2/2)`` (a Cauchy-type robust loss, nonconvex).
  ``phi'(s) = 2 s/(2 + s^2)``, ``phi''(s) = 2 (2 - s^2)/(2 + s^2)^2``; with ``u = s^2``,
  ``d/du [2 (2 - u)/(2 + u)^2] = 2 (u - 6)/(2 + u)^3``: the curvature falls from
  ``phi''(0) = 1`` to ``phi''(+-sqrt 6) = -1/8``, then rises to 0: ``phi'' in [-1/8, 1]``.
- ``logistic``: ``phi(s) = log(1 + exp(-s))`` (labels folded into ``a_i``, ``t_i = 0``).
  ``phi'(s) = -sigmoid(-s)``, ``phi''(s) = sigmoid(s) sigmoid(-s) in (0, 1/4]``, max at 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as tnf
from torch import Tensor


@dataclass(frozen=True)
class Link:
    """A scalar loss ``phi`` with its derivative and curvature range ``phi'' in [curv_lo, curv_hi]``."""

    name: str
    value: Callable[[Tensor], Tensor]
    deriv: Callable[[Tensor], Tensor]
    curv_lo: float
    curv_hi: float


ROBUST = Link(
    "robust",
    value=lambda s: torch.log1p(0.5 * s * s),
    deriv=lambda s: 2 * s / (2 + s * s),
    curv_lo=-1 / 8,
    curv_hi=1.0,
)
LOGISTIC = Link(
    "logistic",
    value=lambda s: tnf.softplus(-s),
    deriv=lambda s: -torch.sigmoid(-s),
    curv_lo=0.0,
    curv_hi=0.25,
)

#: largest block of gathered data rows in :meth:`FiniteSumLoss.grad_batch`, in bytes (measured
#: on a 2-core Xeon: 16 MiB is within 10% of the fastest choice from n = 1e3 to 1e6, b = 8 to 512)
GATHER_BYTES = 16 * 2**20

#: :meth:`FiniteSumLoss.grad_batch` computes all N residuals by one GEMM when ``N <= DENSE_RATIO * b``
#: and the data matrix has at most ``DENSE_BYTES``.  Measured (2-core Xeon, float32, n = 1e3):
#: at N/b = 8 the dense path is 1.1x (R = 1), 1.2x (R = 8) and 1.9x (R = 64) faster; at N/b = 16
#: it is 0.9x / 0.9x / 1.2x.  For data beyond cache (n = 1e5, R = 1) it loses from N/b = 4 on.
DENSE_RATIO = 8
DENSE_BYTES = 4 * 2**20

#: range of r''(s) for r(s) = s^2/(1+s^2) (module docstring)
REG_CURV_LO, REG_CURV_HI = -0.5, 2.0


def reg_value(y: Tensor) -> Tensor:
    """``sum_j r(y_j)`` per run, shape ``(R,)``."""
    y2 = y * y
    return (y2 / (1 + y2)).sum(dim=1)


def reg_grad(y: Tensor) -> Tensor:
    return 2 * y / (1 + y * y) ** 2


def _lipschitz(curv_lo: float, curv_hi: float, scale, mu: float):
    """Bound of the module docstring on ``||nabla^2||`` from the curvature ranges; ``scale`` is
    ``||A||^2/N`` (for G) or ``||a_i||^2`` (for G_i), float or tensor."""
    up = max(curv_hi, 0.0) * scale + REG_CURV_HI * mu
    down = -min(curv_lo, 0.0) * scale - REG_CURV_LO * mu
    return torch.maximum(torch.as_tensor(up), torch.as_tensor(down)) if isinstance(scale, Tensor) else max(up, down)


class FiniteSumLoss:
    """``G(y) = (1/N) sum_i [phi(a_i^T y - t_i) + mu sum_j r(y_j)]`` (module docstring).

    ``features``: ``(N, n)``; ``offsets``: ``(N,)``; all methods take ``y`` of shape ``(R, n)``."""

    def __init__(self, features: Tensor, offsets: Tensor, link: Link, mu: float = 0.0):
        self.A = features
        self.t = offsets
        self.link = link
        self.mu = float(mu)
        self.N, self.n = features.shape
        self._rows: Tensor | None = None  # gather buffer of grad_batch (not shared between threads)

    # --- values and gradients -------------------------------------------------------------
    def residuals(self, y: Tensor) -> Tensor:
        return y @ self.A.T - self.t  # (R, N)

    def value(self, y: Tensor) -> Tensor:
        """``G(y)`` per run, ``(R,)``."""
        out = self.link.value(self.residuals(y)).mean(dim=1)
        return out + self.mu * reg_value(y) if self.mu else out

    def values_i(self, y: Tensor) -> Tensor:
        """``G_i(y)`` for all i, ``(R, N)``."""
        out = self.link.value(self.residuals(y))
        return out + self.mu * reg_value(y)[:, None] if self.mu else out

    def grad(self, y: Tensor) -> Tensor:
        """Full gradient ``nabla G(y)``, ``(R, n)`` (costs N gradient evaluations per run)."""
        out = self.link.deriv(self.residuals(y)) @ self.A / self.N
        return out + self.mu * reg_grad(y) if self.mu else out

    def grad_batch(self, y: Tensor, idx: Tensor) -> Tensor:
        """``(1/b) sum_k nabla G_{idx_k}(y)`` for a draw ``idx`` of shape ``(R, b)``: the estimator
        of eq. (stochastic G) (see :mod:`stam.synthetic.sampling`).  Costs ``b`` gradient
        evaluations per run.

        The sampled rows are gathered in blocks of at most ``GATHER_BYTES`` (whole runs
        and rows), each used twice while it is in cache (residuals, then the weighted row sum).
        So the work and the memory traffic are ``O(R b n)`` with a bounded temporary, whatever
        the sizes: a single ``R b n`` gather would cost page faults that grow faster than linearly
        once it outgrows the allocator's reusable heap.

        When the data are small and the batch is not much smaller than the sum
        (``N <= DENSE_RATIO * b`` and ``A`` within ``DENSE_BYTES``), all ``N`` residuals by one
        matrix product cost less than the gather (``A`` stays in cache and a GEMM runs near peak,
        a gather-and-GEMV is bound by memory): the same estimator, by :meth:`_grad_dense`."""
        R, b = idx.shape
        n = self.n
        if self.N <= DENSE_RATIO * b and self.A.numel() * self.A.element_size() <= DENSE_BYTES:
            return self._grad_dense(y, idx) / b
        cap = max(1, GATHER_BYTES // self.A.element_size())  # numbers in one gathered block
        runs = R if R * n <= cap else max(1, cap // n)
        per = max(1, cap // (runs * n))  # sampled rows per run in one block
        if runs == R and per >= b:
            return self._grad_rows(y, idx) / b
        out = torch.empty_like(y)
        for r0 in range(0, R, runs):
            part = self._grad_rows(y[r0 : r0 + runs], idx[r0 : r0 + runs, :per])
            for k0 in range(per, b, per):
                part += self._grad_rows(y[r0 : r0 + runs], idx[r0 : r0 + runs, k0 : k0 + per])
            out[r0 : r0 + runs] = part
        return out / b

    def _grad_dense(self, y: Tensor, idx: Tensor) -> Tensor:
        """What :meth:`_grad_rows` returns, from all ``N`` residuals: ``W A`` with
        ``W[r, i] = sum_{k: idx_rk = i} phi'(residual_ri)`` (repeats add up, as with replacement)."""
        res = (y @ self.A.T).sub_(self.t)  # (R, N); faster than addmm, which first copies t out
        weights = torch.zeros_like(res).scatter_add_(1, idx, self.link.deriv(res.gather(1, idx)))
        out = weights @ self.A
        return out + (self.mu * idx.shape[1]) * reg_grad(y) if self.mu else out

    def _grad_rows(self, y: Tensor, idx: Tensor) -> Tensor:
        """``sum_k phi'(a_{idx_k}^T y - t_{idx_k}) a_{idx_k} (+ mu b r'(y))`` for ``y`` ``(R, n)``, ``idx`` ``(R, k)``."""
        R, k = idx.shape
        flat = idx.reshape(-1)
        size = R * k * self.n
        if self._rows is None or self._rows.numel() < size or self._rows.device != self.A.device or self._rows.dtype != self.A.dtype:
            self._rows = torch.empty(size, dtype=self.A.dtype, device=self.A.device)
        # into one reused buffer: a fresh multi-MB tensor per call costs page faults on every call
        rows = torch.index_select(self.A, 0, flat, out=self._rows[:size].view(R * k, self.n)).view(R, k, self.n)
        # y^T rows^T (a row vector times a matrix per run) is the faster batched GEMV on CPU
        s = torch.bmm(y.unsqueeze(1), rows.transpose(1, 2)).squeeze(1) - self.t.index_select(0, flat).view(R, k)
        out = torch.bmm(self.link.deriv(s).unsqueeze(1), rows).squeeze(1)
        return out + (self.mu * k) * reg_grad(y) if self.mu else out

    def value_batch(self, y: Tensor, idx: Tensor) -> Tensor:
        """``(1/b) sum_k G_{idx_k}(y)`` per run for a draw ``idx`` ``(R, b)``, ``(R,)``."""
        rows = self.A[idx]  # (R, b, n)
        s = torch.einsum("rbn,rn->rb", rows, y) - self.t[idx]
        out = self.link.value(s).mean(dim=1)
        return out + self.mu * reg_value(y) if self.mu else out

    # --- constants (module docstring) -----------------------------------------------------
    def L1(self) -> float:
        """Lipschitz constant of ``nabla G`` (Assumption ass2 (a1))."""
        scale = float(torch.linalg.matrix_norm(self.A.double(), ord=2)) ** 2 / self.N
        return float(_lipschitz(self.link.curv_lo, self.link.curv_hi, scale, self.mu))

    def L1_i(self) -> Tensor:
        """Lipschitz constants ``L1^i`` of each ``nabla G_i`` (Lemma es-lemma), ``(N,)`` float64."""
        scale = (self.A.double() ** 2).sum(dim=1)
        return _lipschitz(self.link.curv_lo, self.link.curv_hi, scale, self.mu)

    #: certified lower bounds of ``G^inf`` and of every ``G_i^inf`` (both links are >= 0)
    inf_lower_bound = 0.0
    inf_i_lower_bound = 0.0


__all__ = ["Link", "ROBUST", "LOGISTIC", "FiniteSumLoss", "reg_value", "reg_grad"]
