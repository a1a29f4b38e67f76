"""The STAM iteration (Algorithm 1, eq. (algalg1)) and the baselines' steps, written once (read
through :mod:`stam.steps`, which adds the update rules that use them, :mod:`stam.rules`).

Everything here is expressed through the paper's operators, so the synthetic problems
(``stam.synthetic``) and the network optimiser (``stam.dnn``) run the very same update:

- a stochastic gradient of ``G`` at ``y^t`` (passed in as a tensor: the caller samples it),
- ``grad_y_H(x, y)``, the gradient of ``H`` in ``y``,
- ``prox_H(z, y, gamma)``, the exact minimiser of eq. (algx): ``argmin_x H(x, y) + ||x - z||^2 / (2 gamma)``,
- ``prox_F(v, gamma)``, the exact minimiser of eq. (algu): ``argmin_u F(u) + ||u - v||^2 / (2 gamma)``.

Tensors are batched: every tensor carries a leading dimension of ``R`` independent runs
(seeds), and ``gamma``, ``beta`` are floats or tensors broadcastable against ``(R, 1)``.  The
functions are pure (optax style): they return a new :class:`STAMState` and never modify their
inputs, so they can be ``torch.compile``-d and run on CPU or CUDA alike.  They use only
arithmetic and the operators, so they run unchanged on numpy arrays too (the paper audit,
which must not import torch, and the PEP, which runs them on PEPit expressions, do so);
this module imports no torch.

Start rule (the paper leaves ``z^0`` and ``z^{-1}`` undefined).  Given ``y^0`` and a point
``z^{-1}`` (by default ``z^{-1} = y^0`` when x and y live in the same space, otherwise zero), the
x-, u- and z-steps are run once at ``y^0``::

    x^0 = prox_H(z^{-1}, y^0, gamma)          # eq. (algx) with y^{t+1} -> y^0
    u^0 = prox_F(2 x^0 - z^{-1}, gamma)       # eq. (algu)
    z^0 = z^{-1} + u^0 - x^0                  # eq. (algz)

so that the optimality conditions eq. (eq13) and eq. (eq16) already hold at ``t = 0``.  This is
what the proof of Lemma par2 (eq. (eq22)) and of Theorem conv (eq. (eq17)) use at ``t = 0``;
with it, ``z^0 - z^{-1} = u^0 - x^0`` is a genuine iterate difference and the stationarity
measure at ``t = 0`` is bounded exactly as at every later ``t``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Protocol, Union

if TYPE_CHECKING:  # annotations only: the update itself is array-library agnostic
    from torch import Tensor

Scalar = Union[float, "Tensor"]


class ThreeBlockOperators(Protocol):
    """The operators of problem (model) ``min F(x) + G(y) + H(x, y)`` that STAM needs.
    (The stochastic gradient of ``G`` is sampled by the caller and passed to :func:`stam_step`.)"""

    def grad_y_H(self, x: Tensor, y: Tensor) -> Tensor:
        """nabla_y H(x, y)."""

    def prox_H(self, z: Tensor, y: Tensor, gamma: Scalar) -> Tensor:
        """argmin_x H(x, y) + ||x - z||^2 / (2 gamma)   (eq. (algx))."""

    def prox_F(self, v: Tensor, gamma: Scalar) -> Tensor:
        """argmin_u F(u) + ||u - v||^2 / (2 gamma)   (eq. (algu)); any minimiser if several."""


class STAMState(NamedTuple):
    """Iterate ``(y^t, x^t, u^t, z^t)`` of Algorithm 1; each of shape ``(R, ...)``."""

    y: Tensor
    x: Tensor
    u: Tensor
    z: Tensor


def stam_init(y0: Tensor, ops: ThreeBlockOperators, gamma: Scalar, z_prev: Tensor | None = None) -> STAMState:
    """Initial state by the start rule of this module's docstring.

    ``z_prev`` is ``z^{-1}``; if omitted it is ``y0`` (x and y share a space in every problem of
    this toolkit whose x-space equals its y-space; pass it explicitly otherwise)."""
    z_prev = y0 if z_prev is None else z_prev
    x0 = ops.prox_H(z_prev, y0, gamma)  # eq. (algx)
    u0 = ops.prox_F(_reflect(x0, z_prev), gamma)  # eq. (algu)
    z0 = z_prev + (u0 - x0)  # eq. (algz)
    return STAMState(y0, x0, u0, z0)


def stam_step(state: STAMState, grad_G: Tensor, ops: ThreeBlockOperators, gamma: Scalar, beta: Scalar) -> STAMState:
    """One iteration of Algorithm 1 (eq. (algalg1)).

    ``grad_G`` is the unbiased stochastic gradient ``tilde-nabla G(y^t)`` (Definition ass1).

    - eq. (algy): ``y^{t+1} = y^t - (grad_G + nabla_y H(x^t, y^t)) / beta``
      (the unique minimiser of the linearised, ``beta``-proximal y-subproblem),
    - eq. (algx): ``x^{t+1} = prox_H(z^t, y^{t+1}, gamma)``,
    - eq. (algu): ``u^{t+1} = prox_F(2 x^{t+1} - z^t, gamma)``,
    - eq. (algz): ``z^{t+1} = z^t + (u^{t+1} - x^{t+1})``.
    """
    half = stam_half_step(state, grad_G, ops, gamma, beta)  # eqs. (algy), (algx)
    return stam_finish(half, ops.prox_F(stam_point(half), gamma))  # eqs. (algu), (algz)


def stam_half_step(state: STAMState, grad_G: Tensor, ops: ThreeBlockOperators, gamma: Scalar, beta: Scalar) -> STAMState:
    """The first half of :func:`stam_step`, up to its one prox of F: eq. (algy) and eq. (algx), the
    state with ``y^{t+1}``, ``x^{t+1}`` new and ``u^t``, ``z^t`` as they were.  :func:`stam_point` of it
    is what eq. (algu) takes the prox of, and :func:`stam_finish` completes the step.  (The
    ``torch.optim`` form runs the halves as two passes over each layer, the layer's scale of Proj_Q
    between them: :func:`stam.dnn.optim_common.staged_kernels`.)"""
    y, x, u, z = state
    y1 = y_step(ops, x, y, grad_G, beta)  # eq. (algy)
    x1 = ops.prox_H(z, y1, gamma)  # eq. (algx)
    return STAMState(y1, x1, u, z)


def stam_point(half: STAMState) -> Tensor:
    """``2 x^{t+1} - z^t``, the point eq. (algu) takes the prox of, from :func:`stam_half_step`'s state."""
    return _reflect(half.x, half.z)


def stam_finish(half: STAMState, u1: Tensor) -> STAMState:
    """The step completed from :func:`stam_half_step`'s state and ``u^{t+1} = prox_F(stam_point(half),
    gamma)`` (eq. (algu)): eq. (algz), ``z^{t+1} = z^t + (u^{t+1} - x^{t+1})``."""
    return STAMState(half.y, half.x, u1, _z_step(half.z, u1, half.x))


def _z_step(z: Tensor, u1: Tensor, x1: Tensor) -> Tensor:
    """eq. (algz), ``z + (u1 - x1)``: on torch tensors the sum is taken in place in the fresh
    difference (the same numbers, addition being commutative, without a second full-size
    temporary); other arrays (numpy, PEPit expressions) by the arithmetic."""
    d = u1 - x1
    if hasattr(d, "add_") and getattr(z, "shape", None) == d.shape and getattr(z, "dtype", None) == d.dtype:
        return d.add_(z)
    return z + d


def _reflect(x1: Tensor, z: Tensor) -> Tensor:
    """``2 x1 - z``, the point eq. (algu) projects: on torch tensors one pass (``lerp`` with weight
    -1) instead of two; other arrays (numpy, PEPit expressions) by the arithmetic."""
    return x1.lerp(z, -1.0) if hasattr(x1, "lerp") else 2 * x1 - z


def y_step(ops, x: Tensor, y: Tensor, grad_G: Tensor, beta: Scalar) -> Tensor:
    """eq. (algy): ``y - (grad_G + nabla_y H(x, y)) / beta``.  An operator may carry a fused form of
    this very update for its array type (``ops.y_step(x, y, grad_G, beta)``, e.g.
    :meth:`stam.operators.QuadraticCoupling.y_step`: two passes over memory on torch tensors
    instead of five); where it has none, or returns None for these arrays, the form above."""
    fused = getattr(ops, "y_step", None)
    y1 = fused(x, y, grad_G, beta) if fused is not None else None
    return y1 if y1 is not None else y - (grad_G + ops.grad_y_H(x, y)) / beta


def as_batch_scalar(value: Scalar, like: Tensor) -> Scalar:
    """A per-run parameter (shape ``(R,)``) reshaped to broadcast against ``like`` ``(R, ...)``;
    floats pass through unchanged."""
    if getattr(value, "ndim", 0) == 1:
        if hasattr(value, "to"):  # torch: match dtype and device
            value = value.to(like)
        return value.reshape(-1, *([1] * (like.ndim - 1)))
    return value


def decayed(grad: Tensor, weights: Tensor, weight_decay: Scalar | None) -> Tensor:
    """``grad + weight_decay * weights``: weight decay added to a gradient at the weights it decays (the float
    weights of a quantised layer, a float parameter itself); ``grad`` where ``weight_decay`` is None.  The one
    form of weight decay of the trainer and the ``torch.optim`` classes; a per-run ``(R,)`` decay broadcasts."""
    return grad if weight_decay is None else grad + as_batch_scalar(weight_decay, weights) * weights


# --------------------------------------------------------------------------- the baselines of Section 3.1

class QuantizedState(NamedTuple):
    """Iterate of PSGD / BC / BR (eqs. (alg:PSGD), (alg:BC), (alg:BR)): the float weights ``u = U^t``
    and the weights ``w`` of the forward pass (where the next stochastic gradient is taken):
    ``W~^t`` for BC and BR, ``U^t`` itself for PSGD.  Each of shape ``(R, ...)``."""

    u: Tensor
    w: Tensor


def psgd_step(state: QuantizedState, grad: Tensor, ops, lr: Scalar) -> QuantizedState:
    """eq. (alg:PSGD) as printed: ``U^{t+1} = U^t - lr grad``, with ``grad`` taken at ``U^t``
    (``state.w``); ``W~^{t+1} = Proj_Q(U^{t+1})`` is the output, ``ops.prox_F(u, lr)``, and is
    not fed back, so the forward weights stay ``U``."""
    u1 = _descend(state.u, grad, lr)
    return QuantizedState(u1, u1)


def bc_step(state: QuantizedState, grad: Tensor, ops, lr: Scalar) -> QuantizedState:
    """eq. (alg:BC): ``U^{t+1} = U^t - lr grad`` (``grad`` taken at ``W~^t``),
    ``W~^{t+1} = Proj_Q(U^{t+1})`` = ``ops.prox_F(U^{t+1}, lr)`` (F = I_Q)."""
    u1 = _descend(state.u, grad, lr)
    return QuantizedState(u1, ops.prox_F(u1, lr))


#: BinaryRelax's growth of its weight lambda, ``lam_{t+1} = rho lam_t`` once per epoch
#: (eq. (alg:BR), Table para: ``rho = 1.02``): the network preset and search space of BR
#: (:mod:`stam.dnn.presets`) and the synthetic BR (:mod:`stam.synthetic.baselines`) read it here.
BR_RHO = 1.02


def br_relax(u: Tensor, ops, lam: Scalar, lr: Scalar = 1.0) -> Tensor:
    """BinaryRelax's relaxed weights ``(lam Proj_Q(u) + u) / (lam + 1)``, the minimiser of
    ``(lam/2) dist(W, Q)^2 + ||W - u||^2 / 2`` (eq. (BR))."""
    p = ops.prox_F(u, lr)
    if hasattr(p, "lerp"):  # a torch tensor: one pass, p + (u - p) / (lam + 1), instead of three
        return _toward(p, u, 1 / (lam + 1), ops)
    return (lam * p + u) / (lam + 1)


def _toward(p: Tensor, u: Tensor, t: Scalar, ops) -> Tensor:
    """``p + t (u - p)`` for the projection ``p = ops.prox_F(...)`` (torch tensors, one ``lerp``):
    written over ``p`` where ``ops`` declares that its prox returns a new tensor
    (``PROX_IS_NEW``, :class:`stam.operators.IndicatorQ`), so no second full-size buffer is made;
    into a new tensor for any other operator (its prox might hand back its input)."""
    if getattr(ops, "PROX_IS_NEW", False) and p.shape == u.shape and p.dtype == u.dtype:
        return p.lerp_(u, t)
    return p.lerp(u, t)


def br_step(state: QuantizedState, grad: Tensor, ops, lr: Scalar, lam: Scalar, relaxed=True) -> QuantizedState:
    """eq. (alg:BR): ``U^{t+1} = U^t - lr grad`` (``grad`` taken at ``W~^t``); in the first phase
    (``relaxed``) ``W~^{t+1} = (lam Proj_Q(U^{t+1}) + U^{t+1}) / (lam + 1)``, in the second
    ``W~^{t+1} = Proj_Q(U^{t+1})`` (BC).  ``relaxed`` is a bool, or a per-run boolean tensor
    broadcastable against ``(R, ...)`` (runs in different phases)."""
    u1 = _descend(state.u, grad, lr)
    if relaxed is True:
        return QuantizedState(u1, br_relax(u1, ops, lam, lr))
    if relaxed is False:
        return QuantizedState(u1, ops.prox_F(u1, lr))
    p = ops.prox_F(u1, lr)
    if hasattr(p, "lerp"):  # torch: one pass, the weight (R, 1) per run
        return QuantizedState(u1, _toward(p, u1, relaxed / (lam + 1), ops))
    return QuantizedState(u1, p + relaxed * ((u1 - p) / (lam + 1)))  # = br_relax where relaxed, p elsewhere


def _descend(u: Tensor, grad: Tensor, lr: Scalar) -> Tensor:
    """``u - lr grad``, the gradient step of eqs. (alg:PSGD), (alg:BC), (alg:BR): on torch tensors
    one pass (``addcmul`` with a per-run ``lr``, ``add`` with a float one) instead of two; other
    arrays (numpy) by the arithmetic."""
    if not hasattr(u, "addcmul"):
        return u - lr * grad
    if hasattr(lr, "shape"):
        return u.addcmul(lr, grad, value=-1)
    return u.add(grad, alpha=-lr)


__all__ = ["BR_RHO", "Scalar", "ThreeBlockOperators", "STAMState", "stam_init", "stam_step", "stam_half_step", "stam_point", "stam_finish", "y_step", "as_batch_scalar", "decayed",
           "QuantizedState", "psgd_step", "bc_step", "br_step", "br_relax"]
