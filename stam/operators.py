"""Standard operators for :mod:`stam.steps`.

- :class:`QuadraticCoupling`: ``H(x, y) = (lam / 2) ||x - y||^2``, the coupling of the paper's
  network model (eq. (binary-model), eq. (stam)).
- :class:`IndicatorQ`: ``F = indicator of Q`` (eq. (eq01)); its prox is the projection onto Q.

Together they give the four updates of eq. (alg:stamm) as derived from Algorithm 1 (with the
W-update using ``x^t``; see ``stam paper-check``).

Like :mod:`stam.steps`, this module imports no array library: ``QuadraticCoupling`` and
``Composite`` work on torch tensors, numpy arrays and PEPit expressions alike (``stam.theory.worstcase.pep``
uses them without torch); ``IndicatorQ`` imports :mod:`stam.quantize` (torch) when it is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from stam.steps import Scalar

if TYPE_CHECKING:  # annotations only
    from torch import Tensor


@dataclass
class QuadraticCoupling:
    """``H(x, y) = (lam/2) ||x - y||^2``.

    ``nabla_y H(x, y) = lam (y - x)``; the x-step eq. (algx) has the closed form
    ``argmin_x (lam/2)||x - y||^2 + ||x - z||^2/(2 gamma) = (z + gamma lam y) / (1 + gamma lam)``.
    """

    lam: Scalar

    def H(self, x: Tensor, y: Tensor) -> Tensor:
        """Per-run value, shape ``(R,)``."""
        d = (x - y).flatten(1)
        lam = self.lam.reshape(-1) if hasattr(self.lam, "reshape") else self.lam
        return 0.5 * lam * (d * d).sum(dim=1)

    def grad_x_H(self, x: Tensor, y: Tensor) -> Tensor:
        return self.lam * (x - y)

    def grad_y_H(self, x: Tensor, y: Tensor) -> Tensor:
        return self.lam * (y - x)

    def y_step(self, x: Tensor, y: Tensor, grad_G: Tensor, beta: Scalar):
        """eq. (algy) for this H (:func:`stam.steps.y_step`) on torch tensors, fused:
        ``y - (grad_G + lam (y - x)) / beta = lerp(y, x, lam / beta) - grad_G / beta``, two passes
        over memory (a ``lerp``, then ``addcdiv_`` in place) instead of five; None for other arrays
        (numpy, PEPit expressions), which take the unfused form."""
        if not hasattr(y, "lerp"):
            return None
        out = y.lerp(x, self.lam / beta)
        if hasattr(beta, "shape"):
            return out.addcdiv_(grad_G, beta, value=-1)
        return out.add_(grad_G, alpha=-1.0 / beta)

    def prox_H(self, z: Tensor, y: Tensor, gamma: Scalar) -> Tensor:
        gl = gamma * self.lam
        if hasattr(z, "lerp"):  # a torch tensor: one pass instead of three
            return z.lerp(y, gl / (1 + gl))
        return (z + gl * y) / (1 + gl)  # any other arithmetic type (PEPit expressions in stam.theory.worstcase.pep)


@dataclass
class IndicatorQ:
    """``F = indicator of Q`` with blocks given by ``block_ids`` (see :mod:`stam.quantize`;
    ``None``: each run's whole tensor is one block).  Its prox, for every ``gamma > 0``, is the
    projection onto Q.  The partition is analysed once, into ``blocks``
    (:class:`stam.quantize.Blocks`)."""

    block_ids: Tensor | None
    num_blocks: int = 1

    #: :meth:`prox_F` returns a new tensor (never its input or a view of it), which a caller may
    #: overwrite (:func:`stam.steps.br_relax`)
    PROX_IS_NEW: ClassVar[bool] = True

    def __post_init__(self):
        from stam.quantize import Blocks, project_Q  # torch, only where Q is used

        self.blocks = None if self.block_ids is None else Blocks.of(self.block_ids, self.num_blocks)
        self._project = project_Q

    def prox_F(self, v: Tensor, gamma: Scalar) -> Tensor:
        return self._project(v, self.blocks)


@dataclass
class Composite:
    """Glue: an object with ``grad_y_H``, ``prox_H`` and ``prox_F`` from an H-part and an F-part."""

    h: object
    f: object

    def grad_y_H(self, x: Tensor, y: Tensor) -> Tensor:
        return self.h.grad_y_H(x, y)

    def prox_H(self, z: Tensor, y: Tensor, gamma: Scalar) -> Tensor:
        return self.h.prox_H(z, y, gamma)

    @property
    def y_step(self):
        """The H-part's fused form of eq. (algy), where it has one (:func:`stam.steps.y_step`)."""
        return getattr(self.h, "y_step", None)

    def prox_F(self, v: Tensor, gamma: Scalar) -> Tensor:
        return self.f.prox_F(v, gamma)


__all__ = ["QuadraticCoupling", "IndicatorQ", "Composite"]
