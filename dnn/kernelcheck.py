"""Fast paths checked against the reference path: the gradients of a network in channels-last memory format
against float64 (:func:`gradient_errors`), what ``tests/test_onednn.py`` runs for every model with 1 and 2 threads and
``benchmarks/onednn_channels_last.py`` records with the guard of :mod:`stam.dnn.onednn` on and off."""

from __future__ import annotations

import torch
from torch import nn

from stam.dnn.models import build_model
from stam.dnn.onednn import unguard

#: float32's unit roundoff
EPS32 = 2.0 ** -24


def gradient_errors(name: str, width: float, batch: int = 8, seed: int = 0, guarded: bool = True) -> dict:
    """One forward and backward pass of the model ``name`` (:func:`stam.dnn.models.build_model`, CIFAR-shaped,
    in evaluation mode: BatchNorm an affine map, so the gradients are well conditioned) on one batch, in
    channels-last and in contiguous format (float32) against the same pass in float64 (torch's own
    convolutions: oneDNN has no float64 kernels).  Returns, per format, the largest error of any weight
    or input gradient relative to that tensor's largest float64 entry, and ``tolerance``: ``L sqrt(n)
    eps32``, float32 rounding adding up over the ``L`` layers with weights, each a sum of at most
    ``n = batch x 32 x 32`` products (the typical, random-walk growth of a rounding error), a bound
    that a wrong kernel (errors of order 1) exceeds by orders of magnitude."""
    torch.manual_seed(seed)
    ref = build_model(name, 10, (3, 32, 32), width)
    x = torch.randn(batch, 3, 32, 32)
    y = torch.randint(0, 10, (batch,))

    def grads(fmt, dtype):
        model = build_model(name, 10, (3, 32, 32), width)
        model.load_state_dict(ref.state_dict())
        model = model.to(dtype).eval()
        if not guarded:
            unguard(model)
        xi = x.to(dtype).contiguous(memory_format=fmt).detach().requires_grad_(True)
        torch.nn.functional.cross_entropy(model(xi), y).backward()
        out = {n: p.grad.double() for n, p in model.named_parameters()}
        out["input"] = xi.grad.double()
        return out

    exact = grads(torch.contiguous_format, torch.float64)
    layers = sum(1 for m in ref.modules() if isinstance(m, (nn.Conv2d, nn.Linear)))
    result = {"model": name, "width": width, "batch": batch, "guarded": guarded,
              "tolerance": layers * (batch * 32 * 32) ** 0.5 * EPS32}
    for label, fmt in (("contiguous", torch.contiguous_format), ("channels_last", torch.channels_last)):
        got = grads(fmt, torch.float32)
        errs = {n: float((got[n] - e).abs().max() / e.abs().max().clamp_min(1e-300)) for n, e in exact.items()}
        worst = max(errs, key=errs.get)
        result[label] = {"max_rel_error": errs[worst], "where": worst}
    return result



__all__ = ["EPS32", "gradient_errors"]
