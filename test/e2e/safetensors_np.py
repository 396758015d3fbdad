"""Reads safetensors files (dlrt's checkpoints and --save-gradients files)
into NumPy arrays, without the safetensors package (not in Debian)."""
import json
import struct

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32,
          "BOOL": np.bool_}


def read_safetensors(path):
    """The tensors of safetensors file |path| as ({name: ndarray}, metadata)."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + e], DTYPES[t["dtype"]]).reshape(t["shape"])
    return out, header.get("__metadata__", {})
