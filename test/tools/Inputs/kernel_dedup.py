"""Inputs and checks for kernel-dedup.test.

make OUT.npz: x, z ([4, 8]) and w ([2, 8]), distinct values per input.
check IN.npz OUT.npz: a = exp(x), b = exp(z), c = exp(w) within 2 f32 ulps
  (expf of the C library and numpy's float32 exp may differ by an ulp each
  way); a launch that ran the wrong kernel or on the wrong buffers would be
  off by far more (the inputs differ by at least 0.05 everywhere).
"""
import sys

import numpy as np

if sys.argv[1] == "make":
    x = np.linspace(-2, 2, 32, dtype=np.float32).reshape(4, 8)
    np.savez(sys.argv[2], x=x, z=(x * 0.5 + 1.0).astype(np.float32),
             w=np.linspace(0.1, 1.5, 16, dtype=np.float32).reshape(2, 8))
    sys.exit(0)
ins, outs = np.load(sys.argv[2]), np.load(sys.argv[3])
bad = 0
for out, inp in (("a", "x"), ("b", "z"), ("c", "w")):
    ref = np.exp(ins[inp].astype(np.float64)).astype(np.float32)
    got = outs[out]
    ulps = np.abs(got.view(np.int32).astype(np.int64) -
                  ref.view(np.int32).astype(np.int64)).max()
    ok = got.shape == ref.shape and ulps <= 2
    bad += not ok
    print(f"{out}: shape {list(got.shape)} max ulps {ulps} {'ok' if ok else 'WRONG'}")
sys.exit(1 if bad else 0)
