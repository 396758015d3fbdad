"""Training through Dropout (training mode) with dlc --train + dlrt train,
for train-dropout.test.

Usage: train_dropout.py OUT_DIR [--break]
1. The mask: a graph `y, mask = Dropout(x, ratio 0.3, training_mode true,
   seed 5)` compiled without --train and run by `dlrt run` on ones [64, 64]:
   the mask must equal this script's own Philox-4x32-10 stream (the
   documented one: key = seed, counter = (element index, 0, step 0, 0),
   keep when the top 24 bits / 2^24 >= ratio), keep about 70%, and y must be
   mask / 0.7.
2. Training: Linear -> ReLU -> Dropout(0.3) -> Linear -> ReLU -> Dropout(0.2)
   -> Linear, exported by PyTorch in training mode (opset 13), 40 SGD steps
   on one batch: the loss goes down; a second run gives the same losses;
   with lr 0 the losses still change from step to step (each step draws a
   new mask).
--break feeds the mask check a wrong seed, so it must fail (a self-test).
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
import torch
from torch import nn

M = 0xFFFFFFFF


def philox_uniform(seed, n, step):
    """u for elements 0..n-1, vectorized over the element index."""
    i = np.arange(n, dtype=np.uint64)
    c0 = (i & M).astype(np.uint64)
    c1 = (i >> np.uint64(32)).astype(np.uint64)
    c2 = np.full(n, step, dtype=np.uint64)
    c3 = np.zeros(n, dtype=np.uint64)
    k0, k1 = seed & M, (seed >> 32) & M
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        n0 = (p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0)
        n2 = (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1)
        c1, c3, c0, c2 = p1 & np.uint64(M), p0 & np.uint64(M), n0, n2
        k0, k1 = (k0 + 0x9E3779B9) & M, (k1 + 0xBB67AE85) & M
    return (c0 >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24)


def check_mask(out, broken):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64])
    m = helper.make_tensor_value_info("mask", TensorProto.BOOL, [64, 64])
    nodes = [
        helper.make_node("Constant", [], ["r"], value=helper.make_tensor(
            "r", TensorProto.FLOAT, [], [0.3])),
        helper.make_node("Constant", [], ["t"], value=helper.make_tensor(
            "t", TensorProto.BOOL, [], [True])),
        helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], seed=5),
    ]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y, m]),
                              opset_imports=[helper.make_opsetid("", 13)])
    path = os.path.join(out, "mask.onnx")
    onnx.save(model, path)
    subprocess.run(["dlc", path, "--quiet", "-o", path + ".dlcp"], check=True)
    np.savez(os.path.join(out, "ones.npz"), x=np.ones((64, 64), np.float32))
    subprocess.run(["dlrt", "run", path + ".dlcp", "--inputs",
                    os.path.join(out, "ones.npz"), "--outputs",
                    os.path.join(out, "mask_out.npz"), "--device", "host"],
                   check=True, stdout=subprocess.DEVNULL)
    with np.load(os.path.join(out, "mask_out.npz")) as z:
        got_y, got_m = z["y"], z["mask"]
    want = philox_uniform(6 if broken else 5, 64 * 64, 0) >= np.float32(0.3)
    same = np.array_equal(got_m.reshape(-1), want)
    print(f"{'ok' if same else 'MISMATCH'} mask equals the Philox stream")
    frac = float(got_m.mean())
    near = abs(frac - 0.7) < 0.03  # binomial sd 0.0072 for 4096 elements
    print(f"{'ok' if near else 'MISMATCH'} kept fraction {frac:.4f}")
    scaled = np.allclose(got_y, got_m / np.float32(0.7), rtol=1e-6, atol=0)
    print(f"{'ok' if scaled else 'MISMATCH'} y = mask / 0.7")
    return same and near and scaled


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Dropout(0.3),
                                 nn.Linear(32, 32), nn.ReLU(), nn.Dropout(0.2),
                                 nn.Linear(32, 5))

    def forward(self, x):
        return self.net(x)


def train(out, pkg, tag):
    log = os.path.join(out, tag + ".jsonl")
    if os.path.exists(log):
        os.remove(log)
    subprocess.run(["dlrt", "train", pkg, "--data",
                    os.path.join(out, "batch.npz"), "--steps", "40",
                    "--no-shuffle", "--log-jsonl", log, "--device", "host"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(log) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()]


def main():
    out = sys.argv[1]
    broken = "--break" in sys.argv
    os.makedirs(out, exist_ok=True)
    ok = check_mask(out, broken)

    torch.manual_seed(0)
    x = torch.randn(16, 12)
    y = torch.randint(0, 5, (16,))
    np.savez(os.path.join(out, "batch.npz"), x=x.numpy(), labels=y.numpy())
    model = Net()
    path = os.path.join(out, "net.onnx")
    torch.onnx.export(model, (x,), path, opset_version=13,
                      input_names=["x"], output_names=["logits"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    ops = [n.op_type for n in onnx.load(path).graph.node]
    print(f"exported Dropout nodes: {ops.count('Dropout')}")
    pkgs = {}
    for lr in ("0.1", "0"):
        pkgs[lr] = os.path.join(out, f"net_lr{lr}.dlcp")
        subprocess.run(["dlc", path, "--train", "--loss",
                        "softmax-cross-entropy", "--optimizer", "sgd", "--lr",
                        lr, "--batch-size", "16", "--quiet", "-o", pkgs[lr]],
                       check=True)
    first = train(out, pkgs["0.1"], "run1")
    second = train(out, pkgs["0.1"], "run2")
    frozen = train(out, pkgs["0"], "frozen")
    print("losses: " + " ".join(f"{v:.4f}" for v in first))
    start, end = np.mean(first[:5]), np.mean(first[-5:])
    down = len(first) == 40 and end < 0.7 * start
    print(f"{'ok' if down else 'MISMATCH'} loss goes down: first 5 mean "
          f"{start:.4f}, last 5 mean {end:.4f}")
    same = first == second
    print(f"{'ok' if same else 'MISMATCH'} a second run gives the same "
          "losses")
    varies = len(set(frozen)) > 30
    print(f"{'ok' if varies else 'MISMATCH'} with lr 0 the loss changes "
          f"each step ({len(set(frozen))} distinct of {len(frozen)})")
    ok = ok and down and same and varies
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
