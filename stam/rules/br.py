"""BinaryRelax (Yin et al.), eq. (alg:BR): two phases.

Phase 1 (t < T) minimises the relaxed problem eq. (BR)::

    U^{t+1}  = U^t - gamma^t (grad L(W~^t) + wd U^t)
    W~^{t+1} = (lam_t Proj_Q(U^{t+1}) + U^{t+1}) / (lam_t + 1)

Phase 2 (t >= T) is BinaryConnect (eq. (alg:BC)): ``W~^{t+1} = Proj_Q(U^{t+1})``.  The batched
form takes each run's phase from ``hyper["project"]`` (phase 2 from the switch epoch on, as the
schedule of ``stam train`` says, :meth:`stam.dnn.presets.Preset.at`).

Growth of lam.  eq. (alg:BR) writes ``lam_t = rho lam_t`` with ``rho = 1.02`` (Table para,
:data:`stam.steps.BR_RHO`) and counts the switch ``T = K`` in epochs (K = 250, Section 3.2);
growing per iteration would give ``1.02^391`` per CIFAR epoch, so lam grows once per *epoch*: the
optimiser (:class:`stam.dnn.optim.BinaryRelax`) has :meth:`BRRule.grow_lambda` to call at the end
of every epoch (or a schedule sets ``group["lam"]``, as ``stam train`` does, with ``rho = 1``), and
:meth:`BRRule.switch_to_projection` (or ``group["phase"] = 2``) starts phase 2.

The parameters hold W~ (relaxed in phase 1, so *not* binary); the float U is in the optimiser
state; ``binary_weights()`` puts ``Proj_Q(U)`` into the parameters.  Start, weight decay and
resuming as for BinaryConnect (:mod:`stam.rules.bc`; ``W~^0`` relaxed with ``lam_0``).
"""

from __future__ import annotations

import math

from stam.rules.base import UpdateRule, is_real
from stam.steps import BR_RHO, QuantizedState, as_batch_scalar, br_relax, br_step


class BRRule(UpdateRule):
    """eq. (alg:BR) for R runs: :func:`stam.steps.br_step` over all layers, each run in its own phase
    (``hyper["project"]``); from ``U^0`` = the weights and ``W~^0`` relaxed with ``lam_0``."""

    name, label, equation, color, marker = "br", "BR", "eq. (alg:BR)", "bluish_green", "s"
    hyper = ("lr", "lam", "weight_decay", "switch_epoch")
    #: lr as BC; lam the starting value of its growth by BR_RHO per epoch (the paper's 1 grown by 1.02)
    search_space = {"lr": {"log_uniform": [1e-4, 1.0]}, "lam": {"log_uniform": [0.1, 10.0], "decay": {"factor": BR_RHO}}}
    schedule_only = ("switch_epoch",)
    fixed = {"rho": 1.0}  # lam's growth: the schedule
    order = 2
    paper_order = 2
    optimizer_name = "BinaryRelax"
    arguments = ("lr", "lam", "rho", ("weight_decay", 0.0))
    positive = ("lr", "lam")
    group_defaults = {"phase": 1}
    group_methods = ("grow_lambda", "switch_to_projection")

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

    def synthetic_start(self, U, F, lr):
        return QuantizedState(U, F.prox_F(U, lr))

    def synthetic_step(self, state, grad, F, lr, t, iters, epoch):
        """Relaxed with ``lam_t = rho^(t / epoch)`` (``rho`` = :data:`stam.steps.BR_RHO` per epoch)
        for the first quarter of the iterations, then projected (BC)."""
        switch = iters // 4
        return br_step(state, grad, F, lr, BR_RHO ** (min(t, switch) / epoch), relaxed=t < switch)

    #: eq. (alg:BR)'s first phase (the relaxed one; its second phase is BC) with constant step ``gamma``,
    #: ``lam_t = lam rho^t`` grown once per step (``rho = 1``: fixed; the network runs grow it per epoch)
    theory_params = ("gamma", "lam", "rho")
    theory_measure_text = "||grad G(W~^t)||^2 = ||U^{t+1} - U^t||^2 / gamma^2"

    def theory_start(self, x0, hyper, q):
        return QuantizedState(x0, br_relax(x0, q, hyper["lam"], hyper["gamma"]))

    def theory_step(self, state, grad, hyper, q, t):
        return br_step(state, grad, q, hyper["gamma"], hyper["lam"] * hyper["rho"] ** (t + 1), relaxed=True)

    def check(self, values):
        super().check(values)
        if "rho" in values and not (is_real(values["rho"]) and math.isfinite(values["rho"]) and values["rho"] >= 1):
            raise ValueError(f"rho must be a finite number >= 1 (lam grows), got {values['rho']!r}")

    def group_hyper(self, group):
        if group["phase"] not in (1, 2):
            raise ValueError(f"BinaryRelax phase must be 1 or 2, got {group['phase']!r}")
        return {"project": group["phase"] == 2}

    @staticmethod
    def grow_lambda(groups) -> None:
        """``lam <- rho lam`` in every group (once per epoch, see the module docstring)."""
        for group in groups:
            group["lam"] *= group["rho"]

    @staticmethod
    def switch_to_projection(groups) -> None:
        """Start phase 2 (``t >= T`` in eq. (alg:BR)): from the next step on, ``W~ = Proj_Q(U)``."""
        for group in groups:
            group["phase"] = 2


RULE = BRRule()

__all__ = ["BRRule", "RULE"]
