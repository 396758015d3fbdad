#!/usr/bin/python3
"""Runs the ONNX backend conformance tests through dlc and dlrt on the host.

Every test folder of Debian's libonnx-testdata (node/, pytorch-converted/,
pytorch-operator/, simple/ under /usr/share/libonnx-testdata/data) holds a
model.onnx and test_data_set_*/input_*.pb / output_*.pb TensorProtos. Each
test is compiled with `dlc MODEL -o PKG --quiet` and every data set is run
with `dlrt run PKG --inputs IN.npz --outputs OUT.npz --device host`.

Inputs: the model's graph inputs that are not initializers, in order
(input_i.pb feeds the i-th). Outputs: the graph outputs, by name
(output_j.pb is the j-th). Outputs must match the reference's dtype and shape
exactly; floating-point values are compared with ONNX's backend-test
tolerances (np.testing.assert_allclose, rtol 1e-3, atol 1e-7, NaN == NaN),
with the atol of an f32/f64 output raised to SCALE_ULPS units of roundoff at
the output's largest magnitude (an element that cancels to near zero carries
the rounding of the terms that cancelled, not its own: the inverse DFT of
inputs up to 99 gives an element of 3e-15 where the reference has 1.9e-7,
one f32 ulp of its largest output, 54, away), integer and boolean values
must be equal.

Outcome of each test (one line each, `suite/name: outcome`):
  pass
  pass-bound             passes once dlc is given, at compile time, the
                         values of the graph inputs it names as needing a
                         constant (`--input-value NAME=FILE`, e.g. `axes`,
                         `pads`, `sizes`: dlc compiles static shapes, so
                         such inputs are fixed at compile time, as TensorRT
                         fixes shape tensors); each data set is compiled
                         with its own values
  unsupported: <reason>  dlc rejected the model with a clean one-line
                         `dlc: error:` message (the reason, minus the path),
                         or a test whose reference is a draw of NumPy's
                         random generator (NUMPY_RANDOM_REFERENCE)
  fail: <why>            wrong values, wrong dtype/shape, a missing output or
                         a dlrt error after a successful compile
  crash: <why>           a signal, or an exit without a `dlc: error:` /
                         `dlrt: error:` line, or an LLVM fatal error
  timeout                the test ran past --timeout seconds

The expected category of every test is checked in (expected.txt, lines
`suite/name: category`). The run fails (exit 1) when an outcome differs from
the expected category, in either direction, and whenever any test crashes or
times out, whatever expected.txt says. `--update` rewrites expected.txt from
this run's outcomes.

Other test data: `--data DIR` with the same layout, e.g. the node tests of a
newer onnx that generate_node_tests.py writes (CTest `onnx_conformance_1_23`,
with expected-onnx-1.23.txt, run by the test virtualenv's python; see the
README). Its suites default to DIR's subfolders.

Dtypes: a test whose model has a value, initializer or Cast target of an
element type the importer does not take (it takes float, double, float16,
bfloat16, int32, int64 and bool), or a sequence/optional/map value, is
counted as excluded for unsupported dtypes, and the summary gives the pass
rate over the other tests.
"""

import argparse
import collections
import concurrent.futures
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile

import numpy as np
import onnx
from onnx import numpy_helper

DEFAULT_DATA = "/usr/share/libonnx-testdata/data"
SUITES = ["node", "pytorch-converted", "pytorch-operator", "simple"]
CATEGORIES = ["pass", "pass-bound", "unsupported", "fail", "crash",
              "timeout"]
# Better outcomes rank lower: a change to a lower rank is an improvement.
RANK = {"pass": 0, "pass-bound": 1, "unsupported": 2, "fail": 3, "crash": 4,
        "timeout": 4}
RTOL = 1e-3
ATOL = 1e-7
# Units of roundoff (np.finfo(dtype).eps) at an f32/f64 output's largest
# magnitude that any element may differ by (see the module docstring); f16
# and bf16 outputs keep ATOL, their roundoff is what the tests check.
SCALE_ULPS = 4


def atol_for(expected):
    """ATOL, or for f32/f64 outputs SCALE_ULPS roundoffs at their scale."""
    if expected.dtype not in (np.float32, np.float64) or expected.size == 0:
        return ATOL
    finite = np.abs(expected[np.isfinite(expected)])
    scale = float(finite.max()) if finite.size else 0.0
    return max(ATOL, SCALE_ULPS * float(np.finfo(expected.dtype).eps) * scale)


class Timeout(Exception):
    """The test's time budget ran out."""


class Outcome:
    """One test's result: a category from CATEGORIES and a one-line detail."""

    def __init__(self, category, detail="", seconds=0.0):
        self.category = category
        self.detail = " ".join(detail.split())  # one line
        self.seconds = seconds
        self.times = {}  # seconds spent in each tool ("dlc", "dlrt")
        self.dtypes = []  # the model's element types dlc does not take

    def line(self):
        if self.category in ("pass", "pass-bound", "timeout") or \
                not self.detail:
            return self.category
        return self.category + ": " + self.detail


# --------------------------------------------------------------------------
# Processes


def run_command(cmd, deadline, env, cwd, times=None):
    """Runs |cmd| in its own process group until |deadline| (monotonic).

    Returns (returncode, stdout, stderr); raises Timeout after killing the
    whole group (dlc starts the host C++ compiler as a child). Adds the
    seconds it took to |times|[tool name].
    """
    start = time.monotonic()
    try:
        return run_command_untimed(cmd, deadline, env, cwd)
    finally:
        if times is not None:
            tool = os.path.basename(cmd[0])
            times[tool] = times.get(tool, 0.0) + time.monotonic() - start


def run_command_untimed(cmd, deadline, env, cwd):
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise Timeout()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=cwd,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=remaining)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise Timeout()
    return (proc.returncode, out.decode("utf-8", "replace"),
            err.decode("utf-8", "replace"))


def signal_name(returncode):
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return "signal %d" % -returncode


def crash_marker(stderr):
    """A line of |stderr| that shows an abnormal end despite an exit code."""
    for line in stderr.splitlines():
        if (line.startswith("LLVM ERROR:") or "Stack dump:" in line or
                "PLEASE submit a bug report" in line or
                "terminate called" in line or "Assertion" in line and
                "failed" in line):
            return line.strip()
    return None


def first_error(stderr, tool):
    """The first `<tool>: error: ...` line's message, or None."""
    prefix = tool + ": error: "
    for line in stderr.splitlines():
        if line.startswith(prefix):
            return line[len(prefix):].strip()
    return None


def last_lines(text, n=3):
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"


def strip_paths(message, paths):
    """Drops "<path>: " prefixes of |paths| from |message| and shortens their
    other mentions to the file name (the temporary folder to "<tmp>"), so
    result lines do not depend on where the tests ran."""
    for p in sorted(paths, key=len, reverse=True):
        short = os.path.basename(p)
        if short.startswith("dlc-conformance-"):
            short = "<tmp>"
        message = message.replace(p + ": ", "").replace(p, short)
    return message.strip()


# --------------------------------------------------------------------------
# Data


def load_value(path, type_proto):
    """Reads one input_N.pb / output_N.pb as a numpy array (or, for sequence
    and optional values, a Python value that the runner cannot feed)."""
    with open(path, "rb") as f:
        data = f.read()
    kind = type_proto.WhichOneof("value") if type_proto is not None else None
    if kind == "sequence_type":
        seq = onnx.SequenceProto()
        seq.ParseFromString(data)
        return ("sequence", numpy_helper.to_list(seq))
    if kind == "optional_type":
        opt = onnx.OptionalProto()
        opt.ParseFromString(data)
        return ("optional", opt)
    if kind == "map_type":
        return ("map", None)
    tensor = onnx.TensorProto()
    tensor.ParseFromString(data)
    return numpy_helper.to_array(tensor)


def numbered(folder, prefix):
    """Files prefix_<N>.pb in |folder|, sorted by N."""
    found = []
    for f in os.listdir(folder):
        m = re.fullmatch(re.escape(prefix) + r"_(\d+)\.pb", f)
        if m:
            found.append((int(m.group(1)), os.path.join(folder, f)))
    found.sort()
    if [i for i, _ in found] != list(range(len(found))):
        raise ValueError("%s: %s_*.pb are not numbered 0..%d" %
                         (folder, prefix, len(found) - 1))
    return [p for _, p in found]


def write_npz(path, arrays):
    """Writes (name, array) pairs as an uncompressed .npz. (np.savez takes
    names as keyword arguments, which breaks on a name like 'file'.)"""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, array in arrays:
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(array),
                                      allow_pickle=False)
            z.writestr(name + ".npy", buf.getvalue())


def compare(name, actual, expected):
    """None when |actual| matches |expected|, else a one-line reason."""
    if actual.dtype != expected.dtype:
        return "output '%s' has dtype %s, expected %s" % (
            name, actual.dtype, expected.dtype)
    if actual.shape != expected.shape:
        return "output '%s' has shape %s, expected %s" % (
            name, list(actual.shape), list(expected.shape))
    if expected.dtype == object:
        return None if np.array_equal(actual, expected) else (
            "output '%s' differs" % name)
    if expected.dtype.kind in "biu":
        diff = actual != expected
        if not diff.any():
            return None
        idx = np.unravel_index(int(np.argmax(diff)), diff.shape)
        return "output '%s': %d of %d elements differ (first at %s: %s, " \
               "expected %s)" % (name, int(diff.sum()), diff.size,
                                 list(map(int, idx)), actual[idx],
                                 expected[idx])
    try:
        atol = atol_for(expected)
        np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=atol)
        return None
    except AssertionError:
        pass
    a = actual.astype(np.float64) if actual.dtype.kind == "f" else actual
    e = expected.astype(np.float64) if expected.dtype.kind == "f" else expected
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(a - e)
        bad = ~(err <= atol + RTOL * np.abs(e))
        both_nan = np.isnan(a) & np.isnan(e) if a.dtype.kind in "fc" else False
        bad &= ~both_nan
        if not bad.any():  # e.g. inf vs inf of the same sign
            return "output '%s' is not close (assert_allclose)" % name
        idx = np.unravel_index(int(np.argmax(bad)), bad.shape)
        finite = np.where(np.isfinite(err), err, 0)
        return ("output '%s': %d of %d elements differ beyond rtol %g atol %g "
                "(max abs error %.3g; first at %s: %r, expected %r)" % (
                    name, int(bad.sum()), bad.size, RTOL, atol,
                    float(finite.max()), list(map(int, idx)),
                    actual[idx].item(), expected[idx].item()))


# --------------------------------------------------------------------------
# One test

DLRT_DTYPES = {"f32": "float32", "f64": "float64", "i64": "int64",
               "i32": "int32", "bool": "bool", "f16": "float16",
               "bf16": "bfloat16"}


def widen_bf16(value, elem_type):
    """ONNX keeps BFLOAT16 test data as uint16 bit patterns (onnx < 1.17; newer
    onnx reads it as ml_dtypes.bfloat16); dlrt reads and writes bf16 as exactly
    widened float32. Other values pass unchanged."""
    if elem_type != onnx.TensorProto.BFLOAT16 or isinstance(value, tuple):
        return value
    value = np.asarray(value)
    if value.dtype.name == "bfloat16":
        return value.astype(np.float32)  # exact
    bits = value.astype(np.uint16).astype(np.uint32) << 16
    return bits.view(np.float32)


def onnx_np_dtype(elem_type):
    """The numpy dtype of an ONNX TensorProto element type, or None."""
    try:
        if hasattr(onnx.helper, "tensor_dtype_to_np_dtype"):  # onnx >= 1.13
            return onnx.helper.tensor_dtype_to_np_dtype(elem_type)
        return onnx.mapping.TENSOR_TYPE_TO_NP_TYPE.get(elem_type)
    except (KeyError, ValueError):
        return None


# Element types the importer takes (compiler/Import/Importer.cpp,
# elementTypeFor); a model with any other is counted apart in the summary.
SUPPORTED_ELEM_TYPES = {"FLOAT", "DOUBLE", "FLOAT16", "BFLOAT16", "INT32",
                        "INT64", "BOOL"}


def elem_name(elem_type):
    """TensorProto.DataType's name of |elem_type|, or 'type N' for one this
    onnx does not know (a newer model read by an older onnx)."""
    try:
        return onnx.TensorProto.DataType.Name(elem_type)
    except ValueError:
        return "type %d" % elem_type


def type_names(type_proto, found):
    """Adds the element types and kinds (sequence/optional/map/sparse) of
    |type_proto| to |found|."""
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        if type_proto.tensor_type.elem_type:
            found.add(elem_name(type_proto.tensor_type.elem_type))
    elif kind == "sequence_type":
        found.add("sequence")
        type_names(type_proto.sequence_type.elem_type, found)
    elif kind == "optional_type":
        found.add("optional")
        type_names(type_proto.optional_type.elem_type, found)
    elif kind == "map_type":
        found.add("map")
    elif kind == "sparse_tensor_type":
        found.add("sparse")


def graph_type_names(graph, found):
    """Element types of |graph|'s values, initializers, tensor attributes and
    Cast targets (CastLike's is an input's type), subgraphs included."""
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        type_names(vi.type, found)
    for t in graph.initializer:
        found.add(elem_name(t.data_type))
    if len(graph.sparse_initializer):
        found.add("sparse")
    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                found.add(elem_name(a.t.data_type))
            elif a.type == onnx.AttributeProto.SPARSE_TENSOR:
                found.add("sparse")
            elif a.type == onnx.AttributeProto.GRAPH:
                graph_type_names(a.g, found)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    graph_type_names(g, found)
            elif a.name == "to" and node.op_type == "Cast":
                found.add(elem_name(a.i))


def unsupported_dtypes(model_path):
    """Sorted names of |model_path|'s element types and value kinds that
    dlc's importer does not take (lower case: 'uint8', 'sequence')."""
    found = set()
    graph_type_names(onnx.load(model_path, load_external_data=False).graph,
                     found)
    return sorted(n.lower() for n in found - SUPPORTED_ELEM_TYPES)


def parse_forward_inputs(info):
    """{name: numpy dtype name} of the forward inputs in `dlrt info` output
    (lines "  input  NAME: [d0, d1] f32" under "function forward:")."""
    inputs, in_forward = {}, False
    for line in info.splitlines():
        if line.startswith("function "):
            in_forward = line.strip() == "function forward:"
            continue
        m = re.fullmatch(r"\s+input\s+(.*): \[[^\]]*\] (\w+)", line)
        if in_forward and m:
            inputs[m.group(1)] = DLRT_DTYPES.get(m.group(2), m.group(2))
    return inputs


# Tests whose reference outputs are draws of NumPy's random generator
# (onnx's backend-test generators seed np.random and build the Dropout mask
# from it): no other generator reproduces them. dlc's Dropout draws from
# Philox-4x32-10, so a value mismatch on these is recorded as unsupported,
# with that reason; a crash or a dtype/shape error stays what it is.
NUMPY_RANDOM_REFERENCE = {
    "test_training_dropout", "test_training_dropout_default",
    "test_training_dropout_default_mask", "test_training_dropout_mask",
}


def run_test(test_dir, args, env):
    """Compiles and runs one test folder; returns an Outcome."""
    start = time.monotonic()
    deadline = start + args.timeout
    tmp = tempfile.mkdtemp(prefix="dlc-conformance-", dir=args.tmpdir)
    times = {}
    try:
        outcome = run_test_in(test_dir, tmp, deadline, args, env, times)
    except Timeout:
        outcome = Outcome("timeout")
    except Exception as e:  # the runner itself: never a pass
        outcome = Outcome("fail", "runner error: %s: %s" %
                          (type(e).__name__, e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if (outcome.category == "fail" and
            os.path.basename(test_dir) in NUMPY_RANDOM_REFERENCE and
            "elements differ" in outcome.detail):
        outcome = Outcome("unsupported", "the reference values are draws of "
                          "NumPy's random generator; dlc's Dropout draws "
                          "from Philox-4x32-10 (%s)" % outcome.detail)
    outcome.seconds = time.monotonic() - start
    outcome.times = times
    try:
        outcome.dtypes = unsupported_dtypes(os.path.join(test_dir,
                                                         "model.onnx"))
    except Exception:  # an unreadable model: not a dtype question
        outcome.dtypes = []
    return outcome


def data_batch_size(test_dir, model_path, input_name):
    """Dim 0 of input |input_name| in test_data_set_0, or None."""
    graph = onnx.load(model_path, load_external_data=False).graph
    inits = {t.name for t in graph.initializer}
    names = [i.name for i in graph.input if i.name not in inits]
    if input_name not in names:
        return None
    f = os.path.join(test_dir, "test_data_set_0",
                     "input_%d.pb" % names.index(input_name))
    if not os.path.exists(f):
        return None
    value = load_value(f, None)
    return value.shape[0] if value.ndim > 0 else None


BIND_HINT = re.compile(r"--input-value (\S+)=FILE")


def bound_values(folder, input_names, bound):
    """The `--input-value` arguments giving each graph input in |bound| the
    value data set |folder| feeds it (input_i.pb feeds the i-th input)."""
    files = numbered(folder, "input")
    args = []
    for name in bound:
        i = input_names.index(name)
        if i >= len(files):
            return None
        args += ["--input-value", "%s=%s" % (name, files[i])]
    return args


def compile_model(test_dir, model_path, pkg, folder, input_names, bound,
                  deadline, args, env, tmp, times):
    """Compiles the test's model to |pkg|, growing |bound| (graph inputs to
    give their values from data set |folder|) while dlc names more inputs
    it needs as compile-time constants. Returns (rc, err)."""
    base = [args.dlc, model_path, "-o", pkg, "--quiet"]
    extra = []
    while True:
        values = bound_values(folder, input_names, bound)
        if values is None:
            return 1, "dlc: error: the data set feeds no bound input"
        rc, out, err = run_command(base + extra + values, deadline, env, tmp,
                                   times)
        reason = (first_error(err, "dlc") or "") if rc > 0 else ""
        # A symbolic batch dimension: compile again for the data's batch size.
        m = re.search(r"graph input '(.*)' has a symbolic batch dimension",
                      reason)
        if m and "--batch-size" in reason and not extra:
            batch = data_batch_size(test_dir, model_path, m.group(1))
            if batch is not None:
                extra = ["--batch-size", str(batch)]
                continue
        # An input dlc needs at compile time: bind it, as dlc suggests.
        names = [n for n in BIND_HINT.findall(reason)
                 if n in input_names and n not in bound]
        if names:
            bound.extend(names)
            continue
        return rc, err


def run_test_in(test_dir, tmp, deadline, args, env, times):
    model_path = os.path.join(test_dir, "model.onnx")
    pkg = os.path.join(tmp, "model.dlcp")
    child_env = dict(env, TMPDIR=tmp)

    model = onnx.load(model_path, load_external_data=False)
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    inputs = [i for i in graph.input if i.name not in initializers]
    input_names = [i.name for i in inputs]
    sets = sorted(d for d in os.listdir(test_dir)
                  if d.startswith("test_data_set_"))
    bound = []
    rc, err = compile_model(
        test_dir, model_path, pkg,
        os.path.join(test_dir, sets[0]) if sets else test_dir, input_names,
        bound, deadline, args, child_env, tmp, times)
    if rc < 0:
        return Outcome("crash", "dlc killed by %s: %s" %
                       (signal_name(rc), last_lines(err)))
    marker = crash_marker(err)
    if marker:
        return Outcome("crash", "dlc exit %d: %s" % (rc, marker))
    if rc != 0:
        reason = first_error(err, "dlc")
        if reason is None:
            return Outcome("crash", "dlc exit %d without a 'dlc: error:' "
                           "line: %s" % (rc, last_lines(err)))
        return Outcome("unsupported", strip_paths(
            reason, [model_path, test_dir, pkg, tmp]))
    if not os.path.isfile(pkg):
        return Outcome("crash", "dlc exited 0 but wrote no package")

    if not sets:
        return Outcome("fail", "no test_data_set_* folder")

    # dlrt run converts input dtypes, so a package that silently narrowed an
    # input (f64 -> f32, say) would still run: check its inputs first.
    rc, out, err = run_command([args.dlrt, "info", pkg], deadline, child_env,
                               tmp, times)
    if rc < 0:
        return Outcome("crash", "dlrt info killed by %s: %s" %
                       (signal_name(rc), last_lines(err)))
    if rc != 0:
        reason = first_error(err, "dlrt")
        if reason is None:
            return Outcome("crash", "dlrt info exit %d without a 'dlrt: "
                           "error:' line: %s" % (rc, last_lines(err)))
        return Outcome("fail", "dlrt info: " + strip_paths(reason,
                                                           [pkg, tmp]))
    compiled = parse_forward_inputs(out)
    for vi in inputs:
        tt = vi.type.tensor_type
        if vi.name not in compiled:
            continue  # unused by the graph (dlrt run ignores extra arrays)
        want = onnx_np_dtype(tt.elem_type)
        if tt.elem_type == onnx.TensorProto.BFLOAT16:
            want = "bfloat16"  # numpy has none; onnx maps it to uint16
        have = compiled[vi.name]
        if want is None or (want != "bfloat16" and np.dtype(want).name != have) \
                or (want == "bfloat16" and have != want):
            return Outcome("fail", "the package's input '%s' is %s, the "
                           "model's %s" % (vi.name, have,
                                           onnx.TensorProto.DataType.Name(
                                               tt.elem_type)))

    for n, ds in enumerate(sets):
        folder = os.path.join(test_dir, ds)
        if bound and n > 0:
            # The bound inputs take this data set's values.
            rc, err = compile_model(test_dir, model_path, pkg, folder,
                                    input_names, list(bound), deadline, args,
                                    child_env, tmp, times)
            if rc != 0:
                return Outcome("fail" if rc > 0 else "crash",
                               "%s: dlc: %s" % (ds, last_lines(err)))
        in_files = numbered(folder, "input")
        out_files = numbered(folder, "output")
        if len(in_files) > len(inputs):
            return Outcome("fail", "%s has %d inputs, the model %d" %
                           (ds, len(in_files), len(inputs)))
        if len(out_files) != len(graph.output):
            return Outcome("fail", "%s has %d outputs, the model %d" %
                           (ds, len(out_files), len(graph.output)))
        feeds = []
        for vi, f in zip(inputs, in_files):
            if vi.name in bound:
                continue
            value = widen_bf16(load_value(f, vi.type),
                               vi.type.tensor_type.elem_type)
            if isinstance(value, tuple):
                return Outcome("fail", "input '%s' is a %s, which dlrt run "
                               "cannot feed" % (vi.name, value[0]))
            feeds.append((vi.name, value))
        in_npz = os.path.join(tmp, ds + ".in.npz")
        out_npz = os.path.join(tmp, ds + ".out.npz")
        write_npz(in_npz, feeds)
        cmd = [args.dlrt, "run", pkg, "--inputs", in_npz, "--outputs",
               out_npz, "--device", args.device]
        rc, out, err = run_command(cmd, deadline, child_env, tmp, times)
        prefix = "" if len(sets) == 1 else ds + ": "
        if rc < 0:
            return Outcome("crash", "%sdlrt killed by %s: %s" % (
                prefix, signal_name(rc), last_lines(err)))
        if rc != 0:
            reason = first_error(err, "dlrt")
            if reason is None:
                return Outcome("crash", "%sdlrt exit %d without a 'dlrt: "
                               "error:' line: %s" % (prefix, rc,
                                                     last_lines(err)))
            return Outcome("fail", "%sdlrt: %s" % (
                prefix, strip_paths(reason, [in_npz, out_npz, pkg, tmp])))
        try:
            with np.load(out_npz, allow_pickle=False) as z:
                results = {k: z[k] for k in z.files}
        except Exception as e:
            return Outcome("fail", "%scannot read dlrt's outputs: %s" %
                           (prefix, e))
        for vo, f in zip(graph.output, out_files):
            expected = widen_bf16(load_value(f, vo.type),
                                  vo.type.tensor_type.elem_type)
            if isinstance(expected, tuple):
                return Outcome("fail", "output '%s' is a %s, which dlrt run "
                               "cannot return" % (vo.name, expected[0]))
            if vo.name not in results:
                return Outcome("fail", "%sno output '%s' (dlrt wrote: %s)" % (
                    prefix, vo.name, ", ".join(sorted(results)) or "none"))
            why = compare(vo.name, results[vo.name], expected)
            if why:
                return Outcome("fail", prefix + why)
    if bound:
        return Outcome("pass-bound", "--input-value " + ", ".join(bound))
    return Outcome("pass")


# --------------------------------------------------------------------------
# Expected outcomes


def read_expected(path):
    expected = {}
    if not os.path.exists(path):
        return expected
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, sep, cat = line.rpartition(":")
            cat = cat.strip()
            if not sep or cat not in CATEGORIES:
                raise SystemExit("%s:%d: expected 'suite/name: category' "
                                 "with a category in %s, got %r" %
                                 (path, n, "|".join(CATEGORIES), line))
            expected[name.strip()] = cat
    return expected


def write_expected(path, outcomes, data):
    source = ("ONNX backend test from Debian's libonnx-testdata"
              if data == DEFAULT_DATA else data_description(data))
    header = ("# Expected outcome of every %s\n"
              "# (test/conformance/run_conformance.py). Regenerate with "
              "--update.\n" % source)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(header)
        for name in sorted(outcomes):
            f.write("%s: %s\n" % (name, outcomes[name]))
    os.replace(tmp, path)


def data_description(data):
    """What |data| holds, for the expected file's header: the onnx version in
    generate_node_tests.py's stamp when there is one, else the folder."""
    stamp = os.path.join(data, "stamp.txt")
    if os.path.isfile(stamp):
        with open(stamp) as f:
            version = f.read().split(",")[0].strip()  # "onnx 1.23.2"
        return ("ONNX node test of %s (written by test/conformance/"
                "generate_node_tests.py)" % version)
    return "ONNX backend test in %s" % os.path.basename(
        os.path.normpath(data))


# --------------------------------------------------------------------------
# Summary


def reason_key(detail):
    """Groups unsupported reasons: the op or the dtype or the opset."""
    m = re.search(r"unsupported ONNX op '([^']+)'", detail)
    if m:
        return "op " + m.group(1)
    m = re.search(r"ONNX opset (\d+) is not supported", detail)
    if m:
        return "opset " + m.group(1)
    d = re.sub(r"; supported .*", "", detail)
    d = re.sub(r"'[^']*'", "'…'", d)
    return d[:160]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dlc", required=True, help="the dlc binary")
    p.add_argument("--dlrt", required=True, help="the dlrt binary")
    p.add_argument("--device", default="host",
                   help="dlrt's --device (cuda with DLRT_CUDA_STANDIN runs "
                        "the CUDA path on the host stand-in)")
    p.add_argument("--data", default=DEFAULT_DATA,
                   help="libonnx-testdata's data folder (default %(default)s)")
    p.add_argument("--suites", default=None,
                   help="comma-separated suites (default: %s for the "
                        "default --data, else every subfolder of --data)" %
                        ",".join(SUITES))
    p.add_argument("--filter", default=None,
                   help="only tests whose 'suite/name' matches this regex")
    p.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1,
                   help="tests run in parallel (default: cores, %(default)s)")
    p.add_argument("--timeout", type=float, default=120,
                   help="seconds per test, compile and runs (default "
                        "%(default)s)")
    p.add_argument("--expected", default=os.path.join(here, "expected.txt"),
                   help="expected outcomes (default %(default)s)")
    p.add_argument("--update", action="store_true",
                   help="rewrite --expected from this run's outcomes (with "
                        "--filter/--suites: only the tests that ran)")
    p.add_argument("--results", default=None,
                   help="also write every result line to this file")
    p.add_argument("--tmpdir", default=None,
                   help="where per-test temporary folders go")
    p.add_argument("--top", type=int, default=15,
                   help="how many unsupported reasons to summarize")
    args = p.parse_args()

    for tool in (args.dlc, args.dlrt):
        if not os.access(tool, os.X_OK):
            raise SystemExit("error: '%s' is not an executable" % tool)
    args.dlc = os.path.abspath(args.dlc)
    args.dlrt = os.path.abspath(args.dlrt)
    args.data = os.path.abspath(args.data)  # the tools run in a temporary cwd

    if args.data == DEFAULT_DATA:
        all_suites = SUITES
    elif os.path.isdir(args.data):
        all_suites = sorted(d for d in os.listdir(args.data)
                            if os.path.isdir(os.path.join(args.data, d)))
    else:
        raise SystemExit("error: no test folder %s" % args.data)
    suites = ([s for s in args.suites.split(",") if s]
              if args.suites is not None else all_suites)
    tests = []
    for s in suites:
        folder = os.path.join(args.data, s)
        if not os.path.isdir(folder):
            raise SystemExit("error: no test folder %s (install Debian's "
                             "libonnx-testdata)" % folder)
        for t in sorted(os.listdir(folder)):
            if os.path.isfile(os.path.join(folder, t, "model.onnx")):
                name = s + "/" + t
                if args.filter and not re.search(args.filter, name):
                    continue
                tests.append((name, os.path.join(folder, t)))
    if not tests:
        raise SystemExit("error: no tests selected")

    # The children share the cores with the other jobs: one thread each when
    # several tests run at once, unless the caller chose.
    env = dict(os.environ)
    if args.jobs > 1:
        env.setdefault("OMP_NUM_THREADS", "1")

    print("running %d tests with %d jobs (dlc %s, dlrt %s)" %
          (len(tests), args.jobs, args.dlc, args.dlrt), flush=True)
    start = time.monotonic()
    outcomes = {}
    lock = threading.Lock()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        futures = [(name, ex.submit(run_test, d, args, env))
                   for name, d in tests]
        # Printed in test order as soon as every earlier test is done.
        for name, fut in futures:
            o = fut.result()
            outcomes[name] = o
            with lock:
                print("%s: %s" % (name, o.line()), flush=True)
    wall = time.monotonic() - start

    if args.results:
        with open(args.results, "w") as f:
            for name, _ in tests:
                f.write("%s: %s\n" % (name, outcomes[name].line()))

    # Totals per suite and overall.
    print("\n%-20s %6s %6s %6s %11s %6s %6s %7s %6s" % (
        "suite", "total", "pass", "bound", "unsupported", "fail", "crash",
        "timeout", "sec"))
    grand = collections.Counter()
    for s in suites:
        c = collections.Counter(o.category for n, o in outcomes.items()
                                if n.startswith(s + "/"))
        secs = sum(o.seconds for n, o in outcomes.items()
                   if n.startswith(s + "/"))
        grand.update(c)
        print("%-20s %6d %6d %6d %11d %6d %6d %7d %6.0f" % (
            s, sum(c.values()), c["pass"], c["pass-bound"], c["unsupported"],
            c["fail"],
            c["crash"], c["timeout"], secs))
    print("%-20s %6d %6d %6d %11d %6d %6d %7d %6.0f" % (
        "all", sum(grand.values()), grand["pass"], grand["pass-bound"],
        grand["unsupported"],
        grand["fail"], grand["crash"], grand["timeout"],
        sum(o.seconds for o in outcomes.values())))
    print("wall time %.1f s with %d jobs (sec column: summed per-test time; "
          "bound: passes with inputs given at compile time, --input-value)"
          % (wall, args.jobs))
    compiled = [o for o in outcomes.values()
                if o.category not in ("unsupported", "timeout")]
    rejected = [o for o in outcomes.values() if o.category == "unsupported"]
    print("summed time: dlc %.0f s for %d compiled models (%.2f s each, "
          "host C++ library included), %.0f s for %d rejected; dlrt %.0f s"
          % (sum(o.times.get("dlc", 0) for o in compiled), len(compiled),
             sum(o.times.get("dlc", 0) for o in compiled) /
             max(1, len(compiled)),
             sum(o.times.get("dlc", 0) for o in rejected), len(rejected),
             sum(o.times.get("dlrt", 0) for o in outcomes.values())))

    reasons = collections.Counter(reason_key(o.detail)
                                  for o in outcomes.values()
                                  if o.category == "unsupported")
    if reasons:
        print("\nmost common unsupported reasons:")
        for r, n in reasons.most_common(args.top):
            print("  %4d  %s" % (n, r))
    excluded = {n: o for n, o in outcomes.items() if o.dtypes}
    kinds = collections.Counter(d for o in excluded.values() for d in o.dtypes)
    print("\nexcluded for unsupported dtypes: %d tests (%s; one test can have "
          "several); of them %d pass, %d unsupported, %d fail" % (
              len(excluded), ", ".join("%s %d" % kv for kv in
                                        sorted(kinds.items(),
                                               key=lambda kv: (-kv[1], kv[0])))
              or "none",
              sum(o.category == "pass" for o in excluded.values()),
              sum(o.category == "unsupported" for o in excluded.values()),
              sum(o.category == "fail" for o in excluded.values())))
    considered = [o for n, o in outcomes.items() if n not in excluded]
    passed = sum(o.category == "pass" for o in considered)
    bound = sum(o.category == "pass-bound" for o in considered)
    print("pass rate over supported dtypes: %d of %d (%.1f%%) as exported; "
          "%d (%.1f%%) with the inputs dlc names given at compile time "
          "(--input-value)" % (
              passed, len(considered),
              100.0 * passed / max(1, len(considered)), passed + bound,
              100.0 * (passed + bound) / max(1, len(considered))))
    slow = sorted(outcomes.items(), key=lambda kv: -kv[1].seconds)[:5]
    print("\nslowest tests: " + ", ".join("%s %.1fs" % (n, o.seconds)
                                          for n, o in slow))

    status = 0
    bad = sorted(n for n, o in outcomes.items()
                 if o.category in ("crash", "timeout"))
    if bad:
        status = 1
        print("\nFAILED: %d test(s) crashed or timed out; these are never "
              "acceptable:" % len(bad))
        for n in bad:
            print("  %s: %s" % (n, outcomes[n].line()))

    if args.update:
        merged = read_expected(args.expected)
        selected_all = set(suites) == set(all_suites) and not args.filter
        if selected_all:
            merged = {}
        for n, o in outcomes.items():
            merged[n] = o.category
        write_expected(args.expected, merged, args.data)
        print("\nupdated %s (%d tests)" % (args.expected, len(merged)))
        return status

    expected = read_expected(args.expected)
    diffs = []
    for name, _ in tests:
        got = outcomes[name].category
        want = expected.get(name)
        if want is None:
            diffs.append("  %s: %s, not in %s" % (
                name, got, os.path.basename(args.expected)))
        elif want != got:
            kind = ("improvement" if RANK[got] < RANK[want]
                    else "REGRESSION")
            diffs.append("  %s: expected %s, got %s (%s)%s" % (
                name, want, got, kind,
                "" if got == "pass" else ": " + outcomes[name].detail))
    if not (args.filter or set(suites) != set(all_suites)):
        ran = {n for n, _ in tests}
        for name in sorted(set(expected) - ran):
            diffs.append("  %s: in %s but not in %s" % (
                name, os.path.basename(args.expected), args.data))
    if diffs:
        status = 1
        print("\nFAILED: %d outcome(s) differ from %s:" % (len(diffs),
                                                          args.expected))
        print("\n".join(diffs))
        print("If these changes are intended (e.g. a newly supported op), "
              "rerun with --update to rewrite %s, and check the "
              "diff in." % os.path.basename(args.expected))
    if status == 0:
        print("\nOK: every outcome matches %s" % args.expected)
    return status


if __name__ == "__main__":
    sys.exit(main())
