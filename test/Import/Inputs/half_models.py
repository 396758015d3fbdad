"""Builds the ONNX models of import-half.test: FLOAT16 and BFLOAT16 graph
inputs and outputs, initializers (raw_data and int32_data), Constants, Cast
and CastLike both ways, an elementwise chain, data movement, folding of
16-bit constants, and the errors for what is not supported yet.

Usage: half_models.py OUT_DIR   (writes OUT_DIR/<name>.onnx for every model)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
F16 = TensorProto.FLOAT16
BF16 = TensorProto.BFLOAT16


def model(name, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="dlc-tests")
    m.ir_version = 8
    return m


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def bits_tensor(name, dtype, dims, bits, raw):
    """A FLOAT16/BFLOAT16 tensor from 16-bit patterns: little-endian bytes in
    raw_data, or one pattern per int32_data entry (ONNX's two encodings)."""
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    if raw:
        t.raw_data = np.array(bits, "<u2").tobytes()
    else:
        t.int32_data.extend(bits)
    return t


def const(out, tensor):
    return helper.make_node("Constant", [], [out], name=out, value=tensor)


def i64(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def build():
    models = {}

    # Inputs, initializers in both encodings, a Constant, and an elementwise
    # chain in f16 and in bf16. f16 patterns: 0.5 0x3800, -2 0xC000, 3 0x4200,
    # 1 0x3C00, 0.1 0x2E66, -65504 0xFBFF, 0.25 0x3400. bf16: 1 0x3F80,
    # 0.5 0x3F00, -2 0xC000, 3.140625 0x4049, +inf 0x7F80, the smallest
    # subnormal 0x0001.
    models["half_chain"] = model(
        "half_chain",
        [const("quarter", bits_tensor("quarter", F16, [], [0x3400], raw=True)),
         helper.make_node("Add", ["x", "w_raw"], ["a"], name="add"),
         helper.make_node("Mul", ["a", "w_i32"], ["m"], name="mul"),
         helper.make_node("Relu", ["m"], ["r"], name="relu"),
         helper.make_node("Sigmoid", ["r"], ["s"], name="sigmoid"),
         helper.make_node("Tanh", ["s"], ["t"], name="tanh"),
         helper.make_node("Neg", ["t"], ["n"], name="neg"),
         helper.make_node("Abs", ["n"], ["ab"], name="abs"),
         helper.make_node("Div", ["ab", "x"], ["d"], name="div"),
         helper.make_node("Sub", ["d", "quarter"], ["sb"], name="sub"),
         helper.make_node("Greater", ["x", "quarter"], ["gt"], name="greater"),
         helper.make_node("Where", ["gt", "x", "sb"], ["y16"], name="where"),
         helper.make_node("Equal", ["x", "w_raw"], ["eq"], name="equal"),
         helper.make_node("Less", ["x", "quarter"], ["lt"], name="less"),
         helper.make_node("Add", ["b", "v_raw"], ["ba"], name="badd"),
         helper.make_node("Mul", ["ba", "v_i32"], ["bm"], name="bmul"),
         helper.make_node("Relu", ["bm"], ["br"], name="brelu"),
         helper.make_node("Sigmoid", ["br"], ["yb"], name="bsigmoid")],
        [vi("x", F16, [2, 3]), vi("b", BF16, [2, 3])],
        [vi("y16", F16, [2, 3]), vi("eq", TensorProto.BOOL, [2, 3]),
         vi("lt", TensorProto.BOOL, [2, 3]), vi("yb", BF16, [2, 3])],
        [bits_tensor("w_raw", F16, [3], [0x3800, 0xC000, 0x4200], raw=True),
         bits_tensor("w_i32", F16, [3], [0x3C00, 0x2E66, 0xFBFF], raw=False),
         bits_tensor("v_raw", BF16, [3], [0x3F80, 0x3F00, 0xC000], raw=True),
         bits_tensor("v_i32", BF16, [3], [0x4049, 0x7F80, 0x0001], raw=False)])

    # Cast and CastLike to and from f16/bf16 at run time.
    models["half_cast"] = model(
        "half_cast",
        [helper.make_node("Cast", ["xf"], ["f_h"], name="f_to_h", to=F16),
         helper.make_node("Cast", ["xf"], ["f_b"], name="f_to_b", to=BF16),
         helper.make_node("Cast", ["xh"], ["h_f"], name="h_to_f",
                          to=TensorProto.FLOAT),
         helper.make_node("Cast", ["xb"], ["b_f"], name="b_to_f",
                          to=TensorProto.FLOAT),
         helper.make_node("Cast", ["xh"], ["h_b"], name="h_to_b", to=BF16),
         helper.make_node("Cast", ["xh"], ["h_i"], name="h_to_i",
                          to=TensorProto.INT64),
         helper.make_node("Cast", ["xd"], ["d_h"], name="d_to_h", to=F16),
         helper.make_node("Cast", ["xh"], ["h_h"], name="h_to_h", to=F16),
         helper.make_node("CastLike", ["xf", "xb"], ["like_b"], name="like_b"),
         helper.make_node("CastLike", ["xh", "xf"], ["like_f"], name="like_f")],
        [vi("xf", TensorProto.FLOAT, [4]), vi("xh", F16, [4]),
         vi("xb", BF16, [4]), vi("xd", TensorProto.DOUBLE, [4])],
        [vi("f_h", F16, [4]), vi("f_b", BF16, [4]),
         vi("h_f", TensorProto.FLOAT, [4]), vi("b_f", TensorProto.FLOAT, [4]),
         vi("h_b", BF16, [4]), vi("h_i", TensorProto.INT64, [4]),
         vi("d_h", F16, [4]), vi("h_h", F16, [4]), vi("like_b", BF16, [4]),
         vi("like_f", TensorProto.FLOAT, [4])])

    # Data movement on f16 at run time.
    models["half_datamove"] = model(
        "half_datamove",
        [helper.make_node("Reshape", ["x", "shape"], ["rs"], name="reshape"),
         helper.make_node("Transpose", ["x"], ["tr"], name="transpose",
                          perm=[2, 0, 1]),
         helper.make_node("Concat", ["x", "x"], ["cc"], name="concat", axis=1),
         helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["sl"],
                          name="slice"),
         helper.make_node("Gather", ["x", "idx"], ["ga"], name="gather", axis=2),
         helper.make_node("Pad", ["x", "pads", "padval"], ["pd"], name="pad"),
         helper.make_node("Expand", ["col", "eshape"], ["ex"], name="expand"),
         helper.make_node("Unsqueeze", ["x", "uaxes"], ["us"], name="unsqueeze"),
         helper.make_node("Squeeze", ["us", "uaxes"], ["sq"], name="squeeze"),
         helper.make_node("Flatten", ["x"], ["fl"], name="flatten", axis=2),
         helper.make_node("Identity", ["x"], ["id"], name="identity")],
        [vi("x", F16, [2, 3, 4]), vi("col", F16, [3, 1])],
        [vi("rs", F16, [6, 4]), vi("tr", F16, [4, 2, 3]),
         vi("cc", F16, [2, 6, 4]), vi("sl", F16, [2, 3, 2]),
         vi("ga", F16, [2, 3, 2]), vi("pd", F16, [2, 3, 6]),
         vi("ex", F16, [3, 5]), vi("sq", F16, [2, 3, 4]),
         vi("fl", F16, [6, 4]), vi("id", F16, [2, 3, 4])],
        [i64("shape", [6, 4]), i64("starts", [1]), i64("ends", [3]),
         i64("axes", [2]), i64("idx", [3, 0]),
         i64("pads", [0, 0, 1, 0, 0, 1]),
         bits_tensor("padval", F16, [], [0xBC00], raw=True),  # -1
         i64("eshape", [3, 5]), i64("uaxes", [0])])

    # Constants folded at import: casts round once, to nearest even, in the
    # target type; f16 arithmetic folds only when exact; a NaN cast is left
    # to the run-time kernel (its NaN is 0x7FFF, APFloat's is not).
    f32c = np.array([0.1, 65519.0, 65520.0, 2.0 ** -25 * 1.5, -0.0],
                    np.float32)
    bf_ties = np.array([1.00390625, 1.01171875, 0.1], np.float32)
    models["half_fold"] = model(
        "half_fold",
        [const("c32", numpy_helper.from_array(f32c, "c32")),
         const("t32", numpy_helper.from_array(bf_ties, "t32")),
         const("nan32", numpy_helper.from_array(
             np.array([np.nan], np.float32), "nan32")),
         helper.make_node("Cast", ["c32"], ["c16"], name="cast_h", to=F16),
         helper.make_node("Cast", ["t32"], ["tb"], name="cast_b", to=BF16),
         helper.make_node("Cast", ["h_exact"], ["h_back"], name="cast_back",
                          to=TensorProto.FLOAT),
         helper.make_node("Add", ["h_half", "h_quarter"], ["sum_exact"],
                          name="add_exact"),
         helper.make_node("Add", ["h_one", "h_tiny"], ["sum_inexact"],
                          name="add_inexact"),
         helper.make_node("Cast", ["nan32"], ["nan16"], name="cast_nan",
                          to=F16)],
        [],
        [vi("c16", F16, [5]), vi("tb", BF16, [3]),
         vi("h_back", TensorProto.FLOAT, [2]), vi("sum_exact", F16, []),
         vi("sum_inexact", F16, []), vi("nan16", F16, [1])],
        [bits_tensor("h_exact", F16, [2], [0x2E66, 0x0001], raw=True),
         bits_tensor("h_half", F16, [], [0x3800], raw=True),
         bits_tensor("h_quarter", F16, [], [0x3400], raw=False),
         bits_tensor("h_one", F16, [], [0x3C00], raw=True),
         bits_tensor("h_tiny", F16, [], [0x1000], raw=True)])  # 2^-11

    # Every other elementwise and data-movement handler on f16 (bf16 for a
    # few): unary math, the decomposed activations, Clip with attribute and
    # input bounds, IsNaN/IsInf, Mod, Pow, the variadic ops, Tile,
    # DepthToSpace, SpaceToDepth, Split, GatherElements, Trilu, OneHot with
    # f16 values, and f16 EyeLike, ConstantOfShape and Range (folded).
    unary = ["Exp", "Log", "Sqrt", "Erf", "Sin", "Cos", "Floor", "Ceil",
             "Round", "Reciprocal", "Elu", "Selu", "LeakyRelu", "Softplus",
             "HardSigmoid", "HardSwish", "ThresholdedRelu", "Sign", "Mish",
             "Softsign", "Shrink", "IsNaN", "IsInf", "Atan", "Asinh"]
    nodes = [helper.make_node(op, ["x"], ["u_" + op], name=op) for op in unary]
    outs = [vi("u_" + op, TensorProto.BOOL if op.startswith("Is") else F16,
               [2, 4]) for op in unary]
    h = lambda name, vals: bits_tensor(name, F16, [len(vals)] if vals[1:] else [],
                                       vals, raw=True)
    nodes += [
        helper.make_node("PRelu", ["x", "slope"], ["prelu"], name="prelu"),
        helper.make_node("Clip", ["x", "lo", "hi"], ["clip"], name="clip"),
        helper.make_node("Mod", ["x", "x2"], ["mod"], name="mod", fmod=1),
        helper.make_node("Pow", ["x", "x2"], ["pow"], name="pow"),
        helper.make_node("Max", ["x", "x2", "lo"], ["max"], name="max"),
        helper.make_node("Min", ["x", "x2"], ["min"], name="min"),
        helper.make_node("Sum", ["x", "x2"], ["sum"], name="sum"),
        helper.make_node("Mean", ["x", "x2"], ["mean"], name="mean"),
        helper.make_node("Tile", ["x", "reps"], ["tile"], name="tile"),
        helper.make_node("DepthToSpace", ["img"], ["d2s"], name="d2s",
                         blocksize=2),
        helper.make_node("SpaceToDepth", ["d2s"], ["s2d"], name="s2d",
                         blocksize=2),
        helper.make_node("Split", ["x", "parts"], ["sp0", "sp1"], name="split",
                         axis=1),
        helper.make_node("GatherElements", ["x", "gidx"], ["gel"], name="gel",
                         axis=1),
        helper.make_node("Trilu", ["x"], ["tri"], name="trilu"),
        helper.make_node("OneHot", ["oh_idx", "depth", "oh_vals"], ["oh"],
                         name="onehot"),
        helper.make_node("EyeLike", ["x"], ["eye"], name="eye", dtype=F16),
        helper.make_node("ConstantOfShape", ["reps"], ["cos"], name="cos",
                         value=bits_tensor("v", F16, [1], [0x3C00], raw=True)),
        helper.make_node("Range", ["r0", "r1", "rd"], ["range"], name="range"),
    ]
    outs += [vi(n, F16, None) for n in
             ["prelu", "clip", "mod", "pow", "max", "min", "sum", "mean",
              "tile", "s2d", "sp0", "sp1", "gel", "tri", "oh", "eye", "cos",
              "range"]]
    models["half_ops"] = model(
        "half_ops", nodes,
        [vi("x", F16, [2, 4]), vi("x2", F16, [2, 4]),
         vi("img", F16, [1, 4, 2, 2])], outs,
        [h("slope", [0x3400, 0x3800, 0x3A00, 0x3C00]), h("lo", [0xBC00]),
         h("hi", [0x3C00]), i64("reps", [1, 2]), i64("parts", [1, 3]),
         i64("gidx", [[0, 3, 1, 2], [2, 2, 0, 1]]),
         i64("oh_idx", [0, 2]), i64("depth", [3]),
         h("oh_vals", [0x0000, 0x3C00]),
         h("r0", [0x0000]), h("r1", [0x4400]), h("rd", [0x3C00])])

    # Ops that accumulate do not take f16/bf16 yet: clean errors at the node.
    models["half_reduce"] = model(
        "half_reduce",
        [helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="rsum",
                          keepdims=0)],
        [vi("x", F16, [2, 3])], [vi("y", F16, [2])], [i64("axes", [1])])
    models["half_softmax"] = model(
        "half_softmax",
        [helper.make_node("Softmax", ["x"], ["y"], name="sm")],
        [vi("x", BF16, [2, 3])], [vi("y", BF16, [2, 3])])
    models["half_matmul"] = model(
        "half_matmul",
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        [vi("x", F16, [2, 3])], [vi("y", F16, [2, 2])],
        [bits_tensor("w", F16, [3, 2], [0x3C00] * 6, raw=True)])
    # Resize lowers to a built-in kernel that has no f16/bf16 form yet;
    # training-mode Dropout's has one.
    models["half_resize"] = model(
        "half_resize",
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize",
                          mode="linear")],
        [vi("x", F16, [1, 1, 2, 2])], [vi("y", F16, [1, 1, 4, 4])],
        [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32),
                                 "scales")])
    models["half_dropout"] = model(
        "half_dropout",
        [helper.make_node("Dropout", ["x", "ratio", "train"], ["y"],
                          name="drop")],
        [vi("x", BF16, [2, 4])], [vi("y", BF16, [2, 4])],
        [bits_tensor("ratio", BF16, [], [0x3F00], raw=True),
         numpy_helper.from_array(np.array(True), "train")])
    models["half_maxpool"] = model(
        "half_maxpool",
        [helper.make_node("MaxPool", ["x"], ["y"], name="mp",
                          kernel_shape=[2, 2])],
        [vi("x", F16, [1, 1, 4, 4])], [vi("y", F16, [1, 1, 3, 3])])

    # Damaged 16-bit tensors.
    models["half_bad_bits"] = model(
        "half_bad_bits",
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        [vi("x", F16, [2])], [vi("y", F16, [2])],
        [bits_tensor("w", F16, [2], [0x3C00, 70000], raw=False)])
    bad_raw = bits_tensor("w", BF16, [3], [0x3F80, 0x3F80, 0x3F80], raw=True)
    bad_raw.raw_data = bad_raw.raw_data[:5]
    models["half_bad_raw"] = model(
        "half_bad_raw",
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        [vi("x", BF16, [3])], [vi("y", BF16, [3])], [bad_raw])
    return models


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, m in build().items():
        onnx.save(m, os.path.join(out, name + ".onnx"))


if __name__ == "__main__":
    main()
