"""half-activations.test: the model (Softplus and HardSwish on float16, Elu
on bfloat16), its inputs, and dlrt's outputs against each activation
computed in float64 on the widened inputs and rounded once."""
import sys

import numpy as np
import onnx
import onnx.helper as h


def round_bf16(v):
    bits = np.asarray(v, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32)


F16, BF16 = onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16
if sys.argv[1] == "model":
    nodes = [h.make_node("Softplus", ["x"], ["s"]),
             h.make_node("HardSwish", ["x"], ["w"]),
             h.make_node("Elu", ["b"], ["e"])]
    g = h.make_graph(nodes, "g",
                     [h.make_tensor_value_info("x", F16, [64]),
                      h.make_tensor_value_info("b", BF16, [64])],
                     [h.make_tensor_value_info("s", F16, [64]),
                      h.make_tensor_value_info("w", F16, [64]),
                      h.make_tensor_value_info("e", BF16, [64])])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), sys.argv[2])
elif sys.argv[1] == "inputs":
    r = np.random.default_rng(2)
    np.savez(sys.argv[2], x=(r.standard_normal(64) * 3).astype(np.float16),
             b=(r.standard_normal(64) * 3).astype(np.float32))
else:
    i, o = np.load(sys.argv[2]), np.load(sys.argv[3])
    x = i["x"].astype(np.float64)
    b = round_bf16(i["b"]).astype(np.float64)
    want = {
        "s": np.log1p(np.exp(x)).astype(np.float16),
        "w": (x * np.clip(x / 6 + 0.5, 0, 1)).astype(np.float16),
        "e": round_bf16(np.where(b > 0, b, np.expm1(b)).astype(np.float32)),
    }
    for k in ["s", "w", "e"]:
        got = o[k]
        same = np.array_equal(got.astype(np.float32), want[k].astype(np.float32))
        print(k, "rounded once" if same else "DIFFERS: %s vs %s" % (
            got[got != want[k]][:3], want[k][got != want[k]][:3]))
