"""Writes and runs the models of import-external-data.test: the same ONNX
models saved with their initializers inline and in external data files
(onnx.save_model(..., save_as_external_data=True, size_threshold=0)).

Usage: external_data_models.py OUT_DIR [--run [--break] | --train [--break]
                                        | --section]

Without --run/--train writes into OUT_DIR:
  inline/dtypes.onnx, one/dtypes.onnx + one/weights.bin (every initializer
  in one file), many/dtypes.onnx + one file per initializer: a model whose
  initializers have every element type the importer takes (f32 weights above
  and below the importer's 1 KiB resource threshold, f64, f16, bf16, int64,
  int32, bool; a bool tensor of odd size comes first, so the f32 tensors
  after it in one/weights.bin are not 4-byte aligned), with dtypes.in.npz;
  inline/mlp.onnx and one/mlp.onnx + one/mlp.bin: an MLP classifier for
  training, with batch.npz (x, labels);
  bad/<case>/m.onnx: models whose external data is wrong
  (write_bad_cases); big/m.onnx: a 2.2 GB initializer in a sparse file
  (more than one FlatBuffer holds).
--run compiles dtypes.onnx of inline/, one/ and many/ with dlc, and one/'s
again into section/ with every weight in the package's weights section
($DLC_WEIGHTS_SECTION_THRESHOLD=0), runs each with `dlrt run --device host`
and prints "ok external-data dtypes <n> outputs" when every output of one/,
many/ and section/ equals inline/'s bit for bit (same dtype, shape and
bytes), else "MISMATCH ...".
--train compiles mlp.onnx of inline/ and one/ (and one/'s into section/)
with `dlc --train`, trains each for 3 SGD steps with `dlrt train` and
prints "ok external-data train 3 steps" when the logged losses and the
saved checkpoints are identical (every tensor byte for byte, and the
metadata but the package's path), else "MISMATCH ...".
--section checks where section/dtypes.dlcp keeps its weights and writes
two damaged copies of it (check_section).
--break perturbs one value of the inline run's result (with --train: the
last loss and one bit of a checkpoint tensor) before comparing, so that the
check must fail (a self-test).
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

N = 4


def tensor(name, arr, onnx_type=None):
    if onnx_type == TensorProto.BFLOAT16:
        # Bit patterns as raw bytes: onnx 1.12's from_array has no bfloat16.
        t = TensorProto()
        t.name = name
        t.data_type = onnx_type
        t.dims.extend(arr.shape)
        t.raw_data = arr.astype("<u2").tobytes()
        return t
    return numpy_helper.from_array(arr, name)


def dtypes_model():
    """Returns (model, feeds)."""
    rng = np.random.default_rng(0)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    inits = [
        # 15 bytes first: what follows it in one file is misaligned.
        tensor("cond", rng.integers(0, 2, (3, 5)).astype(np.bool_)),
        tensor("w1", f32(16, 64)),        # 4 KiB: a dense_resource blob
        tensor("b1", f32(64)),            # 256 B: copied
        tensor("w2", f32(64, 8)),         # 2 KiB
        tensor("scale", f32(1)),          # a Clip-size scalar
        tensor("c64", rng.standard_normal((N, 8))),
        tensor("h16", f32(N, 8).astype(np.float16)),
        tensor("hb16", (f32(N, 8).view(np.uint32) >> 16).astype(np.uint16),
               TensorProto.BFLOAT16),
        tensor("shape", np.array([N, 2, 4], np.int64)),
        tensor("gidx", np.array([2, 0, 1], np.int64)),
        tensor("i32", rng.integers(-1000, 1000, (300,)).astype(np.int32)),
        tensor("idx32", np.array([299, 0, 17], np.int32)),
        tensor("empty", np.zeros((0, 5), np.float32)),
        tensor("a15", f32(3, 5)),
        tensor("b15", f32(3, 5)),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h2"]),
        helper.make_node("MatMul", ["h2", "w2"], ["h3"]),
        helper.make_node("Mul", ["h3", "scale"], ["y"]),
        helper.make_node("Cast", ["y"], ["y64"], to=TensorProto.DOUBLE),
        helper.make_node("Add", ["y64", "c64"], ["z64"]),
        helper.make_node("Cast", ["h16"], ["h16f"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["hb16"], ["hb16f"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["y", "h16f"], ["yh"]),
        helper.make_node("Add", ["yh", "hb16f"], ["yhb"]),
        helper.make_node("Reshape", ["yhb", "shape"], ["r"]),
        helper.make_node("Gather", ["i32", "idx32"], ["g32"], axis=0),
        helper.make_node("Gather", ["w2", "gidx"], ["g"], axis=0),
        helper.make_node("Where", ["cond", "a15", "b15"], ["sel"]),
        helper.make_node("Concat", ["empty", "a15"], ["cat"], axis=0),
    ]
    outputs = [("z64", TensorProto.DOUBLE, [N, 8]),
               ("r", TensorProto.FLOAT, [N, 2, 4]),
               ("g32", TensorProto.INT32, [3]),
               ("g", TensorProto.FLOAT, [3, 8]),
               ("sel", TensorProto.FLOAT, [3, 5]),
               ("cat", TensorProto.FLOAT, [3, 5])]
    graph = helper.make_graph(
        nodes, "dtypes",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, 16])],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        initializer=inits)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 17)])
    return model, {"x": f32(N, 16)}


def mlp_model():
    """Returns (model, batch): Gemm 20->48, Relu, Gemm 48->10 (logits)."""
    rng = np.random.default_rng(1)
    f32 = lambda *s: (0.3 * rng.standard_normal(s)).astype(np.float32)
    inits = [tensor("fc1.weight", f32(48, 20)), tensor("fc1.bias", f32(48)),
             tensor("fc2.weight", f32(10, 48)), tensor("fc2.bias", f32(10))]
    nodes = [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"],
                         transB=1),
        helper.make_node("Relu", ["h"], ["a"]),
        helper.make_node("Gemm", ["a", "fc2.weight", "fc2.bias"], ["logits"],
                         transB=1),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, 20])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [N, 10])],
        initializer=inits)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 17)])
    batch = {"x": rng.standard_normal((3 * N, 20)).astype(np.float32),
             "labels": rng.integers(0, 10, (3 * N,)).astype(np.int64)}
    return model, batch


def save(model, folder, name, **external):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    if external:
        # save_model moves the tensors' bytes out of |model|: save a copy.
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        onnx.save_model(copy, path, save_as_external_data=True,
                        size_threshold=0, **external)
    else:
        onnx.save_model(model, path)
    return path


def small_external_model(folder, entries, data=None):
    """A model whose one initializer 'w' ([4, 2] f32, 32 bytes; Identity to
    the output) has the external_data |entries| (key -> value); |data|
    bytes are written to folder/w.bin when given."""
    os.makedirs(folder, exist_ok=True)
    w = TensorProto()
    w.name = "w"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([4, 2])
    w.data_location = TensorProto.EXTERNAL
    for k, v in entries.items():
        e = w.external_data.add()
        e.key, e.value = k, v
    graph = helper.make_graph(
        [helper.make_node("Identity", ["w"], ["y"])], "bad", [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 2])],
        initializer=[w])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 17)])
    if data is not None:
        with open(os.path.join(folder, "w.bin"), "wb") as f:
            f.write(data)
    # Written directly: onnx.save_model would load the external data.
    with open(os.path.join(folder, "m.onnx"), "wb") as f:
        f.write(model.SerializeToString())


def write_bad_cases(out):
    bad = os.path.join(out, "bad")
    data = np.arange(8, dtype=np.float32).tobytes()
    outside = os.path.join(out, "outside.bin")
    with open(outside, "wb") as f:
        f.write(data)
    case = lambda name, entries, d=data: small_external_model(
        os.path.join(bad, name), entries, d)
    case("ok", {"location": "w.bin", "offset": "0", "length": "32",
                "checksum": "ignored"})
    case("missing", {"location": "nothere.bin"})
    case("short", {"location": "w.bin", "offset": "8", "length": "32"})
    case("past_end", {"location": "w.bin", "offset": "40"})
    case("absolute", {"location": outside})
    case("dotdot", {"location": "../../outside.bin"})
    case("symlink", {"location": "link.bin"})
    os.symlink(outside, os.path.join(bad, "symlink", "link.bin"))
    case("length", {"location": "w.bin", "length": "28"})
    case("to_end", {"location": "w.bin", "offset": "4"})
    case("offset_text", {"location": "w.bin", "offset": "8 bytes"})
    case("length_negative", {"location": "w.bin", "length": "-32"})
    case("no_location", {"offset": "0"})
    case("directory", {"location": "sub"})
    os.makedirs(os.path.join(bad, "directory", "sub"))


def write_big_model(out):
    """big/m.onnx: Gather of 2 rows of a [540000, 1024] f32 initializer
    (2.2 GB, over a package's 2 GiB) whose external file is sparse (zeros
    that take no disk space)."""
    folder = os.path.join(out, "big")
    os.makedirs(folder)
    rows, cols = 540000, 1024
    with open(os.path.join(folder, "big.bin"), "wb") as f:
        f.truncate(rows * cols * 4)
    w = TensorProto()
    w.name = "table"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([rows, cols])
    w.data_location = TensorProto.EXTERNAL
    e = w.external_data.add()
    e.key, e.value = "location", "big.bin"
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "idx"], ["y"], axis=0)], "big",
        [helper.make_tensor_value_info("idx", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, cols])],
        initializer=[w])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 17)])
    with open(os.path.join(folder, "m.onnx"), "wb") as f:
        f.write(model.SerializeToString())


def run(cmd, env=None):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                   env=None if env is None else {**os.environ, **env})


# Every initial value in the package's weights section, after the FlatBuffer
# (docs/package-format.md), as dlc writes the weights of large models.
SECTION = {"DLC_WEIGHTS_SECTION_THRESHOLD": "0"}


def compile_section(out, name, flags=()):
    """Compiles one/<name>.onnx into section/<name>.dlcp with the weights
    section; returns the package's path without .dlcp."""
    os.makedirs(os.path.join(out, "section"), exist_ok=True)
    base = os.path.join(out, "section", name)
    run(["dlc", os.path.join(out, "one", name + ".onnx"), *flags, "--quiet",
         "-o", base + ".dlcp"], env=SECTION)
    return base


def compare(label, want, got):
    """Prints the differing arrays of |got| against |want|; the count."""
    bad = 0
    for name in want:
        w, g = want[name], got.get(name)
        if (g is None or g.dtype != w.dtype or g.shape != w.shape or
                w.tobytes() != g.tobytes()):
            bad += 1
            print(f"  {label} {name}: differs")
    return bad


def check_run(out):
    results = {}
    for kind in ("inline", "one", "many", "section"):
        if kind == "section":
            base = compile_section(out, "dtypes")
        else:
            base = os.path.join(out, kind, "dtypes")
            run(["dlc", base + ".onnx", "--quiet", "-o", base + ".dlcp"])
        run(["dlrt", "run", base + ".dlcp", "--device", "host", "--inputs",
             os.path.join(out, "dtypes.in.npz"), "--outputs",
             base + ".out.npz"])
        results[kind] = dict(np.load(base + ".out.npz"))
    want = results["inline"]
    if "--break" in sys.argv:
        want["r"] = want["r"].copy()
        want["r"].flat[3] = np.nextafter(want["r"].flat[3], np.float32(1e9))
    bad = sum(compare(kind, want, results[kind])
              for kind in ("one", "many", "section"))
    if bad:
        print(f"MISMATCH external-data dtypes {bad} of {3 * len(want)} "
              "outputs")
        sys.exit(1)
    print(f"ok external-data dtypes {len(want)} outputs")


def read_checkpoint(path):
    """The tensors of a safetensors file (name -> (dtype, shape, bytes)) and
    its metadata without 'package' (the package's path differs)."""
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    meta.pop("package", None)
    body = data[8 + n:]
    tensors = {k: (v["dtype"], v["shape"],
                   body[v["data_offsets"][0]:v["data_offsets"][1]])
               for k, v in header.items()}
    return meta, tensors


def check_train(out):
    losses, ckpts = {}, {}
    flags = ["--train", "--loss", "softmax-cross-entropy", "--optimizer",
             "sgd", "--lr", "0.1", "--batch-size", str(N)]
    for kind in ("inline", "one", "section"):
        if kind == "section":
            base = compile_section(out, "mlp", flags)
        else:
            base = os.path.join(out, kind, "mlp")
            run(["dlc", base + ".onnx", *flags, "--quiet", "-o",
                 base + ".dlcp"])
        run(["dlrt", "train", base + ".dlcp", "--data",
             os.path.join(out, "batch.npz"), "--steps", "3", "--no-shuffle",
             "--log-jsonl", base + ".jsonl", "--save",
             base + ".ckpt.safetensors", "--device", "host"])
        losses[kind] = [json.loads(line)["loss"]
                        for line in open(base + ".jsonl")]
        ckpts[kind] = read_checkpoint(base + ".ckpt.safetensors")
    if "--break" in sys.argv:
        losses["inline"][-1] = float(np.nextafter(np.float32(
            losses["inline"][-1]), np.float32(1e9)))
        dtype, shape, data = ckpts["inline"][1]["fc2.weight"]
        ckpts["inline"][1]["fc2.weight"] = (
            dtype, shape, bytes([data[0] ^ 1]) + data[1:])
    bad = 0
    for kind in ("one", "section"):
        if losses[kind] != losses["inline"] or len(losses[kind]) != 3:
            bad += 1
            print(f"  {kind}: losses differ: {losses[kind]} vs "
                  f"{losses['inline']}")
        if not ckpts["inline"][1] or ckpts[kind] != ckpts["inline"]:
            bad += 1
            print(f"  {kind}: checkpoints differ")
    if bad:
        print("MISMATCH external-data train")
        sys.exit(1)
    print(f"ok external-data train {len(losses['one'])} steps")


def section_struct(data):
    """The offset of the weights section's (offset, length) struct in the
    package bytes |data| and the two values: the struct whose section ends
    the file at a multiple of 64 (as dlc writes it)."""
    import struct
    for start in range(0, len(data), 64):
        at = data.find(struct.pack("<QQ", start, len(data) - start))
        if at >= 0:
            return at, start, len(data) - start
    raise SystemExit("no weights section struct found")


def check_section(out):
    """section/dtypes.dlcp keeps each initial value in the weights section
    after the FlatBuffer, at a multiple of 64 bytes, as in the ONNX file;
    writes section/cut.dlcp (its last byte cut) and section/shifted.dlcp
    (the section's offset moved by 8 bytes) for the corrupt-package
    checks."""
    base = compile_section(out, "dtypes")
    data = open(base + ".dlcp", "rb").read()
    at, start, length = section_struct(data)
    model = onnx.load(os.path.join(out, "inline", "dtypes.onnx"))
    found = 0
    for t in model.graph.initializer:
        # The f32 tensors are the model's variables (the importer folds the
        # others into constants, inside the kernels); short byte strings may
        # also occur in the FlatBuffer.
        raw = numpy_helper.to_array(t).tobytes()
        if t.data_type != TensorProto.FLOAT or len(raw) < 64:
            continue
        offset = data.find(raw, start)
        if offset < 0 or offset % 64 or data.find(raw, 0, start) >= 0:
            raise SystemExit(f"'{t.name}' is not in the weights section at a "
                             f"multiple of 64 (found at {offset})")
        found += 1
    with open(os.path.join(out, "section", "cut.dlcp"), "wb") as f:
        f.write(data[:-1])
    shifted = bytearray(data)
    shifted[at:at + 8] = (start + 8).to_bytes(8, "little")
    with open(os.path.join(out, "section", "shifted.dlcp"), "wb") as f:
        f.write(shifted)
    print(f"ok weights section at {start}: {length} bytes, {found} tensors "
          "checked")


def main():
    out = sys.argv[1]
    if "--run" in sys.argv:
        return check_run(out)
    if "--section" in sys.argv:
        return check_section(out)
    if "--train" in sys.argv:
        return check_train(out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    model, feeds = dtypes_model()
    np.savez(os.path.join(out, "dtypes.in.npz"), **feeds)
    save(model, os.path.join(out, "inline"), "dtypes.onnx")
    save(model, os.path.join(out, "one"), "dtypes.onnx",
         all_tensors_to_one_file=True, location="weights.bin")
    save(model, os.path.join(out, "many"), "dtypes.onnx",
         all_tensors_to_one_file=False)
    mlp, batch = mlp_model()
    np.savez(os.path.join(out, "batch.npz"), **batch)
    save(mlp, os.path.join(out, "inline"), "mlp.onnx")
    save(mlp, os.path.join(out, "one"), "mlp.onnx",
         all_tensors_to_one_file=True, location="mlp.bin")
    write_bad_cases(out)
    write_big_model(out)


if __name__ == "__main__":
    main()
