"""Property test: what dlc writes, dlrt loads (issue 34: GPT-J's Tile made a
package dlrt called corrupt).

Draws --count random ONNX graphs (fixed seed) of the ops that shape buffers:
Tile, Expand, Reshape, Transpose, Unsqueeze, Squeeze, Concat and Slice, on
f32 tensors of rank 1 to 8 growing up to 10 (sizes 1 to 3, at most 4096
elements), chained 2 to 5 deep. Each is
compiled by dlc. Then, per graph, exactly one of:
  - dlc refused it with a one-line `dlc: error:` message and wrote nothing
    (e.g. a buffer above the package rank limit, runtime/schema/Limits.h);
  - `dlrt run` loads and runs the package and every output equals NumPy's
    (these ops move elements, so exactly).
Anything else (a crash, a package dlrt refuses, a wrong value) is printed
and the script exits 1. Prints "ok <n> graphs: <c> compiled and ran, <r>
refused" on success.

Usage: writer_loader_property.py OUT_DIR [--count N] [--seed S]
"""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def const_i64(name, values):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
        np.array(values, np.int64), name))


def random_graph(rng, index):
    """Returns (nodes, input array, NumPy output)."""
    rank = int(rng.integers(1, 9))
    x = rng.standard_normal(tuple(int(v) for v in rng.integers(1, 4, rank)))
    x = x.astype(np.float32)
    nodes, cur, name, val = [], "x", 0, x
    top = x.ndim
    for _ in range(int(rng.integers(2, 6))):
        r = val.ndim
        out = f"t{name}"
        name += 1
        op = rng.choice(["Tile", "Expand", "Reshape", "Transpose",
                         "Unsqueeze", "Squeeze", "Concat", "Slice"])
        if op == "Tile" and val.size * 8 <= 4096:
            reps = [int(v) for v in rng.integers(1, 3, r)]
            nodes += [const_i64(out + "_r", reps),
                      helper.make_node("Tile", [cur, out + "_r"], [out])]
            val = np.tile(val, reps)
        elif op == "Expand" and r < 10:
            extra = int(rng.integers(0, min(3, 10 - r) + 1))
            shape = [int(v) for v in rng.integers(1, 3, extra)] + [
                d if d != 1 else int(rng.integers(1, 3)) for d in val.shape]
            if np.prod(shape) > 4096:
                continue
            nodes += [const_i64(out + "_s", shape),
                      helper.make_node("Expand", [cur, out + "_s"], [out])]
            val = np.broadcast_to(val, shape).copy()
        elif op == "Reshape":
            shape = list(val.shape)
            rng.shuffle(shape)
            if len(shape) > 1 and rng.integers(0, 2):
                shape = [shape[0] * shape[1]] + shape[2:]
            nodes += [const_i64(out + "_s", shape),
                      helper.make_node("Reshape", [cur, out + "_s"], [out])]
            val = val.reshape(shape)
        elif op == "Transpose":
            perm = [int(v) for v in rng.permutation(r)]
            nodes.append(helper.make_node("Transpose", [cur], [out],
                                          perm=perm))
            val = np.transpose(val, perm)
        elif op == "Unsqueeze" and r < 10:
            axis = int(rng.integers(0, r + 1))
            nodes += [const_i64(out + "_a", [axis]),
                      helper.make_node("Unsqueeze", [cur, out + "_a"], [out])]
            val = np.expand_dims(val, axis)
        elif op == "Squeeze" and 1 in val.shape and r > 1:
            axis = val.shape.index(1)
            nodes += [const_i64(out + "_a", [axis]),
                      helper.make_node("Squeeze", [cur, out + "_a"], [out])]
            val = np.squeeze(val, axis)
        elif op == "Concat" and val.size * 2 <= 4096:
            axis = int(rng.integers(0, r))
            nodes.append(helper.make_node("Concat", [cur, cur], [out],
                                          axis=axis))
            val = np.concatenate([val, val], axis)
        elif op == "Slice":
            axis = int(rng.integers(0, r))
            n = val.shape[axis]
            start = int(rng.integers(0, n))
            nodes += [const_i64(out + "_b", [start]),
                      const_i64(out + "_e", [n]),
                      const_i64(out + "_a", [axis]),
                      helper.make_node("Slice", [cur, out + "_b", out + "_e",
                                                 out + "_a"], [out])]
            val = np.take(val, range(start, n), axis)
        else:
            continue
        cur = out
        top = max(top, val.ndim)
    nodes.append(helper.make_node("Identity", [cur], ["y"]))
    return nodes, x, val, top


def main():
    out = sys.argv[1]
    count = int(sys.argv[sys.argv.index("--count") + 1]) \
        if "--count" in sys.argv else 60
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) \
        if "--seed" in sys.argv else 34
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(seed)
    ran = refused = 0
    ranks = {}
    bad = []
    for i in range(count):
        nodes, x, want, top = random_graph(rng, i)
        ranks[top] = ranks.get(top, 0) + 1
        g = helper.make_graph(
            nodes, f"g{i}",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                           want.shape)])
        base = os.path.join(out, f"g{i}")
        with open(base + ".onnx", "wb") as f:
            f.write(helper.make_model(
                g, opset_imports=[helper.make_opsetid("", 17)])
                .SerializeToString())
        np.savez(base + ".in.npz", x=x)
        if os.path.exists(base + ".dlcp"):
            os.remove(base + ".dlcp")
        c = subprocess.run(["dlc", base + ".onnx", "--quiet", "-o",
                            base + ".dlcp"], capture_output=True, text=True)
        if c.returncode != 0:
            lines = c.stderr.strip().splitlines()
            if (c.returncode < 0 or len(lines) != 1 or
                    not lines[0].startswith("dlc: error:") or
                    os.path.exists(base + ".dlcp")):
                bad.append(f"g{i}: dlc exit {c.returncode}: {c.stderr.strip()}")
            else:
                refused += 1
            continue
        r = subprocess.run(["dlrt", "run", base + ".dlcp", "--device", "host",
                            "--inputs", base + ".in.npz", "--outputs",
                            base + ".out.npz"], capture_output=True, text=True)
        if r.returncode != 0:
            bad.append(f"g{i}: dlc wrote a package dlrt refused "
                       f"(exit {r.returncode}): {r.stderr.strip()}")
            continue
        got = np.load(base + ".out.npz")["y"]
        if got.shape != want.shape or not np.array_equal(got, want):
            bad.append(f"g{i}: output {got.shape} differs from NumPy's "
                       f"{want.shape}")
            continue
        ran += 1
    for b in bad:
        print(b)
    if bad:
        print(f"FAIL {len(bad)} of {count} graphs")
        sys.exit(1)
    print(f"ok {count} graphs: {ran} compiled and ran, {refused} refused")
    print("highest tensor rank per graph: " + ", ".join(
        f"{k}: {v}" for k, v in sorted(ranks.items())))


if __name__ == "__main__":
    main()
