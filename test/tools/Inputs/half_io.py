"""Inputs for half-host-vs-cuda.test, and the bit-for-bit comparison of two
dlrt run outputs."""
import sys

import numpy as np

if sys.argv[1] == "make":
    r = np.random.default_rng(0)
    # Finite values, an f16 overflow and a subnormal among them.
    x = r.standard_normal((2, 4)).astype(np.float16)
    x[0, 0] = np.float16(6.0e-5)
    np.savez(sys.argv[2], x=x, y=r.standard_normal(4).astype(np.float16),
             b=r.standard_normal((2, 4)).astype(np.float32),
             f=(r.standard_normal((2, 4)) * 1e5).astype(np.float32),
             d=r.standard_normal((2, 4)), i=r.integers(-5, 5, (2, 4)).astype(np.int32))
else:
    a, b = np.load(sys.argv[2]), np.load(sys.argv[3])
    assert sorted(a) == sorted(b), (sorted(a), sorted(b))
    for k in sorted(a):
        same = a[k].dtype == b[k].dtype and a[k].tobytes() == b[k].tobytes()
        print(k, a[k].dtype, "bit-identical" if same else "DIFFERS")
        if not same:
            sys.exit(1)
