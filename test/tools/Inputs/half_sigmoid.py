"""half-sigmoid.test: inputs, and dlrt's outputs against sigmoid computed in
float32 on the widened inputs and rounded once (f16 by numpy, whose float16
conversion rounds to nearest even; bf16 by bit arithmetic)."""
import sys

import numpy as np


def round_bf16(f32):
    bits = f32.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32)


if sys.argv[1] == "make":
    r = np.random.default_rng(1)
    x = (r.standard_normal(8) * 3).astype(np.float16)
    # sigmoid(0.709961) rounded after each of exp, add and div is 0.669922;
    # rounded once it is 0.670410.
    x[0] = np.float16(0.709961)
    np.savez(sys.argv[2], x=x, b=(r.standard_normal(8) * 3).astype(np.float32))
else:
    i, o = np.load(sys.argv[2]), np.load(sys.argv[3])
    x = i["x"].astype(np.float32)
    want_y = (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(np.float16)
    b = round_bf16(i["b"])
    want_z = round_bf16(np.float32(1) / (np.float32(1) + np.exp(-b)))
    print("y[0]", o["y"][0])
    print("f16", "exact" if np.array_equal(o["y"].view(np.uint16), want_y.view(np.uint16)) else "DIFFERS")
    print("bf16", "exact" if np.array_equal(o["z"], want_z) else "DIFFERS")
