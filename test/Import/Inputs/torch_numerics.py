"""Exports PyTorch models (eval mode) to ONNX with a random input and PyTorch's
output, for import-numerics.test.

Usage: torch_numerics.py OUT_DIR
Writes <name>.onnx, <name>.input.bin and <name>.expected.bin (raw f32) for:
  cnn:  Conv2d(stride 2, padding 1) -> BatchNorm2d (random running statistics and
        affine parameters, eps 1e-3) -> ReLU -> AvgPool2d(3, 2, 1, ceil_mode,
        count_include_pad=False) -> MaxPool2d(2, ceil_mode) -> Flatten -> Linear
        -> LogSoftmax
  mlp:  x.view(x.size(0), -1) -> Linear -> ReLU -> Linear(bias=False) -> Softmax
The batch dimension is symbolic (dynamic_axes); the test passes --batch-size 3.
  mlp_static: the MLP exported with a static batch of 1, with a batch-3 input.
"""
import os
import sys

import numpy as np
import torch
from torch import nn


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(4, eps=1e-3)
        self.avg = nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False)
        self.max = nn.MaxPool2d(2, ceil_mode=True)
        self.fc = nn.Linear(4 * 2 * 2, 5)

    def forward(self, x):
        x = self.max(self.avg(torch.relu(self.bn(self.conv(x)))))
        return torch.log_softmax(self.fc(torch.flatten(x, 1)), dim=1)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(2 * 13 * 13, 16)
        self.fc2 = nn.Linear(16, 6, bias=False)

    def forward(self, x):
        return torch.softmax(self.fc2(torch.relu(self.fc1(x.view(x.size(0), -1)))), dim=1)


def save(model, name, out, opset):
    x = torch.randn(3, 2, 13, 13)
    model.eval()
    with torch.no_grad():
        y = model(x)
    torch.onnx.export(model, (x,), os.path.join(out, name + ".onnx"), opset_version=opset,
                      training=torch.onnx.TrainingMode.PRESERVE,
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    x.numpy().astype(np.float32).tofile(os.path.join(out, name + ".input.bin"))
    y.numpy().astype(np.float32).tofile(os.path.join(out, name + ".expected.bin"))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    cnn = Cnn()
    with torch.no_grad():
        cnn.bn.running_mean.uniform_(-0.5, 0.5)
        cnn.bn.running_var.uniform_(0.5, 2.0)
        cnn.bn.weight.uniform_(0.5, 1.5)
        cnn.bn.bias.uniform_(-0.5, 0.5)
    save(cnn, "cnn", out, 13)
    mlp = Mlp()
    save(mlp, "mlp", out, 17)
    # The same MLP exported with a static batch of 1: torch folds
    # x.view(x.size(0), -1) into Reshape(x, [1, -1]); run with batch 3.
    torch.onnx.export(mlp, (torch.randn(1, 2, 13, 13),),
                      os.path.join(out, "mlp_static.onnx"), opset_version=13,
                      input_names=["x"], output_names=["y"])
    x = torch.randn(3, 2, 13, 13)
    with torch.no_grad():
        y = mlp(x)
    x.numpy().astype(np.float32).tofile(os.path.join(out, "mlp_static.input.bin"))
    y.numpy().astype(np.float32).tofile(os.path.join(out, "mlp_static.expected.bin"))


if __name__ == "__main__":
    main()
