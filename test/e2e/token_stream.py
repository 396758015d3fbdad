#!/usr/bin/python3
"""`dlrt train --data-tokens` (issue 37 item 1): a language model fed from a
stream of token ids.

A tiny GPT (test/e2e/arch_models.py, vocabulary 50, T = 8, batch 4) is
compiled once with dlc --train; then, each check printing "ok" or "FAIL":

  formats    the same 2000 tokens as a raw uint16 file, an llm.c .bin and a
             uint32 .npy train to the same losses as --data with an .npz
             holding the windows this script cuts itself (window k: inputs
             tokens[kT : kT + T], labels one further), bit for bit, with
             --windows aligned --no-shuffle and with the epoch permutation;
  random     --windows random: the offsets this script computes with
             SplitMix64 from (seed, epoch, k) give the same losses through an
             .npz; the same seed repeats a run exactly, another seed differs;
  resume     6 steps in one run equal 3 steps, --save, and 3 more after
             --resume (the window sequence continues);
  sharding   2 data-parallel ranks of batch 2 give the losses of 1 rank of
             batch 4 (aligned and random windows): DistributedSampler's
             striding of every global batch;
  eval       --eval-data-tokens gives the loss and accuracy of --eval-data on
             an .npz of the same windows, and perplexity exp(loss);
  errors     an odd-length uint16 file, an id outside the vocabulary, a file
             shorter than one window, a 2-D .npy, an llm.c header whose count
             disagrees, --seq-len against the package: each a one-line
             "dlrt: error:" naming the cause, exit status 1;
  flops      dlc --stats' model FLOPs per step within 5% of 6 N tokens +
             12 L d T tokens (PaLM's appendix B);
  speed      each step's record has step_ms, tokens_per_s, model_tflops;
  memory     a 1 GiB token file (sparse: 2^29 zero ids) trains 20 steps with
             peak resident memory less than 200 MB above the same run on the
             2000-token file (the file is mapped and its pages released
             after each window, never read whole).
"""
import argparse
import json
import os
import socket
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from arch_models import make_gpt  # noqa: E402
from architectures import export  # noqa: E402

VOCAB, T, BATCH = 50, 8, 4
MASK64 = (1 << 64) - 1


def splitmix_offset(seed, epoch, k, starts):
    """TokenWindows::offset's random draw (runtime/data/TokenStream.cpp)."""
    x = (seed + 0x9E3779B97F4A7C15 * ((epoch * 0x100000001B3 + k + 1) & MASK64)) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    x ^= x >> 31
    return x % starts


def windows_npz(path, tokens, offsets):
    tokens = tokens.astype(np.int64)
    np.savez(path, input=np.stack([tokens[o:o + T] for o in offsets]),
             labels=np.stack([tokens[o + 1:o + T + 1] for o in offsets]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda name: os.path.join(args.workdir, name)  # noqa: E731
    ok = True

    def check(name, good, detail):
        nonlocal ok
        ok &= bool(good)
        print(f"{'ok' if good else 'FAIL'} {name}: {detail}", flush=True)

    evals = []  # the eval records of every run, in order

    def train(data, steps, *extra, expect_ok=True):
        """(losses, output, exit status, peak resident MB) of one dlrt train
        (the peak from --memory-report: dlrt's own VmHWM; a fork of this
        Python process would count its RSS in ru_maxrss)."""
        jsonl, report = w("run.jsonl"), w("memory.json")
        for f in (jsonl, report):
            if os.path.exists(f):
                os.remove(f)
        cmd = [args.dlrt, "train", w("train.dlcp"), *data, "--steps", str(steps),
               "--log-jsonl", jsonl, "--memory-report", report, "--device",
               "host", "--quiet", *extra]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        if expect_ok and r.returncode != 0:
            print(" ".join(cmd) + "\n" + r.stdout)
            sys.exit(f"FAIL: dlrt train exited {r.returncode}")
        if r.returncode != 0:
            return [], r.stdout, r.returncode, None
        records = [json.loads(l) for l in open(jsonl) if l.strip()]
        losses = [r["loss"] for r in records if "loss" in r]
        evals.extend(r for r in records if "eval_loss" in r)
        peak = json.load(open(report))["host_peak_resident_bytes"] / 2**20
        return losses, r.stdout, r.returncode, peak

    model, x, _ = make_gpt(BATCH, seq=T, vocab=VOCAB)
    export(model, x, w("train.onnx"), training=True)
    stats = subprocess.run([args.dlc, w("train.onnx"), "--train", "--loss",
                            "softmax-cross-entropy", "--optimizer", "sgd", "--lr",
                            "0.5", "--batch-size", str(BATCH), "--quiet", "--stats",
                            "-o", w("train.dlcp")],
                           check=True, stdout=subprocess.PIPE, text=True).stdout
    # Model FLOPs against the hand count of PaLM's appendix B: 6 N per token
    # (N the weights of the matmuls: every Linear, the head included) plus
    # 12 L d T per token for attention.
    line = next(l for l in stats.splitlines() if l.startswith("model FLOPs per step:"))
    ours = float(line.split(":")[1].split()[0])
    n = sum(m.weight.numel() for m in model.modules()
            if isinstance(m, torch.nn.Linear))
    layers, d = len(model.blocks), model.ln_f.normalized_shape[0]
    tokens = BATCH * T
    hand = 6 * n * tokens + 12 * layers * d * T * tokens
    check("model flops", abs(ours / hand - 1) <= 0.05,
          f"dlc {ours:.0f}, hand count {hand:.0f} (6 N tokens + 12 L d T tokens, "
          f"N = {n}): ratio {ours / hand:.4f} (bound 5%)")

    gen = np.random.default_rng(7)
    tokens = gen.integers(0, VOCAB, 2000).astype(np.uint16)
    tokens.tofile(w("raw.bin"))
    header = np.zeros(256, np.int32)
    header[:3] = (20240520, 1, tokens.size)
    with open(w("llmc.bin"), "wb") as f:
        f.write(header.tobytes() + tokens.tobytes())
    np.save(w("ids.npy"), tokens.astype(np.uint32))
    count = (tokens.size - 1) // T

    # formats: aligned windows, file order and the epoch permutation.
    windows_npz(w("aligned.npz"), tokens, [k * T for k in range(count)])
    for order in (["--no-shuffle"], ["--seed", "3"]):
        ref, _, _, _ = train(["--data", w("aligned.npz")], 5, *order)
        for f in ("raw.bin", "llmc.bin", "ids.npy"):
            got, _, _, _ = train(["--data-tokens", w(f)], 5, "--windows", "aligned",
                                 "--seq-len", str(T), *order)
            check(f"formats {f} {' '.join(order)}", got == ref,
                  f"losses {got} vs .npz windows {ref}")

    # random: the offsets computed here, through an .npz in the same order.
    starts = tokens.size - T
    offsets = [splitmix_offset(5, 0, k, starts) for k in range(5 * BATCH)]
    windows_npz(w("random.npz"), tokens, offsets)
    ref, _, _, _ = train(["--data", w("random.npz")], 5, "--no-shuffle")
    got, _, _, _ = train(["--data-tokens", w("raw.bin")], 5, "--no-shuffle",
                         "--seed", "5")
    check("random offsets", got == ref, f"losses {got} vs .npz of SplitMix64 "
          f"offsets {ref}")
    again, _, _, _ = train(["--data-tokens", w("raw.bin")], 5, "--no-shuffle",
                           "--seed", "5")
    other, _, _, _ = train(["--data-tokens", w("raw.bin")], 5, "--no-shuffle",
                           "--seed", "6")
    records = [json.loads(l) for l in open(w("run.jsonl")) if l.strip()]
    check("speed fields", all(r["tokens_per_s"] > 0 and r["step_ms"] > 0 and
                              r["model_tflops"] > 0 and "mfu" not in r
                              for r in records),
          f"step 1: {records[0]} (no mfu on the host)")
    check("random repeatable", again == got and other != got,
          f"seed 5 twice equal: {again == got}; seed 6 differs: {other != got}")

    # resume: 6 steps = 3 + --save + --resume 3 (epoch permutation on).
    whole, _, _, _ = train(["--data-tokens", w("raw.bin")], 6, "--seed", "9")
    first, _, _, _ = train(["--data-tokens", w("raw.bin")], 3, "--seed", "9",
                           "--save", w("ck.safetensors"))
    rest, _, _, _ = train(["--data-tokens", w("raw.bin")], 6, "--resume",
                          w("ck.safetensors"))
    check("resume", first + rest == whole, f"{first} + {rest} vs {whole}")

    # sharding: 2 data-parallel ranks of batch 2 see the windows of one
    # rank of batch 4 (DistributedSampler's striding: rank r takes samples
    # 4k + r and 4k + r + 2 of global batch k), so the losses agree.
    subprocess.run([args.dlc, w("train.onnx"), "--train", "--loss",
                    "softmax-cross-entropy", "--optimizer", "sgd", "--lr", "0.5",
                    "--batch-size", str(BATCH // 2), "--data-parallel", "--quiet",
                    "-o", w("dp.dlcp")], check=True)
    for windows in ("aligned", "random"):
        one, _, _, _ = train(["--data-tokens", w("raw.bin")], 3, "--windows", windows,
                             "--seed", "4")
        jsonl = w("dp.jsonl")
        if os.path.exists(jsonl):
            os.remove(jsonl)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        subprocess.run([args.dlrt, "launch", "--nproc-per-node", "2", "--master-port",
                        str(port), "--", args.dlrt, "train", w("dp.dlcp"),
                        "--data-tokens", w("raw.bin"), "--windows", windows, "--seed",
                        "4", "--steps", "3", "--device", "host", "--quiet",
                        "--log-jsonl", jsonl],
                       check=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
        two = [json.loads(l)["loss"] for l in open(jsonl) if l.strip()]
        worst = max(abs(a - b) / abs(b) for a, b in zip(two, one))
        check(f"sharding {windows}", len(two) == len(one) and worst <= 1e-5,
              f"2 ranks x 2 {two} vs 1 rank x 4 {one}: {worst:.2e} (bound 1e-5)")

    # evaluation: --eval-data-tokens against the same windows through an
    # .npz (37 windows: the last batch padded), perplexity = exp(loss).
    val = gen.integers(0, VOCAB, 301).astype(np.uint16)
    val.tofile(w("val.bin"))
    windows_npz(w("val.npz"), val, [k * T for k in range((val.size - 1) // T)])
    evals.clear()
    train(["--data-tokens", w("raw.bin")], 2, "--eval-data", w("val.npz"))
    train(["--data-tokens", w("raw.bin")], 2, "--eval-data-tokens", w("val.bin"))
    a, b = evals
    check("eval tokens", a["eval_loss"] == b["eval_loss"] and
          a["eval_accuracy"] == b["eval_accuracy"] and
          abs(b["eval_perplexity"] - np.exp(b["eval_loss"])) <= 1e-12 * b["eval_perplexity"]
          and b["eval_samples"] == 37,
          f"loss {b['eval_loss']:.9g} (.npz {a['eval_loss']:.9g}), perplexity "
          f"{b['eval_perplexity']:.6g}, accuracy {b['eval_accuracy']:.4g} "
          f"(.npz {a['eval_accuracy']:.4g}), {b['eval_samples']} windows")

    # errors
    with open(w("odd.bin"), "wb") as f:
        f.write(tokens.tobytes()[:2001])
    np.array([1, 2, VOCAB, 3] * 10, np.uint16).tofile(w("vocab.bin"))
    tokens[:5].tofile(w("short.bin"))
    np.save(w("twod.npy"), tokens.reshape(40, 50).astype(np.int32))
    header[2] = tokens.size + 1
    with open(w("badcount.bin"), "wb") as f:
        f.write(header.tobytes() + tokens.tobytes())
    cases = [
        ("odd.bin", [], "odd length for uint16 ids"),
        ("vocab.bin", [], f"token id {VOCAB} is not below the model's vocabulary "
                          f"of {VOCAB}"),
        ("short.bin", [], "fewer than one window of T + 1 = 9"),
        ("twod.npy", [], "must be a 1-D array"),
        ("badcount.bin", [], "the llm.c header says 2001 tokens"),
        ("raw.bin", ["--seq-len", "16"], "--seq-len 16 differs from the "
                                         "package's sequence length 8"),
    ]
    for f, extra, want in cases:
        _, out, rc, _ = train(["--data-tokens", w(f)], 1, *extra, expect_ok=False)
        lines = [l for l in out.splitlines() if l.startswith("dlrt: error:")]
        check(f"error {f} {' '.join(extra)}".strip(),
              rc == 1 and len(lines) == 1 and want in lines[0],
              f"exit {rc}: {lines[0] if lines else out.strip()[:200]}")

    # memory: a 1 GiB sparse file against the 2000-token one.
    big = w("big.bin")
    with open(big, "wb") as f:
        f.truncate(1 << 30)
    try:
        _, _, _, small_mb = train(["--data-tokens", w("raw.bin")], 20)
        _, _, _, big_mb = train(["--data-tokens", big], 20)
    finally:
        os.remove(big)
    extra_mb = big_mb - small_mb
    check("memory", extra_mb < 200, f"peak resident {big_mb:.0f} MB with a "
          f"1 GiB file, {small_mb:.0f} MB with 2000 tokens: {extra_mb:+.0f} MB "
          f"(bound 200)")

    print("token stream:", "ok" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
