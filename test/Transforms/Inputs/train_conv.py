"""Trains small convolutional models with dlc --train + dlrt train and with
PyTorch, from the same weights on one fixed batch, and compares the losses
step by step, for train-conv.test.

Usage: train_conv.py OUT_DIR MODEL [--break]
MODEL is one of:
  convtranspose: Conv2d -> ReLU -> ConvTranspose2d (stride 2, padding 1,
      output_padding 1, groups 2) -> Tanh -> ConvTranspose2d (stride (1, 2),
      padding (0, 1), dilation (2, 1), no bias) -> Flatten -> Linear.
  conv3d: Conv3d (stride (2, 1, 1), padding 1) -> ReLU -> MaxPool3d (2,
      stride (1, 2, 2), padding 1) -> Conv3d (groups 2, dilation (1, 2, 1),
      no bias) -> Tanh -> AvgPool3d ((2, 2, 1), stride 1, padding (1, 0, 0),
      count_include_pad False) -> Flatten -> Linear.
Each is exported at opset 17 in training mode, trained by SGD with momentum
0.9, lr 0.05, 5 steps. Eval-mode outputs (dlc without --train, dlrt run)
are compared first. Prints one line per step; "ok" when within 1e-4 relative
of PyTorch (fp32 on both sides, differing in summation order only; outputs
relative to the largest reference magnitude). --break changes the learning
rate given to dlc so that the check must fail (a self-test).
"""
import os
import subprocess
import sys

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sgd_check import compare_sgd, export_training  # noqa: E402

STEPS, LR, MOMENTUM, BATCH = 5, 0.05, 0.9, 4


class ConvTransposeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.up = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1,
                                     output_padding=1, groups=2)
        self.up2 = nn.ConvTranspose2d(6, 3, (2, 3), stride=(1, 2),
                                      padding=(0, 1), dilation=(2, 1),
                                      bias=False)
        self.fc = nn.Linear(3 * 12 * 19, 5)

    def forward(self, x):
        x = F.relu(self.conv(x))
        x = torch.tanh(self.up(x))
        x = self.up2(x)
        return self.fc(x.flatten(1))


class Conv3dNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv3d(2, 4, 3, stride=(2, 1, 1), padding=1)
        self.c2 = nn.Conv3d(4, 6, (2, 2, 3), dilation=(1, 2, 1), groups=2,
                            bias=False)
        self.fc = nn.Linear(6 * 4 * 1 * 1, 5)

    def forward(self, x):
        x = F.relu(self.c1(x))
        x = F.max_pool3d(x, 2, stride=(1, 2, 2), padding=1)
        x = torch.tanh(self.c2(x))
        x = F.avg_pool3d(x, (2, 2, 1), stride=1, padding=(1, 0, 0),
                         count_include_pad=False)
        return self.fc(x.flatten(1))


MODELS = {"convtranspose": (ConvTransposeNet, (3, 5, 5)),
          "conv3d": (Conv3dNet, (2, 5, 6, 5))}


def main():
    out, name = sys.argv[1], sys.argv[2]
    broken = "--break" in sys.argv
    os.makedirs(out, exist_ok=True)
    make, shape = MODELS[name]
    torch.manual_seed(0)
    x = torch.randn(BATCH, *shape)
    y = torch.randint(0, 5, (BATCH,))
    np.savez(os.path.join(out, "batch.npz"), x=x.numpy(), labels=y.numpy())
    np.savez(os.path.join(out, "inputs.npz"), x=x.numpy())
    torch.manual_seed(1)
    model = make()
    base = os.path.join(out, name)
    export_training(model, (x,), base + ".onnx", 17, ["x"])
    failed = False

    # Inference from the exported weights.
    subprocess.run(["dlc", base + ".onnx", "--batch-size", str(BATCH),
                    "--quiet", "-o", base + "_infer.dlcp"], check=True)
    subprocess.run(["dlrt", "run", base + "_infer.dlcp", "--inputs",
                    os.path.join(out, "inputs.npz"), "--outputs",
                    os.path.join(out, "outputs.npz"), "--device", "host"],
                   check=True, stdout=subprocess.DEVNULL)
    with torch.no_grad():
        ref_out = model(x).numpy()
    ours_out = np.load(os.path.join(out, "outputs.npz"))["logits"]
    err = float(np.max(np.abs(ours_out - ref_out)) / np.max(np.abs(ref_out)))
    ok = ours_out.shape == ref_out.shape and err <= 1e-4
    print(f"{'ok' if ok else 'MISMATCH'} {name} inference: rel {err:.2e}")
    failed |= not ok

    failed |= compare_sgd(name, base, model, (x,), y,
                          os.path.join(out, "batch.npz"), lr=LR,
                          momentum=MOMENTUM, steps=STEPS, batch=BATCH,
                          broken=broken)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
