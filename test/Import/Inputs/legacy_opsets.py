"""Builds models of old opsets (6, 9, 11) by hand, whose nodes use the old
definitions the importer maps (Add/Mul with `broadcast`/`axis`, Softmax and
LogSoftmax coerced to 2-D around `axis`, Clip with `min`/`max` attributes,
Unsqueeze/Squeeze/ReduceSum with `axes` attributes, BatchNormalization with
`is_test`, Dropout with `is_test`, PRelu with a per-channel slope, Gemm with
`broadcast`), plus 1-D Conv/MaxPool/AveragePool, compiles them with dlc, runs them with `dlrt run --device host`
and compares with NumPy, for import-legacy.test.

Usage: legacy_opsets.py OUT_DIR [--break]
Prints "ok <name> max_err <e>" per model when every output is within
1e-5 * (1 + |want|), else "MISMATCH ...". --break perturbs a reference.
"""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def softmax2d(x, axis, log=False):
    shape = x.shape
    f = x.reshape(int(np.prod(shape[:axis])), -1).astype(np.float64)
    e = np.exp(f - f.max(axis=1, keepdims=True))
    s = e / e.sum(axis=1, keepdims=True)
    return (np.log(s) if log else s).reshape(shape)


def conv1d(x, w, pb, pe, stride):
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pb, pe)))
    k = w.shape[2]
    n = (xp.shape[2] - k) // stride + 1
    return np.stack([np.einsum("ncl,ocl->no", xp[:, :, i * stride:i * stride + k], w)
                     for i in range(n)], axis=2)


def maxpool1d(x):
    n = x.shape[2] // 2
    return np.stack([x[:, :, 2 * i:2 * i + 2].max(axis=2) for i in range(n)], axis=2)


def avgpool1d(x):
    # kernel 3, pads 1/1, stride 1; padding is not counted.
    L = x.shape[2]
    return np.stack([x[:, :, max(i - 1, 0):min(i + 2, L)].astype(np.float64).mean(axis=2)
                     for i in range(L)], axis=2)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    c = rng.standard_normal((3,)).astype(np.float32)
    a2 = rng.standard_normal((4, 6)).astype(np.float32)
    w2 = rng.standard_normal((5, 6)).astype(np.float32)
    c2 = rng.standard_normal((5,)).astype(np.float32)
    x1 = rng.standard_normal((2, 3, 7)).astype(np.float32)
    w1 = rng.standard_normal((4, 3, 3)).astype(np.float32)
    mean = rng.standard_normal((3,)).astype(np.float32)
    var = rng.random((3,)).astype(np.float32) + 0.5
    init = lambda a, n: numpy_helper.from_array(a, n)
    N = helper.make_node
    nodes = [
        N("Add", ["x", "b"], ["add"], broadcast=1, axis=1),
        N("Mul", ["x", "c"], ["mul"], broadcast=1, axis=1),
        N("Softmax", ["x"], ["sm"], axis=1),
        N("LogSoftmax", ["x"], ["lsm"], axis=2),
        N("Softmax", ["x"], ["sm_default"]),
        N("Clip", ["x"], ["clip"], min=-0.5, max=0.25),
        N("Unsqueeze", ["x"], ["unsq"], axes=[0, 3]),
        N("Squeeze", ["unsq"], ["sq"], axes=[0]),
        N("ReduceSum", ["x"], ["rsum"], axes=[1, 3], keepdims=0),
        N("BatchNormalization", ["x", "c", "c", "mean", "var"], ["bn"],
          is_test=1, epsilon=1e-3),
        N("Dropout", ["x"], ["drop"], is_test=1, ratio=0.3),
        N("PRelu", ["x", "c"], ["prelu"]),
        N("Gemm", ["a2", "w2", "c2"], ["gemm"], broadcast=1, transB=1,
          alpha=0.5, beta=2.0),
        # 1-D convolution and pooling (any opset).
        N("Conv", ["x1", "w1"], ["conv1d"], pads=[1, 0], strides=[2]),
        N("MaxPool", ["x1"], ["maxpool1d"], kernel_shape=[2], strides=[2]),
        N("AveragePool", ["x1"], ["avgpool1d"], kernel_shape=[3],
          pads=[1, 1]),
    ]
    outs = ["add", "mul", "sm", "lsm", "sm_default", "clip", "sq", "rsum",
            "bn", "drop", "prelu", "gemm", "conv1d", "maxpool1d", "avgpool1d"]
    xd = x.astype(np.float64)
    cc = c.reshape(3, 1, 1)
    wants = [
        x + b.reshape(1, 3, 4, 1), x * cc, softmax2d(x, 1),
        softmax2d(x, 2, log=True), softmax2d(x, 1),
        np.clip(x, -0.5, 0.25), x.reshape(2, 3, 1, 4, 5),
        x.sum(axis=(1, 3)),
        (xd - mean.reshape(3, 1, 1)) / np.sqrt(var.reshape(3, 1, 1) + 1e-3)
        * cc + cc,
        x, np.where(x > 0, x, x * cc),
        0.5 * a2.astype(np.float64) @ w2.T + 2.0 * c2,
        conv1d(x1, w1, 1, 0, 2), maxpool1d(x1), avgpool1d(x1),
    ]
    if "--break" in sys.argv:
        wants[2] = wants[2] + 1e-3
    graph = helper.make_graph(
        nodes, "legacy", [vi("x", list(x.shape)), vi("a2", [4, 6]), vi("x1", [2, 3, 7])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
         for o in outs],
        [init(b, "b"), init(c, "c"), init(mean, "mean"), init(var, "var"),
         init(w2, "w2"), init(c2, "c2"), init(w1, "w1")])
    failed = False
    for opset in (6,):
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="dlc-tests")
        m.ir_version = 3
        base = os.path.join(out, f"legacy_{opset}")
        with open(base + ".onnx", "wb") as f:
            f.write(m.SerializeToString())
        subprocess.run(["dlc", base + ".onnx", "--quiet", "-o", base + ".dlcp"],
                       check=True)
        np.savez(base + ".in.npz", x=x, a2=a2, x1=x1)
        subprocess.run(["dlrt", "run", base + ".dlcp", "--device", "host",
                        "--inputs", base + ".in.npz", "--outputs",
                        base + ".out.npz"], check=True, stdout=subprocess.DEVNULL)
        res = np.load(base + ".out.npz")
        ok, worst = True, 0.0
        for name, want in zip(outs, wants):
            got = res[name]
            want = np.asarray(want)
            err = np.abs(got.astype(np.float64) - want) if got.shape == want.shape else np.array([np.inf])
            good = got.shape == want.shape and bool(np.all(err <= 1e-5 * (1 + np.abs(want))))
            if not good:
                print(f"  {name}: shape {got.shape} want {want.shape} max_err {err.max():.3g}")
            ok &= good
            worst = max(worst, float(err.max()))
        print(f"{'ok' if ok else 'MISMATCH'} legacy opset {opset} max_err {worst:.3g}")
        failed |= not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
