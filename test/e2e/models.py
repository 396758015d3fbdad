"""Models for the end-to-end tests: built with a fixed seed so PyTorch and
dlc start from the same weights."""
import torch
from torch import nn


def make_mlp() -> nn.Module:
    torch.manual_seed(1)
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(),
                         nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))


def make_cnn() -> nn.Module:
    torch.manual_seed(2)
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, stride=1, padding=1, bias=False), nn.BatchNorm2d(16),
        nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 7 * 7, 10))


class StdConv2d(nn.Conv2d):
    """A convolution with weight standardization (Qiao et al. 2019), as
    timm's NF-ResNets write it: each output channel's weights normalized by
    a functional batch norm (no running statistics, always batch ones)."""

    def forward(self, x):
        w = nn.functional.batch_norm(
            self.weight.reshape(1, self.out_channels, -1), None, None,
            training=True, momentum=0.0, eps=1e-6).reshape_as(self.weight)
        return nn.functional.conv2d(x, w, self.bias, self.stride, self.padding)


def make_ws_cnn() -> nn.Module:
    torch.manual_seed(3)
    return nn.Sequential(
        StdConv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        StdConv2d(8, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(8 * 7 * 7, 10))


MODELS = {"mlp": make_mlp, "cnn": make_cnn, "ws_cnn": make_ws_cnn}
