#!/usr/bin/python3
"""End-to-end check of dlc + dlrt on real architectures (issue 3 item 4):
ResNet-18, a tiny GPT-style decoder and a TransformerEncoderLayer.

For one architecture (--arch): export it with torch.onnx twice from the same
weights (eval mode for inference, training mode for training), compile the
eval export with `dlc` and compare `dlrt run` outputs with PyTorch's eval-mode
outputs; compile the training export with `dlc --train --loss
softmax-cross-entropy --optimizer sgd --momentum 0.9 --target sm_80,sm_90`
(every CUDA kernel NVRTC-compiled), train 5 steps on one batch with
`dlrt train` and compare each step's loss with PyTorch's.

Tolerances (stated by the issue): outputs within 1e-4 relative to the
largest reference magnitude (max |ours - ref| <= 1e-4 * max |ref|); losses
within 1e-3 relative. Both are fp32 computations that differ only in the
order of floating-point sums; five steps of momentum SGD through 20 batch
norms or two attention layers let those differences grow, hence the looser
loss bound than the single-layer models' in train_vs_torch.py.
"""
import argparse
import copy
import json
import os
import resource
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from arch_models import ARCHITECTURES  # noqa: E402
from train_vs_torch import run, torch_losses  # noqa: E402

OUT_TOL = 1e-4
LOSS_TOL = 1e-3
# Learning rates where the 5 losses fall clearly and PyTorch's own fp32 and
# fp64 losses agree to ~1e-5 (printed as "torch fp32 vs fp64" on every run):
# ResNet-18 training on 2 samples amplifies rounding differences chaotically
# at other rates (e.g. 2e-3 at lr 0.003), which would make the check
# meaningless rather than strict.
DEFAULT_LR = {"resnet18": 0.01, "gpt": 0.1, "transformer": 0.1}


def export(model, x, path, training):
    """Exports |model| at opset 17; training mode keeps batch norm's batch
    statistics and Dropout nodes, eval mode keeps BatchNormalization nodes
    (PRESERVE) instead of folding them into the convolutions."""
    # Exporting runs the model once; a training-mode run would update batch
    # norm's running statistics, so the weights are restored afterwards.
    state = copy.deepcopy(model.state_dict())
    model.train(training)
    torch.onnx.export(model, x, path, input_names=["input"], output_names=["logits"],
                      opset_version=17, do_constant_folding=False,
                      training=(torch.onnx.TrainingMode.TRAINING if training
                                else torch.onnx.TrainingMode.PRESERVE))
    model.load_state_dict(state)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", choices=sorted(ARCHITECTURES), required=True)
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--device", default="host")
    ap.add_argument("--targets", default="sm_80,sm_90",
                    help="NVRTC-compile every kernel for these archs ('' to skip)")
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    lr = args.lr if args.lr is not None else DEFAULT_LR[args.arch]
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda name: os.path.join(args.workdir, name)  # noqa: E731
    t0 = time.time()

    torch.set_num_threads(1)
    model, x, y = ARCHITECTURES[args.arch](args.batch)
    export(model, x, w("infer.onnx"), training=False)
    export(model, x, w("train.onnx"), training=True)
    np.savez(w("inputs.npz"), input=x.numpy())
    np.savez(w("batch.npz"), input=x.numpy(), labels=y.numpy())

    # Inference (eval mode) from the exported weights.
    with torch.no_grad():
        ref_out = model.eval()(x).numpy()
    run([args.dlc, w("infer.onnx"), "--batch-size", str(args.batch), "--quiet",
         "-o", w("infer.dlcp")])
    run([args.dlrt, "run", w("infer.dlcp"), "--inputs", w("inputs.npz"),
         "--outputs", w("outputs.npz"), "--device", args.device])
    ours_out = np.load(w("outputs.npz"))["logits"]
    if ours_out.shape != ref_out.shape:
        sys.exit(f"FAIL: output shape {ours_out.shape}, expected {ref_out.shape}")
    err = np.max(np.abs(ours_out - ref_out)) / np.max(np.abs(ref_out))
    print(f"{args.arch} eval: max |ours - torch| / max |torch| = {err:.3g} (tolerance {OUT_TOL})")
    ok = bool(err <= OUT_TOL)

    # Training: momentum SGD on one batch.
    compile_cmd = [args.dlc, w("train.onnx"), "--train", "--loss", "softmax-cross-entropy",
                   "--optimizer", "sgd", "--momentum", repr(args.momentum),
                   "--lr", repr(lr), "--batch-size", str(args.batch), "--quiet",
                   "-o", w("train.dlcp")]
    if args.targets:
        compile_cmd += ["--target", args.targets]
    run(compile_cmd)
    if os.path.exists(w("train.jsonl")):
        os.remove(w("train.jsonl"))
    run([args.dlrt, "train", w("train.dlcp"), "--data", w("batch.npz"),
         "--steps", str(args.steps), "--no-shuffle", "--log-jsonl", w("train.jsonl"),
         "--device", args.device])
    with open(w("train.jsonl")) as f:
        ours = [json.loads(line)["loss"] for line in f if line.strip()]
    model64 = copy.deepcopy(model).double()
    ref64 = torch_losses(model64, x.double() if x.is_floating_point() else x, y, "sgd",
                         lr, args.momentum, args.steps)
    ref = torch_losses(model, x, y, "sgd", lr, args.momentum, args.steps)
    spread = max(abs(a - b) / abs(b) for a, b in zip(ref, ref64))
    print(f"{args.arch}: torch fp32 vs fp64 losses differ by up to {spread:.2e} relative")
    if len(ours) != len(ref):
        sys.exit(f"FAIL: dlrt logged {len(ours)} steps, expected {len(ref)}")
    for i, (a, b) in enumerate(zip(ours, ref), 1):
        rel = abs(a - b) / abs(b)
        flag = "ok" if rel <= LOSS_TOL else "MISMATCH"
        print(f"{args.arch} step {i}: dlrt {a:.8f}  torch {b:.8f}  rel {rel:.2e}  {flag}")
        ok = ok and rel <= LOSS_TOL
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = resource.getrusage(resource.RUSAGE_SELF)
    cpu = children.ru_utime + children.ru_stime + own.ru_utime + own.ru_stime
    print(f"{args.arch}: {time.time() - t0:.1f} s wall, {cpu:.1f} s CPU")
    if not ok:
        sys.exit(f"FAIL: {args.arch} differs from PyTorch beyond the tolerances")
    print("PASS")


if __name__ == "__main__":
    main()
