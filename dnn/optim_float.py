"""The float-weight baseline: SGD with momentum on float weights (no quantisation).

Networks train it with ``torch.optim.SGD`` itself (see :mod:`stam.dnn.catalog`); this module
holds its batched form for :mod:`stam.dnn.batched`, written as torch.optim.SGD's update with
momentum and no dampening: ``buf <- momentum buf + g`` (the first buffer is the first gradient),
``w <- w - lr buf``.
"""

from __future__ import annotations

import torch

from stam.algorithm import as_batch_scalar
from stam.dnn.optim_common import BatchedRule


class BatchedSGD(BatchedRule):
    """SGD with momentum for R runs (:class:`BatchedRule`); a layer's state is ``(w, buf)``, the
    float parameters use the same step.  Binary weights (a diagnostic only): ``Proj_Q(w)``."""

    def init(self, w, hyper, q):
        return (w.clone(), torch.zeros_like(w))

    def step(self, state, grad, hyper, q):
        w, buf = state
        new_w, new_buf = self.float_step(w, grad, buf, hyper)
        return (new_w, new_buf)

    def forward_weights(self, state):
        return state[0]

    def binary_weights(self, state, q):
        return q.prox_F(state[0], 1.0)

    def float_weights(self, state):
        return state[0]

    def float_step(self, p, grad, buf, hyper):
        buf = as_batch_scalar(hyper["momentum"], p) * buf + grad  # zero at the start: the first buffer is the first gradient
        return p - as_batch_scalar(hyper["lr"], p) * buf, buf


#: the batched form read by :mod:`stam.dnn.batched` (named in :mod:`stam.dnn.catalog`)
BATCHED = BatchedSGD()

__all__ = ["BatchedSGD", "BATCHED"]
