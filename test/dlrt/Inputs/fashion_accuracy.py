# Recomputes the t10k accuracy of the softmax-regression test package from
# a dlrt checkpoint (safetensors: w [784, 10], b [10]) with NumPy, reading
# the IDX files independently of dlrt, and prints it as dlrt does.
import gzip
import json
import struct
import sys

import numpy as np


def idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        assert t["dtype"] == "F32", t
        out[name] = np.frombuffer(data[8 + n + b:8 + n + e], np.float32).reshape(t["shape"])
    return out, header.get("__metadata__", {})


ckpt, meta = safetensors(sys.argv[1])
d = sys.argv[2]
x = idx(d + "/t10k-images-idx3-ubyte.gz").reshape(-1, 784).astype(np.float32) / 255
y = idx(d + "/t10k-labels-idx1-ubyte.gz")
logits = x @ ckpt["w"] + ckpt["b"]
acc = (logits.argmax(1) == y).mean()
print("test accuracy %.2f%% (%d samples)" % (100 * acc, len(y)))
print("checkpoint step", meta.get("step"))
