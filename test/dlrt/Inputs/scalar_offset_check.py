"""Checks dlrt's --log-jsonl records for scalar_offset.mlir (SGD, lr 0.1, on
regression_check.py's data) against NumPy float64: each step's loss and its
"s.grad" field, the gradient of the scalar parameter s at the step's
weights."""
import json
import sys

import numpy as np

x = np.array([[1.0, 2.0, -1.0, 0.5], [0.0, -1.5, 2.0, 1.0]])
t = np.array([[0.5, 0.0, 1.0, -1.0], [1.0, 0.5, 0.0, 2.0]])
w = np.array([0.5, -0.25, 1.0, 0.0])
s = 0.1
records = [json.loads(line) for line in open(sys.argv[1])]
# fp32 against float64: 1e-5 relative covers float32 rounding of these sums.
for i, r in enumerate(records, 1):
    d = x * w + s - t
    loss, g = np.mean(d * d), 2 * d / d.size
    gs = g.sum()
    ok = abs(r["loss"] - loss) <= 1e-5 * abs(loss) and abs(r["s.grad"] - gs) <= 1e-5 * abs(gs)
    print(f"step {i}: {'ok' if ok else 'MISMATCH'} fields {sorted(r)} "
          f"loss {r['loss']:.7g} {loss:.7g} s.grad {r['s.grad']:.7g} {gs:.7g}")
    w = w - 0.1 * (g * x).sum(axis=0)
    s = s - 0.1 * gs
print(f"steps: {len(records)}")
