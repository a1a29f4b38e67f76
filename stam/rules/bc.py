"""BinaryConnect (Courbariaux et al.), eq. (alg:BC)::

    U^{t+1}  = U^t - gamma (grad L(W~^t) + wd U^t)
    W~^{t+1} = Proj_Q(U^{t+1})

The parameters hold ``W~`` (the weights of the forward pass, in Q); the float weights ``U`` live
in the optimiser state (:class:`stam.dnn.optim.BinaryConnect`).  Weight decay acts on ``U`` (as in
the reference implementations, where the float copy is what the SGD step updates).  Start: ``U^0``
= the parameters when the optimiser is built, which are then replaced by ``W~^0 = Proj_Q(U^0)``, so
the first gradient is taken at weights in Q.  (When resuming, build the optimiser first, then load
the model's and the optimiser's state dicts.)
"""

from __future__ import annotations

from stam.rules.base import UpdateRule
from stam.steps import QuantizedState, as_batch_scalar, bc_step


class BCRule(UpdateRule):
    """eq. (alg:BC) for R runs: :func:`stam.steps.bc_step` over all layers, from ``U^0`` = the
    weights and ``W~^0 = Proj_Q(U^0)``."""

    name, label, equation, color, marker = "bc", "BC", "eq. (alg:BC)", "reddish_purple", "^"  # not sky blue beside STAM's blue (issue 37)
    hyper = ("lr", "weight_decay")
    search_space = {"lr": {"log_uniform": [1e-4, 1.0]}}  # holds its preset's lr 5e-4 (Table para)
    order = 1
    paper_order = 1
    optimizer_name = "BinaryConnect"
    arguments = ("lr", ("weight_decay", 0.0))
    positive = ("lr",)

    def init(self, w, hyper, q):
        return QuantizedState(w.clone(), q.prox_F(w, 0.0))

    def step(self, state, grad, hyper, q):
        return bc_step(state, grad, q, as_batch_scalar(hyper["lr"], state.u))

    #: eq. (alg:BC) with constant step ``gamma``; ``W~^0 = Proj_Q(U^0)`` as the batched start
    theory_params = ("gamma",)
    theory_measure_text = "||grad G(W~^t)||^2 = ||U^{t+1} - U^t||^2 / gamma^2"

    def theory_start(self, x0, hyper, q):
        return QuantizedState(x0, q.prox_F(x0, hyper["gamma"]))

    def theory_step(self, state, grad, hyper, q, t):
        return bc_step(state, grad, q, hyper["gamma"])

    def synthetic_start(self, U, F, lr):
        return QuantizedState(U, F.prox_F(U, lr))

    def synthetic_step(self, state, grad, F, lr, t, iters, epoch):
        return bc_step(state, grad, F, lr)


RULE = BCRule()

__all__ = ["BCRule", "RULE"]
