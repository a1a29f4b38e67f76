"""Networks of Section 3 (VGG-11, VGG-16, ResNet-18 in their CIFAR forms) and two small ones
(a VGG-style CNN and an MLP) for the offline digits data and the tests.

- VGG (Simonyan & Zisserman, CIFAR form): 3x3 conv-BN-ReLU blocks with 2x2 max pooling, then one
  linear classifier on the 512 pooled features.  Convs carry no bias (a BatchNorm follows).
- ResNet-18 (He et al., CIFAR form): a 3x3 stem conv (stride 1, no max pool), four stages of two
  BasicBlocks (64, 128, 256, 512 channels, strides 1, 2, 2, 2; 1x1 conv + BN shortcuts where
  the shape changes), global average pooling, one linear classifier.

:func:`param_groups` splits a model's parameters into the quantised set of eq. (eq01) (every conv
and linear weight, one block of Q per tensor) and the float rest (biases, BatchNorm), with the
optional ``keep_float`` exceptions of the first conv and/or last linear layer.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import torch
from torch import nn

from stam.dnn import catalog as _catalog
from stam.dnn.onednn import guard_channels_last

#: Layer plans: an int is a 3x3 conv-BN-ReLU block with that many channels, "M" a 2x2 max pool.
VGG_PLANS: dict[str, tuple] = {
    "vgg11": (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),
    "vgg16": (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"),
    # the small CNN for 8x8 digits and the tests
    "cnn": (32, "M", 64, "M"),
}


def scaled(channels: int, width: float) -> int:
    """A layer's channel count at ``width`` (the paper's networks: ``width = 1``): ``round(c * width)``, at least 1."""
    return max(1, int(round(channels * width)))


def check_width(width: float) -> float:
    """``width`` as a float, or ValueError: a channel-width multiplier is a finite number > 0."""
    w = float(width)
    if not (w > 0 and w < float("inf")):
        raise ValueError(f"width must be a finite number > 0 (1 = the paper's networks), got {width!r}")
    return w


class VGG(nn.Module):
    """conv-BN-ReLU blocks following ``plan`` (channels scaled by ``width``), global average
    pooling (the identity on CIFAR's 1x1 maps after five pools) and one linear classifier."""

    def __init__(self, plan: Sequence, num_classes: int = 10, in_channels: int = 3, width: float = 1.0):
        super().__init__()
        width = check_width(width)
        layers: list[nn.Module] = []
        channels = in_channels
        for item in plan:
            if item == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                item = scaled(item, width)
                layers += [nn.Conv2d(channels, item, 3, padding=1, bias=False), nn.BatchNorm2d(item), nn.ReLU(inplace=True)]
                channels = item
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(channels, num_classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


class BasicBlock(nn.Module):
    """Two 3x3 conv-BN layers with an identity (or 1x1 conv-BN) shortcut."""

    def __init__(self, in_planes: int, planes: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False), nn.BatchNorm2d(planes))
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.shortcut(x))


class ResNet18(nn.Module):
    """ResNet-18, CIFAR form (3x3 stem, no max pool); channels scaled by ``width``."""

    def __init__(self, num_classes: int = 10, in_channels: int = 3, width: float = 1.0):
        super().__init__()
        width = check_width(width)
        stem = scaled(64, width)
        self.conv1 = nn.Conv2d(in_channels, stem, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(stem)
        self.relu = nn.ReLU(inplace=True)
        stages, in_planes = [], stem
        for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            planes = scaled(planes, width)
            stages.append(nn.Sequential(BasicBlock(in_planes, planes, stride), BasicBlock(planes, planes, 1)))
            in_planes = planes
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.linear = nn.Linear(in_planes, num_classes)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        return self.linear(torch.flatten(self.pool(out), 1))


class MLP(nn.Module):
    """Flatten, then (Linear-BN-ReLU) x len(hidden) (hidden sizes scaled by ``width``), then a linear classifier."""

    def __init__(self, in_features: int, num_classes: int = 10, hidden: Sequence[int] = (256, 256), width: float = 1.0):
        super().__init__()
        scale = check_width(width)
        layers: list[nn.Module] = [nn.Flatten()]
        width = in_features
        for h in hidden:
            h = scaled(h, scale)
            layers += [nn.Linear(width, h, bias=False), nn.BatchNorm1d(h), nn.ReLU(inplace=True)]
            width = h
        layers.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


#: The model names and how ``stam table`` and the README name them (declared in :mod:`stam.dnn.catalog`).


def build_model(name: str, num_classes: int, image_shape: Sequence[int] = (3, 32, 32), width: float = 1.0) -> nn.Module:
    """The network ``name`` (one of :data:`stam.dnn.catalog.MODEL_NAMES`) for images of shape ``(C, H, W)``, every
    layer's channels (hidden units for the MLP) scaled by ``width`` (1: the paper's networks;
    ``round(c * width)``, at least 1; the input and the classes are not scaled).  A network whose
    parameters alone (4 bytes each) exceed the machine's memory (:func:`memory_bytes`) is a one-line
    :class:`~stam.errors.UsageError` naming ``--width`` before anything is allocated (it was an
    allocator error after up to a minute)."""
    if name in _catalog.MODEL_NAMES and not _on_meta():
        n = count_params_meta(name, num_classes, image_shape, width)
        if 4.0 * n > memory_bytes("cpu"):
            from stam.errors import UsageError

            raise UsageError(f"--width {width:g}: {name} has {n:.3g} parameters ({4e-9 * n:.3g} GB), more than this "
                             f"machine's {memory_bytes('cpu') / 1e9:.3g} GB of memory; give a smaller --width")
    return _build(name, num_classes, image_shape, width)


def count_params_meta(name: str, num_classes: int, image_shape: Sequence[int], width: float) -> int:
    """The parameters of the network, counted on torch's ``meta`` device (nothing allocated, and no
    forward pass: a meta forward pass imports sympy, a second of every start)."""
    key = (name, int(num_classes), tuple(int(d) for d in image_shape), float(width))
    if key in _COSTS:
        return _COSTS[key]["params"]
    with torch.device("meta"):
        return sum(p.numel() for p in _build(name, num_classes, image_shape, width).parameters())


def _on_meta() -> bool:
    return torch.empty(0).device.type == "meta"


def memory_bytes(device: str = "cpu") -> float:
    """The memory of ``device``: the GPU's (device 0) for ``cuda``, else what this process may allocate (the
    machine's physical memory, at most its address-space limit: :func:`stam.jobs.memory_limit_bytes`)."""
    if str(device).startswith("cuda") and torch.cuda.is_available():
        return float(torch.cuda.get_device_properties(0).total_memory)
    from stam.jobs import memory_limit_bytes

    return memory_limit_bytes()


_COSTS: dict = {}


def model_cost(name: str, num_classes: int, image_shape: Sequence[int] = (3, 32, 32), width: float = 1.0) -> dict:
    """What the network ``name`` costs, counted without allocating it (built on torch's ``meta``
    device, one forward pass of one image): ``params`` (its parameters), ``macs`` (multiply-adds of
    the convolutions and linear layers for one image's forward pass) and ``activations`` (numbers
    every layer outputs for one image, what a backward pass keeps; a network that cannot take the
    images is counted up to the layer that refuses them)."""
    key = (name, int(num_classes), tuple(int(d) for d in image_shape), float(width))
    if key not in _COSTS:
        counts = {"macs": 0, "activations": 0}

        def hook(module, inputs, output):
            counts["activations"] += output[0].numel()
            if isinstance(module, nn.Conv2d):
                k = module.kernel_size[0] * module.kernel_size[1]
                counts["macs"] += output[0].numel() * module.in_channels // module.groups * k
            elif isinstance(module, nn.Linear):
                counts["macs"] += module.in_features * module.out_features

        with torch.device("meta"):
            model = _build(name, num_classes, image_shape, width)
            for m in model.modules():
                if not list(m.children()):
                    m.register_forward_hook(hook)
            model.eval()
            try:
                model(torch.empty(1, *key[2]))
            except RuntimeError:  # a network that cannot take these images: counted up to where it failed
                pass  # (stam.dnn.data.check_fits says it in one line)
        _COSTS[key] = {"params": sum(p.numel() for p in model.parameters()), **counts}
    return dict(_COSTS[key])


#: the network the work limits are counted in: the paper's VGG-11 at width 1 on CIFAR's 3x32x32 images
REFERENCE_NETWORK = ("vgg11", 10, (3, 32, 32), 1.0)


def relative_cost(name: str, num_classes: int, image_shape: Sequence[int], width: float) -> float:
    """One image pass of ``name`` at ``width`` in units of one of the paper's VGG-11 at width 1
    (:data:`REFERENCE_NETWORK`), by multiply-adds, at least 1: a smaller network counts as one image
    pass, a wider one as many (a VGG-11 at width 2 about 4, at width 64 about 4,000)."""
    return max(1.0, model_cost(name, num_classes, image_shape, width)["macs"] / model_cost(*REFERENCE_NETWORK)["macs"])


def _build(name: str, num_classes: int, image_shape: Sequence[int], width: float) -> nn.Module:
    """The network, its convolutions guarded against oneDNN's bad channels-last kernel
    (:func:`stam.dnn.onednn.guard_channels_last`)."""
    channels = int(image_shape[0])
    if name in VGG_PLANS:
        model = VGG(VGG_PLANS[name], num_classes, channels, width)
    elif name == "resnet18":
        model = ResNet18(num_classes, channels, width)
    elif name == "mlp":
        model = MLP(int(torch.Size(image_shape).numel()), num_classes, width=width)
    else:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(_catalog.MODEL_NAMES)}")
    guard_channels_last(model)
    return model


KEEP_FLOAT_CHOICES = ("first", "last")


def weight_layers(model: nn.Module) -> list[nn.Module]:
    """Conv and linear layers in registration order (for every model here, the order of the
    forward pass at its two ends: the stem conv comes first, the classifier last)."""
    return [m for m in model.modules() if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear))]


def param_groups(model: nn.Module, keep_float: Iterable[str] = ()) -> list[dict]:
    """Two parameter groups: ``{"params": [...], "quantize": True}`` with the weights of every
    conv and linear layer (each tensor one block of Q, eq. (eq01)), and ``{"quantize": False}``
    with everything else (biases, BatchNorm).  ``keep_float`` may name ``"first"`` (the first
    conv/linear layer) and/or ``"last"`` (the last one, the classifier); their weights go to the
    float group.  Empty groups are dropped."""
    keep_float = set(keep_float)
    unknown = keep_float - set(KEEP_FLOAT_CHOICES)
    if unknown:
        raise ValueError(f"unknown keep-float layer(s) {sorted(unknown)}; allowed: first, last")
    layers = weight_layers(model)
    kept = set()
    if "first" in keep_float:
        kept.add(id(layers[0]))
    if "last" in keep_float:
        kept.add(id(layers[-1]))
    quantised = [m.weight for m in layers if id(m) not in kept]
    qids = {id(p) for p in quantised}
    rest = [p for p in model.parameters() if id(p) not in qids]
    groups = [{"params": quantised, "quantize": True}, {"params": rest, "quantize": False}]
    return [g for g in groups if g["params"]]


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


__all__ = ["scaled", "check_width", "VGG", "ResNet18", "MLP", "BasicBlock", "build_model", "param_groups", "weight_layers", "count_params", "model_cost", "relative_cost", "memory_bytes", "REFERENCE_NETWORK", "VGG_PLANS"]
