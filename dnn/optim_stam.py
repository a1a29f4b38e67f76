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

from stam.algorithm import STAMState, as_batch_scalar, stam_init, stam_step
from stam.dnn.optim_common import BatchedRule, QuantizingOptimizer, check_hyper, hyper_tensor
from stam.operators import Composite, IndicatorQ, QuadraticCoupling


def _ops(lam, q=None) -> Composite:
    """The operators of eq. (stam): H = (lam/2)||x - y||^2, F = I_Q (``q``; default: one block,
    one layer)."""
    return Composite(QuadraticCoupling(lam), q if q is not None else IndicatorQ(None))


def stam_kernel(Ws: list[Tensor], Gs: list[Tensor], Us: list[Tensor], Vs: list[Tensor], Xs: list[Tensor],
                gamma: Tensor, lam: Tensor, beta: Tensor, weight_decay: Tensor | None) -> tuple[Tensor, Tensor]:
    """One STAM step on every layer of a group, in place (``W`` = parameters, state ``U, V, X``).

    Each layer is one run (``R = 1``) of :func:`stam.algorithm.stam_step`.  ``weight_decay``
    (``None`` for none) adds ``(wd/2)||W||^2`` to G.  Returns, summed over the layers (float64),
    ``||grad G(W^t) + lam (W^t - U^t)||^2`` (the stochastic y-gradient of eq. (algy)) and
    ``||X^{t+1} - X^t||^2 = ||V^{t+1} - U^{t+1}||^2`` (eq. (algz)).

    Both come from the reduction pass the projection needs anyway, so they cost no extra pass
    over memory: with ``v = 2 U^{t+1} - X^t``, ``V^{t+1} = s sign(v)`` and ``s = mean |v|``,
    ``||V - U||^2 = n s^2 - 2 s sum(sign(v) U) + sum(U^2)``, accumulated in float64 (a direct
    ``sum((V - U)^2)`` would need a third pass: inductor does not fuse a reduction with the
    in-place write-back of the tensors it reads)."""
    ops = _ops(lam)
    f64 = dict(dtype=torch.float64)
    grad_sq = torch.zeros((), **f64, device=gamma.device)
    dz_sq = torch.zeros((), **f64, device=gamma.device)
    for W, G, U, V, X in zip(Ws, Gs, Us, Vs, Xs):
        w, u, x = W.unsqueeze(0), U.unsqueeze(0), X.unsqueeze(0)
        g = G.unsqueeze(0)
        if weight_decay is not None:
            g = g + weight_decay * w
        new = stam_step(STAMState(w, u, V.unsqueeze(0), x), g, ops, gamma, beta)
        grad_sq = grad_sq + (g + ops.grad_y_H(u, w)).square().sum(**f64)
        v = 2 * new.x - x  # the point projected in eq. (algu)
        s = v.abs().mean().double()
        u1 = new.x.double()
        dz_sq = dz_sq + (u1.numel() * s * s - 2 * s * torch.where(v >= 0, u1, -u1).sum() + u1.square().sum())
        W.copy_(new.y.squeeze(0))
        U.copy_(new.x.squeeze(0))
        V.copy_(new.u.squeeze(0))
        X.copy_(new.z.squeeze(0))
    return grad_sq, dz_sq.clamp(min=0)


class STAM(QuantizingOptimizer):
    """STAM, eq. (alg:stamm) (see the module docstring).

    Hyperparameters (per group, may change between steps): ``gamma`` (> 0), ``lam`` (> 0),
    ``beta`` (> 0), ``weight_decay`` (>= 0, default 0; Table para uses none); ``lr`` is ``1/beta``,
    the y-step's step size, kept in step with ``beta`` (set either; a ``torch.optim.lr_scheduler``
    sets ``lr``).  Non-quantised
    groups take the y-step alone with ``H = 0``: ``p <- p - (g + wd p) / beta``.

    Per-parameter state of a quantised parameter: ``U``, ``X``, ``V`` (same shape and layout as
    the parameter).  :meth:`stationarity_proxies` gives the last step's proxies."""

    def __init__(self, params, gamma: float, lam: float, beta: float, weight_decay: float = 0.0, compile: bool | str = "auto"):
        check_hyper(dict(gamma=gamma, lam=lam, beta=beta), dict(weight_decay=weight_decay))
        self._last_step: list[tuple[Tensor, Tensor]] = []  # per quantised group: grad proxy, ||dX||^2 / gamma^2
        self._seen: dict[int, tuple[float, float]] = {}  # per group: the (lr, beta) of the last sync
        super().__init__(params, dict(gamma=gamma, lam=lam, beta=beta, weight_decay=weight_decay), compile)
        self._sync_lr()

    def _sync_lr(self) -> None:
        """Every group's ``lr`` is the step ``1/beta`` of the y-step eq. (algy), so that
        ``torch.optim.lr_scheduler`` drives STAM as it drives SGD: where ``lr`` changed since the
        last step (a scheduler), ``beta = 1/lr``; where ``beta`` changed (a preset's schedule,
        :func:`stam.dnn.loop.apply_hyper`), ``lr = 1/beta``."""
        for i, g in enumerate(self.param_groups):
            g.setdefault("lr", 1.0 / g["beta"])
            lr, beta = self._seen.get(i, (g["lr"], g["beta"]))
            if g["lr"] != lr:
                check_hyper(dict(lr=g["lr"]), {})
                g["beta"] = 1.0 / g["lr"]
            elif g["beta"] != beta:
                check_hyper(dict(beta=g["beta"]), {})
                g["lr"] = 1.0 / g["beta"]
            self._seen[i] = (g["lr"], g["beta"])

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
        grad_sq, dz_sq = self._run(stam_kernel, group, [p.detach() for p in params], self._grads(params),
                                   [s["U"] for s in st], [s["V"] for s in st], [s["X"] for s in st], *h, wd)
        self._last_step.append((grad_sq, dz_sq / group["gamma"] ** 2))

    def step(self, closure=None):
        self._last_step = []
        self._sync_lr()
        return super().step(closure)

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self._seen = {}
        self._sync_lr()

    def stationarity_proxies(self) -> dict[str, Tensor]:
        """The last step's ``{"grad": ||grad L(W^t) + lam (W^t - U^t)||^2, "z": ||X^{t+1} - X^t|| / gamma}``
        over all quantised parameters together (``z`` combines groups as the norm of the stacked
        ``(X^{t+1} - X^t) / gamma``).  0-d float64 tensors on the parameters' device, computed
        within the step (see :func:`stam_kernel`), so reading them each step costs neither a pass
        over memory nor a host synchronisation; ``float()`` them to read."""
        if not self._last_step:
            raise RuntimeError("stationarity_proxies(): no step has been taken yet")
        grad_sq, z_sq = (sum(v) for v in zip(*self._last_step))
        return {"grad": grad_sq, "z": z_sq.sqrt()}

    def _binary_values(self):
        for group in self._quantized_groups():
            self._init_state(group)
        return [(p, self.state[p]["V"]) for g in self._quantized_groups() for p in g["params"]]

    def _float_values(self):
        return []  # the parameters hold W


class BatchedSTAM(BatchedRule):
    """eq. (alg:stamm) for R runs (:class:`BatchedRule`): one :func:`stam.algorithm.stam_step`
    over all layers with ``lam``, ``gamma``, ``beta`` per run, started by :func:`stam.algorithm.stam_init`.
    Forward pass and float weights ``W`` (= ``y``), binary weights ``V`` (= ``u``); float
    parameters take the y-step with H = 0: ``p <- p - g / beta``."""

    def init(self, w, hyper, q):
        return stam_init(w, _ops(as_batch_scalar(hyper["lam"], w), q), as_batch_scalar(hyper["gamma"], w))

    def step(self, state, grad, hyper, q):
        r = lambda k: as_batch_scalar(hyper[k], state.y)  # noqa: E731
        return stam_step(state, grad, _ops(r("lam"), q), r("gamma"), r("beta"))

    def forward_weights(self, state):
        return state.y

    def binary_weights(self, state, q):
        return state.u

    def float_weights(self, state):
        return state.y

    def float_step(self, p, grad, buf, hyper):
        return p - grad / as_batch_scalar(hyper["beta"], p), buf

    def proxies(self, state, new, grad, hyper):
        """``||grad L(W^t) + lam (W^t - U^t)||^2`` (the stochastic y-gradient of eq. (algy)) and
        ``||X^{t+1} - X^t||^2 / gamma^2`` (eq. (algz)), per run, in float64: what
        :meth:`STAM.stationarity_proxies` reports (:func:`stam_kernel`)."""
        dims = tuple(range(1, grad.dim()))
        norm = lambda t: torch.linalg.vector_norm(t, dim=dims).double()  # noqa: E731  (one pass each)
        # eq. (algy): grad + lam (y^t - x^t) = beta (y^t - y^{t+1}), so one difference gives it
        beta, gamma = hyper["beta"].double(), hyper["gamma"].double()
        return (beta * norm(state.y - new.y)) ** 2, (norm(new.z - state.z) / gamma) ** 2


#: the batched form read by :mod:`stam.dnn.batched` (named in :mod:`stam.dnn.catalog`)
BATCHED = BatchedSTAM()

__all__ = ["STAM", "stam_kernel", "BATCHED"]
