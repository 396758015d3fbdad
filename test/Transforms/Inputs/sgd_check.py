"""Shared by the train_*.py checks: export a PyTorch model in training mode,
train it with `dlc --train` + `dlrt train` (SGD with momentum, softmax
cross-entropy, one fixed batch, host device) and with torch.optim.SGD from
the same weights, and compare the losses step by step.

A step is "ok" when within 1e-4 relative of PyTorch's loss (fp32 on both
sides, differing in summation order only). With broken=True the learning
rate given to dlc is 1.5x PyTorch's, so the comparison must fail (the
scripts' --break self-test).
"""
import json
import os
import subprocess

import torch
import torch.nn.functional as F

LOSS_TOL = 1e-4


def export_training(model, inputs, path, opset, input_names):
    """Exports |model| called on the tuple |inputs| to |path| in training
    mode (Dropout and BatchNorm kept as in training), without constant
    folding; the single output is named "logits"."""
    torch.onnx.export(model, inputs, path, opset_version=opset,
                      input_names=input_names, output_names=["logits"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)


def compare_sgd(tag, base, model, inputs, labels, batch_npz, *, lr, momentum,
                steps, batch, broken=False):
    """Compiles base.onnx into base.dlcp, trains |steps| steps on batch_npz
    with dlrt (losses logged to base.jsonl), trains |model| on (inputs,
    labels) with PyTorch, and prints one line per step:
    "ok|MISMATCH <tag> step <i>: dlrt <loss> torch <loss> rel <diff>".
    Returns True when any step mismatches or the step counts differ."""
    dlc_lr = lr * (1.5 if broken else 1.0)
    subprocess.run(["dlc", base + ".onnx", "--train", "--loss",
                    "softmax-cross-entropy", "--optimizer", "sgd", "--lr",
                    repr(dlc_lr), "--momentum", repr(momentum),
                    "--batch-size", str(batch), "--quiet", "-o",
                    base + ".dlcp"], check=True)
    log = base + ".jsonl"
    if os.path.exists(log):
        os.remove(log)
    subprocess.run(["dlrt", "train", base + ".dlcp", "--data", batch_npz,
                    "--steps", str(steps), "--no-shuffle", "--log-jsonl", log,
                    "--device", "host"], check=True, stdout=subprocess.DEVNULL)
    with open(log) as f:
        ours = [json.loads(line)["loss"] for line in f if line.strip()]
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    ref = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(*inputs), labels)
        loss.backward()
        opt.step()
        ref.append(loss.item())
    if len(ours) != len(ref):
        print(f"MISMATCH {tag}: {len(ours)} steps logged")
        return True
    failed = False
    for i, (a, b) in enumerate(zip(ours, ref), 1):
        rel = abs(a - b) / abs(b)
        ok = rel <= LOSS_TOL
        print(f"{'ok' if ok else 'MISMATCH'} {tag} step {i}: "
              f"dlrt {a:.8f} torch {b:.8f} rel {rel:.2e}")
        failed |= not ok
    return failed


def nvrtc_compiles(base, batch):
    """Compiles the training step of |base|.onnx (softmax cross-entropy, SGD)
    with every CUDA kernel NVRTC-compiled for sm_80 and sm_90; prints the
    outcome and returns True when it failed."""
    r = subprocess.run(["dlc", base + ".onnx", "--train", "--loss",
                        "softmax-cross-entropy", "--optimizer", "sgd",
                        "--batch-size", str(batch), "--quiet", "--target",
                        "sm_80,sm_90", "-o", base + "_cuda.dlcp"])
    print("nvrtc sm_80,sm_90", "ok" if r.returncode == 0 else "FAILED")
    return r.returncode != 0
