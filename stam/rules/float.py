"""The float-weight baseline: SGD with momentum on float weights (no quantisation).

Networks train it with ``torch.optim.SGD`` itself; its batched form is torch.optim.SGD's update
with momentum and no dampening: ``buf <- momentum buf + g`` (the first buffer is the first
gradient), ``w <- w - lr buf``.  A layer's state is ``(w, buf)``, the float parameters use the
same step; its binary weights (a diagnostic only) are ``Proj_Q(w)``.
"""

from __future__ import annotations

from stam.rules.base import UpdateRule
from stam.steps import as_batch_scalar


class FloatRule(UpdateRule):
    """SGD with momentum for R runs."""

    name, label, equation, color, marker = "float", "Float", "SGD with momentum on float weights", "black", "x"
    hyper = ("lr", "momentum", "weight_decay")
    search_space = {"lr": {"log_uniform": [1e-4, 1.0]}}  # holds its preset's lr 5e-4 (Table para)
    binary = False
    order = 4
    torch_optimizer = "torch.optim:SGD"

    def init(self, w, hyper, q):
        return (w.clone(), w.new_zeros(w.shape))

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


RULE = FloatRule()


__all__ = ["FloatRule", "RULE"]
