"""BatchNorm statistics of the network one reports (the evaluation rule of every accuracy).

A BatchNorm layer normalises, in evaluation mode, with running averages of the batch statistics
it saw in training, and those describe the weights the training's forward passes used: STAM's
float weights W (eq. (alg:stamm)), PSGD's U, BR's relaxed weights.  The binary network the
toolkit reports (STAM's V = Proj_Q(2U - X), Proj_Q(U) for PSGD and BR) is another network; taken
with those statistics, its accuracy measures a mismatch, not the network (on CIFAR-10 it moved
STAM's binary accuracy from 34-38% to 54-55% at the same weights).  So before any network is
evaluated, its statistics are re-estimated for its own weights: reset, then train-mode forward
passes over a fixed subset of training images (:func:`stam.dnn.data.bn_images`: as the training sees them, cropped
and flipped once where it trains on crops and flips) with cumulative averaging (no gradient, never a
validation or test image), as ``torch.optim.swa_utils.update_bn`` does.  The
training's own statistics are put back afterwards, so training, checkpoints and exact resume
never see them.

:func:`reestimated` is the rule for one network in a loop of one's own (the optimisers'
``binary_weights(model=..., images=...)`` and :func:`stam.dnn.loop.evaluate` use it);
:meth:`stam.dnn.batched.Trainer.statistics` applies it to R networks at once.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterable

import torch
from torch import Tensor, nn

from stam.dnn.catalog import BN_IMAGES, BN_SEED, bn_images_used


def batchnorms(module: nn.Module) -> list:
    """The BatchNorm layers of ``module`` that keep running statistics."""
    return [m for m in module.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.track_running_stats]


def bn_subset(n_train: int, n_images: int = BN_IMAGES, device="cpu") -> Tensor:
    """The indices of the fixed, seeded subset of training images that BatchNorm's statistics are
    re-estimated on: ``n_images`` but at most half of the ``n_train`` images
    (:func:`stam.dnn.catalog.bn_images_used`), drawn with :data:`stam.dnn.catalog.BN_SEED`,
    independent of every run's seed: the same images for every algorithm, run and epoch (a smaller
    subset is a prefix of a larger one)."""
    g = torch.Generator().manual_seed(BN_SEED)
    return torch.randperm(n_train, generator=g)[: bn_images_used(n_images, n_train)].to(device)


@torch.no_grad()
def reestimate(module: nn.Module, forward: Callable[[Tensor], object], batches: Iterable[Tensor]) -> bool:
    """Re-estimate, in place, the running statistics of every BatchNorm layer of ``module`` from
    ``forward(batch)`` (a train-mode forward pass of the network to be evaluated) over
    ``batches``: the statistics are reset and averaged cumulatively (``momentum = None``: each
    pass counts once; give passes of equal size), the layers' momenta and the module's mode are
    put back after.  Returns False (nothing changed) for a module without BatchNorm."""
    bns = batchnorms(module)
    if not bns:
        return False
    momenta = [m.momentum for m in bns]
    was_training = module.training
    try:
        for m in bns:
            m.reset_running_stats()
            m.momentum = None
        module.train()
        for batch in batches:
            forward(batch)
    finally:
        for m, mom in zip(bns, momenta):
            m.momentum = mom
        module.train(was_training)
    return True


@contextlib.contextmanager
def kept(module: nn.Module):
    """Within the block the BatchNorm buffers of ``module`` may change; on leaving they are put back
    bit for bit (the running statistics and the batch counters)."""
    bufs = [b for m in batchnorms(module) for b in m.buffers()]
    saved = [b.detach().clone() for b in bufs]
    try:
        yield
    finally:
        with torch.no_grad():
            for b, s in zip(bufs, saved):
                b.copy_(s)


def even_batches(images: Tensor, batch: int) -> list[Tensor]:
    """``images`` in passes of equal size (within one image) of about ``batch`` each, none below
    two images (BatchNorm's batch statistics need two)."""
    n = len(images)
    return list(torch.tensor_split(images, max(1, n // max(2, batch)))) if n >= 2 else []


@contextlib.contextmanager
def reestimated(model: nn.Module, images, batch: int = 1000):
    """Within the block the BatchNorm statistics of ``model`` are those of its current weights,
    re-estimated on ``images`` (a tensor of inputs as the model takes them, split into equal
    passes of about ``batch``, or an iterable of such batches: training images, e.g. ``data.normalise(
    data.bn_images(data))``, never validation or test images); on leaving, the statistics the block found
    are put back.  For a loop of one's own::

        with opt.binary_weights(), reestimated(model, data.normalise(data_mod.bn_images(data))):
            accuracy = evaluate(model, test_loader)
    """
    batches = even_batches(images, batch) if isinstance(images, Tensor) else images
    with kept(model):
        reestimate(model, model, batches)
        yield model


__all__ = ["batchnorms", "bn_subset", "reestimate", "kept", "even_batches", "reestimated"]
