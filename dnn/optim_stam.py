"""STAM for binary-weight networks, eq. (alg:stamm) as derived from Algorithm 1 (eq. (algalg1)).

Model eq. (stam): ``min_{W, W~} L(W) + (lam/2)||W - W~||^2 + I_Q(W~)``, i.e. problem (model) with
``y = W`` (the network's float weights, the parameters), ``G = L``, ``H(x, y) = (lam/2)||x - y||^2``
(:class:`stam.operators.QuadraticCoupling`) and ``F = I_Q`` (:class:`stam.operators.IndicatorQ`,
one block per layer).  The step is THE shared update :func:`stam.algorithm.stam_step` with the
paper's names ``x = U``, ``u = V``, ``z = X``::

    W^{t+1} = ((beta - lam) W^t + lam U^t - grad L(W^t)) / beta      # eq. (algy); U^t, not W~^t
    U^{t+1} = (gamma lam W^{t+1} + X^t) / (gamma lam + 1)            # eq. (algx)
    V^{t+1} = Proj_Q(2 U^{t+1} - X^t)                                # eq. (algu)
    X^{t+1} = X^t + V^{t+1} - U^{t+1}                                # eq. (algz)

(The printed eq. (alg:stamm) has ``lam W~^t`` and ``grad L(W^T)`` in the first line; Algorithm 1
gives ``lam U^t`` = ``lam x^t`` and ``grad L(W^t)``, see ``stam paper-check``.)  The binary weights
are ``V`` (in Q); the float weights are ``W``, which the parameters hold.

Start rule (:func:`stam.algorithm.stam_init`, ``z^{-1} = W^0``): before the first step (or the
first :meth:`STAM.binary_weights`) ``U^0 = W^0``, ``V^0 = Proj_Q(W^0)``, ``X^0 = V^0``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from stam.algorithm import STAMState, stam_init, stam_step
from stam.dnn.optim_common import QuantizingOptimizer, check_hyper, hyper_tensor
from stam.operators import Composite, IndicatorQ, QuadraticCoupling


def _ops(lam) -> Composite:
    """The operators of eq. (stam) for one layer: H = (lam/2)||x - y||^2, F = I_Q (one block)."""
    return Composite(QuadraticCoupling(lam), IndicatorQ(None))


def stam_kernel(Ws: list[Tensor], Gs: list[Tensor], Us: list[Tensor], Vs: list[Tensor], Xs: list[Tensor],
                gamma: Tensor, lam: Tensor, beta: Tensor, weight_decay: Tensor | None) -> Tensor:
    """One STAM step on every layer of a group, in place (``W`` = parameters, state ``U, V, X``).

    Each layer is one run (``R = 1``) of :func:`stam.algorithm.stam_step`.  ``weight_decay``
    (``None`` for none) adds ``(wd/2)||W||^2`` to G.  Returns ``||grad G(W^t) + lam (W^t - U^t)||^2``
    summed over the layers (the stochastic y-gradient of eq. (algy); it costs nothing extra: the
    compiled kernel reads these tensors in its reduction pass anyway)."""
    ops = _ops(lam)
    grad_sq = torch.zeros((), dtype=gamma.dtype, device=gamma.device)
    for W, G, U, V, X in zip(Ws, Gs, Us, Vs, Xs):
        w, u, x = W.unsqueeze(0), U.unsqueeze(0), X.unsqueeze(0)
        g = G.unsqueeze(0)
        if weight_decay is not None:
            g = g + weight_decay * w
        new = stam_step(STAMState(w, u, V.unsqueeze(0), x), g, ops, gamma, beta)
        grad_sq = grad_sq + (g + ops.grad_y_H(u, w)).square().sum()
        W.copy_(new.y.squeeze(0))
        U.copy_(new.x.squeeze(0))
        V.copy_(new.u.squeeze(0))
        X.copy_(new.z.squeeze(0))
    return grad_sq


def z_increment_kernel(Vs: list[Tensor], Us: list[Tensor]) -> Tensor:
    """``sum ||V - U||^2`` over the layers: ``||X^{t+1} - X^t||^2`` after a step (eq. (algz)).

    Computed on demand from the state rather than in :func:`stam_kernel`: there it would need a
    third pass (inductor does not fuse a reduction with the in-place write-back of what it reads),
    here it is one read of ``V`` and ``U`` and is only paid when asked for."""
    return sum((V - U).square().sum(dtype=torch.float64) for V, U in zip(Vs, Us))


class STAM(QuantizingOptimizer):
    """STAM, eq. (alg:stamm) (see the module docstring).

    Hyperparameters (per group, may change between steps): ``gamma`` (> 0), ``lam`` (> 0),
    ``beta`` (> 0), ``weight_decay`` (>= 0, default 0; Table para uses none).  Non-quantised
    groups take the y-step alone with ``H = 0``: ``p <- p - (g + wd p) / beta``.

    Per-parameter state of a quantised parameter: ``U``, ``X``, ``V`` (same shape and layout as
    the parameter).  :meth:`stationarity_proxies` gives the last step's proxies."""

    def __init__(self, params, gamma: float, lam: float, beta: float, weight_decay: float = 0.0, compile: bool | str = "auto"):
        check_hyper(dict(gamma=gamma, lam=lam, beta=beta), dict(weight_decay=weight_decay))
        self._last_step: list[tuple[dict, float, Tensor]] = []  # (group, gamma, grad proxy) of the last step
        super().__init__(params, dict(gamma=gamma, lam=lam, beta=beta, weight_decay=weight_decay), compile)

    def _float_lr(self, group: dict) -> float:
        return 1.0 / group["beta"]

    def _init_state(self, group: dict) -> None:
        """Start rule of :func:`stam.algorithm.stam_init` for parameters without state."""
        for p in group["params"]:
            st = self.state[p]
            if "U" not in st:
                s0 = stam_init(p.detach().unsqueeze(0), _ops(group["lam"]), group["gamma"])
                st["U"], st["V"], st["X"] = (t.squeeze(0).clone(memory_format=torch.preserve_format) for t in (s0.x, s0.u, s0.z))

    def _quantized_step(self, group: dict) -> None:
        self._init_state(group)
        params = group["params"]
        like = params[0]
        h = [hyper_tensor(group[k], like) for k in ("gamma", "lam", "beta")]
        wd = hyper_tensor(group["weight_decay"], like) if group["weight_decay"] else None
        st = [self.state[p] for p in params]
        grad_sq = self._run(stam_kernel, group, [p.detach() for p in params], self._grads(params),
                            [s["U"] for s in st], [s["V"] for s in st], [s["X"] for s in st], *h, wd)
        self._last_step.append((group, group["gamma"], grad_sq))

    def step(self, closure=None):
        self._last_step = []
        return super().step(closure)

    def stationarity_proxies(self) -> dict[str, Tensor]:
        """The last step's ``{"grad": ||grad L(W^t) + lam (W^t - U^t)||^2, "z": ||X^{t+1} - X^t|| / gamma}``
        over all quantised parameters together (``z`` combines groups as the norm of the stacked
        ``(X^{t+1} - X^t) / gamma``).  0-d float64 tensors on the parameters' device, so reading
        them each step costs no host synchronisation; ``float()`` them to read.  ``z`` is
        computed here from the state (``X^{t+1} - X^t = V^{t+1} - U^{t+1}``, eq. (algz))."""
        if not self._last_step:
            raise RuntimeError("stationarity_proxies(): no step has been taken yet")
        grad = sum(g.double() for _, _, g in self._last_step)
        z_sq = 0
        for group, gamma, _ in self._last_step:
            st = [self.state[p] for p in group["params"]]
            z_sq = z_sq + self._run(z_increment_kernel, group, [s["V"] for s in st], [s["U"] for s in st]) / gamma**2
        return {"grad": grad, "z": z_sq.sqrt()}

    def _binary_values(self):
        for group in self._quantized_groups():
            self._init_state(group)
        return [(p, self.state[p]["V"]) for g in self._quantized_groups() for p in g["params"]]

    def _float_values(self):
        return []  # the parameters hold W


__all__ = ["STAM", "stam_kernel", "z_increment_kernel"]
