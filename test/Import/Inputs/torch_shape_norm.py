"""Exports PyTorch modules using LayerNorm, InstanceNorm, expand, repeat,
Softsign, Mish and zeros of a tensor's shape (LayerNormalization,
InstanceNormalization, Expand, Tile, Softsign, ConstantOfShape at opset 17;
decomposed by the exporter at opset 13), compiles them with dlc, runs them
with `dlrt run --device host` and compares with PyTorch, for
import-shape-norm.test.

Usage: torch_shape_norm.py OUT_DIR [--break]
Prints "ok <name> opset <n> max_err <e>" when every output is within
1e-5 * (1 + |want|) of PyTorch's, else "MISMATCH ...". --break perturbs the
reference so that the check must fail (a self-test).
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlc_compare import run_and_compare  # noqa: E402
import torch
from torch import nn
import torch.nn.functional as F


class ShapeNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(6)
        self.ln2 = nn.LayerNorm((5, 6), eps=1e-3)
        self.inorm = nn.InstanceNorm2d(3, affine=True)
        with torch.no_grad():
            self.ln.weight.copy_(torch.linspace(0.5, 1.5, 6))
            self.ln.bias.copy_(torch.linspace(-0.2, 0.3, 6))
            self.inorm.weight.copy_(torch.tensor([0.7, 1.2, -0.4]))
            self.inorm.bias.copy_(torch.tensor([0.1, -0.3, 0.2]))

    def forward(self, x, v):
        return (self.ln(x), self.ln2(x), self.inorm(x),
                v.expand(4, 3, 5, 6) * 2, v.repeat(2, 1, 3, 2),
                F.softsign(x), F.mish(x * 10), x + torch.zeros(x.shape))


def main():
    out = sys.argv[1]
    broken = "--break" in sys.argv
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    x = torch.randn(4, 3, 5, 6)
    v = torch.randn(1, 3, 1, 6)
    model = ShapeNorm().eval()
    names = ["x", "v"]
    failed = False
    with torch.no_grad():
        wants = [w.numpy().copy() for w in model(x, v)]
    if broken:
        wants[0].flat[0] += 1e-2
    outs = [f"out{k}" for k in range(len(wants))]
    for opset in (13, 17):
        base = os.path.join(out, f"shape_norm_{opset}")
        torch.onnx.export(model, (x, v), base + ".onnx", opset_version=opset,
                          input_names=names, output_names=outs,
                          training=torch.onnx.TrainingMode.EVAL)
        subprocess.run(["dlc", base + ".onnx", "--quiet", "-o",
                        base + ".dlcp"], check=True)
        np.savez(base + ".in.npz", x=x.numpy(), v=v.numpy())
        failed |= not run_and_compare(base, outs, wants, f"shape_norm opset {opset}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
