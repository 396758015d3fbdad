"""Compares dlrt results on the CUDA device with the host device's.

    compare.py losses HOST.jsonl CUDA.jsonl    (every step within 1e-3 relative)
    compare.py outputs HOST.npz CUDA.npz       (max |d| <= 1e-3 * max |host|)

The issue's bound for CUDA against host is 1e-3 relative: both are fp32
(cuBLASLt/cuDNN without TF32), differing in summation order.
"""
import json
import sys

import numpy as np

kind, a, b = sys.argv[1:4]
ok = True
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
