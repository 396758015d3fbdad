# Recomputes the t10k accuracy of the softmax-regression test package from
# a dlrt checkpoint (safetensors: w [784, 10], b [10]) with NumPy, reading
# the IDX files independently of dlrt, and prints it as dlrt does.
import gzip
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "e2e"))
from safetensors_np import read_safetensors  # noqa: E402


def idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


ckpt, meta = read_safetensors(sys.argv[1])
d = sys.argv[2]
x = idx(d + "/t10k-images-idx3-ubyte.gz").reshape(-1, 784).astype(np.float32) / 255
y = idx(d + "/t10k-labels-idx1-ubyte.gz")
logits = x @ ckpt["w"] + ckpt["b"]
acc = (logits.argmax(1) == y).mean()
print("test accuracy %.2f%% (%d samples)" % (100 * acc, len(y)))
print("checkpoint step", meta.get("step"))
