"""R networks as one: every model of :mod:`stam.dnn.models` widened into R independent copies.

:func:`widen` turns R copies of one architecture (one per run: its own seed, its own weights)
into one ``nn.Module`` whose layers hold the R runs side by side:

- a ``Conv2d(c_in, c_out)`` becomes :class:`RunConv2d`: weight ``(R c_out, c_in, k, k)``, applied as
  a grouped convolution (``groups = R``) to an input whose channels are the R runs' channels one
  after the other; where every run sees the same images (the first layer of runs that share a
  seed, and every evaluation) it is one plain convolution with ``R c_out`` output channels;
- a ``Linear(d_in, d_out)`` becomes :class:`RunLinear`: weight ``(R, d_out, d_in)``, a batched
  matrix product (one matrix product on a shared input);
- a ``BatchNorm`` over ``c`` channels becomes the same ``BatchNorm`` over ``R c`` channels.  Its
  statistics are per channel, so each run's channels are normalised with that run's batch
  statistics and keep that run's running averages: exactly R BatchNorms;
- ReLU, pooling, flattening, residual additions act per channel or per position, so they are
  shared unchanged (the forward code of each model runs as written).

So the forward pass of run ``r`` is the forward pass of its own model, and a gradient with respect
to the wide weights is the R runs' gradients side by side.  :attr:`WideNet.views` maps each
parameter of the original model to its ``(R, *shape)`` view of the wide parameter, which is what
the batched update rules (:class:`stam.rules.UpdateRule`) read and write.

Layouts: images enter as ``(B, C, H, W)`` (shared by every run) or ``(B, R C, H, W)`` (run ``r``'s
images in channels ``r C .. (r+1) C - 1``; :func:`stack_runs` builds it from ``(R, B, C, H, W)``);
logits leave as ``(R, B, classes)``.  Flattening ``(B, R C, H, W)`` keeps each run's features
contiguous, so the MLP needs nothing special.
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from stam.dnn.onednn import guard_channels_last

#: On the CPU a grouped convolution with few input channels per group is several times slower
#: than the same convolutions one after the other (measured: 3 -> 8 channels, 32x32, batch 128,
#: R = 8: 0.16 s grouped, 0.057 s looped); at or below this many input channels per run the CPU
#: loops over the runs.
CPU_LOOP_MAX_IN_CHANNELS = 4


class RunConv2d(nn.Module):
    """R ``Conv2d`` layers (no bias: a BatchNorm follows in every model here) side by side."""

    def __init__(self, convs: list[nn.Conv2d]):
        super().__init__()
        c = convs[0]
        if c.bias is not None or c.groups != 1:
            raise ValueError("RunConv2d takes bias-free, ungrouped convolutions (as every model of stam.dnn.models has)")
        self.runs, self.in_channels, self.out_channels = len(convs), c.in_channels, c.out_channels
        self.stride, self.padding, self.dilation = c.stride, c.padding, c.dilation
        self.weight = nn.Parameter(torch.cat([m.weight.detach() for m in convs]).clone())

    def forward(self, x: Tensor) -> Tensor:
        R, cin = self.runs, self.in_channels
        conv = lambda inp, w, groups=1: F.conv2d(inp, w, None, self.stride, self.padding, self.dilation, groups)  # noqa: E731
        if x.shape[1] == cin and R > 1:  # every run sees the same input: one convolution, R * c_out channels
            return conv(x, self.weight)
        if R > 1 and x.device.type == "cpu" and cin <= CPU_LOOP_MAX_IN_CHANNELS:
            w = self.weight.view(R, self.out_channels, *self.weight.shape[1:])
            return torch.cat([conv(x[:, r * cin : (r + 1) * cin], w[r]) for r in range(R)], dim=1)
        return conv(x, self.weight, R)


class RunLinear(nn.Module):
    """R ``Linear`` layers side by side: input ``(B, R d_in)`` or ``(B, d_in)`` (shared), output
    ``(B, R d_out)``."""

    def __init__(self, linears: list[nn.Linear]):
        super().__init__()
        m = linears[0]
        self.runs, self.in_features, self.out_features = len(linears), m.in_features, m.out_features
        self.weight = nn.Parameter(torch.stack([l.weight.detach() for l in linears]).clone())
        self.bias = nn.Parameter(torch.stack([l.bias.detach() for l in linears]).clone()) if m.bias is not None else None

    def forward(self, x: Tensor) -> Tensor:
        R, B = self.runs, x.shape[0]
        if R == 1:  # one run: the plain layer (a batched product costs more, forward and backward)
            return F.linear(x, self.weight[0], None if self.bias is None else self.bias[0])
        if x.shape[1] == self.in_features:  # shared input: one matrix product
            out = (x @ self.weight.reshape(R * self.out_features, self.in_features).t()).view(B, R, self.out_features)
        else:
            out = torch.bmm(x.view(B, R, self.in_features).transpose(0, 1), self.weight.transpose(1, 2)).transpose(0, 1)
        if self.bias is not None:
            out = out + self.bias
        return out.reshape(B, R * self.out_features)


def _wide_batchnorm(bns: list[nn.modules.batchnorm._BatchNorm]) -> nn.Module:
    b = bns[0]
    wide = type(b)(len(bns) * b.num_features, eps=b.eps, momentum=b.momentum, affine=b.affine,
                   track_running_stats=b.track_running_stats)
    with torch.no_grad():
        for name in ("weight", "bias"):
            if getattr(b, name) is not None:
                getattr(wide, name).copy_(torch.cat([getattr(m, name) for m in bns]))
        if b.track_running_stats:
            wide.running_mean.copy_(torch.cat([m.running_mean for m in bns]))
            wide.running_var.copy_(torch.cat([m.running_var for m in bns]))
    return wide


def _widen_into(wide: nn.Module, models: list[nn.Module]) -> None:
    """Replace, in place in ``wide`` (a copy of ``models[0]``), every layer with parameters by its
    R-run form built from the corresponding layers of ``models``."""
    for name, child in list(wide.named_children()):
        parts = [getattr(m, name) for m in models]
        if isinstance(child, nn.Conv2d):
            setattr(wide, name, RunConv2d(parts))
        elif isinstance(child, nn.Linear):
            setattr(wide, name, RunLinear(parts))
        elif isinstance(child, nn.modules.batchnorm._BatchNorm):
            setattr(wide, name, _wide_batchnorm(parts))
        elif any(True for _ in child.parameters(recurse=False)):
            raise TypeError(f"cannot widen layer {name} ({type(child).__name__}): only Conv2d, Linear and BatchNorm hold parameters")
        else:
            _widen_into(child, parts)


class WideNet(nn.Module):
    """R copies of one network as one module (see the module docstring).  ``views[name]`` is the
    ``(R, *shape)`` view of the wide parameter holding the original parameter ``name`` of every
    run; ``forward`` returns logits ``(R, B, classes)``."""

    def __init__(self, models: list[nn.Module]):
        super().__init__()
        if not models:
            raise ValueError("widen() needs at least one model")
        self.runs = len(models)
        self.body = copy.deepcopy(models[0])
        _widen_into(self.body, models)
        guard_channels_last(self.body)  # the R-run convolutions, as build_model guards the plain ones
        wide_params = dict(self.body.named_parameters())
        self.names = [n for n, _ in models[0].named_parameters()]
        self.shapes = {n: tuple(p.shape) for n, p in models[0].named_parameters()}
        missing = [n for n in self.names if n not in wide_params]
        if missing:
            raise TypeError(f"widen(): parameters {missing} have no wide counterpart")
        self._wide_shapes = {n: p.shape for n, p in wide_params.items()}  # read every step by call_with
        # (module, attribute) of every parameter, found once: call_with puts tensors there directly
        self._slots = {n: (self.body.get_submodule(n.rpartition(".")[0]), n.rpartition(".")[2]) for n in wide_params}

    @property
    def views(self) -> dict[str, Tensor]:
        params = dict(self.body.named_parameters())
        return {n: params[n].view(self.runs, *self.shapes[n]) for n in self.names}

    def wide_shape(self, name: str) -> torch.Size:
        return self._wide_shapes[name]

    def forward(self, x: Tensor) -> Tensor:
        out = self.body(x)
        return out.view(out.shape[0], self.runs, -1).transpose(0, 1)

    def call_with(self, weights: dict[str, Tensor], x: Tensor) -> Tensor:
        """The forward pass with the parameters named in ``weights`` (``(R, *shape)`` tensors, or
        already in the wide parameter's shape, e.g. the forward weights of an update rule with
        ``requires_grad``) in place of the module's own; buffers (BatchNorm's running statistics)
        are the module's, updated in training mode.  What ``torch.func.functional_call`` does, with
        the parameters' places found once (its search of the module tree is most of a small
        network's step)."""
        saved = []
        try:
            for n, w in weights.items():
                module, attr = self._slots[n]
                saved.append((module, attr, module._parameters[attr]))
                module._parameters[attr] = w if w.shape == self._wide_shapes[n] else w.reshape(self._wide_shapes[n])
            out = self.body(x)
        finally:
            for module, attr, p in reversed(saved):
                module._parameters[attr] = p
        return out.view(out.shape[0], self.runs, -1).transpose(0, 1)


def widen(models: list[nn.Module]) -> WideNet:
    """The R networks ``models`` (one architecture) as one :class:`WideNet`."""
    return WideNet(models)


def stack_runs(x: Tensor) -> Tensor:
    """``(R, B, C, ...)`` -> ``(B, R C, ...)``: run ``r``'s images in channels ``r C .. (r+1) C - 1``."""
    R, B, C = x.shape[:3]
    return x.transpose(0, 1).reshape(B, R * C, *x.shape[3:])


__all__ = ["WideNet", "RunConv2d", "RunLinear", "widen", "stack_runs", "CPU_LOOP_MAX_IN_CHANNELS"]


# --------------------------------------------------------------------------- flat buffers

def chunks(names: list[str], sizes: list[int], runs: int, max_bytes: float) -> list[list[str]]:
    """Consecutive groups of ``names`` whose ``runs x size`` float32 entries stay within
    ``max_bytes`` (a larger layer alone)."""
    groups, cur, used = [], [], 0
    for name, size in zip(names, sizes):
        b = 4 * runs * size
        if cur and used + b > max_bytes:
            groups.append(cur)
            cur, used = [], 0
        cur.append(name)
        used += b
    return groups + [cur] if cur else groups


class Layout:
    """Where the parameters ``names`` of R networks live in one flat ``(R, n)`` buffer: parameter
    ``k`` in columns ``offsets[k] .. offsets[k] + sizes[k]`` of each run's row.  The update rules
    step the whole buffer at once; the network reads per-parameter views of it."""

    def __init__(self, names: list[str], shapes: dict[str, tuple], wide_shapes: dict[str, torch.Size], runs: int):
        self.names, self.runs = list(names), runs
        self.shapes = [tuple(shapes[n]) for n in self.names]
        self.wide_shapes = [wide_shapes[n] for n in self.names]
        self.sizes = [math.prod(sh) for sh in self.shapes]
        self.offsets = [sum(self.sizes[:k]) for k in range(len(self.sizes))]
        self.numel = sum(self.sizes)

    def flatten(self, tensors: dict[str, Tensor]) -> Tensor:
        """The buffer ``(R, n)`` holding ``tensors[name]`` (each ``(R, *shape)``): a new tensor."""
        if not self.names:
            return torch.zeros(self.runs, 0)
        return torch.cat([tensors[n].detach().reshape(self.runs, -1) for n in self.names], dim=1)

    def views(self, flat: Tensor) -> dict[str, Tensor]:
        """Each parameter as an ``(R, *shape)`` view of ``flat``."""
        return {n: flat[:, o : o + k].view(self.runs, *sh) for n, o, k, sh in zip(self.names, self.offsets, self.sizes, self.shapes)}

    def wide(self, flat: Tensor) -> dict[str, Tensor]:
        """Each parameter in the shape of its :class:`stam.dnn.wide.WideNet` parameter (a view
        where the layout allows, as for one run; a copy otherwise).  One ``split`` for all of them:
        its backward writes the gradient buffer in one pass (a slice per parameter would zero-fill
        and add a buffer of the whole size per parameter)."""
        if not self.names:
            return {}
        parts = flat.split(self.sizes, dim=1)
        return {n: part.reshape(ws) for n, part, ws in zip(self.names, parts, self.wide_shapes)}

    def q(self, device):
        """F = I_Q over this layout: one block of Q per parameter (layer), eq. (eq01)."""
        from stam.operators import IndicatorQ
        from stam.quantize import block_ids_from_sizes

        return IndicatorQ(block_ids_from_sizes(self.sizes, device), len(self.sizes))
