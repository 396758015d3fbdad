#!/usr/bin/python3
"""Exports the bundled example model: a Fashion-MNIST MLP, as ONNX.

Run with the system Python that has Debian's python3-torch:
    /usr/bin/python3 examples/mlp/export_mlp.py examples/mlp/mlp.onnx

The model takes `input` [batch, 1, 28, 28] f32 (pixels / 255) and returns
`logits` [batch, 10]. Weights are PyTorch's default initialization with
seed 0; the batch dimension is symbolic (`dlc --batch-size` fixes it).
"""
import sys

import torch
from torch import nn


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(28 * 28, 256),
        nn.ReLU(),
        nn.Linear(256, 10),
    )


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "mlp.onnx"
    model = make_model().eval()
    example = torch.zeros(1, 1, 28, 28)
    torch.onnx.export(model, example, out, input_names=["input"],
                      output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, do_constant_folding=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
