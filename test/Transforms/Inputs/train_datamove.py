"""Trains an embedding model through the data-movement ops with dlc --train +
dlrt train and with PyTorch, from the same weights on one fixed batch, and
compares the losses step by step, for train-datamove.test.

Usage: train_datamove.py OUT_DIR [--break]
The model: token ids [B, S] (int64) -> nn.Embedding(V, E) (Gather; its
gradient is a scatter-add with repeated ids) -> chunk into halves (Split or
Slice) -> a * sigmoid(b) -> difference of neighbours along the sequence
(Slice) -> cat with the first position (Concat) -> constant, reflect and
replicate padding (Pad) -> mean over the sequence -> Linear (the logits),
trained by SGD with momentum 0.9, lr 0.5, 6 steps, exported at opset 13 and
17. Prints one line per step; "ok" when within 1e-4 relative of PyTorch
(fp32 on both sides, differing in summation order only). --break changes the
learning rate given to dlc so that the check must fail (a self-test).
Then compiles the opset-17 training step's CUDA kernels with NVRTC for sm_80
and sm_90 (no GPU needed).
"""
import os
import sys

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sgd_check import compare_sgd, export_training, nvrtc_compiles  # noqa: E402

STEPS, LR, MOMENTUM, BATCH, SEQ, VOCAB, EMB = 6, 0.5, 0.9, 4, 6, 11, 8


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, EMB)
        self.fc = nn.Linear(EMB // 2 + 3, 5)

    def forward(self, ids):
        e = self.emb(ids)                        # [B, S, E]
        a, b = e.chunk(2, dim=-1)                # [B, S, E/2] each
        h = a * torch.sigmoid(b)
        d = h[:, 1:, :] - h[:, :-1, :]           # [B, S-1, E/2]
        h = torch.cat([h[:, :1, :], d], dim=1)   # [B, S, E/2]
        h = F.pad(h, (1, 0), value=0.25)         # [B, S, E/2+1]
        h = F.pad(h, (1, 1), mode="reflect")     # [B, S, E/2+3]
        h = F.pad(h.transpose(1, 2), (2, 1), mode="replicate")  # [B, C, S+3]
        return self.fc(h.mean(dim=2))


def main():
    out = sys.argv[1]
    broken = "--break" in sys.argv
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    # Repeated ids in the batch: the embedding gradient must accumulate.
    ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    ids[0, 0] = ids[1, 3] = ids[2, 5] = 7
    y = torch.randint(0, 5, (BATCH,))
    np.savez(os.path.join(out, "batch.npz"), ids=ids.numpy(), labels=y.numpy())
    failed = False
    for opset in (13, 17):
        torch.manual_seed(1)
        model = Net()
        base = os.path.join(out, f"net_{opset}")
        export_training(model, (ids,), base + ".onnx", opset, ["ids"])
        failed |= compare_sgd(f"opset {opset}", base, model, (ids,), y,
                              os.path.join(out, "batch.npz"), lr=LR,
                              momentum=MOMENTUM, steps=STEPS, batch=BATCH,
                              broken=broken)
    if not broken:
        # Every CUDA kernel of the training step (gather, its scatter-add
        # gradient, strided slice/pad/concat copies) compiles with NVRTC.
        failed |= nvrtc_compiles(os.path.join(out, "net_17"), BATCH)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
