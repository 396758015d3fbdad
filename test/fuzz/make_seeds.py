"""Writes the seed corpora of the fuzz targets into test/fuzz/corpus/.

Usage: /usr/bin/python3 test/fuzz/make_seeds.py --dlc build/bin/dlc

Small valid files of every format (and a few edge cases) made with NumPy,
zipfile, gzip and onnx.helper; ONNX node models from Debian's
libonnx-testdata that the importer accepts (one per op type); packages that
dlc compiles from tiny models, with the host library and CUDA sources
removed (the package target never loads kernels) via flatc's JSON form.
Run it again after a format change; the committed outputs are the seeds.
(PackageTest FormatVersionsDecodeToTheSameCalls compares cnn_sgd, mlp_adam
and mlp_infer with their -v1 twins as committed: keep those when adding a
seed, as mlp_infer_section was added.)
"""
import argparse
import glob
import gzip
import io
import json
import os
import shutil
import struct
import subprocess
import tempfile
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")


def out(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def npy_bytes(a, version=None):
    b = io.BytesIO()
    np.lib.format.write_array(b, a, version=version, allow_pickle=False)
    return b.getvalue()


def make_npy():
    out("npy", "f32_2x3.npy", npy_bytes(np.arange(6, dtype=np.float32).reshape(2, 3)))
    out("npy", "f64_scalar.npy", npy_bytes(np.array(2.5)))
    out("npy", "i64_4.npy", npy_bytes(np.array([1, -2, 3, 4], dtype=np.int64)))
    out("npy", "i32_2x2.npy", npy_bytes(np.array([[1, 2], [3, 4]], dtype=np.int32)))
    out("npy", "u8_3.npy", npy_bytes(np.array([0, 7, 255], dtype=np.uint8)))
    out("npy", "bool_2.npy", npy_bytes(np.array([True, False])))
    out("npy", "empty_0x3.npy", npy_bytes(np.zeros((0, 3), dtype=np.float32)))
    out("npy", "v2_f32.npy", npy_bytes(np.ones((2,), dtype=np.float32), version=(2, 0)))


def npz_bytes(arrays, compressed=False, zip64=False):
    b = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(b, "w", compression=method) as z:
        for name, a in arrays.items():
            with z.open(name + ".npy", "w", force_zip64=zip64) as f:
                f.write(npy_bytes(a))
    return b.getvalue()


def make_npz():
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    labels = np.array([1, 0], dtype=np.int64)
    out("npz", "stored.npz", npz_bytes({"x": x, "labels": labels}))
    out("npz", "deflate.npz", npz_bytes({"x": x, "labels": labels}, compressed=True))
    out("npz", "zip64.npz", npz_bytes({"x": x}, zip64=True))
    out("npz", "empty.npz", npz_bytes({}))


def idx_bytes(a, code):
    head = struct.pack(">BBBB", 0, 0, code, a.ndim) + b"".join(
        struct.pack(">I", d) for d in a.shape)
    return head + a.astype(a.dtype.newbyteorder(">")).tobytes()


def make_idx():
    u8 = np.arange(6, dtype=np.uint8).reshape(2, 3)
    out("idx", "u8_2x3.idx", idx_bytes(u8, 0x08))
    out("idx", "u8_2x3.idx.gz", gzip.compress(idx_bytes(u8, 0x08), mtime=0))
    out("idx", "i32_3.idx", idx_bytes(np.array([1, -2, 3], dtype=np.int32), 0x0C))
    out("idx", "f32_2x2.idx.gz",
        gzip.compress(idx_bytes(np.array([[1, 2], [3, 4]], dtype=np.float32), 0x0D), mtime=0))
    out("idx", "f64_4d.idx", idx_bytes(np.array([[[[0.5, -1]]]], dtype=np.float64), 0x0E))
    raw = idx_bytes(u8, 0x08)
    out("idx", "two_members.idx.gz",
        gzip.compress(raw[:7], mtime=0) + gzip.compress(raw[7:], mtime=0))


def safetensors_bytes(tensors, metadata=None):
    header, data, off = {}, b"", 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        data += raw
        off += len(raw)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def make_safetensors():
    w = np.arange(6, dtype=np.float32).tobytes()
    b = np.ones(3, dtype=np.float32).tobytes()
    step = np.array(7, dtype=np.int64).tobytes()
    # The checkpoint of the fuzz target's model (w f32[2,3], b f32[3], step i64[]).
    out("safetensors", "checkpoint.safetensors", safetensors_bytes(
        {"w": ("F32", [2, 3], w), "b": ("F32", [3], b), "step": ("I64", [], step)},
        {"epoch": "1", "step": "7"}))
    out("safetensors", "wrong_shape.safetensors", safetensors_bytes(
        {"w": ("F32", [3, 2], w), "b": ("F32", [3], b), "step": ("I64", [], step)}))
    out("safetensors", "dtypes.safetensors", safetensors_bytes(
        {"h": ("F16", [2], b"\x00\x3c\x00\xc0"), "bf": ("BF16", [1], b"\x80\x3f"),
         "u": ("U8", [3], b"\x01\x02\x03"), "z": ("F64", [0], b""),
         "flag": ("BOOL", [2], b"\x01\x00")}))
    out("safetensors", "empty.safetensors", safetensors_bytes({}))


def tiny_models():
    rng = np.random.default_rng(0)

    def f32(name, shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    def model(name, nodes, inputs, outputs, inits):
        g = helper.make_graph(nodes, name, inputs, outputs, inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="dlc-fuzz-seeds")
        m.ir_version = 8
        return m

    vi = helper.make_tensor_value_info
    mlp = model("mlp", [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], name="fc2", transB=1)],
        [vi("x", TensorProto.FLOAT, ["batch", 4])], [vi("y", TensorProto.FLOAT, ["batch", 3])],
        [f32("w1", (5, 4)), f32("b1", (5,)), f32("w2", (3, 5)), f32("b2", (3,))])
    cnn = model("cnn", [
        helper.make_node("Conv", ["x", "cw", "cb"], ["c"], name="conv", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], axis=1),
        helper.make_node("MatMul", ["f", "fw"], ["m"]),
        helper.make_node("Add", ["m", "fb"], ["y"])],
        [vi("x", TensorProto.FLOAT, ["batch", 1, 4, 4])],
        [vi("y", TensorProto.FLOAT, ["batch", 3])],
        [f32("cw", (2, 1, 3, 3)), f32("cb", (2,)), f32("fw", (8, 3)), f32("fb", (3,))])
    return {"mlp": mlp, "cnn": cnn}


def make_onnx_and_packages(dlc):
    models = tiny_models()
    for name, m in models.items():
        out("onnx", name + ".onnx", m.SerializeToString())
    # One accepted node model per op type from libonnx-testdata.
    node_dir = "/usr/share/libonnx-testdata/data/node"
    seen = set()
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(glob.glob(os.path.join(node_dir, "*", "model.onnx"))):
            if os.path.getsize(path) > 1024:
                continue
            m = onnx.load(path)
            ops = tuple(sorted({n.op_type for n in m.graph.node}))
            if ops in seen:
                continue
            r = subprocess.run([dlc, path, "--emit=dlgraph", "-o", os.path.join(tmp, "o.mlir")],
                               capture_output=True)
            if r.returncode != 0:
                continue
            seen.add(ops)
            out("onnx", os.path.basename(os.path.dirname(path)) + ".onnx",
                open(path, "rb").read())
        # Packages: inference and training steps of the tiny models.
        schema = os.path.join(ROOT, "runtime", "schema", "package.fbs")
        # mlp_infer_section keeps its weights in the weights section after
        # the FlatBuffer (format version 8), rebuilt around the new
        # FlatBuffer below.
        builds = [("mlp_infer", "mlp", []), ("mlp_adam", "mlp", ["--train", "--optimizer", "adam"]),
                  ("cnn_sgd", "cnn", ["--train", "--momentum", "0.9"]),
                  ("mlp_infer_section", "mlp", [])]
        for seed, name, flags in builds:
            src = os.path.join(tmp, name + ".onnx")
            onnx.save(models[name], src)
            pkg = os.path.join(tmp, seed + ".dlcp")
            env = dict(os.environ)
            if seed.endswith("_section"):
                env["DLC_WEIGHTS_SECTION_THRESHOLD"] = "0"
            subprocess.run([dlc, src, "--batch-size", "2", "--quiet", "--no-cache", "-o", pkg] + flags,
                           check=True, env=env)
            subprocess.run(["flatc", "--json", "--strict-json", "--raw-binary", "-o", tmp,
                            schema, "--", pkg], check=True)
            js = os.path.join(tmp, seed + ".json")
            j = json.load(open(js))
            j.pop("host_library", None)
            for k in j.get("kernels", []):
                k["cuda_source"] = ""
            json.dump(j, open(js, "w"))
            bdir = os.path.join(tmp, "bin")
            subprocess.run(["flatc", "-b", "-o", bdir, schema, js], check=True)
            built = glob.glob(os.path.join(bdir, seed + ".*"))
            data = open(built[0], "rb").read()
            if "weights_section" in j:
                # The section moves to the smaller FlatBuffer's end rounded
                # up to 64 (a struct: the size stays when the value changes).
                old = open(pkg, "rb").read()
                sec = j["weights_section"]
                body = old[int(sec["offset"]):int(sec["offset"]) + int(sec["length"])]
                sec["offset"] = (len(data) + 63) // 64 * 64
                json.dump(j, open(js, "w"))
                subprocess.run(["flatc", "-b", "-o", bdir, schema, js], check=True)
                data = open(built[0], "rb").read()
                data += bytes(sec["offset"] - len(data)) + body
            out("package", seed + ".dlcp", data)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dlc", required=True)
    a = p.parse_args()
    for t in ["npy", "npz", "idx", "safetensors", "onnx", "package"]:
        shutil.rmtree(os.path.join(CORPUS, t), ignore_errors=True)
    make_npy()
    make_npz()
    make_idx()
    make_safetensors()
    make_onnx_and_packages(os.path.abspath(a.dlc))


if __name__ == "__main__":
    main()
