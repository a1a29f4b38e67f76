"""What an epoch is, written once for ``stam train`` (:mod:`stam.dnn.train`) and the batched
trainer of tuning and maps (:mod:`stam.dnn.batched`): how many steps an epoch has, which epoch a
run is judged by, and when a run has diverged.  Imports no torch.
"""

from __future__ import annotations

import math


def steps_per_epoch(n_train: int, batch_size: int, world: int = 1) -> int:
    """Minibatch steps of one pass over ``n_train`` shuffled images: the full batches, plus the
    last partial one unless it would give a process fewer than 2 images (BatchNorm needs 2)."""
    return n_train // batch_size + (1 if n_train % batch_size >= 2 * world else 0)


def select_epoch(records: list[dict], key: str = "val_acc_binary") -> dict | None:
    """The record with the best finite ``key`` (a validation accuracy), the earliest on ties;
    None where no record has one.  Selection on validation data only: the test accuracies are
    read at the epoch it returns."""
    good = [r for r in records if isinstance(r.get(key), (int, float)) and math.isfinite(r[key])]
    return max(good, key=lambda r: (r[key], -r["epoch"])) if good else None


def diverged(loss: float, weights_finite: bool) -> str | None:
    """The divergence rule: a run has diverged when its training loss is not finite, or when its
    weights or optimiser state are not (an update after the last loss may have broken them).
    Returns what happened, in words, or None."""
    if not math.isfinite(loss):
        return f"training loss became {'nan' if math.isnan(loss) else 'inf'}"
    if not weights_finite:
        return "weights or optimiser state became non-finite"
    return None


__all__ = ["steps_per_epoch", "select_epoch", "diverged"]
