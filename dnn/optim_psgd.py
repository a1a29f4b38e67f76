"""PSGD as printed in eq. (alg:PSGD)::

    U^{t+1}  = U^t - gamma (grad L(U^t) + wd U^t)
    W~^{t+1} = Proj_Q(U^{t+1})

The gradient is taken at the float ``U`` and ``W~`` is not fed back, so the iterates ``U^t`` are
those of plain SGD and ``W~^t`` is their projection, the output evaluated with truly binary
weights.  The parameters hold ``U``; no optimiser state.  (The projected SGD of the cited works,
``U^{t+1} = Proj_Q(U^t - gamma grad L(U^t))``, is not what eq. (alg:PSGD) prints.)
"""

from __future__ import annotations

from stam.dnn.optim_common import QuantizingOptimizer, check_hyper, project_layer


class PSGD(QuantizingOptimizer):
    """PSGD, eq. (alg:PSGD).  Hyperparameters per group: ``lr``, ``weight_decay``.  Every group
    takes the SGD step; quantised groups differ only in :meth:`binary_weights` (``Proj_Q(U)``)."""

    def __init__(self, params, lr: float, weight_decay: float = 0.0, compile: bool | str = "auto"):
        check_hyper(dict(lr=lr), dict(weight_decay=weight_decay))
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay), compile)

    def _float_lr(self, group: dict) -> float:
        return group["lr"]

    def _quantized_step(self, group: dict) -> None:
        self._float_step(group)  # plain SGD on U (parameters without a gradient are skipped, as in SGD)

    def _binary_values(self):
        return [(p, project_layer(p.detach())) for g in self._quantized_groups() for p in g["params"]]

    def _float_values(self):
        return []  # the parameters hold U


__all__ = ["PSGD"]
