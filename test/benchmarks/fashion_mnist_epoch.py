#!/usr/bin/python3
"""Benchmark: one Fashion-MNIST epoch of the main job's recipe (the bundled
MLP, Adam, lr 1e-3, batch 64) with dlrt on the host device next to PyTorch
(CPU) on the same machine, measured in one run.

    /usr/bin/python3 test/benchmarks/fashion_mnist_epoch.py --dlc build/bin/dlc --dlrt build/bin/dlrt

Prints both epoch times (training loop only: neither includes start-up, data
loading or evaluation), their ratio, and both test accuracies. Exits 1 when
dlrt's epoch is slower than --max-ratio times PyTorch's (default 3, the
issue's bound) or its accuracy is below --min-accuracy (default 0.83).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--dataset-dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--max-ratio", type=float, default=3.0)
    ap.add_argument("--min-accuracy", type=float, default=0.83)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        pkg = os.path.join(tmp, "mlp.dlcp")
        subprocess.run([args.dlc, os.path.join(ROOT, "examples/mlp/mlp.onnx"), "--train",
                        "--optimizer", "adam", "--lr", "1e-3", "--batch-size", "64",
                        "--quiet", "-o", pkg], check=True)
        ours = subprocess.run([args.dlrt, "train", pkg, "--dataset",
                               f"fashion-mnist:{args.dataset_dir}", "--epochs", "1",
                               "--device", "host", "--log-every", "1000"],
                              check=True, stdout=subprocess.PIPE, text=True).stdout
    print(ours, end="")
    m = re.search(r"epoch 1: mean loss ([0-9.]+), .* ([0-9.]+) s", ours)
    a = re.search(r"test accuracy ([0-9.]+)%", ours)
    if not m or not a:
        sys.exit("benchmark: cannot find the epoch time / accuracy in dlrt's output")
    dlrt_s, dlrt_acc = float(m.group(2)), float(a.group(1)) / 100

    ref = subprocess.run([sys.executable, os.path.join(HERE, "fashion_mnist_pytorch.py"),
                          args.dataset_dir], check=True, stdout=subprocess.PIPE, text=True)
    torch_res = json.loads(ref.stdout.strip().splitlines()[-1])
    torch_s = torch_res["epoch_seconds"]
    ratio = dlrt_s / torch_s
    print(f"dlrt host epoch:   {dlrt_s:.2f} s  test accuracy {dlrt_acc:.2%}")
    print(f"PyTorch CPU epoch: {torch_s:.2f} s  test accuracy {torch_res['test_accuracy']:.2%}"
          f"  ({torch_res['threads']} threads)")
    print(f"ratio dlrt / PyTorch: {ratio:.2f}x (bound {args.max_ratio:.1f}x)")
    ok = ratio <= args.max_ratio and dlrt_acc >= args.min_accuracy
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
