"""A compact residual CNN for small photo sets, trained from scratch.

The layout follows the small ResNets that train fast on CIFAR-10 (a stride-2 stem,
then stages of "conv, max-pool, residual block"), with one more stage for 128-160 px
photos. Widths are ``width * (1, 2, 4, 8)``; ``width=32`` has 1.9 M parameters and costs
0.32 G multiply-adds per 128 px image forward (``macs_per_image``).
"""

from __future__ import annotations

import torch
from torch import nn


# --8<-- [start:model]
def conv_bn(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Residual(nn.Module):
    """Two 3x3 convolutions with a skip connection around them."""

    def __init__(self, channels: int):
        super().__init__()
        self.body = nn.Sequential(conv_bn(channels, channels),
                                  conv_bn(channels, channels))

    def forward(self, x):
        return x + self.body(x)


class CatDogNet(nn.Module):
    def __init__(self, width: int = 32, num_classes: int = 2, dropout: float = 0.1):
        super().__init__()
        c = width
        self.features = nn.Sequential(
            conv_bn(3, c, stride=2),          # 128 px -> 64
            conv_bn(c, c), nn.MaxPool2d(2),   # -> 32
            conv_bn(c, 2 * c), Residual(2 * c), nn.MaxPool2d(2),          # -> 16
            conv_bn(2 * c, 4 * c), Residual(4 * c), nn.MaxPool2d(2),      # -> 8
            conv_bn(4 * c, 8 * c), Residual(8 * c),                       # 8 x 8
        )
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                  nn.Dropout(dropout), nn.Linear(8 * c, num_classes))

    def forward(self, x):
        return self.head(self.features(x))
# --8<-- [end:model]


def build_model(width: int = 32, *, pretrained: bool = False, num_classes: int = 2) -> nn.Module:
    """The from-scratch CatDogNet, or torchvision's ResNet-18 with ImageNet weights."""
    if not pretrained:
        return CatDogNet(width, num_classes)
    from torchvision.models import ResNet18_Weights, resnet18
    net = resnet18(weights=ResNet18_Weights.DEFAULT)  # downloads ~45 MB on first use
    net.fc = nn.Linear(net.fc.in_features, num_classes)
    return net


def build_from_config(config: dict) -> nn.Module:
    """The architecture a checkpoint was trained with (no weights downloaded)."""
    if config.get("pretrained"):
        from torchvision.models import resnet18
        net = resnet18(weights=None)
        net.fc = nn.Linear(net.fc.in_features, 2)
        return net
    return CatDogNet(int(config["width"]))


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def macs_per_image(model: nn.Module, size: int) -> int:
    """Multiply-accumulates of one forward pass at ``size x size`` (convolutions and linear layers)."""
    total = 0

    def hook(mod, inp, out):
        nonlocal total
        if isinstance(mod, nn.Conv2d):
            total += out[0].numel() * mod.in_channels // mod.groups * mod.kernel_size[0] * mod.kernel_size[1]
        elif isinstance(mod, nn.Linear):
            total += mod.in_features * mod.out_features

    handles = [m.register_forward_hook(hook) for m in model.modules()
               if isinstance(m, (nn.Conv2d, nn.Linear))]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            p = next(model.parameters())
            model(torch.zeros(1, 3, size, size, device=p.device, dtype=p.dtype))
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    return total
