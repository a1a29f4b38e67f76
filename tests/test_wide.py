"""R networks as one (stam.dnn.wide): the wide network is the R networks, run for run."""

from __future__ import annotations

import pytest
import torch

from stam.dnn import wide as W
from stam.dnn.catalog import MODEL_NAMES
from stam.dnn.models import build_model, count_params

SHAPES = {"mlp": (1, 8, 8), "cnn": (1, 8, 8), "vgg11": (3, 32, 32), "vgg16": (3, 32, 32), "resnet18": (3, 32, 32)}


def _models(name, R, width=0.125):
    out = []
    for s in range(R):
        torch.manual_seed(s)
        out.append(build_model(name, 10, SHAPES[name], width))
    return out


@pytest.mark.parametrize("name", MODEL_NAMES)
@pytest.mark.parametrize("shared", [True, False])
def test_wide_network_is_the_runs_side_by_side(name, shared, monkeypatch):
    """Logits, gradients and BatchNorm running statistics of each run equal its own network's
    (training mode, then evaluation mode), for a shared input and for per-run inputs, and with
    the CPU's looped and grouped first convolution alike."""
    torch.manual_seed(0)
    monkeypatch.setattr(W, "CPU_LOOP_MAX_IN_CHANNELS", 4 if shared else 0)
    R = 3
    models = _models(name, R)
    wide = W.widen(_models(name, R))
    x = torch.randn(R, 6, *SHAPES[name])
    inp = x[0] if shared else W.stack_runs(x)
    out = wide(inp)
    out.square().sum().backward()
    views = {n: p.grad.view(R, *wide.shapes[n]) for n, p in wide.body.named_parameters()}
    for r, m in enumerate(models):
        ref = m(x[0] if shared else x[r])
        ref.square().sum().backward()
        torch.testing.assert_close(out[r], ref, rtol=1e-5, atol=1e-5)
        for n, p in m.named_parameters():
            torch.testing.assert_close(views[n][r], p.grad, rtol=1e-4, atol=1e-4 * float(p.grad.abs().max()))  # float32 sums
    wide_bufs = dict(wide.body.named_buffers())
    for n, b in models[0].named_buffers():
        if b.is_floating_point():
            torch.testing.assert_close(wide_bufs[n].view(R, -1)[0], b.view(-1))
    wide.eval()
    for m in models:
        m.eval()
    torch.testing.assert_close(wide(x[0]), torch.stack([m(x[0]) for m in models]), rtol=1e-5, atol=1e-5)
    assert sum(p.numel() for p in wide.parameters()) == R * count_params(models[0])


def test_call_with_uses_the_given_weights():
    models = _models("vgg11", 2)
    wide = W.widen(models)
    x = torch.randn(4, 3, 32, 32)
    zero = {n: torch.zeros_like(v) for n, v in wide.views.items() if n.endswith("classifier.weight")}
    zero.update({n: torch.full_like(v, 0.5) for n, v in wide.views.items() if n.endswith("classifier.bias")})
    out = wide.call_with(zero, x)
    assert torch.equal(out, torch.full_like(out, 0.5))
    assert not torch.equal(wide(x), out)  # the module's own weights are untouched


def test_width_scales_every_layer_and_keeps_the_papers_network_at_one():
    full = build_model("vgg11", 10)
    assert [m.out_channels for m in full.modules() if isinstance(m, torch.nn.Conv2d)] == [64, 128, 256, 256, 512, 512, 512, 512]
    eighth = build_model("vgg11", 10, width=0.125)
    assert [m.out_channels for m in eighth.modules() if isinstance(m, torch.nn.Conv2d)] == [8, 16, 32, 32, 64, 64, 64, 64]
    assert build_model("resnet18", 10, width=0.25).linear.in_features == 128
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="width"):
            build_model("vgg11", 10, width=bad)
