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
import json
import os
import subprocess
import sys

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

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
        torch.onnx.export(model, (ids,), base + ".onnx", opset_version=opset,
                          input_names=["ids"], output_names=["logits"],
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        lr = LR * (1.5 if broken else 1.0)
        subprocess.run(["dlc", base + ".onnx", "--train", "--loss",
                        "softmax-cross-entropy", "--optimizer", "sgd", "--lr",
                        repr(lr), "--momentum", repr(MOMENTUM),
                        "--batch-size", str(BATCH), "--quiet", "-o",
                        base + ".dlcp"], check=True)
        log = base + ".jsonl"
        if os.path.exists(log):
            os.remove(log)
        subprocess.run(["dlrt", "train", base + ".dlcp", "--data",
                        os.path.join(out, "batch.npz"), "--steps", str(STEPS),
                        "--no-shuffle", "--log-jsonl", log, "--device", "host"],
                       check=True, stdout=subprocess.DEVNULL)
        with open(log) as f:
            ours = [json.loads(line)["loss"] for line in f if line.strip()]
        opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
        ref = []
        for _ in range(STEPS):
            opt.zero_grad()
            loss = F.cross_entropy(model(ids), y)
            loss.backward()
            opt.step()
            ref.append(loss.item())
        if len(ours) != len(ref):
            print(f"MISMATCH opset {opset}: {len(ours)} steps logged")
            failed = True
            continue
        for i, (a, b) in enumerate(zip(ours, ref), 1):
            rel = abs(a - b) / abs(b)
            ok = rel <= 1e-4
            print(f"{'ok' if ok else 'MISMATCH'} opset {opset} step {i}: "
                  f"dlrt {a:.8f} torch {b:.8f} rel {rel:.2e}")
            failed |= not ok
    if not broken:
        # Every CUDA kernel of the training step (gather, its scatter-add
        # gradient, strided slice/pad/concat copies) compiles with NVRTC.
        base = os.path.join(out, "net_17")
        r = subprocess.run(["dlc", base + ".onnx", "--train", "--loss",
                            "softmax-cross-entropy", "--optimizer", "sgd",
                            "--batch-size", str(BATCH), "--quiet", "--target",
                            "sm_80,sm_90", "-o", base + "_cuda.dlcp"])
        print("nvrtc sm_80,sm_90", "ok" if r.returncode == 0 else "FAILED")
        failed |= r.returncode != 0
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
