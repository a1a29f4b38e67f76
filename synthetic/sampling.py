"""Minibatch sampling of a finite sum ``G = (1/N) sum_i G_i`` (eq. (eq500)), batched over R runs.

Both samplers are written in the unified form of eq. (stochastic G),

    tilde-nabla G(y) = (1/N) sum_i v_i nabla G_i(y),

and both reduce to the average of the ``b`` sampled gradients, ``(1/b) sum_k nabla G_{i_k}(y)``:

- **b-nice without replacement** (the paper's sampling, Section 2.1): a uniformly random subset
  ``S`` of size ``b``; ``v_i = 1_{i in S} / p_i`` with ``p_i = b/N``.  Then ``E[v_i] = 1`` and
  ``E[v_i^2] = (N/b)^2 * (b/N) = N/b``.
- **b-nice with replacement**: ``b`` indices drawn independently and uniformly; ``c_i`` = how
  often ``i`` was drawn, ``c_i ~ Binomial(b, 1/N)``, and ``v_i = (N/b) c_i``.  Then
  ``E[v_i] = (N/b)(b/N) = 1`` and
  ``E[v_i^2] = (N/b)^2 (Var c_i + (E c_i)^2) = (N/b)^2 (b/N)(1 - 1/N + b/N) = N/b + (b-1)/b``.

``E[v_i^2]`` enters the expected-smoothness constant ``A`` of Lemma es-lemma (corrected:
``A = 2 max(max_i L1^i E[v_i^2], L3*)``, see :mod:`stam.synthetic.problems`).

A draw is an index tensor of shape ``(R, b)`` (one row per run), made by one call into a
``torch.Generator``: never a Python loop over runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class Sampling:
    """b-nice sampling of ``{0, ..., N-1}``, without (default) or with replacement."""

    N: int
    b: int
    replacement: bool = False

    def __post_init__(self):
        if self.N < 1 or self.b < 1:
            raise ValueError(f"sampling needs N >= 1 and b >= 1, got N={self.N}, b={self.b}")
        if not self.replacement and self.b > self.N:
            raise ValueError(f"without replacement the batch size b={self.b} cannot exceed N={self.N}")

    @property
    def full(self) -> bool:
        """True when every draw is the whole sum (b = N without replacement): the deterministic case."""
        return not self.replacement and self.b == self.N

    def second_moment(self) -> float:
        """``E[v_i^2]`` (the same for every i), derived in the module docstring."""
        if self.replacement:
            return self.N / self.b + (self.b - 1) / self.b
        return self.N / self.b

    def draw(self, R: int, generator: torch.Generator | None = None, device=None) -> Tensor:
        """Indices of the sampled terms, shape ``(R, b)``, one independent draw per run."""
        if self.full:
            return torch.arange(self.N, device=device).expand(R, self.N)
        if self.replacement:
            return torch.randint(0, self.N, (R, self.b), generator=generator, device=device)
        keys = torch.rand(R, self.N, generator=generator, device=device)
        return keys.topk(self.b, dim=1, sorted=False).indices

    def weights(self, idx: Tensor) -> Tensor:
        """The sampling vector ``v`` of eq. (stochastic G) for a draw ``idx`` ``(R, b)``: ``(R, N)``,
        ``v_i = (N/b) * (number of times i was drawn)``."""
        counts = torch.zeros(idx.shape[0], self.N, dtype=torch.float64, device=idx.device)
        counts.scatter_add_(1, idx, torch.ones(idx.shape, dtype=torch.float64, device=idx.device))
        return counts * (self.N / self.b)

    def describe(self) -> str:
        return f"{self.b}-nice {'with' if self.replacement else 'without'} replacement of N={self.N}"


__all__ = ["Sampling"]
