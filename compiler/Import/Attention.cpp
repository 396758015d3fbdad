//===- Attention.cpp - ONNX opset-23 transformer ops -> dlgraph -----------===//
//
// Attention (opsets 23 to 25: KV caches, padding by nonpad_kv_seqlen,
// sliding windows, the qk_matmul_output scores), RMSNormalization,
// RotaryEmbedding and SwiGLU (opset 28), decomposed into existing dlgraph
// ops (matmul, softmax, select, compare, reductions, slices, concats and
// elementwise ops), so that their gradients and lowering are those of the
// ops they decompose into. Attention goes to the fused dlgraph.attention
// (which never stores the [B, H, Sq, Skv] scores) except with a soft-cap, a
// sliding window, nonpad_kv_seqlen or the qk_matmul_output scores, which
// the decomposition keeps.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/Analysis/SliceAnalysis.h"

#include <limits>

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;
namespace semantics = dlc::semantics;

/// v[..., start + step * i] for i < count along the last axis.
static Value sliceLast(OpBuilder &b, Location loc, Value v, int64_t start,
                       int64_t step, int64_t count) {
  auto t = cast<RankedTensorType>(v.getType());
  if (start == 0 && step == 1 && count == t.getShape().back())
    return v;
  SmallVector<int64_t> starts(t.getRank(), 0), steps(t.getRank(), 1);
  starts.back() = start;
  steps.back() = step;
  SmallVector<int64_t> shape(t.getShape());
  shape.back() = count;
  return gr::SliceOp::create(b, loc, t.clone(shape), v,
                             b.getDenseI64ArrayAttr(starts),
                             b.getDenseI64ArrayAttr(steps));
}

static Value concatLast(OpBuilder &b, Location loc, ValueRange vs) {
  int64_t rank = cast<RankedTensorType>(vs[0].getType()).getRank();
  return gr::ConcatOp::create(b, loc, vs, b.getI64IntegerAttr(rank - 1));
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// Input |i| of an Attention node as [B, heads, S, D]: a 4-D input as is, a
/// 3-D [B, S, heads * D] one split into |heads| heads (the q_num_heads or
/// kv_num_heads attribute, named |attr|). The element type is checked by the
/// caller.
FailureOr<Value> Importer::attentionHeads(int i, int64_t heads,
                                          StringRef attr) {
  Slot *s = input(i);
  if (!s)
    return failure();
  Value v = materialize(*s);
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getRank() == 4)
    return v;
  if (t.getRank() != 3)
    return nodeError() << "input " << i << " ('" << node->input(i)
                       << "') has shape " << shapeStr(t.getShape())
                       << "; expected [batch, heads, sequence, head_size] or "
                          "[batch, sequence, heads * head_size]";
  int64_t hidden = t.getDimSize(2);
  if (heads <= 0 || hidden % heads != 0)
    return nodeError() << "input " << i << " ('" << node->input(i)
                       << "') is 3-D " << shapeStr(t.getShape())
                       << ", which needs attribute " << attr << " > 0 dividing "
                       << hidden << "; got " << heads;
  Value r = reshaped(builder, nodeLoc, v,
                     {t.getDimSize(0), t.getDimSize(1), heads, hidden / heads});
  return permute(builder, nodeLoc, r, {0, 2, 1, 3});
}

/// |v| converted to element type |et| (no op when it has it already).
static Value castTo(OpBuilder &b, Location loc, Value v, Type et) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getElementType() == et)
    return v;
  return gr::CastOp::create(b, loc, t.clone(et), v);
}

/// An int64 constant [rows, cols] holding f(i, j).
static Value int64Grid(OpBuilder &b, Location loc, int64_t rows, int64_t cols,
                       llvm::function_ref<int64_t(int64_t, int64_t)> f) {
  auto type = RankedTensorType::get({rows, cols}, b.getI64Type());
  SmallVector<int64_t> values(rows * cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      values[i * cols + j] = f(i, j);
  return gr::ConstantOp::create(
      b, loc,
      cast<ElementsAttr>(DenseElementsAttr::get(type, ArrayRef(values))));
}

LogicalResult Importer::checkAttentionInputTypes() {
  for (int i : {0, 1, 2, 4, 5}) {
    if (!hasInput(i))
      continue;
    Slot *s = input(i);
    if (!s)
      return failure();
    Type et = s->type().getElementType();
    if (!et.isF32() && !et.isF16())
      return nodeError() << "input " << i << " ('" << node->input(i)
                         << "') has element type " << elementTypeName(et)
                         << ", which is not supported by Attention yet; "
                            "supported: float (f32), float16";
  }
  return success();
}

LogicalResult Importer::prependPastKV(Value &key, Value &value, int64_t &past) {
  Value pk = materialize(*input(4)), pv = materialize(*input(5));
  auto pkt = cast<RankedTensorType>(pk.getType()),
       pvt = cast<RankedTensorType>(pv.getType());
  auto kt = cast<RankedTensorType>(key.getType()),
       vt = cast<RankedTensorType>(value.getType());
  auto fits = [](RankedTensorType past, RankedTensorType cur) {
    return past.getRank() == 4 && past.getDimSize(0) == cur.getDimSize(0) &&
           past.getDimSize(1) == cur.getDimSize(1) &&
           past.getDimSize(3) == cur.getDimSize(3) &&
           past.getElementType() == cur.getElementType();
  };
  if (!fits(pkt, kt) || !fits(pvt, vt))
    return nodeError() << "past_key " << shapeStr(pkt.getShape())
                       << " and past_value " << shapeStr(pvt.getShape())
                       << " must be [batch, kv_heads, past_sequence, "
                          "head_size] matching K "
                       << shapeStr(kt.getShape()) << " and V "
                       << shapeStr(vt.getShape()) << ", and of their types";
  past = pkt.getDimSize(2);
  key = gr::ConcatOp::create(builder, nodeLoc, ValueRange{pk, key},
                             builder.getI64IntegerAttr(2));
  value = gr::ConcatOp::create(builder, nodeLoc, ValueRange{pv, value},
                               builder.getI64IntegerAttr(2));
  return success();
}

FailureOr<Value> Importer::nonpadKVMask(Value scores, Value negInf,
                                        int64_t batch, int64_t sq, int64_t skv,
                                        bool isCausal, int64_t leftWindow,
                                        int64_t rightWindow, bool grouped) {
  Slot *ls = input(6);
  if (!ls)
    return failure();
  RankedTensorType lt = ls->type();
  if (!lt.getElementType().isInteger(64) && !lt.getElementType().isInteger(32))
    return nodeError() << "input 6 (nonpad_kv_seqlen) has element type "
                       << elementTypeName(lt.getElementType())
                       << "; supported: int64, int32";
  if (lt.getNumElements() != batch || lt.getRank() > 1)
    return nodeError() << "input 6 (nonpad_kv_seqlen) of shape "
                       << shapeStr(lt.getShape()) << " must be [" << batch
                       << "] (one length per batch)";
  if (boundedNumElements({sq, skv}, kMaxFoldElements) < 0)
    return nodeError() << "a padding mask of " << sq << " x " << skv
                       << " elements is beyond the importer's constant "
                          "limit of "
                       << kMaxFoldElements << " elements";
  // len[b] as [B, 1, 1] against [Sq, T] grids of constants: each bound on
  // diff = len - Sq + i - j is one comparison of len with a constant.
  Value len = castTo(builder, nodeLoc, materialize(*ls), builder.getI64Type());
  len = reshaped(builder, nodeLoc, len, {batch, 1, 1});
  auto cmp = [&](StringRef pred, Value a, Value b) -> Value {
    return gr::CompareOp::create(builder, nodeLoc, pred, a, b);
  };
  // Padding: key j < len[b].
  Value keep = cmp(
      "lt",
      int64Grid(builder, nodeLoc, 1, skv, [](int64_t, int64_t j) { return j; }),
      len);
  Value falseV = splatOf(RankedTensorType::get({}, builder.getI1Type()), 0);
  auto both = [&](Value a, Value b) -> Value {
    return gr::SelectOp::create(builder, nodeLoc, a, b, falseV);
  };
  if (isCausal) // diff >= 0: j - i + Sq <= len.
    keep = both(keep,
                cmp("le",
                    int64Grid(builder, nodeLoc, sq, skv,
                              [&](int64_t i, int64_t j) { return j - i + sq; }),
                    len));
  if (leftWindow >= 0) // diff <= left: len <= left + j - i + Sq.
    keep = both(keep, cmp("le", len,
                          int64Grid(builder, nodeLoc, sq, skv,
                                    [&](int64_t i, int64_t j) {
                                      return leftWindow + j - i + sq;
                                    })));
  if (rightWindow >= 0) // -diff <= right: j - i - right + Sq <= len.
    keep = both(keep, cmp("le",
                          int64Grid(builder, nodeLoc, sq, skv,
                                    [&](int64_t i, int64_t j) {
                                      return j - i - rightWindow + sq;
                                    }),
                          len));
  // [B, Sq or 1, T] -> [B, 1, Sq or 1, T] (grouped: [B, 1, 1, Sq or 1, T]).
  ArrayRef<int64_t> kshape = cast<RankedTensorType>(keep.getType()).getShape();
  SmallVector<int64_t> k4 = {batch, 1};
  if (grouped)
    k4.push_back(1);
  k4.append({kshape[1], kshape[2]});
  return Value(gr::SelectOp::create(
      builder, nodeLoc, reshaped(builder, nodeLoc, keep, k4), scores, negInf));
}

FailureOr<Value> Importer::attnMaskOperand(int64_t skv,
                                           ArrayRef<int64_t> scoresShape) {
  Slot *m = input(3);
  if (!m)
    return failure();
  Value mask = materialize(*m);
  if (!mask)
    return failure();
  bool isBool = m->type().getElementType().isInteger(1);
  auto mt = cast<RankedTensorType>(mask.getType());
  // A mask shorter than the keys (past + new) leaves the keys after it
  // out: it is padded with false (boolean) or -inf (additive).
  SmallVector<int64_t> padded(mt.getShape());
  if (!padded.empty() && padded.back() < skv && padded.back() != 1) {
    padded.back() = skv;
    SmallVector<int64_t> zeros(padded.size(), 0), ones(padded.size(), 1);
    mask = gr::PadOp::create(
        builder, nodeLoc, mt.clone(padded), mask,
        builder.getDenseI64ArrayAttr(zeros), builder.getDenseI64ArrayAttr(ones),
        builder.getF64FloatAttr(
            isBool ? 0.0 : -std::numeric_limits<double>::infinity()));
  }
  if (padded.size() > 4 || !semantics::broadcastsTo(padded, scoresShape))
    return nodeError() << "attn_mask of shape " << shapeStr(mt.getShape())
                       << " does not broadcast to the scores [batch, "
                          "q_heads, q_sequence, kv_sequence] = "
                       << shapeStr(scoresShape);
  return mask;
}

FailureOr<Value> Importer::applyAttnMask(Value scores, Value negInf,
                                         int64_t skv,
                                         ArrayRef<int64_t> scoresShape,
                                         bool grouped, int64_t hkv, int64_t g) {
  FailureOr<Value> m = attnMaskOperand(skv, scoresShape);
  if (failed(m))
    return failure();
  Value mask = *m;
  bool isBool =
      cast<RankedTensorType>(mask.getType()).getElementType().isInteger(1);
  if (!isBool)
    mask = castTo(builder, nodeLoc, mask, builder.getF32Type());
  SmallVector<int64_t> padded(
      cast<RankedTensorType>(mask.getType()).getShape());
  if (grouped) {
    // [.., Hq or 1, Sq', T'] -> [.., Hkv, g or 1, 1, Sq', T'].
    SmallVector<int64_t> m4(4 - padded.size(), 1);
    m4.append(padded.begin(), padded.end());
    SmallVector<int64_t> m5 = {m4[0], 1, 1, m4[2], m4[3]};
    if (m4[1] != 1) {
      m5[1] = hkv;
      m5[2] = g;
    }
    mask = reshaped(builder, nodeLoc, mask, m5);
  }
  // A true boolean takes part in attention; a float mask is added.
  return isBool ? Value(gr::SelectOp::create(builder, nodeLoc, mask, scores,
                                             negInf))
                : Value(gr::AddOp::create(builder, nodeLoc, scores, mask));
}

LogicalResult Importer::checkAttentionAttributes(int64_t isCausal,
                                                 float softcap, int64_t qkMode,
                                                 int64_t leftWindow,
                                                 int64_t rightWindow) {
  if (isCausal != 0 && isCausal != 1)
    return nodeError() << "attribute is_causal = " << isCausal
                       << " is not supported; supported: 0, 1";
  if (softcap < 0.0f)
    return nodeError() << "attribute softcap = " << softcap
                       << " is not supported; supported: 0 (none) or > 0";
  if (qkMode < 0 || qkMode > 3)
    return nodeError() << "attribute qk_matmul_output_mode = " << qkMode
                       << " is not supported; supported: 0 (Q·Kᵀ), 1 (after "
                          "softcap), 2 (after the masks), 3 (softmax)";
  if (leftWindow < -1 || rightWindow < -1)
    return nodeError() << "attributes left_window_size = " << leftWindow
                       << " and right_window_size = " << rightWindow
                       << " are not supported; supported: -1 (unbounded) or "
                          ">= 0";
  if (hasInput(4) != hasInput(5))
    return nodeError() << "past_key and past_value must be given together";
  if (hasInput(6) && hasInput(4))
    return nodeError() << "input 6 (nonpad_kv_seqlen, an external KV cache) "
                          "cannot be combined with past_key and past_value "
                          "(an internal one)";
  return success();
}

/// Whether |v| is computed from a dlgraph.read_variable.
static bool readsVariable(Value v) {
  SetVector<Operation *> slice;
  BackwardSliceOptions options;
  options.inclusive = true;
  return failed(getBackwardSlice(v, &slice, options)) ||
         llvm::any_of(slice,
                      [](Operation *op) { return isa<gr::ReadVariableOp>(op); });
}

LogicalResult Importer::defineFusedAttention(Value q, Value k, Value v,
                                             Value mask, double scale,
                                             bool causal, bool threeD) {
  auto fused = gr::AttentionOp::create(
      builder, nodeLoc, q, k, v, mask, Value(), builder.getF64FloatAttr(scale),
      builder.getBoolAttr(causal), builder.getDenseBoolArrayAttr({}),
      builder.getF32FloatAttr(0.0f), builder.getI64IntegerAttr(0));
  Value y = fused.getResult();
  if (threeD) {
    ArrayRef<int64_t> s = cast<RankedTensorType>(y.getType()).getShape();
    y = permute(builder, nodeLoc, y, {0, 2, 1, 3});
    y = reshaped(builder, nodeLoc, y, {s[0], s[2], s[1] * s[3]});
  }
  return define(0, y);
}

LogicalResult Importer::attention() {
  int64_t isCausal = attrInt("is_causal", 0);
  int64_t qHeads = attrInt("q_num_heads", 0);
  int64_t kvHeads = attrInt("kv_num_heads", 0);
  int64_t qkMode = attrInt("qk_matmul_output_mode", 0);
  float softcap = attrFloat("softcap", 0.0f);
  bool hasScale = findAttr("scale") != nullptr;
  float scaleAttr = attrFloat("scale", 0.0f);
  // Opset 25's sliding window: -1 (the default) on a side leaves it open.
  int64_t leftWindow = attrInt("left_window_size", -1);
  int64_t rightWindow = attrInt("right_window_size", -1);
  // softmax_precision: the decomposition computes in f32 whatever the input
  // type (f16 inputs are widened), which is at least every precision
  // the attribute asks for short of double.
  if (attrFailed)
    return failure();
  if (failed(checkAttentionAttributes(isCausal, softcap, qkMode, leftWindow,
                                      rightWindow)))
    return failure();
  bool nonpad = hasInput(6);

  // Q, K, V and the past are f32, or f16 widened to f32 for the arithmetic
  // (the present outputs keep their type; Y and the scores are rounded
  // once, at the end). bfloat16 would work the same way, but the ONNX
  // reference rounds every step to bfloat16, 1 ulp (0.4-0.8%) away from a
  // once-rounded result, so its conformance cannot check it yet.
  if (failed(checkAttentionInputTypes()))
    return failure();
  Type outType = input(0)->type().getElementType();
  Type f32 = builder.getF32Type();

  int64_t qRank = input(0)->type().getRank();
  FailureOr<Value> q = attentionHeads(0, qHeads, "q_num_heads");
  if (failed(q))
    return failure();
  FailureOr<Value> k = attentionHeads(1, kvHeads, "kv_num_heads");
  if (failed(k))
    return failure();
  FailureOr<Value> v = attentionHeads(2, kvHeads, "kv_num_heads");
  if (failed(v))
    return failure();
  Value key = *k, value = *v;
  int64_t past = 0;
  if (hasInput(4) && failed(prependPastKV(key, value, past)))
    return failure();

  ArrayRef<int64_t> qs = cast<RankedTensorType>(q->getType()).getShape();
  ArrayRef<int64_t> ks = cast<RankedTensorType>(key.getType()).getShape();
  ArrayRef<int64_t> vs = cast<RankedTensorType>(value.getType()).getShape();
  int64_t batch = qs[0], hq = qs[1], sq = qs[2], d = qs[3];
  int64_t hkv = ks[1], skv = ks[2], dv = vs[3];
  if (ks[0] != batch || vs[0] != batch || vs[1] != hkv || vs[2] != skv ||
      ks[3] != d)
    return nodeError() << "Q [batch, heads, sequence, head_size] = "
                       << shapeStr(qs) << ", K = " << shapeStr(ks)
                       << " and V = " << shapeStr(vs)
                       << " disagree: K and V need Q's batch, one head count "
                          "and one sequence length, K Q's head size";
  if (hkv <= 0 || hq % hkv != 0)
    return nodeError() << "Q's " << hq << " heads are not a multiple of K/V's "
                       << hkv << " heads";
  // Present key/value: K and V with the past prepended, [B, Hkv, T, D].
  if (failed(define(1, key)) || failed(define(2, value)))
    return failure();

  // The common forms go to the fused op (no soft-cap, window, external
  // cache or scores output); it reads f16, computes in f32, rounds Y once.
  double scale = hasScale ? double(scaleAttr) : 1.0 / std::sqrt(double(d));
  SmallVector<int64_t> scoresShape = {batch, hq, sq, skv};
  bool wantsScores = node->output_size() > 3 && !node->output(3).empty();
  bool window = leftWindow >= 0 || rightWindow >= 0;
  // A float mask computed from a variable may be a trained score bias,
  // which the fused op gives no gradient: the decomposition keeps it.
  Value mask;
  bool maskMayTrain = false;
  if (hasInput(3) && softcap == 0.0f && !window && !nonpad && !wantsScores) {
    FailureOr<Value> m = attnMaskOperand(skv, scoresShape);
    if (failed(m))
      return failure();
    mask = *m;
    maskMayTrain =
        !cast<RankedTensorType>(mask.getType()).getElementType().isInteger(1) &&
        readsVariable(mask);
  }
  // ONNX aligns is_causal at the past's length, dlgraph.attention at the
  // bottom right (j <= i + Skv - Sq): the same when Skv = past + Sq.
  bool causalAligned = isCausal == 0 || past + sq == skv;
  if (softcap == 0.0f && !window && !nonpad && !wantsScores && !maskMayTrain &&
      causalAligned)
    return defineFusedAttention(*q, key, value, mask, scale, isCausal != 0,
                                qRank == 3);

  // Grouped-query attention: query head h reads K/V head h / g, g = Hq /
  // Hkv. The g query heads of one K/V head are one more batch dim that the
  // K/V operands of the two matmuls broadcast over ([B, Hkv, g, S, D] against
  // [B, Hkv, 1, T, D]), so the repeated heads are never materialized.
  int64_t g = hq / hkv;
  bool grouped = g > 1;
  Value query = castTo(builder, nodeLoc, *q, f32);
  key = castTo(builder, nodeLoc, key, f32);
  value = castTo(builder, nodeLoc, value, f32);
  if (grouped) {
    query = reshaped(builder, nodeLoc, query, {batch, hkv, g, sq, d});
    key = reshaped(builder, nodeLoc, key, {batch, hkv, 1, skv, d});
    value = reshaped(builder, nodeLoc, value, {batch, hkv, 1, skv, dv});
  }
  int64_t rank = grouped ? 5 : 4;
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 1], perm[rank - 2]);

  Value kT = permute(builder, nodeLoc, key, perm);
  Value scores = gr::MatMulOp::create(builder, nodeLoc, query, kT);
  scores = gr::MulOp::create(builder, nodeLoc, scores,
                             splatOf(RankedTensorType::get({}, f32), scale));
  // The scores at each stage qk_matmul_output_mode can ask for.
  Value rawScores = scores;
  // A rank-0 fill broadcasts in the select without a full-size splat.
  Value negInf = splatOf(RankedTensorType::get({}, f32),
                         -std::numeric_limits<double>::infinity());
  // Soft-capping (Gemma 2) comes before the masks, which stay -inf.
  if (softcap > 0.0f) {
    Value cap = splatOf(RankedTensorType::get({}, f32), softcap);
    scores = gr::MulOp::create(
        builder, nodeLoc,
        gr::TanhOp::create(builder, nodeLoc,
                           gr::DivOp::create(builder, nodeLoc, scores, cap)),
        cap);
  }
  Value cappedScores = scores;

  // Causal and sliding-window masks relate query i (at absolute position
  // offset + i) and key j through diff = offset + i - j: causal keeps
  // diff >= 0, the window -right_window_size <= diff <= left_window_size.
  // The offset is the past's length (known here) or, with nonpad_kv_seqlen
  // (an external cache), nonpad_kv_seqlen[b] - Sq per batch, known at run
  // time only.
  auto keeps = [&](int64_t diff) {
    return (!isCausal || diff >= 0) && (leftWindow < 0 || diff <= leftWindow) &&
           (rightWindow < 0 || -diff <= rightWindow);
  };
  if ((isCausal || window) && !nonpad) {
    auto maskType = RankedTensorType::get({sq, skv}, builder.getI1Type());
    if (boundedNumElements(maskType.getShape(), kMaxFoldElements) < 0)
      return nodeError() << "a causal or sliding-window mask of " << sq << " x "
                         << skv
                         << " elements is beyond the importer's constant "
                            "limit of "
                         << kMaxFoldElements << " elements";
    SmallVector<bool> keep(sq * skv);
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < skv; ++j)
        keep[i * skv + j] = keeps(past + i - j);
    Value mask = gr::ConstantOp::create(
        builder, nodeLoc,
        cast<ElementsAttr>(DenseElementsAttr::get(maskType, ArrayRef(keep))));
    scores = gr::SelectOp::create(builder, nodeLoc, mask, scores, negInf);
  }
  if (nonpad) {
    FailureOr<Value> masked =
        nonpadKVMask(scores, negInf, batch, sq, skv, isCausal != 0, leftWindow,
                     rightWindow, grouped);
    if (failed(masked))
      return failure();
    scores = *masked;
  }
  if (hasInput(3)) {
    FailureOr<Value> masked =
        applyAttnMask(scores, negInf, skv, scoresShape, grouped, hkv, g);
    if (failed(masked))
      return failure();
    scores = *masked;
  }
  Value maskedScores = scores;
  Value probs = gr::SoftmaxOp::create(builder, nodeLoc, scores,
                                      builder.getI64IntegerAttr(rank - 1));
  if (isCausal || window || nonpad || hasInput(3)) {
    // A fully masked query row (every score -inf) has NaN probabilities;
    // ONNX (1.23 errata) defines its output as zeros. The select keeps
    // NaN out of the backward too when the masks are boolean or causal.
    Value isNumber =
        gr::CompareOp::create(builder, nodeLoc, "eq", probs, probs);
    probs = gr::SelectOp::create(builder, nodeLoc, isNumber, probs,
                                 splatOf(RankedTensorType::get({}, f32), 0.0));
  }
  // Output 3, qk_matmul_output: the scores at the stage the mode names, at
  // Q's element type.
  if (node->output_size() > 3 && !node->output(3).empty()) {
    Value stage[] = {rawScores, cappedScores, maskedScores, probs};
    Value qk = reshaped(builder, nodeLoc, stage[qkMode], scoresShape);
    if (failed(define(3, castTo(builder, nodeLoc, qk, outType))))
      return failure();
  }
  Value y = gr::MatMulOp::create(builder, nodeLoc, probs, value);
  y = reshaped(builder, nodeLoc, y, {batch, hq, sq, dv});
  if (qRank == 3) {
    y = permute(builder, nodeLoc, y, {0, 2, 1, 3});
    y = reshaped(builder, nodeLoc, y, {batch, sq, hq * dv});
  }
  return define(0, castTo(builder, nodeLoc, y, outType));
}

//===----------------------------------------------------------------------===//
// RMSNormalization
//===----------------------------------------------------------------------===//

LogicalResult Importer::rmsNormalization() {
  int64_t axis = attrInt("axis", -1);
  float eps = attrFloat("epsilon", 1e-5f);
  int64_t stashType = attrInt("stash_type", 1);
  if (attrFailed)
    return failure();
  // The statistics are computed in f32 (the only element type taken here).
  if (stashType != onnx::TensorProto_DataType_FLOAT)
    return nodeError() << "attribute stash_type = " << stashType
                       << " is not supported; supported: 1 (float)";
  Value x = operand(0), scale = x ? operand(1) : Value();
  if (!scale)
    return failure();
  auto t = cast<RankedTensorType>(x.getType());
  int64_t rank = t.getRank();
  if (axis < -rank || axis >= rank)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  auto st = cast<RankedTensorType>(scale.getType());
  if (!semantics::broadcastsTo(st.getShape(), t.getShape()))
    return nodeError() << "scale of shape " << shapeStr(st.getShape())
                       << " does not broadcast to X of shape "
                       << shapeStr(t.getShape());
  SmallVector<int64_t> axes;
  for (int64_t i = axis; i < rank; ++i)
    axes.push_back(i);
  // y = x * rsqrt(mean(x^2) + eps) * scale.
  Value sq = gr::MulOp::create(builder, nodeLoc, x, x);
  Value ms = reduceOver<gr::ReduceMeanOp>(sq, axes, /*keepdims=*/true);
  Value inv = gr::RsqrtOp::create(
      builder, nodeLoc,
      gr::AddOp::create(builder, nodeLoc, ms, splatLike(ms, eps)));
  Value y = gr::MulOp::create(builder, nodeLoc, x, inv);
  return define(0, gr::MulOp::create(builder, nodeLoc, y, scale));
}

//===----------------------------------------------------------------------===//
// RotaryEmbedding
//===----------------------------------------------------------------------===//

LogicalResult Importer::rotaryEmbedding() {
  int64_t interleaved = attrInt("interleaved", 0);
  int64_t numHeads = attrInt("num_heads", 0);
  int64_t rotaryDim = attrInt("rotary_embedding_dim", 0);
  if (attrFailed)
    return failure();
  if (interleaved != 0 && interleaved != 1)
    return nodeError() << "attribute interleaved = " << interleaved
                       << " is not supported; supported: 0, 1";
  Value x = operand(0);
  Value cosCache = x ? operand(1) : Value();
  Value sinCache = cosCache ? operand(2) : Value();
  if (!sinCache)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  ArrayRef<int64_t> xs = xt.getShape();
  // Work on X as [B, H, S, D] (4-D input) or [B, S, H, D] (3-D input split
  // into num_heads heads); |seqAxis| is S's axis.
  Value x4 = x;
  int64_t seqAxis = 2;
  if (xt.getRank() == 3) {
    if (numHeads <= 0 || xs[2] % numHeads != 0)
      return nodeError() << "3-D input " << shapeStr(xs)
                         << " needs attribute num_heads > 0 dividing " << xs[2]
                         << "; got " << numHeads;
    x4 = reshaped(builder, nodeLoc, x,
                  {xs[0], xs[1], numHeads, xs[2] / numHeads});
    seqAxis = 1;
  } else if (xt.getRank() != 4) {
    return nodeError() << "input of shape " << shapeStr(xs)
                       << " is not supported; expected [batch, heads, "
                          "sequence, head_size] or [batch, sequence, hidden]";
  }
  ArrayRef<int64_t> s4 = cast<RankedTensorType>(x4.getType()).getShape();
  int64_t batch = s4[0], seq = s4[seqAxis], headSize = s4[3];
  if (rotaryDim == 0)
    rotaryDim = headSize;
  if (rotaryDim < 0 || rotaryDim > headSize || rotaryDim % 2 != 0)
    return nodeError() << "rotary_embedding_dim = " << rotaryDim
                       << " must be even and at most the head size "
                       << headSize;
  int64_t half = rotaryDim / 2;

  // cos/sin as [B, S, half]: looked up by position_ids ([B, S]) in
  // [max_position, half] caches, or given per position.
  Value cs[2] = {cosCache, sinCache};
  for (Value &c : cs) {
    if (hasInput(3)) {
      Slot *ids = input(3);
      if (!ids)
        return failure();
      RankedTensorType it = ids->type();
      if (!it.getElementType().isInteger(64) &&
          !it.getElementType().isInteger(32))
        return nodeError() << "position_ids has element type "
                           << it.getElementType() << "; supported: int64, "
                           << "int32";
      if (it.getShape() != ArrayRef<int64_t>{batch, seq})
        return nodeError() << "position_ids of shape "
                           << shapeStr(it.getShape()) << " must be [" << batch
                           << ", " << seq << "]";
      auto ct = cast<RankedTensorType>(c.getType());
      if (ct.getRank() != 2 || ct.getDimSize(1) != half)
        return nodeError() << "with position_ids, cos_cache and sin_cache "
                              "must be [max_position, "
                           << half << "], got " << shapeStr(ct.getShape());
      c = gr::GatherOp::create(builder, nodeLoc, c, materialize(*ids),
                               builder.getI64IntegerAttr(0));
    } else {
      auto ct = cast<RankedTensorType>(c.getType());
      if (ct.getRank() != 3 || ct.getDimSize(0) != batch ||
          ct.getDimSize(1) != seq || ct.getDimSize(2) != half)
        return nodeError() << "without position_ids, cos_cache and "
                              "sin_cache must be ["
                           << batch << ", " << seq << ", " << half << "], got "
                           << shapeStr(ct.getShape());
    }
    // Broadcast over heads: [B, 1, S, half] (4-D) or [B, S, 1, half] (3-D).
    c = reshaped(builder, nodeLoc, c,
                 seqAxis == 2 ? SmallVector<int64_t>{batch, 1, seq, half}
                              : SmallVector<int64_t>{batch, seq, 1, half});
  }
  Value cosv = cs[0], sinv = cs[1];

  // The rotated pairs: (x[2i], x[2i+1]) interleaved, else (x[i],
  // x[i + half]).
  Value x1 = interleaved ? sliceLast(builder, nodeLoc, x4, 0, 2, half)
                         : sliceLast(builder, nodeLoc, x4, 0, 1, half);
  Value x2 = interleaved ? sliceLast(builder, nodeLoc, x4, 1, 2, half)
                         : sliceLast(builder, nodeLoc, x4, half, 1, half);
  Value real = gr::SubOp::create(builder, nodeLoc,
                                 gr::MulOp::create(builder, nodeLoc, cosv, x1),
                                 gr::MulOp::create(builder, nodeLoc, sinv, x2));
  Value imag = gr::AddOp::create(builder, nodeLoc,
                                 gr::MulOp::create(builder, nodeLoc, sinv, x1),
                                 gr::MulOp::create(builder, nodeLoc, cosv, x2));
  SmallVector<int64_t> rotShape(s4);
  rotShape.back() = rotaryDim;
  Value rotated;
  if (interleaved) {
    SmallVector<int64_t> pairShape(s4);
    pairShape.back() = half;
    pairShape.push_back(1);
    Value r = reshaped(builder, nodeLoc, real, pairShape);
    Value i = reshaped(builder, nodeLoc, imag, pairShape);
    rotated = reshaped(builder, nodeLoc, concatLast(builder, nodeLoc, {r, i}),
                       rotShape);
  } else {
    rotated = concatLast(builder, nodeLoc, {real, imag});
  }
  Value y = rotated;
  if (rotaryDim < headSize)
    y = concatLast(builder, nodeLoc,
                   {rotated, sliceLast(builder, nodeLoc, x4, rotaryDim, 1,
                                       headSize - rotaryDim)});
  return define(0, reshaped(builder, nodeLoc, y, xs));
}

//===----------------------------------------------------------------------===//
// SwiGLU
//===----------------------------------------------------------------------===//

LogicalResult Importer::swiGLU() {
  float alpha = attrFloat("alpha", 1.0f);
  if (attrFailed)
    return failure();
  Value a = floatOperand(0), b = a ? floatOperand(1) : Value();
  if (!b)
    return failure();
  auto at = cast<RankedTensorType>(a.getType()),
       bt = cast<RankedTensorType>(b.getType());
  // No broadcasting: the gate and the value have one shape and type.
  if (at != bt)
    return nodeError() << "A " << shapeStr(at.getShape()) << " of "
                       << elementTypeName(at.getElementType()) << " and B "
                       << shapeStr(bt.getShape()) << " of "
                       << elementTypeName(bt.getElementType())
                       << " must have one shape and element type";
  // f16/bf16: computed in f32 and rounded once, as the activations are.
  Type et = at.getElementType();
  bool narrow = isLowPrecisionFloat(et);
  if (narrow) {
    a = castTo(builder, nodeLoc, a, builder.getF32Type());
    b = castTo(builder, nodeLoc, b, builder.getF32Type());
  }
  Value gate = gr::SigmoidOp::create(
      builder, nodeLoc,
      gr::MulOp::create(builder, nodeLoc, a, splatLike(a, alpha)));
  Value y = gr::MulOp::create(builder, nodeLoc,
                              gr::MulOp::create(builder, nodeLoc, a, gate), b);
  return define(0, castTo(builder, nodeLoc, y, et));
}

//===----------------------------------------------------------------------===//
// CausalConvWithState
//===----------------------------------------------------------------------===//

/// Whether |et| is an element type the sequence-model ops take: f32, or
/// f16/bf16 computed in f32.
static bool takesSequenceType(Type et) {
  return et.isF32() || isLowPrecisionFloat(et);
}

LogicalResult Importer::causalConvWithState() {
  std::string activation = attrString("activation", "none");
  if (attrFailed)
    return failure();
  if (activation != "none" && activation != "silu" && activation != "swish")
    return nodeError() << "attribute activation = '" << activation
                       << "' is not supported; supported: none, silu, swish";
  Slot *xs = input(0);
  if (!xs)
    return failure();
  Type et = xs->type().getElementType();
  for (int i : {0, 1, 2, 3}) {
    if (!hasInput(i))
      continue;
    Slot *s = input(i);
    if (!s)
      return failure();
    Type it = s->type().getElementType();
    if (!takesSequenceType(it) || it != et)
      return nodeError() << "input " << i << " ('" << node->input(i)
                         << "') has element type " << elementTypeName(it)
                         << "; supported: float (f32), float16, bfloat16, "
                            "one type for every input";
  }
  Value x = materialize(*xs), w = materialize(*input(1));
  ArrayRef<int64_t> xsh = cast<RankedTensorType>(x.getType()).getShape();
  ArrayRef<int64_t> wsh = cast<RankedTensorType>(w.getType()).getShape();
  if (xsh.size() != 3 || wsh.size() != 3 || wsh[0] != xsh[1] || wsh[1] != 1 ||
      wsh[2] < 1)
    return nodeError() << "input " << shapeStr(xsh) << " and weight "
                       << shapeStr(wsh)
                       << " must be [batch, channels, length] and "
                          "[channels, 1, kernel_size]";
  int64_t batch = xsh[0], channels = xsh[1], length = xsh[2], k = wsh[2];
  auto xt = cast<RankedTensorType>(x.getType());
  // The causal left padding: the carried state, or zeros.
  Value past;
  if (hasInput(3)) {
    past = materialize(*input(3));
    ArrayRef<int64_t> ps = cast<RankedTensorType>(past.getType()).getShape();
    if (ps != ArrayRef<int64_t>{batch, channels, k - 1})
      return nodeError() << "past_state of shape " << shapeStr(ps)
                         << " must be [" << batch << ", " << channels << ", "
                         << k - 1 << "] (batch, channels, kernel_size - 1)";
  } else if (k > 1) {
    past = splatOf(xt.clone({batch, channels, k - 1}), 0.0);
  }
  Value padded = x;
  if (k > 1)
    padded = concatLast(builder, nodeLoc, {past, x});
  // present_state: the last k - 1 positions of the padded sequence.
  if (node->output_size() > 1 && !node->output(1).empty()) {
    // A kernel of size 1 carries no state: [B, C, 0].
    Value present = k == 1
                        ? splatOf(xt.clone({batch, channels, 0}), 0.0)
                        : sliceLast(builder, nodeLoc, padded, length, 1, k - 1);
    if (failed(define(1, present)))
      return failure();
  }
  // The depthwise convolution as a 2-D one over [B, C, 1, L + k - 1] with
  // group = C, computed in f32.
  Type f32 = builder.getF32Type();
  Value in4 = reshaped(builder, nodeLoc, castTo(builder, nodeLoc, padded, f32),
                       {batch, channels, 1, length + k - 1});
  Value w4 = reshaped(builder, nodeLoc, castTo(builder, nodeLoc, w, f32),
                      {channels, 1, 1, k});
  Value bias;
  if (hasInput(2)) {
    bias = castTo(builder, nodeLoc, materialize(*input(2)), f32);
    ArrayRef<int64_t> bs = cast<RankedTensorType>(bias.getType()).getShape();
    if (bs != ArrayRef<int64_t>{channels})
      return nodeError() << "bias of shape " << shapeStr(bs) << " must be ["
                         << channels << "]";
  }
  Value y = gr::ConvOp::create(builder, nodeLoc, in4, w4, bias,
                               builder.getDenseI64ArrayAttr({1, 1}),
                               builder.getDenseI64ArrayAttr({0, 0, 0, 0}),
                               builder.getDenseI64ArrayAttr({1, 1}),
                               builder.getI64IntegerAttr(channels));
  y = reshaped(builder, nodeLoc, y, {batch, channels, length});
  if (activation != "none") // SiLU (Swish with alpha 1): y * sigmoid(y).
    y = gr::MulOp::create(builder, nodeLoc, y,
                          gr::SigmoidOp::create(builder, nodeLoc, y));
  return define(0, castTo(builder, nodeLoc, y, et));
}

//===----------------------------------------------------------------------===//
// LinearAttention
//===----------------------------------------------------------------------===//

/// Step |t| of a [B, T, X] tensor: [B, 1, X].
static Value timeStep(OpBuilder &b, Location loc, Value v, int64_t t) {
  auto type = cast<RankedTensorType>(v.getType());
  ArrayRef<int64_t> s = type.getShape();
  if (s[1] == 1)
    return v;
  return gr::SliceOp::create(b, loc, type.clone({s[0], 1, s[2]}), v,
                             b.getDenseI64ArrayAttr({0, t, 0}),
                             b.getDenseI64ArrayAttr({1, 1, 1}));
}

/// The recurrence is unrolled, one group of ops per time step: the graph
/// grows linearly with T, so T is bounded.
static constexpr int64_t kMaxLinearAttentionSteps = 1024;

LogicalResult Importer::linearAttention() {
  int64_t qHeads = attrInt("q_num_heads", 0);
  int64_t kvHeads = attrInt("kv_num_heads", 0);
  float scaleAttr = attrFloat("scale", 0.0f);
  std::string rule = attrString("update_rule", "gated_delta");
  // chunk_size is a tuning hint for chunk-parallel kernels; the result does
  // not depend on it.
  if (attrFailed)
    return failure();
  if (rule != "linear" && rule != "gated" && rule != "delta" &&
      rule != "gated_delta")
    return nodeError() << "attribute update_rule = '" << rule
                       << "' is not supported; supported: linear, gated, "
                          "delta, gated_delta";
  if (qHeads <= 0 || kvHeads <= 0 || qHeads % kvHeads != 0)
    return nodeError() << "attributes q_num_heads = " << qHeads
                       << " and kv_num_heads = " << kvHeads
                       << " must be positive, q_num_heads a multiple of "
                          "kv_num_heads";
  bool gated = rule == "gated" || rule == "gated_delta";
  bool delta = rule == "delta" || rule == "gated_delta";
  if (gated != hasInput(4))
    return nodeError() << "update_rule '" << rule << "' "
                       << (gated ? "needs" : "takes no") << " input 4 (decay)";
  if (delta != hasInput(5))
    return nodeError() << "update_rule '" << rule << "' "
                       << (delta ? "needs" : "takes no") << " input 5 (beta)";
  Slot *qs = input(0);
  if (!qs)
    return failure();
  Type et = qs->type().getElementType();
  for (int i : {0, 1, 2, 3, 4, 5}) {
    if (!hasInput(i))
      continue;
    Slot *s = input(i);
    if (!s)
      return failure();
    Type it = s->type().getElementType();
    // past_state (S) may differ from the others (T).
    if (!takesSequenceType(it) || (i != 3 && it != et))
      return nodeError() << "input " << i << " ('" << node->input(i)
                         << "') has element type " << elementTypeName(it)
                         << "; supported: float (f32), float16, bfloat16, "
                            "one type for query, key, value, decay and beta";
  }
  Type f32 = builder.getF32Type();
  Value q = castTo(builder, nodeLoc, materialize(*qs), f32);
  Value k = castTo(builder, nodeLoc, materialize(*input(1)), f32);
  Value v = castTo(builder, nodeLoc, materialize(*input(2)), f32);
  ArrayRef<int64_t> qsh = cast<RankedTensorType>(q.getType()).getShape();
  ArrayRef<int64_t> ksh = cast<RankedTensorType>(k.getType()).getShape();
  ArrayRef<int64_t> vsh = cast<RankedTensorType>(v.getType()).getShape();
  if (qsh.size() != 3 || ksh.size() != 3 || vsh.size() != 3 ||
      ksh[0] != qsh[0] || vsh[0] != qsh[0] || ksh[1] != qsh[1] ||
      vsh[1] != qsh[1] || qsh[2] % qHeads != 0 ||
      ksh[2] != kvHeads * (qsh[2] / qHeads) || vsh[2] % kvHeads != 0)
    return nodeError() << "query " << shapeStr(qsh) << ", key " << shapeStr(ksh)
                       << " and value " << shapeStr(vsh)
                       << " must be [batch, T, q_num_heads * d_k], [batch, T, "
                          "kv_num_heads * d_k] and [batch, T, kv_num_heads * "
                          "d_v] with q_num_heads = "
                       << qHeads << ", kv_num_heads = " << kvHeads;
  int64_t batch = qsh[0], steps = qsh[1], dk = qsh[2] / qHeads,
          dv = vsh[2] / kvHeads, g = qHeads / kvHeads;
  if (steps > kMaxLinearAttentionSteps)
    return nodeError() << "sequence length " << steps
                       << " is beyond the unrolled recurrence's limit of "
                       << kMaxLinearAttentionSteps << " steps";
  // exp(decay) for every step at once: [B, T, Hkv] (one decay per head) or
  // [B, T, Hkv * d_k] (one per key dimension).
  Value expDecay, beta;
  int64_t decayWidth = 1, betaHeads = 1;
  if (gated) {
    Value decay = castTo(builder, nodeLoc, materialize(*input(4)), f32);
    ArrayRef<int64_t> ds = cast<RankedTensorType>(decay.getType()).getShape();
    if (ds.size() != 3 || ds[0] != batch || ds[1] != steps ||
        (ds[2] != kvHeads && ds[2] != kvHeads * dk))
      return nodeError() << "decay of shape " << shapeStr(ds) << " must be ["
                         << batch << ", " << steps << ", " << kvHeads
                         << "] or [" << batch << ", " << steps << ", "
                         << kvHeads * dk << "]";
    decayWidth = ds[2] / kvHeads;
    expDecay = gr::ExpOp::create(builder, nodeLoc, decay);
  }
  if (delta) {
    beta = castTo(builder, nodeLoc, materialize(*input(5)), f32);
    ArrayRef<int64_t> bs = cast<RankedTensorType>(beta.getType()).getShape();
    if (bs.size() != 3 || bs[0] != batch || bs[1] != steps ||
        (bs[2] != kvHeads && bs[2] != 1))
      return nodeError() << "beta of shape " << shapeStr(bs) << " must be ["
                         << batch << ", " << steps << ", " << kvHeads
                         << " or 1]";
    betaHeads = bs[2];
  }
  // The state S [B, Hkv, d_k, d_v], carried in f32.
  SmallVector<int64_t> stateShape = {batch, kvHeads, dk, dv};
  Type stateType = et;
  Value state;
  if (hasInput(3)) {
    Slot *ps = input(3);
    stateType = ps->type().getElementType();
    if (ps->type().getShape() != ArrayRef<int64_t>(stateShape))
      return nodeError() << "past_state of shape "
                         << shapeStr(ps->type().getShape()) << " must be "
                         << shapeStr(stateShape)
                         << " (batch, kv_num_heads, d_k, d_v)";
    state = castTo(builder, nodeLoc, materialize(*ps), f32);
  } else {
    state = splatOf(RankedTensorType::get(stateShape, f32), 0.0);
  }
  // One step t, in [B, T, H, D] order sliced at t (a [B, 1, H, D] slice is
  // [B, H, 1, D] by a reshape):
  //   S = exp(g_t) S                          (gated)
  //   v_t = beta_t (v_t - k_t S)              (delta: k_t as a row)
  //   S = S + k_tᵀ v_t                        (outer product)
  //   o_t = q_t S                             (g query heads per K/V head)
  // and the output o * scale. Each step is O(B Hkv d_k d_v) work.
  SmallVector<Value> outs;
  for (int64_t t = 0; t < steps; ++t) {
    auto at = [&](Value x, ArrayRef<int64_t> shape) {
      return reshaped(builder, nodeLoc, timeStep(builder, nodeLoc, x, t),
                      shape);
    };
    Value vt = at(v, {batch, kvHeads, 1, dv});
    if (gated)
      state = gr::MulOp::create(builder, nodeLoc, state,
                                at(expDecay, {batch, kvHeads, decayWidth, 1}));
    if (delta) {
      Value kRow = at(k, {batch, kvHeads, 1, dk});
      Value retrieved = gr::MatMulOp::create(builder, nodeLoc, kRow, state);
      vt = gr::MulOp::create(
          builder, nodeLoc, at(beta, {batch, betaHeads, 1, 1}),
          gr::SubOp::create(builder, nodeLoc, vt, retrieved));
    }
    Value kCol = at(k, {batch, kvHeads, dk, 1});
    state = gr::AddOp::create(builder, nodeLoc, state,
                              gr::MulOp::create(builder, nodeLoc, kCol, vt));
    Value qt = at(q, {batch, kvHeads, g, dk});
    Value ot = gr::MatMulOp::create(builder, nodeLoc, qt, state);
    outs.push_back(reshaped(builder, nodeLoc, ot, {batch, 1, qHeads * dv}));
  }
  Value out = outs.size() == 1
                  ? outs[0]
                  : Value(gr::ConcatOp::create(builder, nodeLoc, outs,
                                               builder.getI64IntegerAttr(1)));
  double scale =
      scaleAttr != 0.0f ? double(scaleAttr) : 1.0 / std::sqrt(double(dk));
  out = gr::MulOp::create(builder, nodeLoc, out,
                          splatOf(RankedTensorType::get({}, f32), scale));
  if (failed(define(1, castTo(builder, nodeLoc, state, stateType))))
    return failure();
  return define(0, castTo(builder, nodeLoc, out, et));
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

ArrayRef<OpMapping> Importer::attentionOps() {
  static const OpMapping ops[] = {
      // Versions 24 (nonpad_kv_seqlen) and 25 (sliding windows) are read.
      {"Attention", 23, &Importer::attention, 25},
      {"CausalConvWithState", 27, &Importer::causalConvWithState},
      {"LinearAttention", 27, &Importer::linearAttention},
      {"RMSNormalization", 23, &Importer::rmsNormalization},
      {"RotaryEmbedding", 23, &Importer::rotaryEmbedding},
      {"SwiGLU", 28, &Importer::swiGLU},
  };
  return ops;
}
