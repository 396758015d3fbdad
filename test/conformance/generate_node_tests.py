#!/usr/bin/env python3
"""Writes the ONNX backend node tests of the installed onnx as test folders.

The onnx wheel (1.23 here) ships no node test data, only the code that makes
it: `onnx.backend.test.case.node.collect_testcases(None)` returns every case
with its model and data sets. This writes them in the layout of Debian's
libonnx-testdata, which run_conformance.py reads:

  OUT/node/<name>/model.onnx
  OUT/node/<name>/test_data_set_<i>/input_<j>.pb, output_<j>.pb

A value is written as the proto its graph input/output type calls for
(TensorProto, SequenceProto, OptionalProto, MapProto). OUT/stamp.txt names
the onnx version and this script's hash; when both match the folder is reused
as it is, otherwise it is rebuilt from nothing (in OUT.tmp, then renamed), so
a half-written folder is never taken for a complete one.

Run it with the test virtualenv's python (tools/test-venv.sh), whose onnx
version is the one whose tests are wanted.
"""

import argparse
import hashlib
import os
import shutil
import sys
import time
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.case.node import collect_testcases


def proto_for(value, type_proto, name):
    """|value| as the serializable proto for a value of |type_proto|."""
    kind = type_proto.WhichOneof("value")
    if kind == "sequence_type":
        return numpy_helper.from_list(value, name)
    if kind == "optional_type":
        return numpy_helper.from_optional(value, name)
    if kind == "map_type":
        return numpy_helper.from_dict(value, name)
    if isinstance(value, onnx.TensorProto):
        return value
    return numpy_helper.from_array(value, name)


def write_case(case, folder):
    os.makedirs(folder)
    graph = case.model.graph
    with open(os.path.join(folder, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    for i, (inputs, outputs) in enumerate(case.data_sets):
        ds = os.path.join(folder, "test_data_set_%d" % i)
        os.makedirs(ds)
        for prefix, values, infos in (("input", inputs, graph.input),
                                      ("output", outputs, graph.output)):
            if len(values) > len(infos):
                raise ValueError("%s: data set %d has %d %ss, the graph %d" %
                                 (case.name, i, len(values), prefix,
                                  len(infos)))
            for j, (value, info) in enumerate(zip(values, infos)):
                proto = proto_for(value, info.type, info.name)
                with open(os.path.join(ds, "%s_%d.pb" % (prefix, j)),
                          "wb") as f:
                    f.write(proto.SerializeToString())


def stamp_text():
    with open(os.path.abspath(__file__), "rb") as f:
        script = hashlib.sha256(f.read()).hexdigest()[:16]
    return "onnx %s, generate_node_tests.py %s\n" % (onnx.__version__, script)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", help="the folder to write (OUT/node/<name>/...)")
    p.add_argument("--onnx-version", default=None,
                   help="fail unless the installed onnx's version starts "
                        "with this (the expected file is per version)")
    p.add_argument("--force", action="store_true",
                   help="rebuild even when the stamp matches")
    args = p.parse_args()

    if args.onnx_version and not (
            onnx.__version__ + ".").startswith(args.onnx_version + "."):
        raise SystemExit("generate_node_tests: error: %s has onnx %s, not %s "
                         "(tools/test-venv.sh builds the one "
                         "test/requirements.txt names)" %
                         (sys.executable, onnx.__version__, args.onnx_version))
    out = os.path.abspath(args.out)
    stamp = os.path.join(out, "stamp.txt")
    want = stamp_text()
    if not args.force and os.path.isfile(stamp):
        with open(stamp) as f:
            if f.read() == want:
                print("generate_node_tests: %s is up to date (%s)" %
                      (out, want.strip()))
                return 0

    start = time.monotonic()
    # Most generators draw their inputs from numpy's global generator: seed
    # it, so that a rebuild writes the same data and outcomes stay put.
    np.random.seed(0)
    with warnings.catch_warnings():  # the generators' overflows are meant
        warnings.simplefilter("ignore", RuntimeWarning)
        cases = [c for c in collect_testcases(None) if c.kind == "node"]
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    names = set()
    for case in cases:
        if case.name in names:
            raise SystemExit("generate_node_tests: two cases named %s" %
                             case.name)
        names.add(case.name)
        write_case(case, os.path.join(tmp, "node", case.name))
    with open(os.path.join(tmp, "stamp.txt"), "w") as f:
        f.write(want)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    print("generate_node_tests: wrote %d node tests of onnx %s to %s in "
          "%.1f s" % (len(cases), onnx.__version__, out,
                      time.monotonic() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
