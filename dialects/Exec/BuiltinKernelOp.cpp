//===- BuiltinKernelOp.cpp - dlexec.builtin_kernel against its template ---===//
//
// The template's row (BuiltinTemplates.def) gives the operand counts;
// getParams reads the family's attributes into typed parameters
// (BuiltinParams.h), and the family's check below gives the ranks, shapes
// and dtypes, so that a verified op always instantiates: its codegen builder
// (codegen/BuiltinKernels.cpp) takes the same parameters from getParams.
//
//===----------------------------------------------------------------------===//
#include "dialects/Exec/AttrReaders.h"
#include "dialects/Exec/ExecOps.h"
#include "runtime/schema/Semantics/Attention.h"
#include "runtime/schema/Semantics/Broadcast.h"

#include <cmath>

using namespace mlir;
using namespace dlc::exec;

namespace {

MemRefType typeOf(Value v) { return cast<MemRefType>(v.getType()); }

/// The element types codegen can store (f32, f64, i64 and index, i32, i1).
bool isStorable(Type t) {
  return t.isF32() || t.isF64() || t.isIndex() || t.isInteger(64) ||
         t.isInteger(32) || t.isInteger(1);
}

bool isHalfFloat(Type t) { return t.isF16() || t.isBF16(); }

/// The data element type of a float template: f32 or f64, and f16 or bf16
/// where the template's row allows them (halfFloats).
LogicalResult floatElementType(BuiltinKernelOp op, Value v) {
  Type elem = typeOf(v).getElementType();
  if (elem.isF32() || elem.isF64())
    return success();
  const BuiltinTemplateInfo *info = op.getTemplateInfo();
  if (info && info->halfFloats && isHalfFloat(elem))
    return success();
  if (info && info->halfFloats)
    return op.emitOpError()
           << "template '" << op.getTemplateName()
           << "' supports f32, f64, f16 and bf16, got " << elem;
  return op.emitOpError() << "template '" << op.getTemplateName()
                          << "' supports f32 and f64, got " << elem;
}

/// The rule a resize op breaks with missing attributes or mismatched
/// operands.
constexpr const char *kResizeRule =
    "expects operands of one rank and element type and the string attributes "
    "mode, coordinate_transformation_mode, nearest_mode and one f64 scale per "
    "axis";

// The family readers of getParams: each reads its family's attributes
// (AttrReaders.h, so that every spelling of a list reads alike), applies the
// rules the attributes alone decide, and emits the verifier's error at |op|
// otherwise. Rules that relate an attribute to the operands (an axis to a
// rank, the scales to the rank) or to the template (average pooling's
// dilations) stay in the verifier, after its shape and dtype checks.

LogicalResult readPool(BuiltinKernelOp op, PoolParams &p) {
  auto ks = getIntList(op, "kernel_shape", {}, 2);
  if (failed(ks))
    return failure();
  auto strides = getIntList(op, "strides", {1, 1}, 2);
  auto pads = getIntList(op, "pads", {0, 0, 0, 0}, 4);
  auto dil = getIntList(op, "dilations", {1, 1}, 2);
  auto cip = getInt(op, "count_include_pad", 0);
  if (failed(strides) || failed(pads) || failed(dil) || failed(cip))
    return failure();
  llvm::copy(*ks, p.kernelShape.begin());
  llvm::copy(*strides, p.strides.begin());
  llvm::copy(*pads, p.pads.begin());
  llvm::copy(*dil, p.dilations.begin());
  p.countIncludePad = *cip != 0;
  bool positive =
      llvm::all_of(p.kernelShape, [](int64_t v) { return v > 0; }) &&
      llvm::all_of(p.strides, [](int64_t v) { return v > 0; }) &&
      llvm::all_of(p.dilations, [](int64_t v) { return v > 0; }) &&
      llvm::all_of(p.pads, [](int64_t v) { return v >= 0; });
  if (!positive)
    return op.emitOpError() << "pooling needs positive kernel_shape, "
                               "strides and dilations and non-negative pads";
  return success();
}

LogicalResult readLayerNorm(BuiltinKernelOp op, LayerNormParams &p) {
  auto eps = op->getAttrOfType<FloatAttr>("epsilon");
  if (!eps || !eps.getType().isF32() || !(eps.getValueAsDouble() >= 0.0) ||
      !std::isfinite(eps.getValueAsDouble()))
    return op.emitOpError() << "needs an f32 attribute 'epsilon' >= 0";
  p.epsilon = eps.getValueAsDouble();
  return success();
}

LogicalResult readCrossEntropy(BuiltinKernelOp op, CrossEntropyParams &p) {
  auto smoothing = getFloat(op, "label_smoothing", 0.0f);
  if (failed(smoothing))
    return failure();
  if (!(*smoothing >= 0.0f && *smoothing <= 1.0f))
    return op.emitOpError()
           << "label_smoothing must be in [0, 1], got " << *smoothing;
  p.labelSmoothing = *smoothing;
  return success();
}

LogicalResult readDropout(BuiltinKernelOp op, DropoutParams &p) {
  auto ratio = op->getAttrOfType<FloatAttr>("ratio");
  auto seed = op->getAttrOfType<IntegerAttr>("seed");
  if (!ratio || !seed)
    return op.emitOpError()
           << "needs attributes 'ratio' (f32) and 'seed' (i64)";
  p.ratio = (float)ratio.getValueAsDouble();
  if (!(p.ratio >= 0.0f && p.ratio < 1.0f))
    return op.emitOpError() << "ratio must be in [0, 1), got " << p.ratio;
  p.seed = seed.getInt();
  return success();
}

LogicalResult readResize(BuiltinKernelOp op, ResizeParams &p) {
  auto mode = op->getAttrOfType<StringAttr>("mode");
  auto coord = op->getAttrOfType<StringAttr>("coordinate_transformation_mode");
  auto nearest = op->getAttrOfType<StringAttr>("nearest_mode");
  auto scales = op->getAttrOfType<DenseF64ArrayAttr>("scales");
  if (!mode || !coord || !nearest || !scales)
    return op.emitOpError() << kResizeRule;
  p.mode = mode.getValue().str();
  p.coordinateTransformationMode = coord.getValue().str();
  p.nearestMode = nearest.getValue().str();
  p.scales.assign(scales.asArrayRef().begin(), scales.asArrayRef().end());
  return success();
}

LogicalResult verifyPool(BuiltinKernelOp op, bool grad, bool isMax) {
  // The argmax forms: `x -> indices` and `indices, dy -> dx`, with i32
  // indices of the pooled shape; x (or dx) and y (or dy) as below.
  bool indices = op.getTemplateName().contains("indices");
  Value x = indices && grad ? op.getOutputs()[0] : op.getInputs()[0];
  Value y = grad ? op.getInputs()[1] : op.getOutputs()[0];
  if (indices) {
    Value idx = grad ? op.getInputs()[0] : op.getOutputs()[0];
    MemRefType it = typeOf(idx);
    if (!it.getElementType().isInteger(32) ||
        (grad && it.getShape() != typeOf(y).getShape()))
      return op.emitOpError()
             << "indices must be i32" << (grad ? " with the shape of dy" : "")
             << ", got " << it;
    if (!grad)
      y = idx;
  }
  MemRefType xt = typeOf(x), yt = typeOf(y);
  if (xt.getRank() != 4 || yt.getRank() != 4 ||
      xt.getDimSize(0) != yt.getDimSize(0) ||
      xt.getDimSize(1) != yt.getDimSize(1))
    return op.emitOpError() << "pooling expects [N, C, H, W] operands with "
                               "equal N and C, got "
                            << xt << " and " << yt;
  FailureOr<BuiltinKernelParams> params = op.getParams();
  if (failed(params))
    return failure();
  const PoolParams &p = params->pool;
  if (failed(floatElementType(op, x)))
    return failure();
  if (!isMax && (p.dilations[0] != 1 || p.dilations[1] != 1))
    return op.emitOpError() << "average pooling supports dilations 1 only";
  if (grad && !indices && op.getOutputs()[0].getType() != x.getType())
    return op.emitOpError() << "dx must have the type of x, " << x.getType();
  if ((grad || !indices) && yt.getElementType() != xt.getElementType())
    return op.emitOpError() << "operands must share the element type";
  return success();
}

LogicalResult verifySoftmax(BuiltinKernelOp op) {
  Value x = op.getInputs()[0];
  if (op.getOutputs()[0].getType() != x.getType())
    return op.emitOpError() << "y must have the type of x, " << x.getType();
  if (failed(floatElementType(op, x)))
    return failure();
  FailureOr<BuiltinKernelParams> params = op.getParams();
  if (failed(params))
    return failure();
  int64_t axis = params->softmax.axis, rank = typeOf(x).getRank(),
          a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    return op.emitOpError()
           << "axis " << axis << " is out of range for " << x.getType();
  return success();
}

/// layer_norm: x [..., N] f32/f64, scale and bias [N], y of x's type, mean
/// and rstd one element per row of N (x's shape with the last dimension 1,
/// or any shape of as many elements), all of x's element type; `epsilon` an
/// f32 >= 0. layer_norm_train also writes the centered values x - mean and
/// the normalized values (x - mean) * rstd, both of x's type.
LogicalResult verifyLayerNorm(BuiltinKernelOp op) {
  Value x = op.getInputs()[0];
  if (failed(floatElementType(op, x)))
    return failure();
  MemRefType xt = typeOf(x);
  if (xt.getRank() < 1 || xt.getNumElements() == 0)
    return op.emitOpError() << "expects a non-empty x [..., N], got " << xt;
  int64_t n = xt.getShape().back(), rows = xt.getNumElements() / n;
  Type elem = xt.getElementType();
  for (Value p : op.getInputs().drop_front()) {
    MemRefType pt = typeOf(p);
    if (pt.getRank() != 1 || pt.getDimSize(0) != n ||
        pt.getElementType() != elem)
      return op.emitOpError() << "scale and bias must be [" << n << "] of "
                              << elem << ", got " << pt;
  }
  if (op.getOutputs()[0].getType() != xt)
    return op.emitOpError() << "y must have the type of x, " << xt;
  for (Value s : op.getOutputs().slice(1, 2)) {
    MemRefType st = typeOf(s);
    if (st.getNumElements() != rows || st.getElementType() != elem)
      return op.emitOpError() << "mean and rstd must hold " << rows
                              << " elements of " << elem << " (one a row), got "
                              << st;
  }
  for (Value v : op.getOutputs().drop_front(3))
    if (v.getType() != xt)
      return op.emitOpError()
             << "the centered and normalized values must have the type of x, "
             << xt << ", got " << v.getType();
  return success(succeeded(op.getParams()));
}

LogicalResult verifyCrossEntropy(BuiltinKernelOp op, bool grad) {
  Value logits = op.getInputs()[0], labels = op.getInputs()[1];
  if (failed(floatElementType(op, logits)))
    return failure();
  if (failed(op.getParams()))
    return failure();
  MemRefType lt = typeOf(logits), bt = typeOf(labels);
  if (lt.getRank() < 1 || bt.getRank() != lt.getRank() - 1 ||
      lt.getShape().drop_back() != bt.getShape())
    return op.emitOpError() << "expects logits [..., C] and labels [...], got "
                            << lt << " and " << bt;
  if (!bt.getElementType().isInteger(64) && !bt.getElementType().isInteger(32))
    return op.emitOpError()
           << "labels must be i64 or i32, got " << bt.getElementType();
  Value out = op.getOutputs()[0];
  // f16/bf16 logits: the loss and its gradient seed are f32.
  Type lossType = lt.getElementType();
  if (lossType.isF16() || lossType.isBF16())
    lossType = Float32Type::get(op.getContext());
  if (grad) {
    MemRefType gt = typeOf(op.getInputs()[2]);
    if (gt.getRank() != 0 || gt.getElementType() != lossType)
      return op.emitOpError() << "loss_grad must be a rank-0 " << lossType
                              << " memref, got " << gt;
    if (out.getType() != logits.getType())
      return op.emitOpError() << "dlogits must have the type of logits, " << lt;
    return success();
  }
  MemRefType ot = typeOf(out);
  if (ot.getRank() != 0 || ot.getElementType() != lossType)
    return op.emitOpError()
           << "loss must be a rank-0 " << lossType << " memref, got " << ot;
  return success();
}

LogicalResult verifyDropout(BuiltinKernelOp op) {
  Value x = op.getInputs()[0];
  if (failed(floatElementType(op, x)))
    return failure();
  MemRefType xt = typeOf(x), st = typeOf(op.getInputs()[1]),
             yt = typeOf(op.getOutputs()[0]), mt = typeOf(op.getOutputs()[1]);
  if (st.getRank() != 0 || !st.getElementType().isF32() || yt != xt ||
      mt.getShape() != xt.getShape() || !mt.getElementType().isInteger(1))
    return op.emitOpError() << "expects X, a rank-0 f32 step, Y of X's type "
                               "and an i1 mask of X's shape";
  return success(succeeded(op.getParams()));
}

LogicalResult verifyGather(BuiltinKernelOp op, bool grad, bool elements) {
  Value idx = op.getInputs()[grad ? 0 : 1];
  Value data = grad ? op.getOutputs()[0] : op.getInputs()[0];
  Value rows = grad ? op.getInputs()[1] : op.getOutputs()[0];
  MemRefType dt = typeOf(data), it = typeOf(idx), rt = typeOf(rows);
  if (!it.getElementType().isInteger(64) && !it.getElementType().isInteger(32))
    return op.emitOpError()
           << "indices must be i32 or i64, got " << it.getElementType();
  FailureOr<BuiltinKernelParams> params = op.getParams();
  if (failed(params))
    return failure();
  int64_t axis = params->gather.axis, rank = dt.getRank();
  if (elements) {
    bool ok = axis >= 0 && axis < rank && it.getRank() == rank &&
              rt.getShape() == it.getShape() &&
              rt.getElementType() == dt.getElementType();
    for (int64_t d = 0; ok && d < rank; ++d)
      ok = d == axis || it.getDimSize(d) <= dt.getDimSize(d);
    if (!ok)
      return op.emitOpError()
             << "expects data, indices and " << (grad ? "dy" : "y")
             << " of equal rank (indices within data outside axis " << axis
             << "), got " << dt << ", " << it << ", " << rt;
  } else {
    if (axis < 0 || axis >= rank)
      return op.emitOpError()
             << "axis " << axis << " is out of range for " << dt;
    SmallVector<int64_t> expected(dt.getShape().take_front(axis));
    llvm::append_range(expected, it.getShape());
    llvm::append_range(expected, dt.getShape().drop_front(axis + 1));
    if (rt.getShape() != ArrayRef<int64_t>(expected) ||
        rt.getElementType() != dt.getElementType())
      return op.emitOpError()
             << "expects " << (grad ? "dy" : "y")
             << " of shape data[:axis] + indices + "
                "data[axis+1:], got "
             << rt << " for data " << dt << " and indices " << it;
  }
  return success();
}

LogicalResult verifyResize(BuiltinKernelOp op, bool grad) {
  Value src = op.getInputs()[0], dst = op.getOutputs()[0];
  if (failed(floatElementType(op, src)))
    return failure();
  MemRefType st = typeOf(src), dt = typeOf(dst);
  MemRefType inT = grad ? dt : st, outT = grad ? st : dt;
  FailureOr<BuiltinKernelParams> params = op.getParams();
  if (failed(params))
    return failure();
  int64_t rank = inT.getRank();
  if (outT.getRank() != rank || (int64_t)params->resize.scales.size() != rank ||
      dt.getElementType() != st.getElementType())
    return op.emitOpError() << kResizeRule;
  return success();
}

LogicalResult readAttention(BuiltinKernelOp op, AttentionParams &p) {
  auto scale = op->getAttrOfType<FloatAttr>("scale");
  if (!scale || !std::isfinite(scale.getValueAsDouble()))
    return op.emitOpError() << "needs a finite float attribute 'scale'";
  p.scale = scale.getValueAsDouble();
  auto causal = getInt(op, "causal", 0);
  auto seqFirst = getIntList(op, "seq_first", {0, 0, 0, 0}, 4);
  auto ratio = getFloat(op, "dropout_ratio", 0.0f);
  auto seed = getInt(op, "seed", 0);
  if (failed(causal) || failed(seqFirst) || failed(ratio) || failed(seed))
    return failure();
  p.causal = *causal != 0;
  for (int i = 0; i < 4; ++i)
    p.seqFirst[i] = (*seqFirst)[i] != 0;
  p.dropoutRatio = *ratio;
  if (!(p.dropoutRatio >= 0.0f && p.dropoutRatio < 1.0f))
    return op.emitOpError() << "dropout_ratio must be in [0, 1), got "
                            << p.dropoutRatio;
  p.seed = *seed;
  // The base operands, then the mask if present, then the step exactly
  // when there is dropout.
  const BuiltinTemplateInfo *info = op.getTemplateInfo();
  unsigned base = info->numInputs - optionalInputs(*info);
  unsigned extra = op.getInputs().size() - base;
  unsigned step = p.dropoutRatio > 0.0f ? 1 : 0;
  if (op.getInputs().size() < base || extra < step || extra - step > 1)
    return op.emitOpError()
           << "template '" << info->name << "' with dropout_ratio "
           << p.dropoutRatio << " expects " << base + step << " or "
           << base + step + 1 << " inputs (" << info->operands << "), got "
           << op.getInputs().size();
  p.hasMask = extra - step == 1;
  return success();
}


/// attention, attention_grad_query, attention_grad_key_value: Q, K, V of one
/// float element type with the shapes of runtime/schema/Semantics/
/// Attention.h under `seq_first`; O and dO of Q's element type with O's
/// shape; lse f32 [B, Hq, Sq]; the rows' stats f32 [B, Hq, Sq, 3]; a mask (i1, or float of Q's type
/// or f32) that broadcasts to [B, Hq, Sq, Skv]; a rank-0 f32 step with
/// dropout; dQ, dK, dV of Q's, K's and V's types.
LogicalResult verifyAttentionKernel(BuiltinKernelOp op) {
  FailureOr<BuiltinKernelParams> params = op.getParams();
  if (failed(params))
    return failure();
  const AttentionParams &p = params->attention;
  StringRef name = op.getTemplateName();
  bool forward = name == "attention", gradQuery = name == "attention_grad_query";
  ValueRange in = op.getInputs(), out = op.getOutputs();
  Value q = in[0], k = in[1], v = in[2];
  for (Value x : {q, k, v})
    if (failed(floatElementType(op, x)))
      return failure();
  Type et = typeOf(q).getElementType();
  bool anyF64 = false, allF64 = true;
  for (Value x : {q, k, v}) {
    anyF64 |= typeOf(x).getElementType().isF64();
    allF64 &= typeOf(x).getElementType().isF64();
  }
  if (anyF64 != allF64)
    return op.emitOpError() << "q, k and v must be all f64 or none";
  dlc::semantics::AttentionDims d;
  std::string error;
  if (!dlc::semantics::attentionDims(typeOf(q).getShape(), typeOf(k).getShape(),
                                     typeOf(v).getShape(), p.seqFirst[0],
                                     p.seqFirst[1], p.seqFirst[2], &d, &error))
    return op.emitOpError() << error;
  SmallVector<int64_t> oShape =
      p.seqFirst[3]
          ? SmallVector<int64_t>{d.batch, d.queryLen, d.queryHeads, d.valueDim}
          : SmallVector<int64_t>{d.batch, d.queryHeads, d.queryLen, d.valueDim};
  auto oType = MemRefType::get(oShape, et);
  auto rowType = MemRefType::get({d.batch, d.queryHeads, d.queryLen},
                                 Float32Type::get(op.getContext()));
  // Per query row: delta, the row max and 1 / the row sum.
  auto statsType = MemRefType::get({d.batch, d.queryHeads, d.queryLen, 3},
                                   Float32Type::get(op.getContext()));
  auto expect = [&](Value x, MemRefType t, StringRef role) -> LogicalResult {
    if (typeOf(x) != t)
      return op.emitOpError() << role << " must be " << t << ", got "
                              << x.getType();
    return success();
  };
  // do: O's shape, any float type the template reads.
  auto expectGrad = [&](Value x) -> LogicalResult {
    if (typeOf(x).getShape() != oType.getShape() ||
        failed(floatElementType(op, x)))
      return op.emitOpError() << "do must be a float buffer of o's shape, got "
                              << x.getType();
    return success();
  };
  unsigned base = forward ? 3 : 6;
  if (p.hasMask) {
    MemRefType mt = typeOf(in[base]);
    int64_t full[] = {d.batch, d.queryHeads, d.queryLen, d.kvLen};
    if (!dlc::semantics::broadcastsTo(mt.getShape(), ArrayRef<int64_t>(full)))
      return op.emitOpError() << "mask " << mt
                              << " does not broadcast to the scores [" << d.batch
                              << ", " << d.queryHeads << ", " << d.queryLen
                              << ", " << d.kvLen << "]";
    Type m = mt.getElementType();
    if (!m.isInteger(1) && failed(floatElementType(op, in[base])))
      return op.emitOpError() << "mask must be i1 or float, got " << m;
  }
  if (p.dropoutRatio > 0.0f) {
    MemRefType st = typeOf(in.back());
    if (st.getRank() != 0 || !st.getElementType().isF32())
      return op.emitOpError() << "step must be a rank-0 f32, got " << st;
  }
  if (forward)
    return failure(failed(expect(out[0], oType, "o")) ||
                   failed(expect(out[1], rowType, "lse")));
  if (gradQuery)
    return failure(failed(expect(in[3], oType, "o")) ||
                   failed(expect(in[4], rowType, "lse")) ||
                   failed(expectGrad(in[5])) ||
                   failed(expect(out[0], typeOf(q), "dq")) ||
                   failed(expect(out[1], statsType, "stats")));
  return failure(failed(expect(in[3], rowType, "lse")) ||
                 failed(expect(in[4], statsType, "stats")) ||
                 failed(expectGrad(in[5])) ||
                 failed(expect(out[0], typeOf(k), "dk")) ||
                 failed(expect(out[1], typeOf(v), "dv")));
}

} // namespace

const BuiltinTemplateInfo *BuiltinKernelOp::getTemplateInfo() {
  StringRef name = getTemplateName();
  return lookupBuiltinTemplate(std::string_view(name.data(), name.size()));
}

FailureOr<BuiltinKernelParams> BuiltinKernelOp::getParams() {
  const BuiltinTemplateInfo *info = getTemplateInfo();
  if (!info)
    return emitOpError() << "unknown kernel template '" << getTemplateName()
                         << "'; expected one of " << builtinTemplateNames();
  BuiltinKernelParams params;
  params.family = info->family;
  LogicalResult read = success();
  switch (info->family) {
  case BuiltinFamily::Pool:
    read = readPool(*this, params.pool);
    break;
  case BuiltinFamily::Softmax: {
    auto axis = getInt(*this, "axis", -1);
    read = failure(failed(axis));
    if (succeeded(read))
      params.softmax.axis = *axis;
    break;
  }
  case BuiltinFamily::LayerNorm:
    read = readLayerNorm(*this, params.layerNorm);
    break;
  case BuiltinFamily::CrossEntropy:
    read = readCrossEntropy(*this, params.crossEntropy);
    break;
  case BuiltinFamily::Dropout:
    read = readDropout(*this, params.dropout);
    break;
  case BuiltinFamily::Gather:
  case BuiltinFamily::GatherElements: {
    auto axis = getInt(*this, "axis", 0);
    read = failure(failed(axis));
    if (succeeded(read))
      params.gather.axis = *axis;
    break;
  }
  case BuiltinFamily::Resize:
    read = readResize(*this, params.resize);
    break;
  case BuiltinFamily::Attention:
    read = readAttention(*this, params.attention);
    break;
  }
  if (failed(read))
    return failure();
  return params;
}

LogicalResult BuiltinKernelOp::verify() {
  const BuiltinTemplateInfo *info = getTemplateInfo();
  if (!info)
    return emitOpError() << "unknown kernel template '" << getTemplateName()
                         << "'; expected one of " << builtinTemplateNames();
  if (getInputs().size() > info->numInputs ||
      getInputs().size() + optionalInputs(*info) < info->numInputs ||
      getOutputs().size() != info->numOutputs)
    return emitOpError() << "template '" << info->name << "' expects "
                         << info->numInputs << " inputs and "
                         << info->numOutputs << " outputs (" << info->operands
                         << "), got " << getInputs().size() << " and "
                         << getOutputs().size();
  for (Value v : getOperands()) {
    MemRefType type = typeOf(v);
    if (!type.hasStaticShape() || !type.getLayout().isIdentity())
      return emitOpError() << "operand of type " << type
                           << " must have a static shape and the identity "
                              "layout";
    // The row says whether f16 / bf16 data may appear; the family check
    // below says which operand is data.
    Type elem = type.getElementType();
    if (!isStorable(elem) && !(info->halfFloats && isHalfFloat(elem)))
      return emitOpError() << "template '" << getTemplateName()
                           << "' does not support element type " << elem
                           << " (expected f32, f64, i64, i32 or i1; f16 and "
                              "bf16 in dlexec.kernel, pooling, dropout and "
                              "the forward gathers only)";
  }
  for (auto [i, v] : llvm::enumerate(getOutputs()))
    if (v.getDefiningOp<SubviewOp>() &&
        !(writesStridedOperand(*this, getInputs().size() + i) &&
          stridedViewOf(v)))
      return emitOpError() << "template '" << info->name
                           << "' cannot write output #" << i
                           << " through a dlexec.subview (only templates "
                              "that accept strided outputs, viewing a dense "
                              "buffer)";
  StringRef name = info->name;
  switch (info->family) {
  case BuiltinFamily::Pool:
    return verifyPool(*this, info->isGradient, name.starts_with("max"));
  case BuiltinFamily::Softmax:
    return verifySoftmax(*this);
  case BuiltinFamily::LayerNorm:
    return verifyLayerNorm(*this);
  case BuiltinFamily::CrossEntropy:
    return verifyCrossEntropy(*this, info->isGradient);
  case BuiltinFamily::Dropout:
    return verifyDropout(*this);
  case BuiltinFamily::Gather:
    return verifyGather(*this, info->isGradient, /*elements=*/false);
  case BuiltinFamily::GatherElements:
    return verifyGather(*this, info->isGradient, /*elements=*/true);
  case BuiltinFamily::Resize:
    return verifyResize(*this, info->isGradient);
  case BuiltinFamily::Attention:
    return verifyAttentionKernel(*this);
  }
  return success();
}
