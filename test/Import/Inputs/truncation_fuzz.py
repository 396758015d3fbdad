"""Runs `dlc-translate --import-onnx` on prefixes of a model file and
on copies with flipped bytes; fails if any run dies from a signal or exits with a
status other than 0 or 1, or exits 1 without an `error:` diagnostic.

Usage: truncation_fuzz.py MODEL.onnx WORK_DIR
"""
import os
import random
import subprocess
import sys


def run(path):
    p = subprocess.run(["dlc-translate", "--import-onnx", path, "--batch-size", "2"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       errors="replace")
    if p.returncode not in (0, 1) or (p.returncode == 1 and "error:" not in p.stderr):
        print(f"FAIL {path}: exit {p.returncode}\n{p.stderr}")
        return False
    return True


def main():
    model, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    data = open(model, "rb").read()
    ok = True
    cuts = sorted(set(list(range(0, min(len(data), 120), 3)) + list(range(0, len(data), 211))))
    path = os.path.join(work, "cut.onnx")
    for n in cuts:
        with open(path, "wb") as f:
            f.write(data[:n])
        ok &= run(path)
    rng = random.Random(1)
    for _ in range(40):
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        with open(path, "wb") as f:
            f.write(b)
        ok &= run(path)
    print("ok" if ok else "failures")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
