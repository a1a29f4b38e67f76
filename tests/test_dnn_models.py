"""Networks of Section 3: parameter counts against independent formulas, shapes, quantised groups."""

import pytest
import torch
from torch import nn

from stam.dnn.models import build_model, count_params, param_groups, weight_layers


def conv_bn(cin, cout, k=3):
    return k * k * cin * cout + 2 * cout  # conv without bias + BN (weight, bias)


def vgg_count(plan, k, cin=3):
    total, c = 0, cin
    for item in plan:
        if item != "M":
            total += conv_bn(c, item)
            c = item
    return total + c * k + k


def resnet18_count(k):
    total = conv_bn(3, 64)
    cin = 64
    for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for s in (stride, 1):
            total += conv_bn(cin, planes) + conv_bn(planes, planes)
            if s != 1 or cin != planes:
                total += conv_bn(cin, planes, k=1)
            cin = planes
    return total + 512 * k + k


V11 = [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"]
V16 = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


@pytest.mark.parametrize("k", [10, 100])
def test_parameter_counts_match_formulas(k):
    assert count_params(build_model("vgg11", k)) == vgg_count(V11, k)
    assert count_params(build_model("vgg16", k)) == vgg_count(V16, k)
    assert count_params(build_model("resnet18", k)) == resnet18_count(k)
    assert count_params(build_model("cnn", k, (1, 8, 8))) == vgg_count([32, "M", 64, "M"], k, cin=1)
    assert count_params(build_model("mlp", k, (1, 8, 8))) == 64 * 256 + 2 * 256 + 256 * 256 + 2 * 256 + 256 * k + k


def test_known_published_counts():
    # ResNet-18 (CIFAR form) has 11,173,962 parameters for 10 classes (widely quoted figure)
    assert resnet18_count(10) == 11_173_962
    assert vgg_count(V16, 10) == 14_724_042


@pytest.mark.parametrize("name,shape", [("vgg11", (3, 32, 32)), ("resnet18", (3, 32, 32)), ("cnn", (1, 8, 8)), ("mlp", (1, 8, 8))])
def test_forward_shapes(name, shape):
    model = build_model(name, 7, shape).eval()
    with torch.no_grad():
        assert model(torch.randn(2, *shape)).shape == (2, 7)


@pytest.mark.parametrize("keep", [(), ("first",), ("last",), ("first", "last")])
def test_param_groups_quantise_conv_and_linear_weights_only(keep):
    model = build_model("resnet18", 10)
    groups = param_groups(model, keep)
    q = {id(p) for g in groups if g["quantize"] for p in g["params"]}
    f = {id(p) for g in groups if not g["quantize"] for p in g["params"]}
    assert not q & f and len(q) + len(f) == len(list(model.parameters()))
    layers = weight_layers(model)
    assert isinstance(layers[0], nn.Conv2d) and layers[0] is model.conv1
    assert layers[-1] is model.linear
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            assert id(m.weight) in f and id(m.bias) in f
    assert id(model.linear.bias) in f
    assert (id(model.conv1.weight) in f) == ("first" in keep)
    assert (id(model.linear.weight) in f) == ("last" in keep)
    assert id(model.layer2[0].shortcut[0].weight) in q


def test_param_groups_rejects_unknown_layer():
    with pytest.raises(ValueError, match="first, last"):
        param_groups(build_model("mlp", 10, (1, 8, 8)), ["middle"])
