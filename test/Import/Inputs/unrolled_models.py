"""Writes and runs the model of import-unrolled.test: the ops the importer
unrolls or folds at import (ControlFlow.cpp, Recurrent.cpp, Spectral.cpp)
on run-time inputs, with constant sizes:

  Scan         a state and a scan input read in reverse along axis 1, the
               scan output written reversed along axis -1, a body that
               reads an outer value
  Loop         a constant trip count of 5 whose condition turns false after
               3 iterations; the body slices by the iteration number
  If           a condition folded from Size (the else branch runs)
  LSTM         bidirectional, peepholes, bias, initial states, run-time
               sequence_lens [4, 2, 3] (steps past a length hold the state
               and give 0)
  GRU          reverse, linear_before_reset = 1, layout = 1
  DFT          opset 20: complex input padded to dft_length 8 along axis 1;
               inverse one-sided (real output of odd length 7)
  STFT         frame_step 8 over 64 samples with a run-time window of 16
  HannWindow   size 10 from an initializer (periodic); BlackmanWindow
               symmetric; both added to a run-time input
  MelWeightMatrix  constant inputs, applied to a run-time spectrum

The NumPy references are written here from the operator definitions (float64);
outputs match within 1e-5 (absolute below 1, relative above): each output
sums at most a few dozen f32 products of magnitude <= 10.

Usage: unrolled_models.py OUT_DIR [--break]: writes OUT_DIR/unrolled.onnx
and its inputs, compiles it with dlc, runs it with `dlrt run` and prints "ok
unrolled <n> outputs", else "MISMATCH ...". --break perturbs one reference.
Also writes OUT_DIR/long_scan.onnx (a Scan over 1025 steps, above the
unrolling limit) and OUT_DIR/runtime_loop.onnx (a Loop whose trip count is a
graph input) for the error checks.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exact_outputs import run_and_compare  # noqa: E402

F = TensorProto.FLOAT


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def init(name, value, dtype):
    return numpy_helper.from_array(np.array(value, dtype), name)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def lstm_ref(x, w, r, b, lens, h0, c0, p):
    """ONNX LSTM (default activations, gate order i, o, f, c), bidirectional,
    layout 0: Y [T, 2, B, H], Y_h, Y_c [2, B, H]."""
    steps, batch, _ = x.shape
    hidden = r.shape[-1]
    y = np.zeros((steps, 2, batch, hidden))
    hs, cs = [], []
    for d in range(2):
        h, c = h0[d].copy(), c0[d].copy()
        pi, po, pf = np.split(p[d], 3)
        order = range(steps) if d == 0 else reversed(range(steps))
        for t in order:
            g = x[t] @ w[d].T + h @ r[d].T + b[d][:4 * hidden] + b[d][4 * hidden:]
            i, o, f, cc = np.split(g, 4, axis=1)
            i = sigmoid(i + pi * c)
            f = sigmoid(f + pf * c)
            cn = f * c + i * np.tanh(cc)
            o = sigmoid(o + po * cn)
            hn = o * np.tanh(cn)
            live = (t < lens)[:, None]
            h = np.where(live, hn, h)
            c = np.where(live, cn, c)
            y[t, d] = np.where(live, hn, 0)
        hs.append(h)
        cs.append(c)
    return y, np.stack(hs), np.stack(cs)


def gru_ref(x, w, r, b):
    """ONNX GRU, reverse, linear_before_reset = 1, layout 1 (x [B, T, I]):
    Y [B, T, 1, H], Y_h [B, 1, H]."""
    batch, steps, _ = x.shape
    hidden = r.shape[-1]
    wb, rb = b[0][:3 * hidden], b[0][3 * hidden:]
    h = np.zeros((batch, hidden))
    y = np.zeros((batch, steps, 1, hidden))
    for t in reversed(range(steps)):
        xw = x[:, t] @ w[0].T + wb
        hr = h @ r[0].T + rb
        z = sigmoid(xw[:, :hidden] + hr[:, :hidden])
        rg = sigmoid(xw[:, hidden:2 * hidden] + hr[:, hidden:2 * hidden])
        hh = np.tanh(xw[:, 2 * hidden:] + rg * hr[:, 2 * hidden:])
        h = (1 - z) * hh + z * h
        y[:, t, 0] = h
    return y, h[:, None]


def complex_of(x):
    return x[..., 0] + 1j * x[..., 1]


def pairs(z):
    return np.stack([z.real, z.imag], axis=-1)


def mel_ref(bins, n, rate, lo, hi):
    """ONNX MelWeightMatrix, from its reference definition."""
    spec = n // 2 + 1
    mel = lambda hz: 2595 * np.log10(1 + hz / 700)  # noqa: E731
    step = (mel(hi) - mel(lo)) / (bins + 2)
    edges = [int(np.floor((n + 1) * 700 * (10 ** ((i * step + mel(lo)) / 2595) - 1)
                          / rate)) for i in range(bins + 2)]
    out = np.zeros((spec, bins))
    for i in range(bins):
        lo_, mid, hi_ = edges[i:i + 3]
        if mid == lo_:
            out[mid, i] = 1
        else:
            for j in range(lo_, mid + 1):
                out[j, i] = (j - lo_) / (mid - lo_)
        for j in range(mid, hi_):
            out[j, i] = (hi_ - j) / (hi_ - mid)
    return out


def write_errors(out):
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "x_t"], ["s2"]),
         helper.make_node("Identity", ["s2"], ["y_t"])], "body",
        [vi("s", [1]), vi("x_t", [1])], [vi("s2", [1]), vi("y_t", [1])])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["s0", "xs"], ["sf", "ys"], body=body,
                          num_scan_inputs=1, name="long")], "long",
        [vi("s0", [1]), vi("xs", [1025, 1])],
        [vi("sf", [1]), vi("ys", [1025, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with open(os.path.join(out, "long_scan.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    lbody = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c2"]),
         helper.make_node("Add", ["s", "s"], ["s2"])], "body",
        [vi("i", [], TensorProto.INT64), vi("c", [], TensorProto.BOOL),
         vi("s", [1])], [vi("c2", [], TensorProto.BOOL), vi("s2", [1])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["m", "", "s0"], ["sf"], body=lbody,
                          name="runtime")], "loop",
        [vi("m", [], TensorProto.INT64), vi("s0", [1])], [vi("sf", [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with open(os.path.join(out, "runtime_loop.onnx"), "wb") as f:
        f.write(model.SerializeToString())


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    write_errors(out)
    rng = np.random.default_rng(7)
    rand = lambda *s: rng.uniform(-1, 1, s).astype(np.float32)  # noqa: E731
    nodes, inits, inputs, outs, wants = [], [], [], [], []

    def inp(name, value, t=F):
        inputs.append((name, value, t))
        return value.astype(np.float64) if value.dtype == np.float32 else value

    def output(name, want, shape):
        outs.append(vi(name, list(shape)))
        wants.append(want.astype(np.float32))

    # Scan: s' = s + x_t * outer; y_t = s' * 2, x read reversed along axis 1,
    # y written reversed along the last axis.
    body = helper.make_graph(
        [helper.make_node("Mul", ["x_t", "outer"], ["m"]),
         helper.make_node("Add", ["s_in", "m"], ["s_out"]),
         helper.make_node("Add", ["s_out", "s_out"], ["y_t"])], "scan_body",
        [vi("s_in", [3]), vi("x_t", [3])], [vi("s_out", [3]), vi("y_t", [3])])
    nodes.append(helper.make_node(
        "Scan", ["s0", "xs"], ["s_final", "s_ys"], body=body,
        num_scan_inputs=1, scan_input_axes=[1], scan_input_directions=[1],
        scan_output_axes=[-1], scan_output_directions=[1]))
    s0, xs = inp("s0", rand(3)), inp("xs", rand(3, 4))
    outer = inp("outer", rand(3))
    s, ys = s0.copy(), []
    for t in reversed(range(4)):
        s = s + xs[:, t] * outer
        ys.append(2 * s)
    output("s_final", s, [3])
    output("s_ys", np.stack(ys[::-1], axis=-1), [3, 4])

    # Loop: y += x[i]; scan output y^2; stops after iteration 2 (i < 2).
    lbody = helper.make_graph(
        [helper.make_node("Less", ["i", "two"], ["c_out"]),
         helper.make_node("Unsqueeze", ["i", "zero"], ["st"]),
         helper.make_node("Add", ["st", "one"], ["en"]),
         helper.make_node("Slice", ["lx", "st", "en"], ["sl"]),
         helper.make_node("Add", ["y_in", "sl"], ["y_out"]),
         helper.make_node("Mul", ["y_out", "y_out"], ["sq"])], "loop_body",
        [vi("i", [], TensorProto.INT64), vi("c_in", [], TensorProto.BOOL),
         vi("y_in", [1])],
        [vi("c_out", [], TensorProto.BOOL), vi("y_out", [1]), vi("sq", [1])])
    nodes.append(helper.make_node("Loop", ["trips", "go", "ly0"],
                                  ["l_final", "l_scan"], body=lbody))
    inits += [init("trips", 5, np.int64), init("go", True, np.bool_),
              init("two", 2, np.int64), init("zero", [0], np.int64),
              init("one", [1], np.int64)]
    lx, y = inp("lx", rand(5)), inp("ly0", rand(1))
    sq = []
    for i in range(3):
        y = y + lx[i]
        sq.append(y * y)
    output("l_final", y, [1])
    output("l_scan", np.stack(sq), [3, 1])

    # If on Size(lx) == 4 (false: lx has 5 elements).
    nodes += [helper.make_node("Size", ["lx"], ["lx_size"]),
              helper.make_node("Equal", ["lx_size", "four"], ["is4"]),
              helper.make_node(
                  "If", ["is4"], ["if_y"],
                  then_branch=helper.make_graph(
                      [helper.make_node("Neg", ["lx"], ["t"])], "then", [],
                      [vi("t", [5])]),
                  else_branch=helper.make_graph(
                      [helper.make_node("Mul", ["lx", "lx"], ["e"])], "else",
                      [], [vi("e", [5])]))]
    inits.append(init("four", 4, np.int64))
    output("if_y", lx * lx, [5])

    # LSTM, bidirectional with ragged run-time lengths.
    T, B, I, H = 4, 3, 2, 3
    x = inp("lstm_x", rand(T, B, I))
    w, r = inp("lstm_w", rand(2, 4 * H, I)), inp("lstm_r", rand(2, 4 * H, H))
    b = inp("lstm_b", rand(2, 8 * H))
    lens = inp("lstm_lens", np.array([4, 2, 3], np.int32), TensorProto.INT32)
    h0, c0 = inp("lstm_h0", rand(2, B, H)), inp("lstm_c0", rand(2, B, H))
    p = inp("lstm_p", rand(2, 3 * H))
    nodes.append(helper.make_node(
        "LSTM", ["lstm_x", "lstm_w", "lstm_r", "lstm_b", "lstm_lens",
                 "lstm_h0", "lstm_c0", "lstm_p"],
        ["lstm_y", "lstm_yh", "lstm_yc"], hidden_size=H,
        direction="bidirectional"))
    ly, lyh, lyc = lstm_ref(x, w, r, b, lens, h0, c0, p)
    output("lstm_y", ly, ly.shape)
    output("lstm_yh", lyh, lyh.shape)
    output("lstm_yc", lyc, lyc.shape)

    # GRU, reverse, linear_before_reset, batch-first.
    gx = inp("gru_x", rand(2, 3, 2))
    gw, gr = inp("gru_w", rand(1, 12, 2)), inp("gru_r", rand(1, 12, 4))
    gb = inp("gru_b", rand(1, 24))
    nodes.append(helper.make_node(
        "GRU", ["gru_x", "gru_w", "gru_r", "gru_b"], ["gru_y", "gru_yh"],
        hidden_size=4, direction="reverse", linear_before_reset=1, layout=1))
    gy, gyh = gru_ref(gx, gw, gr, gb)
    output("gru_y", gy, gy.shape)
    output("gru_yh", gyh, gyh.shape)

    # DFT (opset 20): complex [2, 5, 3, 2] padded to 8 along axis 1; inverse
    # one-sided of [2, 4, 3, 2] to a real length of 7.
    dx = inp("dft_x", rand(2, 5, 3, 2))
    ix = inp("idft_x", rand(2, 4, 3, 2))
    inits += [init("axis1", 1, np.int64), init("len8", 8, np.int64),
              init("len7", 7, np.int64)]
    nodes += [helper.make_node("DFT", ["dft_x", "len8", "axis1"], ["dft_y"]),
              helper.make_node("DFT", ["idft_x", "len7", "axis1"], ["idft_y"],
                               inverse=1, onesided=1)]
    output("dft_y", pairs(np.fft.fft(complex_of(dx), n=8, axis=1)),
           [2, 8, 3, 2])
    output("idft_y", np.fft.irfft(complex_of(ix), n=7, axis=1)[..., None],
           [2, 7, 3, 1])

    # STFT: 64 samples, frame_step 8, a run-time window of 16 (7 frames).
    sig, win = inp("stft_x", rand(2, 64, 1)), inp("stft_w", rand(16))
    inits.append(init("step8", 8, np.int64))
    nodes.append(helper.make_node("STFT", ["stft_x", "step8", "stft_w"],
                                  ["stft_y"]))
    frames = np.stack([sig[:, 8 * f:8 * f + 16, 0] * win for f in range(7)],
                      axis=1)
    output("stft_y", pairs(np.fft.rfft(frames, axis=-1)), [2, 7, 9, 2])

    # Windows of an initializer size, added to a run-time input.
    wx = inp("win_x", rand(10))
    inits.append(init("ten", 10, np.int32))
    nodes += [helper.make_node("HannWindow", ["ten"], ["hann"]),
              helper.make_node("Add", ["hann", "win_x"], ["hann_y"]),
              helper.make_node("BlackmanWindow", ["ten"], ["black"],
                               periodic=0),
              helper.make_node("Add", ["black", "win_x"], ["black_y"])]
    n = np.arange(10)
    output("hann_y", np.sin(np.pi * n / 10) ** 2 + wx, [10])
    a = 2 * np.pi * n / 9
    output("black_y", 0.42 - 0.5 * np.cos(a) + 0.08 * np.cos(2 * a) + wx,
           [10])

    # MelWeightMatrix (8 bins of a 16-point DFT at 8192 Hz) on a spectrum.
    spec = inp("mel_x", rand(3, 9))
    inits += [init("mel_bins", 8, np.int32), init("mel_n", 16, np.int32),
              init("mel_rate", 8192, np.int32), init("mel_lo", 0, np.float32),
              init("mel_hi", 4096, np.float32)]
    nodes += [helper.make_node("MelWeightMatrix",
                               ["mel_bins", "mel_n", "mel_rate", "mel_lo",
                                "mel_hi"], ["mel_w"]),
              helper.make_node("MatMul", ["mel_x", "mel_w"], ["mel_y"])]
    output("mel_y", spec @ mel_ref(8, 16, 8192, 0.0, 4096.0), [3, 8])

    graph = helper.make_graph(
        nodes, "unrolled", [vi(nm, list(v.shape), t) for nm, v, t in inputs],
        outs, initializer=inits)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 8
    base = os.path.join(out, "unrolled")
    with open(base + ".onnx", "wb") as f:
        f.write(model.SerializeToString())
    np.savez(base + ".in.npz", **{nm: v for nm, v, _ in inputs})
    if "--break" in sys.argv:
        wants[4] = wants[4].copy()
        wants[4].flat[0] += 1e-3
    run_and_compare(base, "unrolled", [o.name for o in outs], wants,
                    tolerance=1e-5)


if __name__ == "__main__":
    main()
