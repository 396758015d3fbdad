"""Inputs and checks for lowp-libcalls.test: bf16/f16 gemm, matmul and
convolutions as library calls.

make OUT.npz: f32 inputs (dlrt rounds them to each input's bf16/f16 type).
check IN.npz OUT.npz: every output against a float64 numpy reference on the
  16-bit-rounded inputs, rounded once to the output's type; within 1 ulp of
  that type (the library sums in f32, in its own order: for these sizes,
  K <= 54 terms of magnitude <= 2, the f32 error bound 54 * 2^-24 * 54 is
  far below half a bf16/f16 ulp of the results, so only a result next to a
  rounding boundary can move, by one ulp).
compare A.npz B.npz: the same outputs within 1 ulp of their type (host vs
  CUDA: the same semantics, different summation order).
"""
import sys

import numpy as np

TYPES = {"yg": "bf16", "yc": "bf16", "ym": "f16", "dx": "bf16", "dw": "bf16",
         "yk": "f16"}


def to_bf16(a):
    """float32 -> the float32 value of its bf16 rounding (nearest even)."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
    return u.astype(np.uint32).view(np.float32)


def round_to(a, t):
    if t == "f16":
        return np.asarray(a, np.float64).astype(np.float16).astype(np.float32)
    # float64 -> bf16 once: f32 with round-to-odd keeps the one rounding.
    a = np.asarray(a, np.float64)
    f = a.astype(np.float32)
    back = f.astype(np.float64)
    u = f.view(np.uint32)
    inexact = back != a
    # Round to odd: truncate toward zero, set the last bit when inexact.
    trunc = np.where(np.abs(back) > np.abs(a), u - 1, u).astype(np.uint32)
    odd = np.where(inexact, trunc | 1, u).astype(np.uint32)
    return to_bf16(odd.view(np.float32))


def ordinal(v, t):
    """Position of each 16-bit value on the number line (ulp steps)."""
    if t == "f16":
        b = np.asarray(v, np.float16).view(np.uint16).astype(np.int64)
    else:
        b = (np.asarray(v, np.float32).view(np.uint32) >> 16).astype(np.int64)
    return np.where(b & 0x8000, -(b & 0x7FFF), b)


def conv2d(x, w, b, stride, pad):
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    p = (h + pad[0] + pad[2] - r) // stride + 1
    q = (wd + pad[1] + pad[3] - s) // stride + 1
    y = np.zeros((n, k, p, q))
    for i in range(p):
        for j in range(q):
            patch = xp[:, :, i * stride:i * stride + r, j * stride:j * stride + s]
            y[:, :, i, j] = np.einsum("ncrs,kcrs->nk", patch, w)
    return y + (0 if b is None else b[None, :, None, None])


def make(path):
    r = np.random.default_rng(7)
    f = lambda *shape: r.uniform(-1, 1, shape).astype(np.float32)
    np.savez(path, a=f(6, 54), b=f(10, 54), c=f(10), x=f(2, 3, 7, 7),
             w=f(4, 3, 3, 3), bias=f(4), dy=f(2, 4, 4, 3), ma=f(3, 5, 33),
             mb=f(33, 8), ka=f(5, 12), kb=f(12, 7), kc=f(5, 1))


def reference(inp):
    i = {k: np.asarray(v, np.float32) for k, v in inp.items()}
    bf = {k: to_bf16(i[k]).astype(np.float64) for k in
          ("a", "b", "c", "x", "w", "bias", "dy")}
    hf = {k: i[k].astype(np.float16).astype(np.float64)
          for k in ("ma", "mb", "ka", "kb", "kc")}
    ref = {}
    # yg = a b^T + c (the bias row: one rounding of the f32 sum).
    ref["yg"] = bf["a"] @ bf["b"].T + bf["c"]
    # yc = conv(x, w, bias), stride 2, pads (1, 0, 2, 1).
    ref["yc"] = conv2d(bf["x"], bf["w"], bf["bias"], 2, (1, 0, 2, 1))
    # ym = ma @ mb in f16 (a batched lhs folds into one gemm).
    ref["ym"] = hf["ma"] @ hf["mb"]
    # yk = 2 ka kb + 0.5 kc, kc a column broadcast over the 7 columns.
    ref["yk"] = 2 * hf["ka"] @ hf["kb"] + 0.5 * hf["kc"]
    # dx, dw: the gradients of conv(x, w) for dy (stride 2, pads 1,0,2,1).
    x, w, dy = bf["x"], bf["w"], bf["dy"]
    dx = np.zeros((2, 3, 7 + 3, 7 + 1))
    dw = np.zeros_like(w)
    for p in range(dy.shape[2]):
        for q in range(dy.shape[3]):
            xp = np.pad(x, ((0, 0), (0, 0), (1, 2), (0, 1)))
            patch = xp[:, :, 2 * p:2 * p + 3, 2 * q:2 * q + 3]
            dw += np.einsum("nk,ncrs->kcrs", dy[:, :, p, q], patch)
            dx[:, :, 2 * p:2 * p + 3, 2 * q:2 * q + 3] += np.einsum(
                "nk,kcrs->ncrs", dy[:, :, p, q], w)
    ref["dx"] = dx[:, :, 1:1 + 7, 0:7]
    ref["dw"] = dw
    return {k: round_to(v, TYPES[k]) for k, v in ref.items()}


def within_one_ulp(name, got, want):
    t = TYPES[name]
    assert got.shape == want.shape, (name, got.shape, want.shape)
    d = np.abs(ordinal(got, t) - ordinal(want, t))
    exact = int((d == 0).sum())
    print(f"{name} {t} {got.size} values, {exact} exact, max {int(d.max())} ulp")
    if d.max() > 1:
        print(f"{name} DIFFERS by {int(d.max())} ulps", file=sys.stderr)
        sys.exit(1)


if sys.argv[1] == "make":
    make(sys.argv[2])
elif sys.argv[1] == "check":
    ref = reference(dict(np.load(sys.argv[2])))
    out = np.load(sys.argv[3])
    for k in sorted(TYPES):
        within_one_ulp(k, np.asarray(out[k]), ref[k])
else:
    a, b = np.load(sys.argv[2]), np.load(sys.argv[3])
    assert sorted(a) == sorted(b), (sorted(a), sorted(b))
    for k in sorted(TYPES):
        within_one_ulp(k, np.asarray(a[k]), np.asarray(b[k]))
