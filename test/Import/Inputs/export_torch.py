"""Exports small PyTorch models (eval mode) to ONNX for the importer's lit tests.

Usage: export_torch.py OUT_DIR
Writes mlp_opset13.onnx, mlp_opset17.onnx (nn.Sequential MLP), cnn_opset13.onnx,
cnn_opset17.onnx (Conv2d/BatchNorm2d/ReLU/MaxPool2d/Flatten/Linear, eval mode),
cnn_train_opset15.onnx (the same CNN exported in training mode: BatchNormalization
with training_mode=1 and unused running-statistics outputs) and view_opset17.onnx
(x.view(x.size(0), -1), which torch exports as a Shape/Gather/Unsqueeze/Concat
subgraph), all with a symbolic batch dimension.

A plain eval-mode export folds BatchNorm2d into the preceding Conv; the CNN is
exported with training=TrainingMode.PRESERVE so that BatchNormalization stays (a
model meant for training needs it).
"""
import os
import sys

import torch
from torch import nn


class ViewNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, stride=2, padding=1)
        self.fc = nn.Linear(4 * 14 * 14, 10)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        return self.fc(x.view(x.size(0), -1))


def export(model, shape, path, opset, train=False):
    torch.manual_seed(0)
    model.train(train)
    x = torch.randn(*shape)
    mode = torch.onnx.TrainingMode.TRAINING if train else torch.onnx.TrainingMode.PRESERVE
    torch.onnx.export(model, (x,), path, opset_version=opset, training=mode,
                      do_constant_folding=not train,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    cnn = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 14 * 14, 10))
    for opset in (13, 17):
        export(mlp, (2, 1, 28, 28), os.path.join(out, f"mlp_opset{opset}.onnx"), opset)
        export(cnn, (2, 1, 28, 28), os.path.join(out, f"cnn_opset{opset}.onnx"), opset)
    export(cnn, (2, 1, 28, 28), os.path.join(out, "cnn_train_opset15.onnx"), 15, train=True)
    export(ViewNet(), (2, 1, 28, 28), os.path.join(out, "view_opset17.onnx"), 17)


if __name__ == "__main__":
    main()
