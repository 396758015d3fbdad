"""Compares dlrt results on the CUDA device with the host device's.

    compare.py losses HOST.jsonl CUDA.jsonl    (every step within 1e-3 relative)
    compare.py outputs HOST.npz CUDA.npz       (max |d| <= 1e-3 * max |host|)
    compare.py step-time FP32.log BF16.log     (prints bf16/fp32 step time from
                                                dlrt train's epoch throughput)
    compare.py remat DIR                       (issue 11 on the GPU: DIR holds
                                                {none,sqrt,budget}.jsonl and
                                                -memory.json from the host and
                                                cuda-*.jsonl, cuda-*-memory.json
                                                from this machine)

The bound for CUDA against host is 1e-3 relative: both are fp32
(cuBLASLt/cuDNN without TF32), differing in summation order.
Rematerialization on the GPU must be bit-identical among none, sqrt and the
budget run (the same kernels on the same values), each run's predicted peak
within 10% of the pool's used high-water mark and at most its reserved one.
"""
import json
import os
import sys

import numpy as np


def step_time(a, b):
    import re

    def throughput(path):
        rates = re.findall(r"epoch \d+: mean loss \S+, ([0-9.]+) samples/s", open(path).read())
        return float(rates[-1]) if rates else None

    fp32, bf16 = throughput(a), throughput(b)
    if not fp32 or not bf16:
        print("  no epoch throughput in the logs")
        return False
    print(f"  samples/s: fp32 {fp32:.0f}, bf16 {bf16:.0f}; "
          f"step time bf16/fp32 = {fp32 / bf16:.3f}")
    return True


def losses(a, b):
    host = [json.loads(l)["loss"] for l in open(a) if l.strip()]
    cuda = [json.loads(l)["loss"] for l in open(b) if l.strip()]
    ok = len(host) == len(cuda) and len(host) > 0
    for i, (h, c) in enumerate(zip(host, cuda), 1):
        rel = abs(h - c) / abs(h)
        ok = ok and rel <= 1e-3
        print(f"  step {i}: host {h:.7f} cuda {c:.7f} rel {rel:.2e}")
    return ok


def outputs(a, b):
    ok = True
    ha, ca = np.load(a), np.load(b)
    for k in ha.files:
        err = np.max(np.abs(ha[k] - ca[k])) / np.max(np.abs(ha[k]))
        ok = ok and err <= 1e-3
        print(f"  output {k}: max |cuda - host| / max |host| = {err:.2e}")
    return ok


def remat(d):
    ok = True
    lines = {}
    for tag in ("none", "none2", "sqrt", "budget"):
        path = os.path.join(d, f"cuda-{tag}.jsonl")
        if not os.path.exists(path):
            continue
        lines[tag] = [l.strip() for l in open(path) if l.strip()]
        mem = json.load(open(os.path.join(d, f"cuda-{tag}-memory.json")))
        pred, meas = mem["predicted_peak_bytes"], mem["measured_peak_bytes"]
        used = mem["used_peak_bytes"]
        # The pool reserves whole chunks (32 MiB on an H100 with driver 580),
        # so for these small models the reserved mark is a chunk count; the
        # used mark (bytes as asked) is held to 10% of the prediction, and
        # the reserved one must hold the prediction.
        within = 0 < used and abs(pred - used) <= 0.10 * used and meas >= pred
        ok = ok and within
        print(f"  {tag}: predicted {pred} B, used {used} B (predicted/used "
              f"{pred / used:.4f}), reserved {meas} B (predicted/reserved "
              f"{pred / meas:.3f}) {'ok' if within else 'FAIL'}")
    if "none" not in lines:
        print("  no cuda-none.jsonl")
        return False
    if "none2" in lines:
        same = lines["none2"] == lines["none"]
        ok = ok and same
        print(f"  none's losses repeat bit for bit in a second run on the GPU: {same}")
    for tag in ("sqrt", "budget"):
        if tag in lines:
            same = lines[tag] == lines["none"]
            ok = ok and same
            print(f"  {tag} losses bit-identical to none's on the GPU: {same}")
    # Against the host only the first step (the forward on the initial
    # weights) is held to 1e-3: the remat models train at a learning rate
    # where summation-order differences grow step by step (the deep CNN
    # with BatchNorm: 8.7e-3 at step 5 on the CUDA stand-in, 1e-7 at step 1).
    print("  none on the GPU against the host (step 1 held to 1e-3, the rest shown):")
    host = [json.loads(l)["loss"] for l in open(os.path.join(d, "none.jsonl")) if l.strip()]
    cuda = [json.loads(l)["loss"] for l in lines["none"]]
    for i, (h, c) in enumerate(zip(host, cuda), 1):
        print(f"  step {i}: host {h:.7f} cuda {c:.7f} rel {abs(h - c) / abs(h):.2e}")
    return ok and bool(cuda) and abs(host[0] - cuda[0]) <= 1e-3 * abs(host[0])


def main():
    kind, args = sys.argv[1], sys.argv[2:]
    if kind == "step-time":
        sys.exit(0 if step_time(*args) else 1)
    ok = {"losses": losses, "outputs": outputs, "remat": remat}[kind](*args)
    print("  PASS" if ok else "  FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
