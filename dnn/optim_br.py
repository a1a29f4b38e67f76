"""BinaryRelax (Yin et al.), eq. (alg:BR): two phases.

Phase 1 (``phase = 1``, t < T) minimises the relaxed problem eq. (BR)::

    U^{t+1}  = U^t - gamma^t (grad L(W~^t) + wd U^t)
    W~^{t+1} = (lam_t Proj_Q(U^{t+1}) + U^{t+1}) / (lam_t + 1)

Phase 2 (``phase = 2``, t >= T) is BinaryConnect (eq. (alg:BC)): ``W~^{t+1} = Proj_Q(U^{t+1})``.

Growth of lam.  eq. (alg:BR) writes ``lam_t = rho lam_t`` with ``rho = 1.02`` (Table para) and
counts the switch ``T = K`` in epochs (K = 250, Section 3.2); growing per iteration would give
``1.02^391`` per CIFAR epoch, so lam grows once per *epoch*: call :meth:`BinaryRelax.grow_lambda`
at the end of every epoch (or set ``group["lam"]`` from a schedule, as ``stam train`` does, with
``rho = 1``).  :meth:`BinaryRelax.switch_to_projection` (or ``group["phase"] = 2``) starts phase 2.

The parameters hold W~ (relaxed in phase 1, so *not* binary); the float U is in the optimiser
state; :meth:`binary_weights` puts ``Proj_Q(U)`` into the parameters.  Start, weight decay and
resuming as for :class:`~stam.dnn.optim_bc.BinaryConnect` (``W~^0`` relaxed with ``lam_0``).
"""

from __future__ import annotations

from torch import Tensor

from stam.algorithm import QuantizedState, as_batch_scalar, br_relax, br_step
from stam.dnn.optim_bc import LAYER_Q, BinaryConnect, bc_kernel
from stam.dnn.optim_common import BatchedRule, QuantizingOptimizer, check_hyper, hyper_tensor, project_layer


def br_kernel(Ws: list[Tensor], Gs: list[Tensor], Us: list[Tensor], lr: Tensor, weight_decay: Tensor | None, lam: Tensor) -> None:
    """Phase 1 of eq. (alg:BR) on every layer of a group, in place (``W`` = parameters = W~): each
    layer is one run (R = 1) of the shared :func:`stam.algorithm.br_step`."""
    for W, G, U in zip(Ws, Gs, Us):
        g = G if weight_decay is None else G + weight_decay * U
        new = br_step(QuantizedState(U.unsqueeze(0), W.unsqueeze(0)), g.unsqueeze(0), LAYER_Q, lr, lam, relaxed=True)
        U.copy_(new.u.squeeze(0))
        W.copy_(new.w.squeeze(0))


def _relax(u: Tensor, lam) -> Tensor:
    """``(lam Proj_Q(u) + u) / (lam + 1)``, the minimiser of eq. (BR)'s prox at ``u``
    (:func:`stam.algorithm.br_relax` on one layer)."""
    return br_relax(u.unsqueeze(0), LAYER_Q, lam).squeeze(0)


class BinaryRelax(BinaryConnect):
    """BinaryRelax, eq. (alg:BR).  Hyperparameters per group: ``lr``, ``lam`` (lam_t), ``rho``
    (growth factor of :meth:`grow_lambda`), ``phase`` (1 relaxed, 2 pure projection),
    ``weight_decay``.  Per-parameter state ``U``.  Non-quantised groups: SGD with ``lr``."""

    def __init__(self, params, lr: float, lam: float, rho: float, weight_decay: float = 0.0, compile: bool | str = "auto"):
        check_hyper(dict(lr=lr, lam=lam), dict(weight_decay=weight_decay))
        if not rho >= 1:
            raise ValueError(f"rho must be >= 1 (lam grows), got {rho}")
        QuantizingOptimizer.__init__(self, params, dict(lr=lr, lam=lam, rho=rho, phase=1, weight_decay=weight_decay), compile)

    def _forward_weights(self, u: Tensor, group: dict) -> Tensor:
        return _relax(u, group["lam"]) if group["phase"] == 1 else project_layer(u)

    def _quantized_step(self, group: dict) -> None:
        if group["phase"] not in (1, 2):
            raise ValueError(f"BinaryRelax phase must be 1 or 2, got {group['phase']!r}")
        args = self._step_args(group)
        if group["phase"] == 1:
            self._run(br_kernel, group, *args, hyper_tensor(group["lam"], group["params"][0]))
        else:
            self._run(bc_kernel, group, *args)

    def grow_lambda(self) -> None:
        """``lam <- rho lam`` in every group (once per epoch, see the module docstring)."""
        for group in self.param_groups:
            group["lam"] *= group["rho"]

    def switch_to_projection(self) -> None:
        """Start phase 2 (``t >= T`` in eq. (alg:BR)): from the next step on, ``W~ = Proj_Q(U)``."""
        for group in self.param_groups:
            group["phase"] = 2


class BatchedBR(BatchedRule):
    """eq. (alg:BR) for R runs (:class:`BatchedRule`): :func:`stam.algorithm.br_step` over all layers,
    each run in its own phase (``hyper["project"]``: phase 2 from the switch epoch on, as the
    schedule of ``stam train`` says); from ``U^0`` = the weights and ``W~^0`` relaxed with
    ``lam_0``."""

    @staticmethod
    def _relaxed(hyper, like):
        """1.0 for runs in the relaxed phase, 0.0 for runs that project."""
        return as_batch_scalar(~hyper["project"], like).to(like.dtype)

    def init(self, w, hyper, q):
        lam = as_batch_scalar(hyper["lam"], w)
        return br_step(QuantizedState(w, w), w.new_zeros(w.shape), q, 0.0, lam, self._relaxed(hyper, w))

    def step(self, state, grad, hyper, q):
        r = lambda k: as_batch_scalar(hyper[k], state.u)  # noqa: E731
        return br_step(state, grad, q, r("lr"), r("lam"), self._relaxed(hyper, state.u))


#: the batched form read by :mod:`stam.dnn.batched` (named in :mod:`stam.dnn.catalog`)
BATCHED = BatchedBR()

__all__ = ["BinaryRelax", "br_kernel", "BATCHED"]
