"""A training loop of one's own with the ``torch.optim`` classes (:mod:`stam.dnn.optim`): build
an algorithm's optimiser from a preset's hyperparameters, put each epoch's hyperparameters into
its groups, take a step, evaluate with binary or float weights (:func:`evaluate`: with BatchNorm
statistics of the weights evaluated, the rule of :mod:`stam.dnn.bnstats`).

``stam train``, ``stam tune`` and ``stam map`` train through the one batched trainer
(:class:`stam.dnn.batched.Trainer`); these functions are the public API for a loop written by
hand, and the reference the trainer is tested against step for step (``tests/test_batched.py``).
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F

from stam.dnn import catalog, optim
from stam.dnn.bnstats import even_batches, reestimated
from stam.dnn.catalog import BN_AUGMENT, BN_IMAGES
from stam.dnn import data as data_mod
from stam.dnn.optim_common import has_proxies, project_layer
from stam.errors import UsageError


def make_optimizer(algo: str, groups: list[dict], hyper: dict, proxies: bool = False) -> torch.optim.Optimizer:
    """The optimiser of ``algo`` over the parameter groups of :func:`stam.dnn.models.param_groups`,
    built from the hyperparameters ``hyper`` of the first epoch as the algorithm declares it
    (:mod:`stam.dnn.catalog`): ``torch.optim.SGD`` for the float baseline, otherwise
    :func:`stam.dnn.optim.make` (the one factory of the quantising optimisers).  BR gets its fixed
    ``rho = 1``: its ``lam`` schedule is put into the groups each epoch by :func:`apply_hyper`.
    ``proxies``: keep the stationarity proxies where the rule has them (STAM's ``stationarity_proxies()``)."""
    try:
        a = catalog.algorithm(algo)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    if not a.binary:
        return a.optimizer_class()(groups, **a.constructor_args(hyper))
    keep = {"proxies": True} if proxies and has_proxies(a.rule) else {}
    return optim.make(algo, groups, **a.constructor_args(hyper), **keep)


def apply_hyper(opt: torch.optim.Optimizer, algo: str, hyper: dict) -> None:
    """Put the hyperparameters of the current epoch into every parameter group."""
    for group in opt.param_groups:
        for key in catalog.algorithm(algo).hyper:
            if key in group:
                group[key] = hyper[key]
    if hyper.get("project"):  # BR's second phase (the schedule sets ``project`` from ``switch_epoch``)
        opt.switch_to_projection()


@contextlib.contextmanager
def projected_weights(opt: torch.optim.Optimizer):
    """Float baseline: temporarily replace every quantised weight by its projection onto Q
    (eq. (0411)); restores the float weights on exit."""
    saved = []
    with torch.no_grad():
        for group in opt.param_groups:
            if group.get("quantize"):
                for p in group["params"]:
                    saved.append((p, p.detach().clone()))
                    p.copy_(project_layer(p))
    try:
        yield
    finally:
        with torch.no_grad():
            for p, v in saved:
                p.copy_(v)


def binary_weights(opt):
    """Within the block the quantised parameters hold weights in Q (the optimiser's, or the
    projection of the float baseline's)."""
    return opt.binary_weights() if hasattr(opt, "binary_weights") else projected_weights(opt)


def float_weights(opt):
    """Within the block the quantised parameters hold the float weights."""
    return opt.float_weights() if hasattr(opt, "float_weights") else contextlib.nullcontext()


def train_step(net, opt, x_uint8, y, data: data_mod.ImageData, autocast=contextlib.nullcontext,
               memory_format=torch.contiguous_format):
    """Forward, backward and one optimiser step on a uint8 batch; returns (loss, #correct) as
    0-dim tensors (no host synchronisation)."""
    x = data.normalise(x_uint8).contiguous(memory_format=memory_format)
    opt.zero_grad(set_to_none=True)
    with autocast():
        out = net(x)
        loss = F.cross_entropy(out.float(), y)
    loss.backward()
    opt.step()
    return loss.detach(), (out.argmax(1) == y).sum()


def epoch(net, opt, data: data_mod.ImageData, batch_size: int, order: torch.Generator, crops: torch.Generator | None = None,
          *, autocast=contextlib.nullcontext, memory_format=torch.contiguous_format, after_step=None) -> float:
    """One epoch of a loop of one's own, drawn as the trainer draws it (:class:`stam.dnn.batched.Trainer`
    with seed ``s`` uses ``order`` seeded with ``s`` and ``crops`` with ``s + 1``): the training images
    in the order ``torch.randperm(n, generator=order)``, :func:`stam.dnn.epochs.steps_per_epoch`
    batches of ``batch_size``, each cropped and flipped by :func:`stam.dnn.data.augment` with
    ``crops`` where the data set augments, one :func:`train_step` each, and ``after_step()`` after
    every step (a per-step lr scheduler, a record of the optimiser's state).  Subnormal floats are
    flushed, as in the trainer.  Returns the mean training loss over the images seen."""
    from stam.dnn import epochs as ep

    if data.augment and crops is None:
        raise ValueError(f"{data.name} is augmented: give the generator of its crops and flips (crops=)")
    n = len(data.train_x)
    perm = torch.randperm(n, generator=order).to(data.train_x.device)
    total, seen = torch.zeros((), dtype=torch.float64, device=data.train_x.device), 0
    with ep.flush_denormal():
        for step in range(ep.steps_per_epoch(n, batch_size)):
            idx = perm[step * batch_size : (step + 1) * batch_size]
            x = data_mod.augment(data.train_x[idx], crops) if data.augment else data.train_x[idx]
            loss, _ = train_step(net, opt, x, data.train_y[idx], data, autocast, memory_format)
            total += loss.double() * len(idx)
            seen += len(idx)
            if after_step is not None:
                after_step()
    return float(total) / seen


@torch.no_grad()
def evaluate(model, data: data_mod.ImageData, split: str = "test", batch: int = 1000, bn_images: int = BN_IMAGES,
             memory_format=torch.contiguous_format, bn_augment: bool = BN_AUGMENT) -> float:
    """Accuracy (percent) of ``model`` with the weights it holds now on ``split`` (``"test"`` or
    ``"val"``), measured with BatchNorm statistics of those weights: re-estimated on the toolkit's
    fixed subset of ``bn_images`` training images (:func:`stam.dnn.data.bn_images`; ``bn_augment``:
    cropped and flipped once where the data set is trained so, else unaugmented; the rule
    of every accuracy ``stam train``, ``stam tune`` and ``stam map`` report), and the model's own
    statistics put back after.  So ``with opt.binary_weights(): evaluate(model, data)`` measures
    the binary network, whatever statistics training left.  ``bn_images=0``: the statistics as
    they stand (as trained: those of the training's forward weights).  ``memory_format``: the layout
    the images are given in (the model's, e.g. ``torch.channels_last``)."""
    xs, ys = getattr(data, f"{split}_x"), getattr(data, f"{split}_y")
    with contextlib.ExitStack() as stack:
        if bn_images:
            images = data_mod.bn_images(data, bn_images, bn_augment)
            stack.enter_context(reestimated(model, [data.normalise(x).contiguous(memory_format=memory_format)
                                                    for x in even_batches(images, batch)]))
        model.eval()
        try:
            correct = sum(int((model(data.normalise(xs[i : i + batch]).contiguous(memory_format=memory_format)).argmax(1)
                               == ys[i : i + batch]).sum())
                          for i in range(0, len(xs), batch))
        finally:
            model.train()
    return 100.0 * correct / len(xs)


__all__ = ["make_optimizer", "apply_hyper", "projected_weights", "binary_weights", "float_weights", "train_step", "epoch", "evaluate"]
