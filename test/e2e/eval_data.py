#!/usr/bin/python3
"""`dlrt train --eval-data` against PyTorch's evaluation of the same weights
on the same file (issue 16 item 6).

Exports a model from models.py (the MLP, or the CNN whose BatchNorm makes
the difference between training and inference mode visible), compiles it
with `dlc --train` at batch 16, and trains it for 4 steps with
`--eval-data eval.npz --eval-every 2` on 100 evaluation samples: six full
batches and a last one of 4 real rows (padded). A second run of 2 steps
saves the weights of step 2. PyTorch then loads the checkpoints of steps 2
and 4 and evaluates them in eval mode on eval.npz: F.cross_entropy (mean
over all 100 rows) and top-1 accuracy. The evaluations dlrt printed and
logged at steps 2 and 4 (and at the end of the 2-step run) must equal
PyTorch's within 1e-6: the loss absolutely (both fp32 forwards that differ
only in the order of sums, ~1e-7 on losses of ~2; dlrt sums the per-row
losses in double), the accuracy as well, which at 100 rows means the same
correct count. Also run on 2 ranks (`dlrt launch`, Gloo) with a package
compiled with --data-parallel: each rank evaluates its shard and the result
must equal PyTorch's on that run's final weights.

Error path: an eval file whose arrays are misnamed fails before training
with the one-line message naming the arrays found and expected.
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from models import MODELS  # noqa: E402
from safetensors_np import read_safetensors  # noqa: E402

TOL = 1e-6
BATCH = 16
EVAL_SAMPLES = 100  # 6 batches of 16 and one of 4
EVAL_LINE = re.compile(r"eval at step (\d+): loss (\S+), accuracy (\S+) \((\d+)/(\d+) correct; "
                       r"(\d+) samples in (\d+) batches of (\d+)(.*)\)$")


def run(cmd, env=None, expect_ok=True):
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    print(r.stdout, end="", flush=True)
    print(r.stderr, end="", file=sys.stderr, flush=True)
    if expect_ok and r.returncode != 0:
        sys.exit(f"FAIL: command exited with {r.returncode}: {' '.join(cmd)}")
    return r


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_weights(model, path):
    """Loads the checkpoint |path| into |model|. dlc's names are the ONNX
    initializer names, which torch.onnx takes from the state_dict, except
    for BatchNorm's running statistics, which dlc names after the node
    ("1.running_mean" is "/1/BatchNormalization.running_mean"); only
    num_batches_tracked (not exported) may be missing."""
    tensors, meta = read_safetensors(path)
    state = model.state_dict()
    missing = []
    for k in state:
        name = k
        if name not in tensors:
            prefix, attr = k.rsplit(".", 1)
            node = "/" + prefix.replace(".", "/") + "/"
            found = [t for t in tensors if t.startswith(node) and t.endswith("." + attr)]
            name = found[0] if len(found) == 1 else None
        if name is None:
            if not k.endswith("num_batches_tracked"):
                missing.append(k)
            continue
        state[k] = torch.from_numpy(np.array(tensors[name])).to(state[k].dtype)
    if missing:
        sys.exit(f"FAIL: {path} lacks {missing} (it has {sorted(tensors)})")
    model.load_state_dict(state)
    return int(meta["step"])


def torch_eval(model, x, y):
    """(mean cross-entropy over all rows, top-1 accuracy, correct) in eval
    mode, fp32."""
    model.eval()
    with torch.no_grad():
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits, y).item()
    correct = int((logits.argmax(dim=1) == y).sum())
    return loss, correct / len(y), correct


def eval_records(path):
    with open(path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    return {r["step"]: r for r in records if "eval_loss" in r}


def compare(what, ours, ref):
    loss, acc, samples = ours
    rloss, racc, _ = ref
    ok = abs(loss - rloss) <= TOL and abs(acc - racc) <= TOL and samples == EVAL_SAMPLES
    print(f"{'ok' if ok else 'MISMATCH'}: {what}: loss {loss:.9f} vs torch {rloss:.9f} "
          f"(diff {abs(loss - rloss):.2e}), accuracy {acc:.6f} vs torch {racc:.6f}, "
          f"{samples} samples", flush=True)
    return ok


def printed_evals(stdout):
    """{step: (loss, accuracy, samples)} from dlrt's 'eval at step' lines."""
    out = {}
    for line in stdout.splitlines():
        m = EVAL_LINE.search(line)
        if m:
            out[int(m.group(1))] = (float(m.group(2)), float(m.group(3)), int(m.group(6)))
            if int(m.group(5)) != EVAL_SAMPLES or float(m.group(3)) != int(m.group(4)) / EVAL_SAMPLES:
                sys.exit(f"FAIL: inconsistent eval line: {line}")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=sorted(MODELS), required=True)
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--device", default="host",
                    help="device of the one-process runs (cuda: e.g. the CUDA stand-in); "
                         "the 2-rank runs are on the host only")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda name: os.path.join(args.workdir, name)  # noqa: E731
    torch.set_num_threads(1)

    model = MODELS[args.model]()
    onnx_path = w(f"{args.model}.onnx")
    torch.onnx.export(model.eval(), torch.zeros(1, 1, 28, 28), onnx_path,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, training=torch.onnx.TrainingMode.PRESERVE)
    gen = torch.Generator().manual_seed(7)
    x = torch.rand(48, 1, 28, 28, generator=gen)
    y = torch.randint(0, 10, (48,), generator=gen)
    np.savez(w("train.npz"), input=x.numpy(), labels=y.numpy())
    # Eval labels: the initial model's predictions for 70 rows, random for
    # 30, so that the accuracy is far from 0 and from 1.
    ex = torch.rand(EVAL_SAMPLES, 1, 28, 28, generator=gen)
    with torch.no_grad():
        ey = model.eval()(ex).argmax(dim=1)
    ey[70:] = torch.randint(0, 10, (EVAL_SAMPLES - 70,), generator=gen)
    np.savez(w("eval.npz"), input=ex.numpy(), labels=ey.numpy())
    np.savez(w("misnamed.npz"), image=ex.numpy(), label=ey.numpy())

    pkg = w("train.dlcp")
    run([args.dlc, onnx_path, "--train", "--loss", "softmax-cross-entropy", "--optimizer", "sgd",
         "--lr", "0.05", "--momentum", "0.9", "--batch-size", str(BATCH), "--quiet", "-o", pkg])
    common = ["train", pkg, "--data", w("train.npz"), "--no-shuffle", "--device", args.device,
              "--eval-data", w("eval.npz")]
    for f in ("run4.jsonl", "run2.jsonl", "dp.jsonl", "pipe.jsonl"):
        if os.path.exists(w(f)):
            os.remove(w(f))
    r4 = run([args.dlrt] + common + ["--steps", "4", "--eval-every", "2",
                                     "--log-jsonl", w("run4.jsonl"), "--save", w("step4.ckpt")])
    r2 = run([args.dlrt] + common + ["--steps", "2", "--log-jsonl", w("run2.jsonl"),
                                     "--save", w("step2.ckpt")])
    ok = True
    logged4, logged2 = eval_records(w("run4.jsonl")), eval_records(w("run2.jsonl"))
    printed4, printed2 = printed_evals(r4.stdout), printed_evals(r2.stdout)
    if sorted(logged4) != [2, 4] or sorted(printed4) != [2, 4]:
        sys.exit(f"FAIL: the 4-step run evaluated at steps {sorted(logged4)} (logged) and "
                 f"{sorted(printed4)} (printed); expected 2 and 4")
    if sorted(logged2) != [2] or sorted(printed2) != [2]:
        sys.exit(f"FAIL: the 2-step run evaluated at {sorted(logged2)} / {sorted(printed2)}; "
                 f"expected once, at its end (step 2)")
    if "the last 4 + 12 padding rows" not in r4.stdout:
        sys.exit("FAIL: dlrt did not report the padded last batch (4 real rows of 16)")

    def logged(rec):
        return rec["eval_loss"], rec["eval_accuracy"], rec["eval_samples"]

    for step in (2, 4):
        ckpt_step = load_weights(model, w(f"step{step}.ckpt"))
        if ckpt_step != step:
            sys.exit(f"FAIL: step{step}.ckpt is of step {ckpt_step}")
        ref = torch_eval(model, ex, ey)
        print(f"torch at step {step}: loss {ref[0]:.9f}, accuracy {ref[1]} ({ref[2]}/{EVAL_SAMPLES})")
        ok &= compare(f"step {step}, logged (--eval-every 2)", logged(logged4[step]), ref)
        ok &= compare(f"step {step}, printed (--eval-every 2)", printed4[step], ref)
        if step == 2:
            ok &= compare("step 2, logged (end of a 2-step run)", logged(logged2[2]), ref)

    if args.device != "host":
        ok &= check_misnamed(args, w, pkg)
        if not ok:
            sys.exit(f"FAIL: --eval-data differs from PyTorch beyond {TOL}")
        print("PASS")
        return

    # Two data-parallel ranks: each evaluates its shard, the sums combine.
    dp = w("dp.dlcp")
    run([args.dlc, onnx_path, "--train", "--loss", "softmax-cross-entropy", "--optimizer", "sgd",
         "--lr", "0.05", "--momentum", "0.9", "--batch-size", str(BATCH // 2), "--data-parallel",
         "--quiet", "-o", dp])
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    rdp = run([args.dlrt, "launch", "--nproc-per-node", "2", "--master-port", str(free_port()),
               "--", "dlrt", "train", dp, "--data", w("train.npz"), "--no-shuffle",
               "--device", "host", "--eval-data", w("eval.npz"), "--steps", "2",
               "--log-jsonl", w("dp.jsonl"), "--save", w("dp.ckpt")], env=env)
    load_weights(model, w("dp.ckpt"))
    ref = torch_eval(model, ex, ey)
    loggeddp = eval_records(w("dp.jsonl"))
    if sorted(loggeddp) != [2]:
        sys.exit(f"FAIL: 2 ranks logged evaluations at {sorted(loggeddp)}; expected [2]")
    ok &= compare("2 ranks, logged", logged(loggeddp[2]), ref)
    if len(re.findall(r"eval at step 2:", rdp.stdout)) != 1:
        sys.exit("FAIL: expected one 'eval at step 2' line (rank 0's) from the 2-rank run")
    # The MLP's ranks hold the same state and evaluate a shard each; the
    # CNN's BatchNorm statistics differ per rank (each updates them from its
    # own shard), so rank 0 evaluates its model, the one --save wrote, alone.
    how = "over 2 ranks" if args.model == "mlp" else "on rank 0 alone"
    if how not in rdp.stdout:
        print(f"MISMATCH: the 2-rank evaluation did not run {how}")
        ok = False

    # The MLP as a 2-stage pipeline on 2 ranks (forward runs at the
    # micro-batch size, 8): every rank gathers the whole model first.
    if args.model == "mlp":
        pipe = w("pipe.dlcp")
        run([args.dlc, onnx_path, "--train", "--loss", "softmax-cross-entropy", "--optimizer",
             "sgd", "--lr", "0.05", "--momentum", "0.9", "--batch-size", str(BATCH // 2),
             "--pipeline-stages", "2", "--microbatches", "2", "--quiet", "-o", pipe])
        rp = run([args.dlrt, "launch", "--nproc-per-node", "2", "--master-port", str(free_port()),
                  "--", "dlrt", "train", pipe, "--data", w("train.npz"), "--no-shuffle",
                  "--device", "host", "--eval-data", w("eval.npz"), "--steps", "2",
                  "--log-jsonl", w("pipe.jsonl"), "--save", w("pipe.ckpt")], env=env)
        load_weights(model, w("pipe.ckpt"))
        ref = torch_eval(model, ex, ey)
        loggedp = eval_records(w("pipe.jsonl"))
        if sorted(loggedp) != [2] or "batches of 8 over 2 ranks" not in rp.stdout:
            sys.exit(f"FAIL: the pipeline evaluated at {sorted(loggedp)}, expected [2] "
                     f"in batches of 8 over 2 ranks")
        ok &= compare("2-stage pipeline on 2 ranks, logged", logged(loggedp[2]), ref)

    ok &= check_misnamed(args, w, pkg)
    if not ok:
        sys.exit(f"FAIL: --eval-data differs from PyTorch beyond {TOL}")
    print("PASS")


def check_misnamed(args, w, pkg):
    """Misnamed arrays: a one-line error before any training step."""
    if os.path.exists(w("bad.jsonl")):
        os.remove(w("bad.jsonl"))
    bad = run([args.dlrt, "train", pkg, "--data", w("train.npz"), "--device", args.device,
               "--steps", "2",
               "--eval-data", w("misnamed.npz"), "--log-jsonl", w("bad.jsonl")], expect_ok=False)
    want = (f"dlrt: error: --eval-data {w('misnamed.npz')}: no array named 'input' (the file has: "
            f"image, label); expected arrays 'input' (samples of (1, 28, 28), converted to f32) "
            f"and 'labels' (samples of (), integer class indices)\n")
    # (The CUDA stand-in adds its note on stderr first.)
    err = [line for line in bad.stderr.splitlines(keepends=True)
           if not line.startswith("dlrt: note: DLRT_CUDA_STANDIN")]
    if bad.returncode != 1 or err != [want] or "loss" in bad.stdout:
        print(f"MISMATCH: misnamed arrays: exit {bad.returncode}, stderr {bad.stderr!r}, "
              f"expected {want!r} and no training")
        return False
    print("ok: misnamed arrays: one-line error naming the arrays found and expected")
    return True


if __name__ == "__main__":
    main()
