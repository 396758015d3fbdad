"""Writes and runs the models of import-int-elementwise.test: int32 and int64
graph inputs computed on at run time by Abs, Neg, Add, Sub, Mul, Div, Mod
(fmod 0 and 1), Min, Max, Sign, Clip (constant and run-time integer bounds),
Equal, Less, Greater, LessOrEqual, GreaterOrEqual, and ReduceSum, ReduceMax,
ReduceMin, ReduceProd, ReduceL1 and ReduceSumSquare over one axis, and
float -> int Casts of NaN, infinities and out-of-range values (saturated,
NaN to 0); the same ops on
Constant nodes holding the same values, which the importer folds.

Usage: int_elementwise_models.py OUT_DIR [--run [--device host|cuda]
                                              [--break]]
Without --run writes OUT_DIR/int_elementwise.onnx with its inputs
(OUT_DIR/int_elementwise.in.npz), and OUT_DIR/neg_bool.onnx (Neg on bool,
which is rejected). With --run also compiles the model with dlc, runs it
with `dlrt run --device DEVICE` (host by default) and prints "ok
int_elementwise <n> outputs" when every output has the reference's dtype and
shape and equals it exactly, else "MISMATCH ...". --break perturbs one
reference value so that the check must fail (a self-test).

The references are computed with Python integers, then wrapped to the
dtype (two's complement), so they are exact for every int64:
  Div truncates toward zero (ONNX, C); Mod fmod=0 has the sign of the
  divisor (Python %, np.mod), fmod=1 the sign of the dividend (C %,
  np.fmod). Integer division and remainder by zero are undefined in ONNX;
  dlc defines both as 0 (as NumPy gives), and INT_MIN / -1 wraps to INT_MIN.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exact_outputs import run_and_compare  # noqa: E402

DTYPES = [("i32", TensorProto.INT32, np.int32, 32),
          ("i64", TensorProto.INT64, np.int64, 64)]
SHAPE = (4, 8)
BINARY = ["Add", "Sub", "Mul", "Div", "Mod0", "Mod1", "Min", "Max"]
UNARY = ["Abs", "Neg", "Sign"]
COMPARE = ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]
# Integer reductions over one axis, on exact Python integers (wrapped to the
# dtype afterwards, as the kernels' two's-complement sums and products are).
REDUCE = {
    "ReduceSum": sum,
    "ReduceMax": max,
    "ReduceMin": min,
    "ReduceProd": lambda row: int(np.prod([int(v) for v in row],
                                          dtype=object)),
    "ReduceL1": lambda row: sum(abs(v) for v in row),
    "ReduceSumSquare": lambda row: sum(v * v for v in row),
}


def wrap(v, bits):
    m = 1 << bits
    return ((v + (m >> 1)) % m) - (m >> 1)


def trunc_div(a, b):
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def ref_binary(op, a, b, bits):
    if op == "Add":
        r = a + b
    elif op == "Sub":
        r = a - b
    elif op == "Mul":
        r = a * b
    elif op == "Div":
        r = trunc_div(a, b)
    elif op == "Mod0":  # sign of the divisor: Python %
        r = 0 if b == 0 else a % b
    elif op == "Mod1":  # sign of the dividend: C %
        r = 0 if b == 0 else a - trunc_div(a, b) * b
    elif op == "Min":
        r = min(a, b)
    else:
        r = max(a, b)
    return wrap(r, bits)


def ref_unary(op, a, bits):
    if op == "Abs":
        return wrap(abs(a), bits)
    if op == "Neg":
        return wrap(-a, bits)
    return (a > 0) - (a < 0)


def ref_compare(op, a, b):
    return {"Equal": a == b, "Less": a < b, "Greater": a > b,
            "LessOrEqual": a <= b, "GreaterOrEqual": a >= b}[op]


def operands(npt, bits):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    rng = np.random.default_rng(bits)
    special_a = [lo, hi, lo + 1, -1, 0, 1, 7, -7, 100, -100, 0, lo, hi, 5,
                 -5, 13, -13, 3, -3, 0]
    special_b = [-1, -1, 1, 0, 7, 3, -3, 7, -7, 7, -7, 1, 2, 0, 2, -2, 5, -5,
                 lo, hi]
    n = SHAPE[0] * SHAPE[1]
    a = special_a + [int(v) for v in rng.integers(-1000, 1000,
                                                  n - len(special_a))]
    b = special_b + [int(v) for v in rng.integers(-50, 50,
                                                  n - len(special_b))]
    b[-1], a[-1] = a[-2], a[-2]  # some equal pairs for the comparisons
    b[-3] = a[-3]
    return (np.array(a, npt).reshape(SHAPE), np.array(b, npt).reshape(SHAPE))


def apply(fn, *arrs):
    flat = [[int(v) for v in x.flat] for x in arrs]
    return [fn(*vals) for vals in zip(*flat)]


def build():
    """Returns (model, feeds, output names, references)."""
    nodes, inputs, outputs, wants, feeds = [], [], [], [], {}

    def out(name, tensor_type, want):
        outputs.append(helper.make_tensor_value_info(name, tensor_type,
                                                     want.shape))
        wants.append(want)

    nodes.append(helper.make_node(
        "Constant", [], ["axis1"],
        value=numpy_helper.from_array(np.array([1], np.int64), "axis1")))
    for tag, tt, npt, bits in DTYPES:
        a, b = operands(npt, bits)
        clip_lo, clip_hi = npt(-7), npt(100)
        feeds[f"a_{tag}"], feeds[f"b_{tag}"] = a, b
        feeds[f"lo_{tag}"] = np.array(-100, npt)
        inputs += [helper.make_tensor_value_info(f"a_{tag}", tt, SHAPE),
                   helper.make_tensor_value_info(f"b_{tag}", tt, SHAPE),
                   helper.make_tensor_value_info(f"lo_{tag}", tt, [])]
        # Constant copies: the importer folds the ops on these.
        for src, val in (("a", a), ("b", b)):
            nodes.append(helper.make_node(
                "Constant", [], [f"k{src}_{tag}"],
                value=numpy_helper.from_array(val, f"k{src}_{tag}")))
        for name, val in (("clo", clip_lo), ("chi", clip_hi)):
            nodes.append(helper.make_node(
                "Constant", [], [f"{name}_{tag}"],
                value=numpy_helper.from_array(np.array(val, npt), name)))
        for pre in ("", "k"):
            x, y = f"{pre}a_{tag}", f"{pre}b_{tag}"
            for op in BINARY:
                o = f"{pre}{op}_{tag}"
                if op.startswith("Mod"):
                    nodes.append(helper.make_node("Mod", [x, y], [o],
                                                  fmod=int(op[3])))
                else:
                    nodes.append(helper.make_node(op, [x, y], [o]))
                want = apply(lambda p, q: ref_binary(op, p, q, bits), a, b)
                out(o, tt, np.array(want, npt).reshape(SHAPE))
            for op in UNARY:
                o = f"{pre}{op}_{tag}"
                nodes.append(helper.make_node(op, [x], [o]))
                want = apply(lambda p: ref_unary(op, p, bits), a)
                out(o, tt, np.array(want, npt).reshape(SHAPE))
            for op in COMPARE:
                o = f"{pre}{op}_{tag}"
                nodes.append(helper.make_node(op, [x, y], [o]))
                want = apply(lambda p, q: ref_compare(op, p, q), a, b)
                out(o, TensorProto.BOOL, np.array(want, np.bool_).reshape(SHAPE))
            # Clip with constant bounds, then with a run-time lower bound.
            o = f"{pre}Clip_{tag}"
            nodes.append(helper.make_node(
                "Clip", [x, f"clo_{tag}", f"chi_{tag}"], [o]))
            want = apply(lambda p: min(max(p, -7), 100), a)
            out(o, tt, np.array(want, npt).reshape(SHAPE))
            o = f"{pre}ClipRT_{tag}"
            nodes.append(helper.make_node("Clip", [x, f"lo_{tag}", ""], [o]))
            want = apply(lambda p: max(p, -100), a)
            out(o, tt, np.array(want, npt).reshape(SHAPE))
            # Reductions over axis 1 (sums and products wrap).
            for op, fn in REDUCE.items():
                o = f"{pre}{op}_{tag}"
                if op == "ReduceSum":
                    nodes.append(helper.make_node(op, [x, "axis1"], [o],
                                                  keepdims=0))
                else:
                    nodes.append(helper.make_node(op, [x], [o], axes=[1],
                                                  keepdims=0))
                want = [wrap(fn([int(v) for v in row]), bits) for row in a]
                out(o, tt, np.array(want, npt))
        # Max over three inputs, one of them a run-time scalar.
        o = f"Max3_{tag}"
        nodes.append(helper.make_node("Max", [f"a_{tag}", f"b_{tag}",
                                              f"lo_{tag}"], [o]))
        want = apply(lambda p, q: max(p, q, -100), a, b)
        out(o, tt, np.array(want, npt).reshape(SHAPE))
    # Float -> integer casts of NaN, infinities and out-of-range values
    # (undefined in C and in ONNX): dlc truncates toward zero, saturates to
    # the integer's range and maps NaN to 0, as the GPU's conversion does.
    f = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7, 1e20, -0.5,
                  2147483520.0, -2147483648.0, 0.0], np.float32)
    feeds["f"] = f
    inputs.append(helper.make_tensor_value_info("f", TensorProto.FLOAT,
                                                f.shape))
    for tag, tt, npt, bits in DTYPES:
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        o = f"Cast_f32_{tag}"
        nodes.append(helper.make_node("Cast", ["f"], [o], to=tt))
        want = [0 if v != v else hi if v >= 2.0 ** (bits - 1) else
                lo if v <= -2.0 ** (bits - 1) else int(v) for v in
                f.astype(np.float64)]
        out(o, tt, np.array(want, npt))
    g = helper.make_graph(nodes, "int_elementwise", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return m, feeds, [o.name for o in outputs], wants


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    base = os.path.join(out, "int_elementwise")
    m, feeds, names, wants = build()
    with open(base + ".onnx", "wb") as f:
        f.write(m.SerializeToString())
    np.savez(base + ".in.npz", **feeds)
    g = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["y"], name="neg_bool")], "neg_bool",
        [helper.make_tensor_value_info("x", TensorProto.BOOL, [3])],
        [helper.make_tensor_value_info("y", TensorProto.BOOL, [3])])
    with open(os.path.join(out, "neg_bool.onnx"), "wb") as f:
        f.write(helper.make_model(
            g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    if "--run" not in sys.argv:
        return
    device = "host"
    if "--device" in sys.argv:
        device = sys.argv[sys.argv.index("--device") + 1]
    if "--break" in sys.argv:
        w = wants[len(wants) // 2]
        w.flat[1] = not w.flat[1] if w.dtype == np.bool_ else w.flat[1] + 1
    run_and_compare(base, "int_elementwise", names, wants, device,
                    base + "." + device + ".out.npz")

if __name__ == "__main__":
    main()
