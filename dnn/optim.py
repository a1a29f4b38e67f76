"""Optimisers for binary-weight networks (Section 3.1 of the paper): STAM, BinaryConnect,
BinaryRelax and PSGD as ``torch.optim.Optimizer`` subclasses.  Float SGD is ``torch.optim.SGD``.

Contract (with ``stam.dnn.train``)
----------------------------------
Constructors::

    STAM(params, gamma, lam, beta, weight_decay=0, compile="auto")        # eq. (alg:stamm)
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
  "z": ||X^t - X^{t-1}|| / gamma}`` over all quantised parameters (0-d tensors, no host sync).
- BR: lam grows by ``rho`` once per epoch through ``grow_lambda()`` (or a schedule setting
  ``group["lam"]`` with ``rho = 1``); ``switch_to_projection()`` (or ``group["phase"] = 2``)
  starts the pure-projection phase.
- BC and BR replace the parameters by ``W~^0`` when built; to resume, build the optimiser, then
  load the model's and the optimiser's state dicts.
- Speed: the update of a quantised group is one ``torch.compile``-d kernel (inductor; CPU and
  CUDA) calling the shared code (:func:`stam.algorithm.stam_step` for STAM), with an eager
  fallback; ``compile=False`` disables it, ``"auto"`` compiles groups of >= 2^20 entries.
"""

from __future__ import annotations

from stam.dnn.catalog import ALGORITHMS
from stam.dnn.optim_bc import BinaryConnect
from stam.dnn.optim_br import BinaryRelax
from stam.dnn.optim_common import QuantizingOptimizer, project_layer
from stam.dnn.optim_psgd import PSGD
from stam.dnn.optim_stam import STAM

#: Algorithm name (as in ``stam train --algo``) -> quantising optimiser class, from the registry
#: :mod:`stam.dnn.catalog` (float SGD is torch.optim.SGD).
OPTIMIZERS = {a.name: a.optimizer_class() for a in ALGORITHMS if a.binary}


def make(algo: str, params, **hyper) -> QuantizingOptimizer:
    """``OPTIMIZERS[algo](params, **hyper)`` with a clear error for an unknown name."""
    if algo not in OPTIMIZERS:
        raise ValueError(f"unknown quantising optimiser {algo!r}; choose one of {', '.join(OPTIMIZERS)}")
    return OPTIMIZERS[algo](params, **hyper)


__all__ = ["STAM", "BinaryConnect", "BinaryRelax", "PSGD", "QuantizingOptimizer", "OPTIMIZERS", "make", "project_layer"]
