"""BinaryConnect (Courbariaux et al.), eq. (alg:BC)::

    U^{t+1}  = U^t - gamma (grad L(W~^t) + wd U^t)
    W~^{t+1} = Proj_Q(U^{t+1})

The parameters hold ``W~`` (the weights of the forward pass, in Q); the float weights ``U`` live
in the optimiser state.  Weight decay acts on ``U`` (as in the reference implementations, where
the float copy is what the SGD step updates).  Start: ``U^0`` = the parameters when the optimiser
is built, which are then replaced by ``W~^0 = Proj_Q(U^0)``, so the first gradient is taken at
weights in Q.  (When resuming, build the optimiser first, then load the model's and the
optimiser's state dicts.)
"""

from __future__ import annotations

import torch
from torch import Tensor

from stam.algorithm import QuantizedState, as_batch_scalar, bc_step
from stam.dnn.optim_common import BatchedRule, QuantizingOptimizer, check_hyper, hyper_tensor, project_layer
from stam.operators import IndicatorQ

#: F = I_Q with each layer one block: the projection of eq. (0411) (its prox)
LAYER_Q = IndicatorQ(None)


def bc_kernel(Ws: list[Tensor], Gs: list[Tensor], Us: list[Tensor], lr: Tensor, weight_decay: Tensor | None) -> None:
    """eq. (alg:BC) on every layer of a group, in place (``W`` = parameters = W~, state ``U``):
    each layer is one run (R = 1) of the shared :func:`stam.algorithm.bc_step`."""
    for W, G, U in zip(Ws, Gs, Us):
        g = G if weight_decay is None else G + weight_decay * U
        new = bc_step(QuantizedState(U.unsqueeze(0), W.unsqueeze(0)), g.unsqueeze(0), LAYER_Q, lr)
        U.copy_(new.u.squeeze(0))
        W.copy_(new.w.squeeze(0))


class BinaryConnect(QuantizingOptimizer):
    """BinaryConnect, eq. (alg:BC).  Hyperparameters per group: ``lr`` (the paper's gamma),
    ``weight_decay``.  Per-parameter state ``U``.  Non-quantised groups: SGD with ``lr``."""

    def __init__(self, params, lr: float, weight_decay: float = 0.0, compile: bool | str = "auto"):
        check_hyper(dict(lr=lr), dict(weight_decay=weight_decay))
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay), compile)

    def _float_lr(self, group: dict) -> float:
        return group["lr"]

    def _forward_weights(self, u: Tensor, group: dict) -> Tensor:
        """The weights W~ of the forward pass for the float weights ``u`` (BC: Proj_Q(u))."""
        return project_layer(u)

    def _init_quantized_group(self, group: dict) -> None:
        for p in group["params"]:
            u = p.detach().clone(memory_format=torch.preserve_format)
            self.state[p]["U"] = u
            p.copy_(self._forward_weights(u, group))

    def _step_args(self, group: dict):
        params = group["params"]
        wd = hyper_tensor(group["weight_decay"], params[0]) if group["weight_decay"] else None
        return [p.detach() for p in params], self._grads(params), [self.state[p]["U"] for p in params], hyper_tensor(group["lr"], params[0]), wd

    def _quantized_step(self, group: dict) -> None:
        self._run(bc_kernel, group, *self._step_args(group))

    def _binary_values(self):
        return [(p, project_layer(self.state[p]["U"])) for g in self._quantized_groups() for p in g["params"]]

    def _float_values(self):
        return [(p, self.state[p]["U"]) for g in self._quantized_groups() for p in g["params"]]


class BatchedBC(BatchedRule):
    """eq. (alg:BC) for R runs (:class:`BatchedRule`): :func:`stam.algorithm.bc_step` over all
    layers, from ``U^0`` = the weights and ``W~^0 = Proj_Q(U^0)``."""

    def init(self, w, hyper, q):
        return QuantizedState(w.clone(), q.prox_F(w, 0.0))

    def step(self, state, grad, hyper, q):
        return bc_step(state, grad, q, as_batch_scalar(hyper["lr"], state.u))


#: the batched form read by :mod:`stam.dnn.batched` (named in :mod:`stam.dnn.catalog`)
BATCHED = BatchedBC()

__all__ = ["BinaryConnect", "bc_kernel", "BATCHED"]
