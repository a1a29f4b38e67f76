"""What an epoch is, written once for ``stam train`` (:mod:`stam.dnn.train`) and the batched
trainer of tuning and maps (:mod:`stam.dnn.batched`): how many steps an epoch has, which epoch a
run is judged by, when a run has diverged, and how the signs of its binary weights moved
(:class:`SignFlips`).  Imports no torch at module level.
"""

from __future__ import annotations

import contextlib
import math

from stam.datasets import DATA_SOURCE
from stam.dnn.catalog import CIFAR_TRAIN_IMAGES
from stam.dnn.presets import paper_epochs
from stam.results import (BOOL, BOOL_OR_NULL, COUNT_OR_NULL, DICT_OR_NULL, EPOCHS, EPOCHS_OR_NULL, WIDTH, FRAC_OR_NULL, LIST, NAME, NONNEG_OR_NULL,
                          NUM_OR_NULL, PCT_OR_NULL, POSINT, POSINT_OR_NULL, PROVENANCE, STR, STR_OR_NULL, ResultType,
                          Schema, holds, increasing)

#: image passes of the paper's run: 1000 epochs of CIFAR's 50,000 training images (Section 3.2)
PAPER_IMAGE_PASSES = paper_epochs() * CIFAR_TRAIN_IMAGES
#: the most image passes ``stam train``, ``stam tune`` or ``stam map`` trains without ``--force``:
#: ten times the paper's run (what a typo such as ``--epochs 99999999999999999999`` is not)
WORK_LIMIT_IMAGES = 10 * PAPER_IMAGE_PASSES
#: from this many image passes on (ten CIFAR epochs) the commands say the work before they start
ANNOUNCE_IMAGES = 10 * CIFAR_TRAIN_IMAGES


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


def announce_work(images: float, what: str) -> None:
    """From :data:`ANNOUNCE_IMAGES` image passes on, say the amount of work on stderr (before it starts)."""
    if images >= ANNOUNCE_IMAGES:  # (weighted image passes where a network costs more than the paper's VGG-11)
        import sys

        print(f"{what}: about {images:.3g} image passes in all ({images / PAPER_IMAGE_PASSES:.2g} of the paper's 1000-epoch "
              "CIFAR run)", file=sys.stderr, flush=True)


def check_work(images: float, what: str, force: bool, announce: bool = True, cost: float = 1.0) -> None:
    """Refuse, before any work, a command that would train on more than :data:`WORK_LIMIT_IMAGES`
    image passes in all, each weighted by ``cost`` (one image pass of the network in units of the
    paper's VGG-11 at width 1, at least 1: :func:`stam.dnn.sweep.work_cost`, so ``--width`` counts),
    unless ``force`` (``--force``): one line saying how much and why; from
    :data:`ANNOUNCE_IMAGES` on, say the amount (stderr) before the work starts, unless not
    ``announce`` (a caller with checks still to make says it itself, :func:`announce_work`)."""
    cost = max(1.0, float(cost))
    images = float(images) * cost
    if not force and images > WORK_LIMIT_IMAGES:
        from stam.errors import UsageError

        weighted = f" (each weighted by the network's cost, {cost:.3g} times the paper's VGG-11 at width 1: --width)" if cost > 1 else ""
        raise UsageError(f"{what}: {images:.3g} image passes in all{weighted}, above the limit of {WORK_LIMIT_IMAGES:.3g} "
                         "(10 times the paper's 1000-epoch CIFAR run); lower it or add --force")
    if announce:  # long work is said before it starts
        announce_work(images, what)


def diverged(loss: float, weights_finite: bool) -> str | None:
    """The divergence rule: a run has diverged when its training loss is not finite, or when its
    weights or optimiser state are not (an update after the last loss may have broken them).
    Returns what happened, in words, or None."""
    if not math.isfinite(loss):
        return f"training loss became {'nan' if math.isnan(loss) else 'inf'}"
    if not weights_finite:
        return "weights or optimiser state became non-finite"
    return None


@contextlib.contextmanager
def flush_denormal():
    """Within the block, the CPU flushes subnormal floats (below about 1.2e-38 in float32) to zero
    (``torch.set_flush_denormal``); on leaving, torch's default (keep them) is restored.  The
    trainers run in it: arithmetic on subnormals is slow on x86 (an epoch of the digits MLP with
    STAM went from 0.5 s to 21 s once they appeared in the backward pass), and no result of a
    training depends on values that small.  Python's float arithmetic in the block is flushed too
    (the flag is the CPU thread's), so settings are checked outside it."""
    import torch

    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


class SignFlips:
    """The sign-flip diagnostic of binary weights (in Q) for R runs at once, once per epoch: per
    run, the fraction of weights whose sign differs from the previous epoch's end (``epoch``), from
    the start of training (``since_init``), and that differed from the start at some epoch end
    (``ever``), over all layers and per layer, with each layer's scale ``s = mean |w|`` (eq.
    (0412)).  ``weights`` are the layers' binary weights, ``(R, ...)`` tensors; signs as in
    :mod:`stam.quantize` (sign(0) = +1).  Its state (start signs, last signs, the ``ever`` masks)
    is :meth:`state_dict`, so a resumed run continues it exactly."""

    def __init__(self, weights: list):
        from stam.quantize import signs

        self._signs = signs
        self.init = [signs(w) for w in weights]
        self.prev = list(self.init)
        self.ever = [m & False for m in self.init]

    @staticmethod
    def _fraction(masks: list):
        """Per-run fraction of True over ``masks`` (float64, shape ``(R,)``)."""
        import torch

        num = sum(m.flatten(1).sum(dim=1, dtype=torch.float64) for m in masks)
        return num / sum(m[0].numel() for m in masks)

    def update(self, weights: list) -> dict:
        """Call with the binary weights at an epoch's end; returns ``{"epoch", "since_init", "ever"}``
        (each ``(R,)``) and ``"layers"``: per layer the same three and ``"scale"``."""
        now = [self._signs(w) for w in weights]
        epoch = [a != b for a, b in zip(now, self.prev)]
        since = [a != b for a, b in zip(now, self.init)]
        self.ever = [e | s for e, s in zip(self.ever, since)]
        self.prev = now
        f = self._fraction
        layers = [{"epoch": f([e]), "since_init": f([s]), "ever": f([v]), "scale": w.detach().abs().flatten(1).mean(dim=1)}
                  for e, s, v, w in zip(epoch, since, self.ever, weights)]
        return {"epoch": f(epoch), "since_init": f(since), "ever": f(self.ever), "layers": layers}

    def state_dict(self) -> dict:
        return {"init": self.init, "prev": self.prev, "ever": self.ever}

    def load_state_dict(self, state: dict) -> None:
        self.init, self.prev, self.ever = (list(state[k]) for k in ("init", "prev", "ever"))



# -- the files of a training run (``stam train --out DIR``, written by :mod:`stam.dnn.train`; declared
# here, beside what an epoch is, so that reading them imports no torch) ------------------------------
#: where a run's data came from (stam.dnn.data.ImageData.source): kind official, jpeg-copy, image-folder, scikit-learn
RUN_KEYS = {"kind": STR, "status": STR, "model": NAME, "model_name": STR_OR_NULL, "dataset": NAME, "algo": NAME,
            "preset": STR_OR_NULL, "label": STR_OR_NULL, "seed": COUNT_OR_NULL, "epochs": COUNT_OR_NULL,
            "epochs_planned": EPOCHS_OR_NULL, "seconds": NONNEG_OR_NULL, "best_test_acc_binary": PCT_OR_NULL,
            "best_test_acc_float": PCT_OR_NULL, "best_epoch_binary": POSINT_OR_NULL, "best_epoch_float": POSINT_OR_NULL,
            "final_test_acc_binary": PCT_OR_NULL, "final_test_acc_float": PCT_OR_NULL, "provenance": DICT_OR_NULL,
            "selected_epoch": POSINT_OR_NULL, "selected_val_acc_binary": PCT_OR_NULL, "selected_val_acc_float": PCT_OR_NULL,
            "selected_test_acc_binary": PCT_OR_NULL, "selected_test_acc_float": PCT_OR_NULL, "data_source": DICT_OR_NULL,
            "width": WIDTH, "compile": STR_OR_NULL, "bn_images": COUNT_OR_NULL, "bn_augment": BOOL, "proxies": BOOL, "num_classes": POSINT_OR_NULL,
            "test_size": COUNT_OR_NULL, "train_size": COUNT_OR_NULL, "sign_ever": FRAC_OR_NULL}
#: ``bn_images`` as a record states it: 0 (the statistics as trained) or at least 2 images; 1 gives no batch (nothing
#: is re-estimated), so a record of it states a protocol that did not run (``--bn-images 1`` is refused)
BN_IMAGES_RAN = holds("bn_images", lambda o: o.get("bn_images") != 1,
                      "is 1: one image gives no batch, so nothing was re-estimated (0: as trained, or at least 2)")
#: ``summary.json``: what a run reached (accuracies in percent)
RUN_SUMMARY = ResultType("train-run", Schema(required={"model": NAME}, optional=RUN_KEYS,
                                             inner={"provenance": PROVENANCE, "data_source": DATA_SOURCE},
                                             rules=(BN_IMAGES_RAN,)),
                         files="summary.json", writer="stam train --out DIR")
#: ``config.json``: what the run was asked to do (found with its folder, not on its own)
RUN_CONFIG = ResultType("train-config", Schema(optional=dict(RUN_KEYS, epochs=EPOCHS),
                                               inner={"provenance": PROVENANCE, "data_source": DATA_SOURCE},
                                               rules=(BN_IMAGES_RAN,)),
                        files="config.json", writer="stam train --out DIR", found=False)
#: ``log.jsonl``: one line per epoch, numbered from 1, each once and in order; accuracies in percent,
#: the loss of a diverged run may be nan; the sign flips of the binary weights (:class:`SignFlips`)
RUN_LOG = ResultType(
    "train-log", Schema(optional={"epoch": POSINT, "paper_epoch": NONNEG_OR_NULL, "train_loss": NUM_OR_NULL,
                                  "train_acc": PCT_OR_NULL, "test_acc_binary": PCT_OR_NULL, "test_acc_float": PCT_OR_NULL,
                                  "val_acc_binary": PCT_OR_NULL, "val_acc_float": PCT_OR_NULL,
                                  "val_acc_binary_as_trained": PCT_OR_NULL, "test_acc_binary_as_trained": PCT_OR_NULL,
                                  "hyper": DICT_OR_NULL, "proxy_grad": NUM_OR_NULL, "proxy_z": NUM_OR_NULL,
                                  "theorem": DICT_OR_NULL, "sign_flips": DICT_OR_NULL, "seconds": NONNEG_OR_NULL},
                        inner={"hyper": Schema(optional={"gamma": NONNEG_OR_NULL, "lam": NONNEG_OR_NULL,
                                                         "beta": NONNEG_OR_NULL}),
                               "theorem": Schema(optional={"admissible": BOOL_OR_NULL}),
                               "sign_flips": Schema(optional={"epoch": FRAC_OR_NULL, "since_init": FRAC_OR_NULL,
                                                              "ever": FRAC_OR_NULL, "layers": LIST})}),
    files="log.jsonl", writer="stam train --out DIR", lines=True, line_rules=(increasing("lines", "epoch"),), found=False)


__all__ = [ "RUN_SUMMARY", "RUN_CONFIG", "RUN_LOG", "BN_IMAGES_RAN", "steps_per_epoch", "select_epoch", "diverged", "check_work", "SignFlips", "flush_denormal", "WORK_LIMIT_IMAGES",
           "PAPER_IMAGE_PASSES"]
