"""PSGD as printed in eq. (alg:PSGD)::

    U^{t+1}  = U^t - gamma (grad L(U^t) + wd U^t)
    W~^{t+1} = Proj_Q(U^{t+1})

The gradient is taken at the float ``U`` and ``W~`` is not fed back, so the iterates ``U^t`` are
those of plain SGD and ``W~^t`` is their projection, the output evaluated with truly binary
weights.  The parameters hold ``U``; no optimiser state.  (The projected SGD of the cited works,
``U^{t+1} = Proj_Q(U^t - gamma grad L(U^t))``, is not what eq. (alg:PSGD) prints.)
"""

from __future__ import annotations

from torch import Tensor

from stam.algorithm import QuantizedState, as_batch_scalar, psgd_step
from stam.dnn.optim_common import BatchedRule, QuantizingOptimizer, check_hyper, hyper_tensor, project_layer
from stam.operators import IndicatorQ

#: F = I_Q with each layer one block: the projection of eq. (0411) (its prox)
LAYER_Q = IndicatorQ(None)


def psgd_kernel(Ws: list[Tensor], Gs: list[Tensor], lr: Tensor, weight_decay: Tensor | None) -> None:
    """eq. (alg:PSGD) on every layer of a group, in place (the parameters hold ``U``): each layer
    is one run (R = 1) of the shared :func:`stam.algorithm.psgd_step`."""
    for W, G in zip(Ws, Gs):
        g = G if weight_decay is None else G + weight_decay * W
        W.copy_(psgd_step(QuantizedState(W.unsqueeze(0), W.unsqueeze(0)), g.unsqueeze(0), LAYER_Q, lr).u.squeeze(0))


class PSGD(QuantizingOptimizer):
    """PSGD, eq. (alg:PSGD).  Hyperparameters per group: ``lr``, ``weight_decay``.  Quantised groups
    take :func:`psgd_kernel` (the shared step), the others SGD; they differ in
    :meth:`binary_weights` (``Proj_Q(U)``)."""

    def __init__(self, params, lr: float, weight_decay: float = 0.0, compile: bool | str = "auto"):
        check_hyper(dict(lr=lr), dict(weight_decay=weight_decay))
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay), compile)

    def _float_lr(self, group: dict) -> float:
        return group["lr"]

    def _quantized_step(self, group: dict) -> None:
        params = [p for p in group["params"] if p.grad is not None]  # as in SGD: no gradient, no step
        if not params:
            return
        wd = hyper_tensor(group["weight_decay"], params[0]) if group["weight_decay"] else None
        self._run(psgd_kernel, group, [p.detach() for p in params], [p.grad for p in params],
                  hyper_tensor(group["lr"], params[0]), wd)

    def _binary_values(self):
        return [(p, project_layer(p.detach())) for g in self._quantized_groups() for p in g["params"]]

    def _float_values(self):
        return []  # the parameters hold U


class BatchedPSGD(BatchedRule):
    """eq. (alg:PSGD) for R runs (:class:`BatchedRule`): :func:`stam.algorithm.psgd_step` over
    all layers, from ``U^0`` = the weights (the forward pass at ``U``)."""

    def init(self, w, hyper, q):
        return QuantizedState(w.clone(), w.clone())

    def step(self, state, grad, hyper, q):
        return psgd_step(state, grad, q, as_batch_scalar(hyper["lr"], state.u))


#: the batched form read by :mod:`stam.dnn.batched` (named in :mod:`stam.dnn.catalog`)
BATCHED = BatchedPSGD()

__all__ = ["PSGD", "psgd_kernel", "BATCHED"]
