"""Inputs and expected outputs of the f16/bf16 test package (half.test).

half_data.py make DIR: writes DIR/in.npz (xh float16, xb float64: dlrt rounds
it to bf16) and DIR/wrong.npz (xh as float32: also converted).
half_data.py check OUT.npz: checks dlrt run's outputs bit for bit against
NumPy: yh = f16(2 xh) as float16, yb = bf16(bf16(xb) * s) as float32.
"""
import sys

import numpy as np

XH = [[1.0, 0.5, 40000.0], [-3.0, 6e-8, 0.1]]
XB = [[1.0 / 3.0, 2.0, 3.0], [-1.5, 1e-3, 300.7]]
S = np.array([1.0, 2.0, -0.5], np.float32)


def bf16(a):
    """float32 -> nearest bfloat16 (ties to even), returned widened to float32."""
    b = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return r.astype(np.uint32).view(np.float32)


def main():
    if sys.argv[1] == "make":
        d = sys.argv[2]
        np.savez(d + "/in.npz", xh=np.array(XH, np.float16), xb=np.array(XB))
        np.savez(d + "/in32.npz", xh=np.array(XH, np.float32),
                 xb=np.array(XB, np.float32))
        return
    o = np.load(sys.argv[2])
    assert list(o.keys()) == ["yh", "yb"], list(o.keys())
    xh = np.array(XH, np.float16)
    with np.errstate(over="ignore"):
        want_h = (xh.astype(np.float32) * 2).astype(np.float16)
    assert o["yh"].dtype == np.float16, o["yh"].dtype
    assert np.array_equal(o["yh"].view(np.uint16), want_h.view(np.uint16)), (o["yh"], want_h)
    assert np.isinf(o["yh"][0, 2]), o["yh"]
    want_b = bf16(bf16(np.array(XB, np.float32)) * S)
    assert o["yb"].dtype == np.float32, o["yb"].dtype
    assert o["yb"].shape == (2, 3), o["yb"].shape
    assert np.array_equal(o["yb"].view(np.uint32), want_b.view(np.uint32)), (o["yb"], want_b)
    # bf16 outputs have at most 8 significant bits.
    assert not (o["yb"].view(np.uint32) & 0xFFFF).any(), o["yb"]
    print("half outputs ok")


main()
