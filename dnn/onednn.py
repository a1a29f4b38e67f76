"""What the toolkit knows about oneDNN's CPU convolutions, and the one guard it takes against a known bad kernel.

oneDNN (torch's CPU convolutions) has a bug in the backward pass of a *strided 1x1 convolution in
channels-last memory format with fewer input channels than the kernel's channel block*: its
``jit_1x1`` ``backward_weights`` kernel, after "reducing to unit stride" into a workspace, writes
past that workspace (oneDNN issue 6035, "1x1 convolution backward_weights writes past the rtus
workspace (nhwc, IC < ic_block)").  Depending on the machine the process aborts ("free(): invalid
next size"), segfaults, hangs, or returns every weight gradient of the layer wrong with no word.
The block is 8 input channels on an AVX2 processor and 16 with AVX-512.  ResNet-18's shortcut
convolutions are of that kind at narrow widths: at width 1/16 its first shortcut has 4 input
channels (aborts or segfaults on an AVX2 processor with one thread; with two, weight gradients off
by up to 1.2 relative), at width 1/8 it has 8 (below AVX-512's block).
``benchmarks/onednn_channels_last.py`` measures ResNet-18 of the toolkit's models, with and
without the guard, on the machine it runs on (``benchmarks/results/onednn_channels_last_*.json``).

The guard (:func:`guard_channels_last`): such a layer never runs in channels-last on a CPU.  Its
input is made contiguous before the convolution (so oneDNN takes its blocked-format path, which is
correct) and its output is given back in channels-last, so the layers around it keep their fast
format; one notice per process says so.  The rule is static (decided from the layer's shape and the
processor's instruction set, :func:`onednn_block`), because a check that runs the bad kernel can
itself abort the process; it costs nothing per step beyond the two reorders of the guarded layers
(a few small tensors of ResNet-18), and nothing at all for VGG and the MLP, which have no such
layer.  :func:`stam.dnn.models.build_model` and :class:`stam.dnn.wide.WideNet` guard every network
they build; call :func:`guard_channels_last` on a network of your own.
"""

from __future__ import annotations

import torch
from torch import nn

from stam.machine import cpu_isa

#: oneDNN's input-channel block of its 1x1 kernels: 16 floats with AVX-512 (a 512-bit register), 8 with AVX2
BLOCK_AVX512, BLOCK_AVX2 = 16, 8

_NOTICED: set = set()


def processor_has_avx512() -> bool:
    """Whether the processor has AVX-512 (:func:`stam.machine.cpu_isa`; where its flags cannot be
    read, torch's CPU capability).  The processor's, not torch's setting: oneDNN picks its kernels
    from the processor (``ATEN_CPU_CAPABILITY`` lowers torch's own kernels only), so the larger block
    is assumed wherever the processor has it (``ONEDNN_MAX_CPU_ISA`` can only make the true block smaller)."""
    isa = cpu_isa()
    if isa != "other":
        return isa == "AVX512"
    return torch.backends.cpu.get_cpu_capability().upper().startswith("AVX512")


def onednn_block() -> int:
    """oneDNN's input-channel block of its 1x1 convolution kernels on this processor (16 with AVX-512, else 8)."""
    return BLOCK_AVX512 if processor_has_avx512() else BLOCK_AVX2


def channels_last_bad(in_channels: int, kernel_size, stride, block: int | None = None) -> bool:
    """Whether a convolution of this shape is one oneDNN's channels-last backward pass gets wrong
    (module docstring): a 1x1 kernel, a stride above 1, and fewer input channels per group than the
    kernel's block (:func:`onednn_block`, or ``block``)."""
    ks = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else (kernel_size, kernel_size)
    st = tuple(stride) if isinstance(stride, (tuple, list)) else (stride, stride)
    return all(k == 1 for k in ks) and any(s > 1 for s in st) and in_channels < (block or onednn_block())


def _layer_shape(module: nn.Module):
    """(input channels per group, kernel size, stride) of a 2-D convolution: a module with a 4-D ``weight`` and a
    ``stride`` (``nn.Conv2d``, :class:`stam.dnn.wide.RunConv2d`, whose weight holds one run's input channels), else None."""
    weight, stride = getattr(module, "weight", None), getattr(module, "stride", None)
    if not isinstance(weight, torch.Tensor) or weight.dim() != 4 or stride is None:
        return None
    return weight.shape[1], tuple(weight.shape[2:]), tuple(stride)


def _is_channels_last(x: torch.Tensor) -> bool:
    return x.dim() == 4 and not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)


def _before(module: nn.Module, args):
    x = args[0] if args else None
    module._stam_reformatted = False
    if isinstance(x, torch.Tensor) and x.device.type == "cpu" and _is_channels_last(x):
        cin, ks, st = _layer_shape(module)
        if channels_last_bad(cin, ks, st):
            module._stam_reformatted = True
            _notice(cin, ks, st)
            return (x.contiguous(), *args[1:])
    return None


def _after(module: nn.Module, args, out):
    if getattr(module, "_stam_reformatted", False):
        module._stam_reformatted = False
        return out.contiguous(memory_format=torch.channels_last)
    return None


def _notice(cin: int, ks, st) -> None:
    key = (cin, ks, st)
    if key in _NOTICED:
        return
    _NOTICED.add(key)
    from stam.errors import warn

    warn(f"a {ks[0]}x{ks[1]} convolution with stride {st[0]} and {cin} input channels runs in contiguous format on this "
         f"processor (oneDNN's channels-last backward pass is wrong for fewer than {onednn_block()} input channels: "
         "stam.dnn.onednn)", stacklevel=4)


def guard_channels_last(model: nn.Module) -> list[str]:
    """Guard every convolution of ``model`` whose shape can be bad in channels-last on some processor
    (:func:`channels_last_bad` with AVX-512's block, the larger): at each call the layer checks the
    processor's block and its input's device and format, and runs in contiguous format where the
    kernel is bad (module docstring).  Idempotent; returns the names of the guarded layers."""
    names = []
    for name, module in model.named_modules():
        shape = _layer_shape(module)
        if shape is None or not channels_last_bad(*shape, block=BLOCK_AVX512):
            continue
        if not getattr(module, "_stam_guarded", False):
            module.register_forward_pre_hook(_before)
            module.register_forward_hook(_after)
            module._stam_guarded = True
        names.append(name)
    return names


def unguard(model: nn.Module) -> None:
    """Remove the guard from every layer of ``model`` (for measuring the bad kernel itself:
    ``benchmarks/onednn_channels_last.py``)."""
    for module in model.modules():
        if getattr(module, "_stam_guarded", False):
            for hooks in (module._forward_pre_hooks, module._forward_hooks):
                for key in [k for k, fn in hooks.items() if fn in (_before, _after)]:
                    del hooks[key]
            module._stam_guarded = False


__all__ = ["BLOCK_AVX512", "BLOCK_AVX2", "processor_has_avx512", "onednn_block", "channels_last_bad", "guard_channels_last", "unguard"]
