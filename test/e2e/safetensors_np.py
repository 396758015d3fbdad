"""Reads safetensors files (dlrt's checkpoints and --save-gradients files)
into NumPy arrays, without the safetensors package (not in Debian)."""
import json
import struct

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32,
          "BOOL": np.bool_, "F16": np.float16}


def _bf16_to_f32(raw):
    """NumPy has no bfloat16: the upper 16 bits of an f32, widened exactly."""
    return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)


def read_safetensors(path):
    """The tensors of safetensors file |path| as ({name: ndarray}, metadata).
    BF16 tensors come back as float32 (exactly widened)."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        raw = data[8 + n + b:8 + n + e]
        if t["dtype"] == "BF16":
            out[name] = _bf16_to_f32(raw).reshape(t["shape"])
        else:
            out[name] = np.frombuffer(raw, DTYPES[t["dtype"]]).reshape(t["shape"])
    return out, header.get("__metadata__", {})
