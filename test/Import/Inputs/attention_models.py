"""Writes and runs the models of import-attention.test: the opset-23 ops
Attention, RMSNormalization and RotaryEmbedding, each case one node of one
model (one dlc compile), against NumPy references written here from the
operators' formulas in float64.

Usage: attention_models.py OUT_DIR [--run [--device host|cuda] [--break]]
Without --run writes OUT_DIR/attention.onnx with its inputs
(OUT_DIR/attention.in.npz), OUT_DIR/attention25.onnx (opset 25: sliding
windows, nonpad_kv_seqlen, qk_matmul_output) with its inputs, and the
models the importer must reject
(OUT_DIR/nonpad.onnx, OUT_DIR/qk_output.onnx, OUT_DIR/rotary_odd.onnx,
OUT_DIR/gqa_heads.onnx), and OUT_DIR/gqa_graph.onnx, whose dlgraph the test
reads.
With --run also compiles the model with dlc, runs it with `dlrt run
--device DEVICE` and prints "ok attention <n> outputs" (then "ok
attention25 <n> outputs") when every output is
within 1e-5 (absolute below 1, relative above) of its reference, else
"MISMATCH ...". --break perturbs one reference value by 1e-4 so that the
check must fail (a self-test). --reference-python PYTHON also compares the
outputs with onnx.reference and ONNX Runtime run by PYTHON (an environment
with onnx >= 1.18 and onnxruntime; onnx_reference_compare.py), and says it
skipped when PYTHON does not exist.

The models are built with onnx 1.12's helper (which does not know the
opset-23 schemas and does not validate) and declare opset 23
(attention25.onnx: 25).

Formulas (ONNX opset 23):
  Attention: Y = softmax(mask(softcap(Q Kᵀ * scale))) V per head, scale
    defaulting to 1/sqrt(head_size), softcap(s) = c tanh(s / c); is_causal
    keeps key j for query i when j <= past + i (past: the KV cache's
    length); a boolean mask keeps the keys where it is true, a float mask is
    added, and a mask shorter than the keys leaves the rest out; with fewer
    K/V heads, query head h reads K/V head h // (q_heads / kv_heads); 3-D
    inputs are [B, S, heads * D]; past_key and past_value are prepended to
    K and V (the present outputs).
  RMSNormalization: Y = X / sqrt(mean(X^2 over axis..) + epsilon) * scale.
  RotaryEmbedding: for each head, the first rotary_embedding_dim features
    form pairs (x1, x2): (x[i], x[i + R/2]), or (x[2i], x[2i + 1]) when
    interleaved, rotated to (x1 cos - x2 sin, x1 sin + x2 cos) with
    cos/sin[b, s, i] = cache[position_ids[b, s], i] (or the caches given
    per position); the other features pass through. 4-D X is
    [B, heads, S, D]; 3-D X is [B, S, heads * D] with num_heads.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exact_outputs import run_and_compare  # noqa: E402

rng = np.random.default_rng(23)


def rand(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


# ---------------------------------------------------------------- references


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def to_heads(x, heads):
    """[B, S, heads * D] -> [B, heads, S, D]; 4-D unchanged."""
    if x.ndim == 4:
        return x
    b, s, hd = x.shape
    return x.reshape(b, s, heads, hd // heads).transpose(0, 2, 1, 3)


def ref_attention(q, k, v, mask=None, causal=False, scale=None, q_heads=0,
                  kv_heads=0, past_k=None, past_v=None, softcap=0.0):
    rank = q.ndim
    q, k, v = (to_heads(t.astype(np.float64), h)
               for t, h in ((q, q_heads), (k, kv_heads), (v, kv_heads)))
    if past_k is not None:
        k = np.concatenate([past_k, k], axis=2)
        v = np.concatenate([past_v, v], axis=2)
    present = (k, v)
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    if scale is None:
        scale = 1 / np.sqrt(q.shape[-1])
    s = q @ k.transpose(0, 1, 3, 2) * scale
    if softcap:
        s = softcap * np.tanh(s / softcap)
    sq, skv = s.shape[-2:]
    past = 0 if past_k is None else past_k.shape[2]
    if causal:
        keep = np.arange(skv)[None, :] <= past + np.arange(sq)[:, None]
        s = np.where(keep, s, -np.inf)
    if mask is not None:
        if mask.shape[-1] < skv:  # keys past the mask's end are left out
            pad = [(0, 0)] * (mask.ndim - 1) + [(0, skv - mask.shape[-1])]
            mask = np.pad(mask, pad, constant_values=(
                False if mask.dtype == bool else -np.inf))
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    y = softmax(s) @ v
    if rank == 3:
        b, h, sq, d = y.shape
        y = y.transpose(0, 2, 1, 3).reshape(b, sq, h * d)
    return y, present


def ref_attention25(q, k, v, mask=None, causal=False, left=-1, right=-1,
                    lens=None, softcap=0.0, past_k=None, past_v=None):
    """4-D Attention with opset 24's per-batch key lengths and opset 25's
    windows: query i of batch b sits at offset + i, offset = past (or
    lens[b] - Sq with lens), and keeps key j when causal: j <= offset + i;
    left >= 0: offset + i - j <= left; right >= 0: j - offset - i <= right;
    lens: j < lens[b]. A row with no key left is zeros. Returns Y and the
    scores raw, soft-capped, masked and as probabilities (modes 0-3)."""
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    if past_k is not None:
        k = np.concatenate([past_k, k], axis=2)
        v = np.concatenate([past_v, v], axis=2)
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    raw = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    capped = softcap * np.tanh(raw / softcap) if softcap else raw
    b, _, sq, skv = raw.shape
    past = 0 if past_k is None else past_k.shape[2]
    keep = np.ones((b, 1, sq, skv), dtype=bool)
    for n in range(b):
        offset = past if lens is None else lens[n] - sq
        for i in range(sq):
            for j in range(skv):
                diff = offset + i - j
                keep[n, 0, i, j] = ((not causal or diff >= 0) and
                                    (left < 0 or diff <= left) and
                                    (right < 0 or -diff <= right) and
                                    (lens is None or j < lens[n]))
    masked = np.where(keep, capped, -np.inf)
    if mask is not None:
        masked = (np.where(mask, masked, -np.inf) if mask.dtype == bool
                  else masked + mask)
    empty = np.isneginf(masked).all(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        probs = np.where(empty, 0.0, softmax(masked))
    return probs @ v, (raw, capped, masked, probs)


def ref_rms(x, scale, axis, eps):
    x = x.astype(np.float64)
    axes = tuple(range(axis % x.ndim, x.ndim))
    return x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + eps) * scale


def ref_rotary(x, cos_cache, sin_cache, position_ids=None, interleaved=0,
               num_heads=0, rotary_dim=0):
    shape = x.shape
    x = x.astype(np.float64)
    if x.ndim == 3:  # [B, S, H * D] -> [B, H, S, D]
        x = to_heads(x, num_heads)
    b, h, s, d = x.shape
    r = rotary_dim or d
    half = r // 2
    if position_ids is not None:
        cos, sin = cos_cache[position_ids], sin_cache[position_ids]
    else:
        cos, sin = cos_cache, sin_cache
    out = x.copy()
    for bi in range(b):
        for si in range(s):
            for i in range(half):
                c, sn = cos[bi, si, i], sin[bi, si, i]
                a, o = (2 * i, 2 * i + 1) if interleaved else (i, i + half)
                x1, x2 = x[bi, :, si, a], x[bi, :, si, o]
                out[bi, :, si, a] = x1 * c - x2 * sn
                out[bi, :, si, o] = x1 * sn + x2 * c
    if len(shape) == 3:
        out = out.transpose(0, 2, 1, 3).reshape(shape)
    return out


# -------------------------------------------------------------------- models


class Model:
    def __init__(self, opset=23):
        self.opset = opset
        self.nodes, self.inputs, self.outputs, self.inits = [], [], [], []
        self.feeds, self.names, self.wants = {}, [], []

    def input(self, name, value):
        dtype = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64,
                 np.bool_: TensorProto.BOOL}[value.dtype.type]
        self.inputs.append(helper.make_tensor_value_info(name, dtype,
                                                         value.shape))
        self.feeds[name] = value
        return name

    def init(self, name, value):
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def node(self, op, ins, outs, wants, **attrs):
        self.nodes.append(helper.make_node(op, ins, outs, name=outs[0],
                                           **attrs))
        for name, want in zip(outs, wants):
            if not name:
                continue
            want = want.astype(np.float32)
            self.outputs.append(helper.make_tensor_value_info(
                name, TensorProto.FLOAT, want.shape))
            self.names.append(name)
            self.wants.append(want)

    def save(self, path):
        graph = helper.make_graph(self.nodes, "attention", self.inputs,
                                  self.outputs, self.inits)
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = 10
        onnx.save(model, path)


def attention_cases(m):
    # 4-D, non-causal, default scale, Sq != Skv and head size of V != Q's.
    q, k, v = rand(2, 4, 5, 8), rand(2, 4, 7, 8), rand(2, 4, 7, 6)
    m.node("Attention", [m.input("nc_q", q), m.input("nc_k", k),
                         m.input("nc_v", v)], ["noncausal"],
           [ref_attention(q, k, v)[0]])
    # 4-D causal with an explicit scale.
    q, k, v = rand(2, 4, 6, 8), rand(2, 4, 6, 8), rand(2, 4, 6, 8)
    m.node("Attention", [m.input("c_q", q), m.input("c_k", k),
                         m.input("c_v", v)], ["causal"],
           [ref_attention(q, k, v, causal=True, scale=0.3)[0]],
           is_causal=1, scale=0.3)
    # Additive float mask [Sq, Skv] broadcast over batch and heads.
    q, k, v = rand(2, 4, 5, 8), rand(2, 4, 7, 8), rand(2, 4, 7, 8)
    mask = (2 * rand(5, 7)).astype(np.float32)
    m.node("Attention", [m.input("fm_q", q), m.input("fm_k", k),
                         m.input("fm_v", v), m.input("fm_mask", mask)],
           ["float_mask"], [ref_attention(q, k, v, mask)[0]])
    # Boolean padding mask [B, 1, 1, Skv] (batch 1 pads its last 3 keys) and
    # a [B, 1, Sq, Skv] one with random holes, each row keeping a key.
    q, k, v = rand(2, 4, 5, 8), rand(2, 4, 7, 8), rand(2, 4, 7, 8)
    pad = np.ones((2, 1, 1, 7), dtype=bool)
    pad[1, 0, 0, 4:] = False
    m.node("Attention", [m.input("bm_q", q), m.input("bm_k", k),
                         m.input("bm_v", v), m.input("bm_mask", pad)],
           ["bool_mask"], [ref_attention(q, k, v, pad)[0]])
    holes = rng.uniform(size=(2, 1, 5, 7)) < 0.6
    holes[..., 0] = True
    m.node("Attention", [m.input("bh_q", q), m.input("bh_k", k),
                         m.input("bh_v", v), m.input("bh_mask", holes)],
           ["bool_holes"], [ref_attention(q, k, v, holes)[0]])
    # Grouped-query, 3-D: 8 query heads, 2 K/V heads, causal.
    q, k, v = rand(2, 6, 8 * 4), rand(2, 6, 2 * 4), rand(2, 6, 2 * 4)
    m.node("Attention", [m.input("g3_q", q), m.input("g3_k", k),
                         m.input("g3_v", v)], ["gqa_3d"],
           [ref_attention(q, k, v, causal=True, q_heads=8, kv_heads=2)[0]],
           is_causal=1, q_num_heads=8, kv_num_heads=2)
    # Grouped-query, 4-D, with a float mask [B, 8, Sq, Skv].
    q, k, v = rand(2, 8, 5, 4), rand(2, 2, 7, 4), rand(2, 2, 7, 4)
    mask = (2 * rand(2, 8, 5, 7)).astype(np.float32)
    m.node("Attention", [m.input("g4_q", q), m.input("g4_k", k),
                         m.input("g4_v", v), m.input("g4_mask", mask)],
           ["gqa_4d"], [ref_attention(q, k, v, mask)[0]])
    # 3-D without GQA, non-causal, plus a KV cache (4-D past, 3-D new K/V):
    # Y and the present key and value.
    q, k, v = rand(2, 3, 2 * 8), rand(2, 3, 2 * 8), rand(2, 3, 2 * 8)
    pk, pv = rand(2, 2, 4, 8), rand(2, 2, 4, 8)
    y, (present_k, present_v) = ref_attention(q, k, v, q_heads=2, kv_heads=2,
                                              past_k=pk, past_v=pv)
    m.node("Attention", [m.input("kv_q", q), m.input("kv_k", k),
                         m.input("kv_v", v), "", m.input("kv_pk", pk),
                         m.input("kv_pv", pv)],
           ["kv_cache", "present_key", "present_value"],
           [y, present_k, present_v], q_num_heads=2, kv_num_heads=2)
    # Decoding with a KV cache: causal, aligned at the past (query i sees
    # keys j <= past + i), GQA, and a boolean mask covering only the past and
    # the first new key (the keys after it are left out).
    q, k, v = rand(1, 4, 2, 4), rand(1, 2, 2, 4), rand(1, 2, 2, 4)
    pk, pv = rand(1, 2, 3, 4), rand(1, 2, 3, 4)
    short = np.array([[[[True, False, True, True],
                        [False, True, True, True]]]])
    y, _ = ref_attention(q, k, v, short, causal=True, past_k=pk, past_v=pv)
    m.node("Attention", [m.input("dc_q", q), m.input("dc_k", k),
                         m.input("dc_v", v), m.input("dc_mask", short),
                         m.input("dc_pk", pk), m.input("dc_pv", pv)],
           ["kv_cache_causal"], [y], is_causal=1)
    # Soft-capping (before the causal mask) with a float mask.
    q, k, v = (3 * rand(2, 2, 5, 8)).astype(np.float32), rand(2, 2, 5, 8), \
        rand(2, 2, 5, 8)
    mask = rand(5, 5)
    m.node("Attention", [m.input("sc_q", q), m.input("sc_k", k),
                         m.input("sc_v", v), m.input("sc_mask", mask)],
           ["softcap"],
           [ref_attention(q, k, v, mask, causal=True, softcap=1.5)[0]],
           is_causal=1, softcap=1.5)


def attention25_cases(m):
    """Opsets 24 and 25 (a model of its own at opset 25): sliding windows,
    per-batch key lengths and the qk_matmul_output scores."""
    # A causal-like left window of 2 (no is_causal), with the probabilities.
    q, k, v = rand(2, 2, 5, 4), rand(2, 2, 5, 4), rand(2, 2, 5, 3)
    y, qk = ref_attention25(q, k, v, left=2, right=0)
    m.node("Attention", [m.input("lw_q", q), m.input("lw_k", k),
                         m.input("lw_v", v)], ["left_window", "", "", "lw_qk"],
           [y, None, None, qk[3]], left_window_size=2, right_window_size=0,
           qk_matmul_output_mode=3)
    # A bidirectional window (1, 1) over a KV cache of 3 and 4 new keys
    # (queries at positions 3 and 4 of 7), with the raw scores.
    q, k, v = rand(1, 2, 2, 4), rand(1, 2, 4, 4), rand(1, 2, 4, 4)
    pk, pv = rand(1, 2, 3, 4), rand(1, 2, 3, 4)
    y, qk = ref_attention25(q, k, v, left=1, right=1, past_k=pk, past_v=pv)
    m.node("Attention", [m.input("bw_q", q), m.input("bw_k", k),
                         m.input("bw_v", v), "", m.input("bw_pk", pk),
                         m.input("bw_pv", pv)],
           ["both_windows", "", "", "bw_qk"], [y, None, None, qk[0]],
           left_window_size=1, right_window_size=1)
    # Run-time key lengths {6, 3} (an external cache), causal from offset
    # lens - Sq, grouped-query, a left window of 2 and soft-capping, with
    # the soft-capped scores.
    q, k, v = rand(2, 4, 2, 4), rand(2, 2, 6, 4), rand(2, 2, 6, 4)
    lens = np.array([6, 3], dtype=np.int64)
    y, qk = ref_attention25(q, k, v, causal=True, left=2, lens=lens,
                            softcap=2.0)
    m.node("Attention", [m.input("np_q", q), m.input("np_k", k),
                         m.input("np_v", v), "", "", "",
                         m.input("np_lens", lens)],
           ["nonpad_window", "", "", "np_qk"], [y, None, None, qk[1]],
           is_causal=1, left_window_size=2, softcap=2.0,
           qk_matmul_output_mode=1)
    # Lengths shorter than the queries ({1, 4}, Sq = 3): batch 0's first
    # two queries see no key and are zero rows, in Y and the probabilities.
    q, k, v = rand(2, 2, 3, 4), rand(2, 2, 4, 4), rand(2, 2, 4, 4)
    lens = np.array([1, 4], dtype=np.int64)
    y, qk = ref_attention25(q, k, v, causal=True, lens=lens)
    m.node("Attention", [m.input("ne_q", q), m.input("ne_k", k),
                         m.input("ne_v", v), "", "", "",
                         m.input("ne_lens", lens)],
           ["nonpad_empty_rows", "", "", "ne_qk"], [y, None, None, qk[3]],
           is_causal=1, qk_matmul_output_mode=3)
    # A float mask with the masked scores (mode 2: QKᵀ scale + mask).
    q, k, v = rand(2, 2, 3, 4), rand(2, 2, 4, 4), rand(2, 2, 4, 4)
    mask = rand(3, 4)
    y, qk = ref_attention25(q, k, v, mask=mask)
    m.node("Attention", [m.input("fm2_q", q), m.input("fm2_k", k),
                         m.input("fm2_v", v), m.input("fm2_mask", mask)],
           ["masked_scores", "", "", "fm2_qk"], [y, None, None, qk[2]],
           qk_matmul_output_mode=2)


def norm_cases(m):
    x, scale = rand(2, 5, 16), rand(16)
    m.node("RMSNormalization", [m.input("rms_x", x), m.init("rms_s", scale)],
           ["rms_last"], [ref_rms(x, scale, -1, 1e-6)], epsilon=1e-6)
    x, scale = rand(2, 3, 4), rand(3, 4)
    m.node("RMSNormalization", [m.input("rms1_x", x),
                                m.init("rms1_s", scale)],
           ["rms_axis1"], [ref_rms(x, scale, 1, 1e-5)], axis=1)


def rotary_caches(positions, half, base=10000.0):
    inv = base ** (-np.arange(half) / half)
    ang = np.arange(positions)[:, None] * inv[None, :]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def rotary_cases(m):
    # 4-D, split halves, position ids into [16, 4] caches.
    x = rand(2, 3, 5, 8)
    cos, sin = rotary_caches(16, 4)
    ids = rng.integers(0, 16, (2, 5)).astype(np.int64)
    m.node("RotaryEmbedding", [m.input("r4_x", x), m.init("r4_cos", cos),
                               m.init("r4_sin", sin), m.input("r4_ids", ids)],
           ["rotary_4d"], [ref_rotary(x, cos, sin, ids)])
    # 4-D interleaved, caches given per position [B, S, 4].
    cos3, sin3 = rand(2, 5, 4), rand(2, 5, 4)
    m.node("RotaryEmbedding", [m.input("ri_x", x), m.input("ri_cos", cos3),
                               m.input("ri_sin", sin3)],
           ["rotary_interleaved"],
           [ref_rotary(x, cos3, sin3, interleaved=1)], interleaved=1)
    # 3-D [B, S, 3 heads * 8], partial rotation of 4 of 8 features,
    # interleaved and not.
    x3 = rand(2, 5, 24)
    cos2, sin2 = rotary_caches(16, 2)
    m.init("r2_cos", cos2)
    m.init("r2_sin", sin2)
    for il in (0, 1):
        name = "rotary_partial_3d" + ("_interleaved" if il else "")
        m.node("RotaryEmbedding", [m.input(name + "_x", x3), "r2_cos",
                                   "r2_sin", "r4_ids"], [name],
               [ref_rotary(x3, cos2, sin2, ids, il, 3, 4)], interleaved=il,
               num_heads=3, rotary_embedding_dim=4)
    # 4-D partial rotation of 6 of 8 features (half 3), split halves.
    cos6, sin6 = rotary_caches(16, 3)
    m.node("RotaryEmbedding", [m.input("r6_x", x), m.init("r6_cos", cos6),
                               m.init("r6_sin", sin6), "r4_ids"],
           ["rotary_partial_6"],
           [ref_rotary(x, cos6, sin6, ids, rotary_dim=6)],
           rotary_embedding_dim=6)


def rejected(out):
    """Models whose one node the importer must reject, naming why."""
    def one(path, node, inputs, outputs):
        graph = helper.make_graph(
            [node], "rejected",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
             for n, s in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
             for n in outputs])
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 23)])
        onnx.save(model, os.path.join(out, path))
    qkv = [("q", [1, 2, 3, 4]), ("k", [1, 2, 3, 4]), ("v", [1, 2, 3, 4])]
    one("nonpad.onnx",
        helper.make_node("Attention", ["q", "k", "v", "", "k", "v", "n"],
                         ["y"], name="nonpad"),
        qkv + [("n", [1])], ["y"])
    one("qk_output.onnx",
        helper.make_node("Attention", ["q", "k", "v"], ["y", "", "", "qk"],
                         name="scores", qk_matmul_output_mode=4),
        qkv, ["y", "qk"])
    one("rotary_odd.onnx",
        helper.make_node("RotaryEmbedding", ["q", "c", "s"], ["y"],
                         name="odd", rotary_embedding_dim=3),
        qkv[:1] + [("c", [1, 3, 2]), ("s", [1, 3, 2])], ["y"])
    # Not rejected: grouped-query attention, whose dlgraph the test reads.
    one("gqa_graph.onnx",
        helper.make_node("Attention", ["q", "k", "v", "m"], ["y"],
                         name="gqa"),
        [("q", [2, 8, 5, 4]), ("k", [2, 2, 7, 4]), ("v", [2, 2, 7, 4]),
         ("m", [2, 8, 5, 7])], ["y"])
    one("gqa_heads.onnx",
        helper.make_node("Attention", ["q", "k", "v"], ["y"], name="heads"),
        [("q", [1, 3, 3, 4]), ("k", [1, 2, 3, 4]), ("v", [1, 2, 3, 4])],
        ["y"])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    m = Model()
    attention_cases(m)
    norm_cases(m)
    rotary_cases(m)
    base = os.path.join(out, "attention")
    m.save(base + ".onnx")
    np.savez(base + ".in.npz", **m.feeds)
    m25 = Model(opset=25)
    attention25_cases(m25)
    base25 = os.path.join(out, "attention25")
    m25.save(base25 + ".onnx")
    np.savez(base25 + ".in.npz", **m25.feeds)
    rejected(out)
    if "--run" not in sys.argv:
        return
    device = "host"
    if "--device" in sys.argv:
        device = sys.argv[sys.argv.index("--device") + 1]
    wants = m.wants
    if "--break" in sys.argv:
        wants[3] = wants[3].copy()
        wants[3].flat[7] += 1e-4
    outputs = base + "." + device + ".out.npz"
    run_and_compare(base, "attention", m.names, wants, device, outputs,
                    tolerance=1e-5)
    run_and_compare(base25, "attention25", m25.names, m25.wants, device,
                    base25 + "." + device + ".out.npz", tolerance=1e-5)
    if "--reference-python" in sys.argv:
        # The same outputs against onnx's reference evaluator and ONNX
        # Runtime, run by an interpreter that has them (onnx >= 1.18).
        python = sys.argv[sys.argv.index("--reference-python") + 1]
        if not os.path.exists(python):
            print(f"skipped onnx-reference: no interpreter at {python}")
            return
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              "onnx_reference_compare.py")
        r = subprocess.run([python, script, base, outputs, "--skip-ort",
                            "bool_mask", "kv_cache_causal"])
        sys.exit(r.returncode)


if __name__ == "__main__":
    main()
