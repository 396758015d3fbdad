"""Compares dlrt results on the CUDA device with the host device's.

    compare.py losses HOST.jsonl CUDA.jsonl    (every step within 1e-3 relative)
    compare.py outputs HOST.npz CUDA.npz       (max |d| <= 1e-3 * max |host|)
    compare.py step-time FP32.log BF16.log     (prints bf16/fp32 step time from
                                                dlrt train's epoch throughput)

The issue's bound for CUDA against host is 1e-3 relative: both are fp32
(cuBLASLt/cuDNN without TF32), differing in summation order.
"""
import json
import sys

import numpy as np

kind, a, b = sys.argv[1:4]
ok = True
if kind == "step-time":
    import re

    def throughput(path):
        rates = re.findall(r"epoch \d+: mean loss \S+, ([0-9.]+) samples/s", open(path).read())
        return float(rates[-1]) if rates else None

    fp32, bf16 = throughput(a), throughput(b)
    if not fp32 or not bf16:
        print("  no epoch throughput in the logs")
        sys.exit(1)
    print(f"  samples/s: fp32 {fp32:.0f}, bf16 {bf16:.0f}; "
          f"step time bf16/fp32 = {fp32 / bf16:.3f}")
    sys.exit(0)
if kind == "losses":
    host = [json.loads(l)["loss"] for l in open(a) if l.strip()]
    cuda = [json.loads(l)["loss"] for l in open(b) if l.strip()]
    ok = len(host) == len(cuda) and len(host) > 0
    for i, (h, c) in enumerate(zip(host, cuda), 1):
        rel = abs(h - c) / abs(h)
        ok = ok and rel <= 1e-3
        print(f"  step {i}: host {h:.7f} cuda {c:.7f} rel {rel:.2e}")
else:
    ha, ca = np.load(a), np.load(b)
    for k in ha.files:
        err = np.max(np.abs(ha[k] - ca[k])) / np.max(np.abs(ha[k]))
        ok = ok and err <= 1e-3
        print(f"  output {k}: max |cuda - host| / max |host| = {err:.2e}")
print("  PASS" if ok else "  FAIL")
sys.exit(0 if ok else 1)
