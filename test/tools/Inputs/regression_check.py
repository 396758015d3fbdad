"""Makes data for regression.mlir, or checks dlrt's logged losses against
NumPy's float64 SGD on the same model (3 steps, lr 0.1)."""
import json
import sys

import numpy as np

x = np.array([[1.0, 2.0, -1.0, 0.5], [0.0, -1.5, 2.0, 1.0]], dtype=np.float32)
t = np.array([[0.5, 0.0, 1.0, -1.0], [1.0, 0.5, 0.0, 2.0]], dtype=np.float32)
if sys.argv[1] == "make":
    np.savez(sys.argv[2], x=x, target=t)
    sys.exit(0)
w = np.array([0.5, -0.25, 1.0, 0.0])
b = np.full(4, 0.1)
xd, td = x.astype(np.float64), t.astype(np.float64)
expected = []
for _ in range(3):
    d = xd * w + b - td
    expected.append(np.mean(d * d))
    g = 2 * d / d.size
    w -= 0.1 * (g * xd).sum(axis=0)
    b -= 0.1 * g.sum(axis=0)
ours = [json.loads(line)["loss"] for line in open(sys.argv[2])]
# fp32 against float64: 1e-5 relative covers float32 rounding of these sums.
for i, (a, e) in enumerate(zip(ours, expected), 1):
    print(f"step {i}: {'ok' if abs(a - e) <= 1e-5 * abs(e) else 'MISMATCH'} {a:.7g} {e:.7g}")
print(f"steps: {len(ours)}")
