"""Coupling terms ``H(x, y)`` of the synthetic problems, with the constants of Assumption ass2.

Each class provides ``H``, ``grad_x_H``, ``grad_y_H``, the exact x-step ``prox_H`` of eq. (algx)
(``argmin_x H(x, y) + ||x - z||^2 / (2 gamma)``) and ``constants()`` with ``L2 .. L5`` (the
``L_k^*`` of eq. (lip-const)), ``l`` (the smallest real with ``H(., y) + (l/2)||.||^2`` convex
for every y) and ``H_inf`` (``inf_{x,y} H``, exact).  Tensors are ``(R, n)``; ``gamma`` is a
float or a tensor broadcastable against ``(R, 1)``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from stam.steps import Scalar
from stam.operators import QuadraticCoupling


class Quadratic(QuadraticCoupling):
    """``H(x, y) = (lam/2) ||x - y||^2`` (the paper's network coupling, eq. (binary-model)).

    ``nabla_x H = lam (x - y)``, ``nabla_y H = lam (y - x)``: all four Lipschitz constants equal
    ``lam`` (the cross ones because ``||lam (y1 - y2)|| = lam ||y1 - y2||``, attained everywhere);
    ``H(., y) + (l/2)||.||^2`` has Hessian ``(lam + l) I``, so the smallest ``l`` is ``-lam``;
    ``H >= 0 = H(y, y)``: ``H_inf = 0``."""

    def constants(self) -> dict:
        lam = float(self.lam)
        return dict(L2=lam, L3=lam, L4=lam, L5=lam, l=-lam, H_inf=0.0)

    def check_gamma(self, gamma: float) -> None:
        """The x-step is a strongly convex problem for every ``gamma > 0``."""


class LinearCoupling:
    """``H(x, y) = (1/2) ||A x - B y||^2`` with ``A`` ``(k, m)``, ``B`` ``(k, n)``.

    - ``nabla_x H = A^T (A x - B y)``, ``nabla_y H = B^T (B y - A x)``;
    - ``L2* = ||A^T A||_2 = sigma_max(A)^2``, ``L3* = sigma_max(B)^2``,
      ``L4* = L5* = ||A^T B||_2`` (the cross derivatives are ``-A^T B`` and ``-B^T A``); each is
      attained by the top singular pair of the matrix concerned, at every point;
    - ``nabla_xx^2 H = A^T A`` so the smallest ``l`` is ``-lambda_min(A^T A)`` (``<= 0``);
    - ``H >= 0 = H(0, 0)``: ``H_inf = 0``.

    x-step (eq. (algx)): ``(A^T A + I/gamma) x = A^T B y + z / gamma``.  With the
    eigendecomposition ``A^T A = V diag(w) V^T`` computed once,
    ``x = V diag(1/(w + 1/gamma)) V^T (A^T B y + z/gamma)``; this works for a per-run gamma too.
    """

    def __init__(self, A: Tensor, B: Tensor):
        self.A, self.B = A, B
        self.AtB = A.T @ B
        w, V = torch.linalg.eigh(A.T @ A)
        self.eig, self.V = w.clamp_min(0), V

    def H(self, x: Tensor, y: Tensor) -> Tensor:
        r = x @ self.A.T - y @ self.B.T
        return 0.5 * (r * r).sum(dim=1)

    def grad_x_H(self, x: Tensor, y: Tensor) -> Tensor:
        return (x @ self.A.T - y @ self.B.T) @ self.A

    def grad_y_H(self, x: Tensor, y: Tensor) -> Tensor:
        return (y @ self.B.T - x @ self.A.T) @ self.B

    def prox_H(self, z: Tensor, y: Tensor, gamma: Scalar) -> Tensor:
        rhs = y @ self.AtB.T + z / gamma
        return ((rhs @ self.V) / (self.eig + 1 / gamma)) @ self.V.T

    def constants(self) -> dict:
        ev = torch.linalg.eigvalsh((self.A.T @ self.A).double())
        L3 = float(torch.linalg.matrix_norm(self.B.double(), ord=2)) ** 2
        L4 = float(torch.linalg.matrix_norm(self.AtB.double(), ord=2))
        return dict(L2=float(ev[-1]), L3=L3, L4=L4, L5=L4, l=-float(ev[0]), H_inf=0.0)

    def check_gamma(self, gamma: float) -> None:
        """The x-step is a strongly convex problem for every ``gamma > 0``."""


class CosineCoupling:
    """``H(x, y) = (lam/2) ||x - y||^2 + mu sum_j cos(x_j)``: nonconvex in x, so ``l > 0`` when
    ``mu > lam`` (the case Remark Rem=09836 has to handle).

    - ``nabla_x H = lam (x - y) - mu sin(x)``, ``nabla_y H = lam (y - x)``;
    - ``nabla_xx^2 H = diag(lam - mu cos x_j)`` with eigenvalues in ``[lam - mu, lam + mu]``:
      ``L2* = lam + mu`` (attained at ``x_j = pi``), and the smallest ``l`` with
      ``lam - mu cos t + l >= 0`` for all t is ``l = mu - lam``;
    - ``L3* = L4* = L5* = lam`` (the y-dependence is that of the quadratic coupling);
    - ``H >= -mu n`` with equality at ``x = y = (pi, ..., pi)``: ``H_inf = -mu n``.

    x-step (eq. (algx)), separable: for each coordinate minimise the 1-D function
    ``phi(t) = (lam/2)(t - y)^2 + mu cos t + (t - z)^2/(2 gamma)``, whose second derivative
    ``c - mu cos t`` with ``c = lam + 1/gamma`` is ``>= c - mu > 0`` iff ``gamma l < 1``
    (enforced; Lemma conv-lemma's ``K1 > 0`` already gives ``gamma l < 1/10``).  The unique root of
    ``phi'(t) = c t - w - mu sin t`` (``w = lam y + z/gamma``) lies in
    ``[(w - mu)/c, (w + mu)/c]`` (there ``phi' <= 0`` and ``>= 0``); it is found by Newton's method
    safeguarded by bisection on that bracket, to machine precision.
    """

    def __init__(self, lam: float, mu: float, n: int):
        if lam < 0 or mu < 0:
            raise ValueError(f"lam and mu must be >= 0, got lam={lam}, mu={mu}")
        self.lam, self.mu, self.n = float(lam), float(mu), int(n)

    def H(self, x: Tensor, y: Tensor) -> Tensor:
        d = x - y
        return 0.5 * self.lam * (d * d).sum(dim=1) + self.mu * torch.cos(x).sum(dim=1)

    def grad_x_H(self, x: Tensor, y: Tensor) -> Tensor:
        return self.lam * (x - y) - self.mu * torch.sin(x)

    def grad_y_H(self, x: Tensor, y: Tensor) -> Tensor:
        return self.lam * (y - x)

    def check_gamma(self, gamma: float) -> None:
        l = self.mu - self.lam
        if l > 0 and float(gamma) * l >= 1:
            raise ValueError(f"the cosine coupling's x-step needs gamma*l < 1 (l = {l:g}), got gamma = {float(gamma):g}")

    def prox_H(self, z: Tensor, y: Tensor, gamma: Scalar, max_iter: int = 60) -> Tensor:
        gmax = float(gamma.max()) if isinstance(gamma, Tensor) else float(gamma)
        self.check_gamma(gmax)
        c = self.lam + 1 / gamma
        w = self.lam * y + z / gamma
        c = torch.as_tensor(c, dtype=w.dtype, device=w.device).expand_as(w)
        lo, hi = (w - self.mu) / c, (w + self.mu) / c
        t = (w + self.mu * torch.sin(w / c)) / c  # one fixed-point step (contraction mu/c) as a start
        eps = torch.finfo(w.dtype).eps
        for _ in range(max_iter):
            f = c * t - w - self.mu * torch.sin(t)
            lo = torch.where(f <= 0, t, lo)
            hi = torch.where(f >= 0, t, hi)
            newton = t - f / (c - self.mu * torch.cos(t))
            inside = (newton >= lo) & (newton <= hi)
            t_new = torch.where(inside, newton, 0.5 * (lo + hi))
            done = bool(((t_new - t).abs() <= 8 * eps * (1 + t.abs())).all())
            t = t_new
            if done:
                break
        return t

    def constants(self) -> dict:
        lam, mu = self.lam, self.mu
        return dict(L2=lam + mu, L3=lam, L4=lam, L5=lam, l=mu - lam, H_inf=-mu * self.n)


__all__ = ["Quadratic", "LinearCoupling", "CosineCoupling"]
