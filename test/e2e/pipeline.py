#!/usr/bin/python3
"""End-to-end check of pipeline-parallel training (issue 13) on the host
device: `dlc --pipeline-stages S --microbatches M --schedule X` packages
trained by S (or S x D) `dlrt train` ranks over loopback (Gloo).

--check losses (per --model, mlp or gpt: the 4-layer tiny GPT): the model,
exported by PyTorch at the micro-batch size b, is compiled as a pipeline of
S stages (the cost model's split) for M micro-batches, and trained for 5
steps with --no-shuffle on S ranks under `dlrt launch`, for every S in
--stages, schedule in {gpipe, 1f1b} and M in --microbatches. Every loss rank
0 logs must be within 1e-5 relative of single-process training on the same
global batch: the model compiled *without* pipeline stages at batch b*M and
trained by one `dlrt train` (a package with no stages at all: the honest
reference). Also: 2 stages x 2 data-parallel replicas (4 ranks) against one
process at batch b*M*2, the pipeline package run by one process (every
stage in turn) against the same reference, a checkpoint of 3 steps on 2
ranks resumed for steps 4-5 (bit-identical losses to 5 steps in one go),
and 3 ranks for 2 stages (a one-line error).

--check local: pipeline packages of 2 and 4 stages trained by one process
(every stage in turn) on --device, e.g. the CUDA stand-in, against that
device's one-process reference.

--check split: the 8-layer tiny GPT split into 4 stages by the cost model
(`dlc --stats`) has balance (slowest / mean stage) <= 1.1, and
--pipeline-split with the node names that end the automatic stages gives
the same stages.

Why 1e-5: a pipelined step computes the same fp32 mathematics as one step on
the global batch; the gradient of the mean loss is summed as M micro-batch
means (times 1/M) instead of in one GEMM, which changes only the order of
floating-point sums (~1e-7 relative after 5 momentum-SGD steps).
"""
import argparse
import os
import re
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from arch_models import distinct_layer_norms, make_gpt  # noqa: E402
from distributed import (compare, dlrt_train_args, export, free_port,  # noqa: E402
                         log, read_losses, run, rank_env)
from models import make_mlp  # noqa: E402

STEPS = 5
MICRO_BATCH = {"mlp": 4, "gpt": 2}
LR = {"mlp": 0.05, "gpt": 0.05}
MOMENTUM = 0.9
GPT_LAYERS = 4


def make_model(name, samples, layers=GPT_LAYERS, **gpt):
    """(model, x, y) with seeded weights and |samples| seeded samples; |gpt|
    overrides make_gpt's sizes."""
    if name == "gpt":
        model, _, _ = make_gpt(1, layers=layers, **gpt)
        gen = torch.Generator().manual_seed(22)
        # Otherwise the LayerNorms of different stages would be one tied
        # parameter in the package.
        distinct_layer_norms(model)
        seq = gpt.get("seq", 8)
        x = torch.randint(0, 50, (samples, seq), generator=gen)
        y = torch.randint(0, 50, (samples, seq), generator=gen)
    else:
        model = make_mlp()
        gen = torch.Generator().manual_seed(23)
        x = torch.rand(samples, 1, 28, 28, generator=gen)
        y = torch.randint(0, 10, (samples,), generator=gen)
    return model, x, y


def prepare(args, w, samples):
    """Exports --model at the micro-batch size and writes |samples| samples;
    returns the data file and dlc's training command without batch flags."""
    name, b = args.model, MICRO_BATCH[args.model]
    _, x, y = make_model(name, samples)
    model, _, _ = make_model(name, 1)
    onnx_path = w(f"{name}.onnx")
    export(model, x[:b], onnx_path)
    data = w("data.npz")
    np.savez(data, input=x.numpy(), labels=y.numpy())
    return data, [args.dlc, onnx_path, "--train", "--optimizer", "sgd", "--lr",
                  repr(LR[name]), "--momentum", repr(MOMENTUM), "--quiet"]


def train(args, pkg, data, jsonl, world=1):
    """Trains |pkg| for STEPS steps on |world| ranks (one process for 1);
    returns the logged losses."""
    if os.path.exists(jsonl):
        os.remove(jsonl)
    cmd = dlrt_train_args(args, pkg, data, ["--steps", str(STEPS), "--log-jsonl", jsonl])
    cmd[cmd.index("--device") + 1] = args.device
    if world == 1:
        run([args.dlrt] + cmd, env=rank_env())
    else:
        run([args.dlrt, "launch", "--nproc-per-node", str(world), "--master-port",
             str(free_port()), "--", "dlrt"] + cmd, env=rank_env())
    return read_losses(jsonl)


def check_losses(args, w):
    name, b = args.model, MICRO_BATCH[args.model]
    data, base = prepare(args, w, b * max(args.microbatches) * 2 * STEPS)
    refs = {}

    def reference(batch):
        if batch not in refs:
            pkg = w(f"single-{batch}.dlcp")
            run(base + ["--batch-size", str(batch), "-o", pkg])
            refs[batch] = train(args, pkg, data, w(f"single-{batch}.jsonl"))
        return refs[batch]

    ok = True
    for m in args.microbatches:
        for s in args.stages:
            for schedule in ("gpipe", "1f1b"):
                pkg = w(f"pp-s{s}-m{m}-{schedule}.dlcp")
                run(base + ["--batch-size", str(b), "--pipeline-stages", str(s),
                            "--microbatches", str(m), "--schedule", schedule, "-o", pkg])
                t = time.time()
                ours = train(args, pkg, data, w(f"pp-s{s}-m{m}-{schedule}.jsonl"), world=s)
                log(f"{name}: {s} stages, {schedule}, M={m} (micro-batch {b}) on {s} "
                    f"ranks: {time.time() - t:.1f} s; vs one process at batch {b * m}:")
                ok &= compare(f"S={s} {schedule} M={m}", ours, reference(b * m))
    # 2 stages x 2 replicas, and the pipeline package on one process.
    m = args.microbatches[0]
    pkg = w(f"pp-s2-m{m}-1f1b.dlcp")
    if not os.path.exists(pkg):
        run(base + ["--batch-size", str(b), "--pipeline-stages", "2", "--microbatches",
                    str(m), "--schedule", "1f1b", "-o", pkg])
    ours = train(args, pkg, data, w("pp-s2x2.jsonl"), world=4)
    log(f"{name}: 2 stages x 2 replicas, 1f1b, M={m} on 4 ranks vs one process at "
        f"batch {b * m * 2}:")
    ok &= compare("S=2 x D=2", ours, reference(b * m * 2))
    ours = train(args, pkg, data, w("pp-s2-local.jsonl"), world=1)
    log(f"{name}: the 2-stage package on one process vs one process at batch {b * m}:")
    ok &= compare("S=2 in one process", ours, reference(b * m))
    # A checkpoint of 3 steps on 2 ranks (rank 0 saves every stage's state),
    # resumed for steps 4 and 5, logs what 5 steps in one go log.
    ckpt = w("pp-s2.st")
    for f in (ckpt, w("pp-resume-a.jsonl"), w("pp-resume-b.jsonl")):
        if os.path.exists(f):
            os.remove(f)
    launch = [args.dlrt, "launch", "--nproc-per-node", "2", "--master-port"]
    run(launch + [str(free_port()), "--", "dlrt"] +
        dlrt_train_args(args, pkg, data, ["--steps", "3", "--save", ckpt]), env=rank_env())
    run(launch + [str(free_port()), "--", "dlrt"] +
        dlrt_train_args(args, pkg, data, ["--steps", str(STEPS), "--resume", ckpt,
                                          "--log-jsonl", w("pp-resume-b.jsonl")]),
        env=rank_env())
    resumed = read_losses(w("pp-resume-b.jsonl"))
    whole = read_losses(w(f"pp-s2-m{m}-1f1b.jsonl"))[3:]
    log(f"{name}: 2 stages resumed after 3 steps vs 5 steps in one go:")
    ok &= compare("resumed", resumed, whole, tol=0.0)
    # A world size that is not a multiple of the stages is one line.
    launch3 = [args.dlrt, "launch", "--nproc-per-node", "3", "--master-port",
               str(free_port()), "--", "dlrt"]
    status, out, err = run(launch3 + dlrt_train_args(args, pkg, data, ["--steps", "1"]),
                           env=rank_env(), check=False)
    expect = ("is a pipeline of 2 stages: it runs on one process or on a multiple of 2 "
              "ranks (stages x replicas), not 3")
    good = status != 0 and expect in out + err
    log(f"{'ok' if good else 'MISMATCH'}: 3 ranks for 2 stages: exit status {status}, "
        f"{'the' if expect in out + err else 'no'} one-line error")
    ok &= good
    return ok


def check_local(args, w):
    """Pipeline packages of 2 and 4 stages (1F1B, M = 4) trained by one
    process on --device against that device's single-process reference."""
    name, b, m = args.model, MICRO_BATCH[args.model], 4
    data, base = prepare(args, w, b * m * STEPS)
    run(base + ["--batch-size", str(b * m), "-o", w("single.dlcp")])
    ref = train(args, w("single.dlcp"), data, w("single.jsonl"))
    ok = True
    for s in args.stages:
        pkg = w(f"pp-s{s}.dlcp")
        run(base + ["--batch-size", str(b), "--pipeline-stages", str(s), "--microbatches",
                    str(m), "-o", pkg])
        ours = train(args, pkg, data, w(f"pp-s{s}.jsonl"))
        log(f"{name}: {s} stages in one process on {args.device} vs one process at "
            f"batch {b * m}:")
        ok &= compare(f"S={s} one process", ours, ref)
    return ok


def stages_of(stats):
    """[(ops, first, last)] and the balance from `dlc --stats` output."""
    stages = re.findall(r"stage \d+: (\d+) ops, .*? bytes, activations \d+ bytes, "
                        r"(\S+) \.\. (\S+)", stats)
    balance = re.search(r"balance: slowest/mean = ([0-9.]+)", stats)
    return stages, float(balance.group(1)) if balance else None


def check_split(args, w):
    # Large enough that the h100 cost model sees compute, not only the
    # 5 us link latency of every boundary.
    layers, s, batch = 8, 4, 8
    sizes = dict(seq=128, embed=256, heads=4)
    model, x, _ = make_model("gpt", batch, layers=layers, **sizes)
    onnx_path = w("gpt8.onnx")
    export(model, x[:batch], onnx_path)
    base = [args.dlc, onnx_path, "--train", "--batch-size", str(batch), "--pipeline-stages",
            str(s), "--stats", "--emit=dlgraph", "-o", os.devnull, "--quiet"]
    _, out, _ = run(base)
    auto, balance = stages_of(out)
    log(out[out.find("pipeline stages"):])
    ok = len(auto) == s and balance is not None and balance <= 1.1
    log(f"{'ok' if ok else 'MISMATCH'}: {layers}-layer GPT in {s} stages: balance "
        f"{balance} (<= 1.1), {len(auto)} stages")
    split = ",".join(last for _, _, last in auto[:-1])
    _, out, _ = run(base + ["--pipeline-split", split])
    hand, _ = stages_of(out)
    same = hand == auto
    log(f"{'ok' if same else 'MISMATCH'}: --pipeline-split {split} gives the same "
        f"stages")
    return ok and same


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["mlp", "gpt"], default="mlp")
    ap.add_argument("--check", choices=["losses", "split", "local"], default="losses")
    ap.add_argument("--device", default="host",
                    help="dlrt's device (--check local; cuda runs on the stand-in "
                         "when DLRT_CUDA_STANDIN is set)")
    ap.add_argument("--stages", default="2,4")
    ap.add_argument("--microbatches", default="4,8")
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    args.stages = [int(v) for v in args.stages.split(",") if v]
    args.microbatches = [int(v) for v in args.microbatches.split(",") if v]
    args.dlrt = os.path.abspath(args.dlrt)
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda name: os.path.join(args.workdir, name)  # noqa: E731
    t0 = time.time()
    torch.set_num_threads(1)
    ok = {"losses": check_losses, "split": check_split,
          "local": check_local}[args.check](args, w)
    log(f"total {time.time() - t0:.1f} s")
    if not ok:
        sys.exit("FAIL")
    log("PASS")


if __name__ == "__main__":
    main()
