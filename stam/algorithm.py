"""The STAM iteration and the update rules, one import: the pure steps of :mod:`stam.steps`
(Algorithm 1, eq. (algalg1): :func:`stam_step`; the baselines' :func:`psgd_step`,
:func:`bc_step`, :func:`br_step`) and the update rules of :mod:`stam.rules` that declare them
(:data:`RULES`: each rule's name, label, equation, colour, marker, hyperparameters and batched
form, one file per rule).  Imports no torch."""

from __future__ import annotations

from stam.rules import RULES, Rule, rule
from stam.steps import (BR_RHO, QuantizedState, Scalar, STAMState, ThreeBlockOperators, as_batch_scalar, bc_step, br_relax,
                        br_step, psgd_step, stam_init, stam_step, y_step)

__all__ = ["Rule", "RULES", "rule", "BR_RHO", "Scalar", "ThreeBlockOperators", "STAMState", "stam_init", "stam_step", "y_step",
           "as_batch_scalar", "QuantizedState", "psgd_step", "bc_step", "br_step", "br_relax"]
