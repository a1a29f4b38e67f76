"""Optimisers for binary-weight networks (Section 3.1 of the paper): STAM, BinaryConnect,
BinaryRelax and PSGD as ``torch.optim.Optimizer`` classes, each the one generic optimiser
(:class:`stam.dnn.optim_common.RuleOptimizer`) built from its update rule (:mod:`stam.rules`):
``R = 1`` of the batched step the trainer runs.  Float SGD is ``torch.optim.SGD``.

Contract (with ``stam.dnn.loop``)
---------------------------------
Constructors (the rule's ``arguments``)::

    STAM(params, gamma, lam, beta, weight_decay=0, compile="auto", proxies=False)   # eq. (alg:stamm)
    BinaryConnect(params, lr, weight_decay=0, compile="auto")             # eq. (alg:BC)
    BinaryRelax(params, lr, lam, rho, weight_decay=0, compile="auto")     # eq. (alg:BR)
    PSGD(params, lr, weight_decay=0, compile="auto")                      # eq. (alg:PSGD)

- Parameter groups carry ``quantize`` (default ``True``).  In a quantised group each parameter
  tensor is one block of Q (one layer): ``Proj_Q(U) = s sign(U)``, ``s = mean |U|``,
  sign(0) = +1 (:func:`stam.quantize.project_Q`).  Non-quantised groups (biases, BatchNorm,
  ``--keep-float`` layers) take ``p <- p - lr (g + wd p)`` with the group's ``lr``; for STAM
  ``lr = 1/beta`` (the y-step eq. (algy) with H = 0, i.e. the G-only step).
- Every hyperparameter lives in ``param_groups`` and may be changed between steps (schedules);
  no recompilation follows.  ``state_dict()`` / ``load_state_dict()`` round-trip exactly.
- Per-parameter state: ``U``, ``X``, ``V`` for STAM (eq. (alg:stamm); the parameters are ``W``);
  ``U`` (the float weights) for BC and BR; none for PSGD.
- What the parameters hold (the forward pass uses them): STAM ``W`` (float), BC ``W~ = Proj_Q(U)``,
  BR ``W~`` (relaxed in phase 1), PSGD ``U``.  Context managers ``binary_weights()`` (STAM ``V``,
  otherwise ``Proj_Q(U)``) and ``float_weights()`` (STAM ``W``, otherwise ``U``) substitute the
  truly binary / the float weights and restore the previous values exactly.
- ``STAM.stationarity_proxies()``: the last step's ``{"grad": ||grad L(W) + lam (W - U)||^2,
  "z": ||X^t - X^{t-1}|| / gamma}`` over all quantised parameters (0-d tensors, no host sync),
  the formula of the batched trainer (:meth:`stam.rules.stam.STAMRule.proxies`); kept where the
  optimiser is built with ``proxies=True`` (they cost a pass over the weights every step).
- BR: lam grows by ``rho`` once per epoch through ``grow_lambda()`` (or a schedule setting
  ``group["lam"]`` with ``rho = 1``); ``switch_to_projection()`` (or ``group["phase"] = 2``)
  starts the pure-projection phase.
- BC and BR replace the parameters by ``W~^0`` when built; to resume, build the optimiser, then
  load the model's and the optimiser's state dicts.
- Speed: the update of a quantised group is ``torch.compile``-d kernels (inductor; CPU and
  CUDA) calling the rule's step (STAM: its two halves, one pass over each layer each), with an
  eager fallback; ``compile=False`` disables it, ``True`` compiles at the first step, ``"auto"``
  from the step at which the eager steps' lost time pays for compiling
  (:func:`stam.compiling.compile_after_steps`), so a first step never waits for a compiler.
"""

from __future__ import annotations

from stam import rules
from stam.dnn.optim_common import RuleOptimizer, optimizer_class

#: Algorithm name (as in ``stam train --algo``) -> quantising optimiser class, one per binary
#: update rule of :mod:`stam.rules` (float SGD is torch.optim.SGD).
OPTIMIZERS = {r.name: optimizer_class(r) for r in rules.RULES if r.binary}

STAM = OPTIMIZERS["stam"]
BinaryConnect = OPTIMIZERS["bc"]
BinaryRelax = OPTIMIZERS["br"]
PSGD = OPTIMIZERS["psgd"]


def make(algo: str, params, **hyper) -> RuleOptimizer:
    """The optimiser of the binary update rule ``algo`` (a rule registered after this module was
    imported included), with a clear error for an unknown name."""
    known = {r.name: r for r in rules.RULES if r.binary}
    if algo not in known:
        raise ValueError(f"unknown quantising optimiser {algo!r}; choose one of {', '.join(known)}")
    return optimizer_class(known[algo])(params, **hyper)


__all__ = ["STAM", "BinaryConnect", "BinaryRelax", "PSGD", "OPTIMIZERS", "make"]
