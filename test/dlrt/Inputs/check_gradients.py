"""Checks `dlrt train --save-gradients` files against checkpoints of the same
momentum-SGD run: usage check_gradients.py DIR STEPS CKPT1 CKPT2 LR MOMENTUM.

Each DIR/step-<i>.safetensors (i = 1..STEPS) must hold one f32 tensor per
parameter of the checkpoints (named by it, shaped like it, step metadata i);
step 1's gradients must equal the momentum buffer of CKPT1 (the checkpoint
after step 1) exactly, since torch.optim.SGD sets buf = g on its first step;
and step 2's must satisfy buf2 = momentum * buf1 + g2 to fp32 rounding
(CKPT2: the checkpoint after step 2)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "e2e"))
from safetensors_np import read_safetensors  # noqa: E402

folder, steps, ckpt1, ckpt2, lr, momentum = sys.argv[1:]
c1, _ = read_safetensors(ckpt1)
c2, _ = read_safetensors(ckpt2)
params = sorted(k[:-len(".momentum_buffer")] for k in c1 if k.endswith(".momentum_buffer"))
assert params, sorted(c1)
grads = {}
for i in range(1, int(steps) + 1):
    g, meta = read_safetensors(os.path.join(folder, f"step-{i}.safetensors"))
    assert meta == {"step": str(i)}, meta
    assert sorted(g) == params, (sorted(g), params)
    for k in params:
        assert g[k].dtype == np.float32 and g[k].shape == c1[k].shape, (k, g[k].dtype, g[k].shape)
        assert np.isfinite(g[k]).all() and np.abs(g[k]).max() > 0, k
    grads[i] = g
for k in params:
    assert np.array_equal(grads[1][k], c1[k + ".momentum_buffer"]), k
    want = float(momentum) * c1[k + ".momentum_buffer"].astype(np.float64) + grads[2][k]
    tol = 4 * np.finfo(np.float32).eps * np.abs(want).max()
    diff = np.abs(c2[k + ".momentum_buffer"] - want).max()
    assert diff <= tol, (k, diff, tol)
print(f"gradients ok: {len(params)} parameters, {steps} steps")
