#!/usr/bin/python3
"""Checks that run_conformance.py can fail: wrong values, dtypes and shapes
are `fail`, a signal or a missing error line is `crash`, a hang is `timeout`,
and differences from expected.txt (or any crash) make the run exit 1.

Builds a small fake libonnx-testdata tree (Relu and Abs models made with
onnx.helper) and wraps dlc in a script that misbehaves for some test names.
Usage: selftest.py --dlc DLC --dlrt DLRT
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "run_conformance.py")


def make_test(root, name, op, x, y, in_dtype=TensorProto.FLOAT,
              out_dtype=TensorProto.FLOAT, input_name="x", sym_batch=False):
    """A one-node opset-13 model plus one data set (input x -> output y);
    with |sym_batch| dim 0 is symbolic (the runner adds --batch-size)."""
    dims = (["N"] if sym_batch else []) + list(x.shape)[1 if sym_batch else 0:]
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    graph = helper.make_graph(
        [helper.make_node(op, [input_name], ["y"])], name,
        [helper.make_tensor_value_info(input_name, in_dtype, dims)],
        [helper.make_tensor_value_info("y", out_dtype, dims)])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, os.path.join(d, "model.onnx"))
    for kind, arr in (("input", x), ("output", y)):
        with open(os.path.join(d, "test_data_set_0", kind + "_0.pb"),
                  "wb") as f:
            f.write(numpy_helper.from_array(arr).SerializeToString())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dlc", required=True)
    p.add_argument("--dlrt", required=True)
    args = p.parse_args()

    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    relu = np.maximum(x, 0)
    wrong = relu.copy()
    wrong[1, 2] += 0.01
    # Within rtol 1e-3 of the reference: still a pass.
    close = relu * np.float32(1 + 2e-4)

    with tempfile.TemporaryDirectory(prefix="dlc-conf-selftest-") as tmp:
        data = os.path.join(tmp, "data")
        node = os.path.join(data, "node")
        for s in ("pytorch-converted", "pytorch-operator", "simple"):
            os.makedirs(os.path.join(data, s))
        make_test(node, "test_good", "Relu", x, relu)
        make_test(node, "test_close", "Relu", x, close)
        # An input named like np.savez's first parameter.
        make_test(node, "test_input_named_file", "Relu", x, relu,
                  input_name="file")
        make_test(node, "test_symbolic_batch", "Relu", x, relu, sym_batch=True)
        make_test(node, "test_wrong_value", "Relu", x, wrong)
        make_test(node, "test_wrong_dtype", "Relu", x, relu.astype(np.float64))
        make_test(node, "test_wrong_shape", "Relu", x, relu.reshape(4, 3))
        make_test(node, "test_unsupported", "NoSuchOpForSelftest", x, x)
        # A dtype the importer does not take: excluded from the pass rate.
        xu8 = (np.abs(x) * 10).astype(np.uint8)
        make_test(node, "test_uint8", "Relu", xu8, xu8,
                  in_dtype=TensorProto.UINT8, out_dtype=TensorProto.UINT8)
        for n in ("test_crash_signal", "test_crash_no_message", "test_hang",
                  "test_dlrt_error"):
            make_test(node, n, "Relu", x, relu)

        fake = os.path.join(tmp, "fake-dlc")
        with open(fake, "w") as f:
            f.write("""#!/bin/sh
case "$1" in
  *test_crash_signal*) kill -SEGV $$ ;;
  *test_crash_no_message*) echo "something went wrong" >&2; exit 1 ;;
  *test_hang*) exec sleep 60 ;;
  *test_dlrt_error*) echo garbage > "$3"; exit 0 ;;
esac
exec "%s" "$@"
""" % os.path.abspath(args.dlc))
        os.chmod(fake, 0o755)

        want = {
            "node/test_good": "pass",
            "node/test_close": "pass",
            "node/test_input_named_file": "pass",
            "node/test_symbolic_batch": "pass",
            "node/test_wrong_value": "fail",
            "node/test_wrong_dtype": "fail",
            "node/test_wrong_shape": "fail",
            "node/test_unsupported": "unsupported",
            "node/test_uint8": "unsupported",
            "node/test_crash_signal": "crash",
            "node/test_crash_no_message": "crash",
            "node/test_hang": "timeout",
            "node/test_dlrt_error": "fail",
        }
        expected = os.path.join(tmp, "expected.txt")
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        base = [sys.executable, RUNNER, "--dlc", fake, "--dlrt", args.dlrt,
                "--data", data, "--expected", expected, "--timeout", "10",
                "--jobs", "2", "--tmpdir", work]

        def run(extra):
            r = subprocess.run(base + extra, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            print(r.stdout)
            return r

        errors = []
        # --update writes every outcome, but crashes still fail the run.
        r = run(["--update"])
        if r.returncode != 1:
            errors.append("--update with crashes exited %d, expected 1" %
                          r.returncode)
        got = {}
        with open(expected) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    k, _, v = line.rpartition(":")
                    got[k.strip()] = v.strip()
        for k, v in want.items():
            if got.get(k) != v:
                errors.append("%s: runner said %s, expected %s" %
                              (k, got.get(k), v))
        if "unsupported ONNX op 'NoSuchOpForSelftest'" not in r.stdout:
            errors.append("the unsupported line lacks dlc's reason")
        if any(l.startswith("node/") and data in l
               for l in r.stdout.splitlines()):
            errors.append("a result line still names the data path")
        for line in ("excluded for unsupported dtypes: 1 tests (uint8 1;",
                     "pass rate over supported dtypes: 4 of 12 (33.3%)"):
            if line not in r.stdout:
                errors.append("the summary lacks '%s'" % line)

        # A relative --data: the tools run in a temporary folder.
        r = subprocess.run(
            [sys.executable, RUNNER, "--dlc", fake,
             "--dlrt", os.path.abspath(args.dlrt),
             "--data", os.path.relpath(data, tmp), "--expected", expected,
             "--filter", "test_good", "--tmpdir", work],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            cwd=tmp)
        if r.returncode != 0 or "node/test_good: pass" not in r.stdout:
            errors.append("a relative --data did not pass test_good:\n" +
                          r.stdout)

        # Only the well-behaved tests: an exact match passes...
        well = ("test_(good|close|input_named_file|symbolic|wrong_|"
                "unsupported)")
        r = run(["--filter", well])
        if r.returncode != 0:
            errors.append("matching run exited %d, expected 0" % r.returncode)
        # ...a regression fails, and so does an improvement.
        for k, v in (("node/test_good", "unsupported"),
                     ("node/test_wrong_value", "pass")):
            with open(expected) as f:
                text = f.read()
            with open(expected, "w") as f:
                f.write(text.replace("%s: %s" % (k, got[k]),
                                     "%s: %s" % (k, v)))
            r = run(["--filter", well])
            if r.returncode != 1 or k not in r.stdout.split("FAILED")[-1]:
                errors.append("changing %s to %s in expected.txt was not "
                              "reported" % (k, v))
            with open(expected, "w") as f:
                f.write(text)

        if os.listdir(work):
            errors.append("temporary folders left in %s: %s" %
                          (work, os.listdir(work)))
        if errors:
            print("SELFTEST FAILED:\n  " + "\n  ".join(errors))
            return 1
        print("SELFTEST OK")
        return 0


if __name__ == "__main__":
    sys.exit(main())
