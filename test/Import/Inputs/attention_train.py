"""Trains a small Llama-style block built from the opset-23 ops
RMSNormalization, RotaryEmbedding and Attention (causal, grouped-query: 4
query heads, 2 K/V heads, 3-D form) with `dlc --train --loss-output loss`
and `dlrt train`, and compares the logged losses of 4 SGD steps (lr 0.5)
with the same model written in PyTorch (1.13, which cannot export these
ops: the ONNX model is built here with onnx.helper and the same weights).

Usage: attention_train.py OUT_DIR [--device host|cuda] [--break]
Prints "step <i>: ok|MISMATCH <ours> <torch>" per step (1e-4 relative: f32
against f32 with different summation orders, over steps whose parameter
updates depend on every gradient) and "steps: <n>". --break perturbs the
reference so that the check must fail (a self-test).
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

B, S, D, HQ, HKV, HD, C = 2, 5, 16, 4, 2, 4, 6
LR, STEPS = 0.5, 4


def rotary_caches(positions, half):
    inv = 10000.0 ** (-np.arange(half) / half)
    ang = np.arange(positions)[:, None] * inv[None, :]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def weights():
    rng = np.random.default_rng(7)
    w = {
        "norm": rng.uniform(0.5, 1.5, D),
        "wq": rng.normal(0, 0.4, (D, HQ * HD)),
        "wk": rng.normal(0, 0.4, (D, HKV * HD)),
        "wv": rng.normal(0, 0.4, (D, HKV * HD)),
        "wo": rng.normal(0, 0.4, (HQ * HD, C)),
    }
    return {k: v.astype(np.float32) for k, v in w.items()}


def build_onnx(path, w, cos, sin, ids):
    def const(name, value):
        return helper.make_node("Constant", [], [name], name=name,
                                value=numpy_helper.from_array(value, name))
    nodes = [
        const("cos", cos), const("sin", sin), const("ids", ids),
        const("perm_shape", np.array([B * S, C], dtype=np.int64)),
        const("t_shape", np.array([B * S], dtype=np.int64)),
        helper.make_node("RMSNormalization", ["x", "norm"], ["h"],
                         name="norm", epsilon=1e-5),
        helper.make_node("MatMul", ["h", "wq"], ["q"], name="q"),
        helper.make_node("MatMul", ["h", "wk"], ["k"], name="k"),
        helper.make_node("MatMul", ["h", "wv"], ["v"], name="v"),
        helper.make_node("RotaryEmbedding", ["q", "cos", "sin", "ids"],
                         ["qr"], name="rope_q", num_heads=HQ),
        helper.make_node("RotaryEmbedding", ["k", "cos", "sin", "ids"],
                         ["kr"], name="rope_k", num_heads=HKV),
        helper.make_node("Attention", ["qr", "kr", "v"], ["a"], name="attn",
                         is_causal=1, q_num_heads=HQ, kv_num_heads=HKV),
        helper.make_node("MatMul", ["a", "wo"], ["z"], name="out"),
        helper.make_node("Reshape", ["z", "perm_shape"], ["z2"], name="z2"),
        helper.make_node("Reshape", ["t", "t_shape"], ["t2"], name="t2"),
        helper.make_node("SoftmaxCrossEntropyLoss", ["z2", "t2"], ["loss"],
                         name="loss", reduction="mean"),
    ]
    graph = helper.make_graph(
        nodes, "attention_train",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, D]),
         helper.make_tensor_value_info("t", TensorProto.INT64, [B, S])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(v, k) for k, v in w.items()])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    onnx.save(model, path)


def torch_losses(w, cos, sin, ids, x, t):
    p = {k: torch.tensor(v, requires_grad=True) for k, v in w.items()}
    ids = torch.tensor(ids)
    cos, sin = torch.tensor(cos)[ids], torch.tensor(sin)[ids]  # [B, S, HD/2]
    x, t = torch.tensor(x), torch.tensor(t)

    def rope(u, heads):  # [B, S, heads * HD], split halves
        u = u.view(B, S, heads, HD)
        c, s = cos[:, :, None, :], sin[:, :, None, :]
        u1, u2 = u[..., :HD // 2], u[..., HD // 2:]
        return torch.cat([u1 * c - u2 * s, u1 * s + u2 * c], -1)

    def forward():
        h = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * p["norm"]
        q = rope(h @ p["wq"], HQ).transpose(1, 2)              # [B, HQ, S, HD]
        k = rope(h @ p["wk"], HKV).transpose(1, 2)
        v = (h @ p["wv"]).view(B, S, HKV, HD).transpose(1, 2)
        k = k.repeat_interleave(HQ // HKV, 1)
        v = v.repeat_interleave(HQ // HKV, 1)
        s = q @ k.transpose(2, 3) / HD ** 0.5
        keep = torch.ones(S, S, dtype=torch.bool).tril()
        s = s.masked_fill(~keep, float("-inf"))
        a = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, S, HQ * HD)
        z = a @ p["wo"]
        return torch.nn.functional.cross_entropy(z.reshape(B * S, C),
                                                 t.reshape(B * S))

    opt = torch.optim.SGD(p.values(), lr=LR)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = forward()
        losses.append(float(loss))
        loss.backward()
        opt.step()
    return losses


def main():
    out = sys.argv[1]
    device = "host"
    if "--device" in sys.argv:
        device = sys.argv[sys.argv.index("--device") + 1]
    os.makedirs(out, exist_ok=True)
    w = weights()
    cos, sin = rotary_caches(16, HD // 2)
    rng = np.random.default_rng(8)
    ids = np.stack([np.arange(S), np.arange(S) + 3]).astype(np.int64)
    x = rng.normal(0, 1, (B, S, D)).astype(np.float32)
    t = rng.integers(0, C, (B, S)).astype(np.int64)
    onnx_path = os.path.join(out, "attention_train.onnx")
    build_onnx(onnx_path, w, cos, sin, ids)
    want = torch_losses(w, cos, sin, ids, x, t)
    if "--break" in sys.argv:
        want[-1] *= 1.001
    pkg = os.path.join(out, "attention_train.dlcp")
    subprocess.run(["dlc", onnx_path, "--train", "--loss-output", "loss",
                    "--optimizer", "sgd", "--lr", str(LR), "--quiet", "-o",
                    pkg], check=True)
    data = os.path.join(out, "data.npz")
    np.savez(data, x=x, t=t, labels=t)
    log = os.path.join(out, "log." + device + ".jsonl")
    subprocess.run(["dlrt", "train", pkg, "--data", data, "--steps",
                    str(STEPS), "--no-shuffle", "--device", device,
                    "--log-jsonl", log], check=True,
                   stdout=subprocess.DEVNULL)
    ours = [json.loads(line)["loss"] for line in open(log)]
    bad = len(ours) != len(want)
    for i, (a, e) in enumerate(zip(ours, want), 1):
        ok = abs(a - e) <= 1e-4 * abs(e)
        bad |= not ok
        print(f"step {i}: {'ok' if ok else 'MISMATCH'} {a:.7g} {e:.7g}")
    print(f"steps: {len(ours)}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
