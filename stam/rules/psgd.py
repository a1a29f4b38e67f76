"""PSGD as printed in eq. (alg:PSGD)::

    U^{t+1}  = U^t - gamma (grad L(U^t) + wd U^t)
    W~^{t+1} = Proj_Q(U^{t+1})

The gradient is taken at the float ``U`` and ``W~`` is not fed back, so the iterates ``U^t`` are
those of plain SGD and ``W~^t`` is their projection, the output evaluated with truly binary
weights.  The parameters hold ``U``; the optimiser (:class:`stam.dnn.optim.PSGD`) keeps no state.
(The projected SGD of the cited works, ``U^{t+1} = Proj_Q(U^t - gamma grad L(U^t))``, is not what
eq. (alg:PSGD) prints.)
"""

from __future__ import annotations

from stam.rules.base import UpdateRule
from stam.steps import QuantizedState, as_batch_scalar, psgd_step


class PSGDRule(UpdateRule):
    """eq. (alg:PSGD) for R runs: :func:`stam.steps.psgd_step` over all layers, from ``U^0`` = the
    weights (the forward pass at ``U``)."""

    name, label, equation, color, marker = "psgd", "PSGD", "eq. (alg:PSGD)", "orange", "v"  # PSGD's U follows plain SGD: a marker too
    hyper = ("lr", "weight_decay")
    search_space = {"lr": {"log_uniform": [1e-4, 1.0]}}  # holds its preset's lr 5e-4 (Table para)
    order = 3
    paper_order = 0
    optimizer_name = "PSGD"
    arguments = ("lr", ("weight_decay", 0.0))
    positive = ("lr",)
    state_keys = (None, None)  # u = w = U, the parameter

    def init(self, w, hyper, q):
        return QuantizedState(w.clone(), w.clone())

    def step(self, state, grad, hyper, q):
        return psgd_step(state, grad, q, as_batch_scalar(hyper["lr"], state.u))

    #: eq. (alg:PSGD) with constant step ``gamma`` (the flag ``--gamma`` of ``stam pep --algo psgd``)
    theory_params = ("gamma",)
    theory_measure_text = "||grad G(U^t)||^2"

    def theory_start(self, x0, hyper, q):
        return QuantizedState(x0, x0)

    def theory_step(self, state, grad, hyper, q, t):
        return psgd_step(state, grad, q, hyper["gamma"])

    def synthetic_start(self, U, F, lr):
        return QuantizedState(U, U)

    def synthetic_step(self, state, grad, F, lr, t, iters, epoch):
        return psgd_step(state, grad, F, lr)


RULE = PSGDRule()

__all__ = ["PSGDRule", "RULE"]
