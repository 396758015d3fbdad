"""Trains a small CNN with nn.Upsample (nearest, bilinear, bilinear with
align_corners) with dlc --train + dlrt train and with PyTorch, from the same
weights on one fixed batch, and compares the losses step by step, for
train-resize.test.

Usage: train_resize.py OUT_DIR [--break]
Model: Conv(3->4, 3x3, pad 1) -> ReLU -> Upsample(x2, nearest) -> Conv(4->4,
stride 2) -> Upsample(x2, bilinear) -> Conv(4->4) -> Upsample(size 9x7,
bilinear, align_corners) -> Flatten -> Linear(->5), trained by SGD with
momentum 0.9, lr 0.05, 5 steps, exported at opset 13 and 17. Prints one line
per step; "ok" when within 1e-4 relative of PyTorch (fp32 on both sides).
--break changes the learning rate given to dlc so the check must fail.
"""
import os
import sys

import numpy as np
import onnx
import torch
from torch import nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sgd_check import compare_sgd, export_training  # noqa: E402

STEPS, LR, MOMENTUM, BATCH = 5, 0.05, 0.9, 4


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4, 3, padding=1)
        self.c2 = nn.Conv2d(4, 4, 3, stride=2, padding=1)
        self.c3 = nn.Conv2d(4, 4, 3, padding=1)
        self.up1 = nn.Upsample(scale_factor=2, mode="nearest")
        self.up2 = nn.Upsample(scale_factor=2, mode="bilinear",
                               align_corners=False)
        self.up3 = nn.Upsample(size=(9, 7), mode="bilinear",
                               align_corners=True)
        self.fc = nn.Linear(4 * 9 * 7, 5)

    def forward(self, x):
        x = self.up1(F.relu(self.c1(x)))
        x = self.up2(self.c2(x))
        x = self.up3(torch.tanh(self.c3(x)))
        return self.fc(torch.flatten(x, 1))


def main():
    out = sys.argv[1]
    broken = "--break" in sys.argv
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    x = torch.randn(BATCH, 3, 6, 5)
    y = torch.randint(0, 5, (BATCH,))
    np.savez(os.path.join(out, "batch.npz"), x=x.numpy(), labels=y.numpy())
    failed = False
    for opset in (13, 17):
        torch.manual_seed(1)
        model = Net()
        base = os.path.join(out, f"net_{opset}")
        export_training(model, (x,), base + ".onnx", opset, ["x"])
        modes = sorted(
            "%s/%s" % (onnx.helper.get_attribute_value(a).decode(),
                       [onnx.helper.get_attribute_value(b).decode()
                        for b in n.attribute
                        if b.name == "coordinate_transformation_mode"][0])
            for n in onnx.load(base + ".onnx").graph.node
            if n.op_type == "Resize" for a in n.attribute if a.name == "mode")
        print(f"opset {opset} Resize nodes: {' '.join(modes)}")
        failed |= compare_sgd(f"opset {opset}", base, model, (x,), y,
                              os.path.join(out, "batch.npz"), lr=LR,
                              momentum=MOMENTUM, steps=STEPS, batch=BATCH,
                              broken=broken)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
