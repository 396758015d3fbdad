#!/usr/bin/python3
"""Dynamic loss scaling end to end (issue 10, "fp16 with dynamic scaling").

Exports a small MLP from PyTorch, compiles it with `dlc --train --loss-scale
dynamic` and a huge initial scale so that the first steps overflow, and
trains it with `dlrt train` for 60 steps, one `dlrt train --resume/--save`
per step so that every step's persistent tensors are in a checkpoint.
Checks:

1. each step's overflow flag ("skipped" in the JSONL) against an
   independent prediction from PyTorch: at the step's weights (from the
   previous checkpoint) and batch, the float64 backward values times the
   step's scale. A step must overflow when some value that dlc stores in the
   low type (all of them in fp32) times the scale is beyond the type's
   rounding-to-inf threshold by 0.1%, and must not when every such value,
   and every partial sum of the f32-accumulated GEMMs and reductions
   (bounded by sums of absolute values), stays 0.1% below it. The 0.1%
   margin covers the difference between f32 and float64 backward values
   (about 1e-6 relative); steps between the bounds are ambiguous, counted
   and limited;
2. a skipped step leaves every persistent tensor except the loss-scale
   state bit-identical (parameters, Adam's exp_avg/exp_avg_sq, @__step);
   an applied step changes every parameter and increments @__step;
3. the scale sequence ("loss_scale" in the JSONL) equals a plain
   reimplementation of torch.cuda.amp.GradScaler's rules (growth interval
   5, so growth happens) fed with those flags, in f32 arithmetic;
4. an uninterrupted 60-step run logs the same losses, scales and flags and
   ends in a bit-identical checkpoint (the scale state resumes exactly);
5. (a model with BatchNorm, static scale 3e38 that overflows every step)
   three skipped steps leave every persistent tensor, the running
   statistics included, at its initial value;
6. training converges: the mean loss of the last 4 steps (one pass over the
   4 batches) is below 60% of the first 4 steps'.

`--precision` is fp32 by default (init scale 2^127 and inputs of magnitude
~30, so that scaled gradients pass f32's 3.4e38); with fp16 the issue's
2^40 overflows f16's 65504.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from safetensors_np import read_safetensors  # noqa: E402

STEPS = 60
BATCH = 16
BATCHES = 4
GROWTH_INTERVAL = 5
GROWTH, BACKOFF = 2.0, 0.5
STATE = ("__loss_scale", "__loss_scale_growth_tracker")
# Values at or beyond these round to inf when stored (round to nearest
# even): max + half an ulp.
THRESHOLD = {
    "fp32": 2.0**128 * (1 - 2.0**-25),
    "bf16": 2.0**128 * (1 - 2.0**-9),
    "fp16": 65520.0,
}
F32_THRESHOLD = THRESHOLD["fp32"]
MARGIN = 1e-3
DEFAULT_INIT = {"fp32": 2.0**127, "bf16": 2.0**127, "fp16": 2.0**40}
INPUT_SCALE = {"fp32": 3000.0, "bf16": 3000.0, "fp16": 1.0}
# Adam's step is lr per element whatever the gradient: fc1's weights are of
# order 1e-4 with inputs of order 3000.
LR = {"fp32": 1e-3, "bf16": 1e-3, "fp16": 1e-2}


def run(cmd, quiet=False):
    if not quiet:
        print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if not quiet or r.returncode != 0:
        print(r.stdout, end="", flush=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: command exited with {r.returncode}: {' '.join(cmd)}")
    return r.stdout


class MLP(torch.nn.Module):
    def __init__(self, input_scale):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)
        with torch.no_grad():
            self.fc1.weight /= input_scale  # hidden activations of order 1

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def backward_magnitudes(params, x, y, precision):
    """(exact, bound): the largest |value| dlc stores in the low type in the
    backward of cross-entropy at loss scale 1, and the largest bound on the
    partial sums of f32-accumulated values, in float64."""
    w1, b1, w2, b2 = (torch.tensor(params[k], dtype=torch.float64)
                      for k in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"))
    x = torch.tensor(x, dtype=torch.float64)
    z = x @ w1.T + b1
    h = torch.relu(z)
    logits = h @ w2.T + b2
    p = torch.softmax(logits, dim=1)
    onehot = torch.nn.functional.one_hot(torch.tensor(y), 4).double()
    dlogits = (p - onehot) / len(y)
    dw2, db2 = dlogits.T @ h, dlogits.sum(0)
    dh = dlogits @ w2
    dz = dh * (z > 0)
    dw1, db1 = dz.T @ x, dz.sum(0)
    a = torch.abs
    bounds = [a(dlogits).T @ a(h), a(dlogits).sum(0), a(dlogits) @ a(w2),
              a(dz).T @ a(x), a(dz).sum(0), a(dlogits)]
    # In fp16/bf16 the GEMM operands and results are in the low type (the
    # cast policy); bias gradients are f32 reductions.
    low = [dlogits, dw2, dh, dw1]
    if precision == "fp32":
        low += [db2, db1, dz]
    exact = max(float(a(t).max()) for t in low)
    bound = max(float(t.max()) for t in bounds)
    return exact, bound


def predict(scale, exact, bound, precision):
    """"overflow", "finite" or "ambiguous" for a step at |scale|."""
    thr = THRESHOLD[precision]
    if scale * exact >= thr * (1 + MARGIN):
        return "overflow"
    if scale * exact <= thr * (1 - MARGIN) and scale * bound <= F32_THRESHOLD * (1 - MARGIN):
        return "finite"
    return "ambiguous"


def grad_scaler_scales(init, flags):
    """The scale each step uses under torch.cuda.amp.GradScaler's rules
    (_amp_update_scale_), in f32, fed with the steps' overflow flags."""
    scale, tracker, used = np.float32(init), 0, []
    for found_inf in flags:
        used.append(float(scale))
        if found_inf:
            scale, tracker = np.float32(scale * np.float32(BACKOFF)), 0
        else:
            tracker += 1
            if tracker == GROWTH_INTERVAL:
                grown = np.float32(scale * np.float32(GROWTH))
                if np.isfinite(grown):  # never grows to inf
                    scale = grown
                tracker = 0
    return used


class BNMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.bn = torch.nn.BatchNorm1d(16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


def batch_norm_static_overflow(args, w, x, y):
    """A model with BatchNorm and a static scale of 3e38 (every step
    overflows, since the fc1 gradients exceed 1.2 in magnitude): after 3
    skipped steps every persistent tensor, the running statistics included,
    still holds its initial value bit for bit. Returns the failures."""
    torch.manual_seed(2)
    model = BNMLP()
    path = w("bn.onnx")
    torch.onnx.export(model, torch.zeros(BATCH, 8), path, input_names=["input"],
                      output_names=["logits"], opset_version=17,
                      training=torch.onnx.TrainingMode.PRESERVE)
    # After the export: its trace runs a training-mode forward, which moves
    # the running statistics that the ONNX file then holds.
    initial = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()
               if not k.endswith("num_batches_tracked")}
    run([args.dlc, path, "--train", "--loss", "softmax-cross-entropy", "--optimizer", "sgd",
         "--momentum", "0.9", "--lr", "0.1", "--batch-size", str(BATCH),
         "--precision", args.precision, "--loss-scale", "3e38", "--quiet",
         "-o", w("bn.dlcp")])
    np.savez(w("bn_data.npz"), input=x[:BATCH], labels=y[:BATCH])
    run([args.dlrt, "train", w("bn.dlcp"), "--data", w("bn_data.npz"), "--steps", "3",
         "--no-shuffle", "--device", args.device, "--save", w("bn.safetensors"),
         "--log-jsonl", w("bn.jsonl")])
    with open(w("bn.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    state, _ = read_safetensors(w("bn.safetensors"))
    failures = []
    if [r["skipped"] for r in records] != [True] * 3:
        failures.append(f"BatchNorm model: expected 3 skipped steps, got {records}")
    if not {"bn.running_mean", "bn.running_var"} <= set(state):
        failures.append(f"BatchNorm model: no running statistics in {sorted(state)}")
    for name, v in state.items():
        if name in initial:
            expect = initial[name]
        elif name == "__step" or "momentum_buffer" in name:
            expect = np.zeros_like(v)
        else:
            failures.append(f"BatchNorm model: unexpected persistent tensor '{name}'")
            continue
        if v.tobytes() != expect.astype(v.dtype).tobytes():
            failures.append(f"BatchNorm model: skipped steps changed '{name}'")
    print(f"BatchNorm model, static scale 3e38: {len(records)} steps, "
          f"{sum(r['skipped'] for r in records)} skipped, {len(state)} persistent tensors checked")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precision", choices=sorted(THRESHOLD), default="fp32")
    ap.add_argument("--init", type=float, default=None,
                    help="initial loss scale (default 2^127 for fp32/bf16, 2^40 for fp16)")
    ap.add_argument("--device", default="host",
                    help="dlrt's device (cuda with DLRT_CUDA_STANDIN set runs the CUDA path on the host)")
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    init = args.init if args.init is not None else DEFAULT_INIT[args.precision]
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda name: os.path.join(args.workdir, name)  # noqa: E731

    torch.manual_seed(0)
    torch.set_num_threads(1)
    scale_in = INPUT_SCALE[args.precision]
    model = MLP(scale_in)
    init_params = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    onnx_path = w("mlp.onnx")
    torch.onnx.export(model, torch.zeros(BATCH, 8), onnx_path, input_names=["input"],
                      output_names=["logits"], opset_version=17)
    gen = torch.Generator().manual_seed(1)
    x = (torch.randn(BATCH * BATCHES, 8, generator=gen) * scale_in).numpy()
    teacher = torch.randn(8, 4, generator=gen).numpy()
    y = np.argmax(x @ teacher, axis=1).astype(np.int64)  # learnable labels
    # 1 label in 8 is random: the loss (and so the gradients) stay large
    # enough for the scale to keep hitting the overflow threshold.
    noisy = torch.rand(len(y), generator=gen).numpy() < 0.125
    y[noisy] = torch.randint(0, 4, (int(noisy.sum()),), generator=gen).numpy()
    np.savez(w("data.npz"), input=x, labels=y)

    run([args.dlc, onnx_path, "--train", "--loss", "softmax-cross-entropy",
         "--optimizer", "adam", "--lr", repr(LR[args.precision]), "--batch-size", str(BATCH),
         "--precision", args.precision, "--loss-scale", "dynamic",
         "--loss-scale-init", repr(init),
         "--loss-scale-growth-interval", str(GROWTH_INTERVAL), "--quiet",
         "-o", w("train.dlcp")])
    train = [args.dlrt, "train", w("train.dlcp"), "--data", w("data.npz"),
             "--no-shuffle", "--device", args.device]

    # One dlrt process per step: checkpoint N holds the state after step N.
    log = w("steps.jsonl")
    change_lines = {}
    if os.path.exists(log):
        os.remove(log)
    for n in range(1, STEPS + 1):
        cmd = train + ["--steps", str(n), "--save", w(f"ckpt-{n}.safetensors"),
                       "--log-jsonl", log]
        if n > 1:
            cmd += ["--resume", w(f"ckpt-{n - 1}.safetensors")]
        out = run(cmd, quiet=True)
        change_lines[n] = [line for line in out.splitlines() if line.startswith(f"step {n}:")]
        for line in change_lines[n]:
            print(line)
    with open(log) as f:
        records = [json.loads(line) for line in f if line.strip()]
    if [r["step"] for r in records] != list(range(1, STEPS + 1)):
        sys.exit(f"FAIL: the log has steps {[r['step'] for r in records]}")
    for r in records:
        if not {"loss_scale", "skipped"} <= set(r):
            sys.exit(f"FAIL: log record without loss_scale/skipped: {r}")

    failures = []
    counts = {"overflow": 0, "finite": 0, "ambiguous": 0}
    prev = None
    for n, r in enumerate(records, 1):
        post, _ = read_safetensors(w(f"ckpt-{n}.safetensors"))
        if prev is None:
            pre_params = init_params
        else:
            pre_params = prev
        k = (n - 1) % BATCHES
        exact, bound = backward_magnitudes(pre_params, x[k * BATCH:(k + 1) * BATCH],
                                           y[k * BATCH:(k + 1) * BATCH], args.precision)
        pred = predict(r["loss_scale"], exact, bound, args.precision)
        counts[pred] += 1
        skipped = r["skipped"]
        if pred == "overflow" and not skipped:
            failures.append(f"step {n}: scale {r['loss_scale']:.6g} * {exact:.6g} overflows "
                            f"{args.precision} but the step was not skipped")
        if pred == "finite" and skipped:
            failures.append(f"step {n}: scale {r['loss_scale']:.6g} * {bound:.6g} stays finite "
                            f"but the step was skipped")
        if prev is not None:
            for name, before in prev.items():
                if name in STATE:
                    continue
                same = before.tobytes() == post[name].tobytes()
                if skipped and not same:
                    failures.append(f"step {n} was skipped but changed '{name}'")
                if not skipped and name in init_params and same:
                    failures.append(f"step {n} was applied but left '{name}' unchanged")
            if not skipped and float(post["__step"]) != float(prev["__step"]) + 1:
                failures.append(f"step {n}: __step {float(prev['__step'])} -> "
                                f"{float(post['__step'])} on an applied step")
        else:
            for name, v in init_params.items():
                same = v.tobytes() == post[name].tobytes()
                if skipped != same:
                    failures.append(f"step 1 (skipped={skipped}) and '{name}' "
                                    f"{'unchanged' if same else 'changed'}")
        prev = post

    flags = [r["skipped"] for r in records]
    expected = grad_scaler_scales(init, flags)
    got = [r["loss_scale"] for r in records]
    print("step  loss        scale         skipped  GradScaler")
    for n, (r, e) in enumerate(zip(records, expected), 1):
        print(f"{n:4d}  {r['loss']:.6f}  {r['loss_scale']:.6g}  {int(r['skipped']):7d}  {e:.6g}")
        if np.float32(r["loss_scale"]) != np.float32(e):
            failures.append(f"step {n}: loss scale {r['loss_scale']!r}, GradScaler's rules give {e!r}")
    grows = sum(1 for a, b in zip(got, got[1:]) if b > a)
    # dlrt prints "step N: loss scale A -> B (...)" exactly when the scale
    # changes after step N.
    for n in range(1, STEPS):
        want = []
        if got[n] != got[n - 1]:
            want = [f"step {n}: loss scale {got[n - 1]:.9g} -> {got[n]:.9g} "
                    + ("(inf/NaN gradients, step skipped)" if flags[n - 1]
                       else "(growth interval of finite steps reached)")]
        if change_lines[n] != want:
            failures.append(f"step {n}: dlrt printed {change_lines[n]}, expected {want}")
    print(f"predictions: {counts}; skipped steps {sum(flags)}; growths {grows}")
    if counts["overflow"] == 0 or counts["finite"] == 0:
        failures.append("the run needs both certain-overflow and certain-finite steps")
    if counts["ambiguous"] > STEPS // 10:
        failures.append(f"{counts['ambiguous']} ambiguous steps (more than {STEPS // 10})")
    if grows == 0:
        failures.append("the scale never grew")
    if post["__step"] != STEPS - sum(flags):
        failures.append(f"__step is {float(post['__step'])}, expected {STEPS - sum(flags)} applied steps")

    # An uninterrupted run: same log, same final state.
    log2 = w("straight.jsonl")
    run(train + ["--steps", str(STEPS), "--save", w("straight.safetensors"),
                 "--log-jsonl", log2, "--log-every", "20"])
    with open(log2) as f:
        straight = [json.loads(line) for line in f if line.strip()]
    if straight != records:
        failures.append("the uninterrupted run's log differs from the resumed runs'")
    final, _ = read_safetensors(w("straight.safetensors"))
    for name, v in final.items():
        if v.tobytes() != post[name].tobytes():
            failures.append(f"uninterrupted and resumed runs end with different '{name}'")

    failures += batch_norm_static_overflow(args, w, x, y)

    first = np.mean([r["loss"] for r in records[:BATCHES]])
    last = np.mean([r["loss"] for r in records[-BATCHES:]])
    print(f"mean loss: first {BATCHES} steps {first:.4f}, last {BATCHES} steps {last:.4f}")
    if not last < 0.6 * first:
        failures.append(f"no convergence: mean loss {first:.4f} -> {last:.4f}")

    if failures:
        print("\n".join(failures[:40]))
        sys.exit(f"FAIL: {len(failures)} check(s) failed")
    print("PASS")


if __name__ == "__main__":
    main()
