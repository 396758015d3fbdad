//===- LibraryCallOp.cpp - dlexec.library_call against the call table -----===//
//
// Everything the package and the runtime need of a library call is checked
// here, once: the callee is a row of LibraryCalls.def, the operand count
// matches the row, and the shapes, dtypes and attributes give the call's
// parameters (LibraryCallParams), which the package writer stores as they
// are.
//
//===----------------------------------------------------------------------===//
#include "dialects/Exec/AttrReaders.h"
#include "dialects/Exec/ExecOps.h"
#include "runtime/schema/Semantics/WindowShapes.h"

using namespace mlir;
using namespace dlc::exec;

namespace {

int64_t dim(Value v, unsigned i) {
  return cast<MemRefType>(v.getType()).getDimSize(i);
}
int64_t rank(Value v) { return cast<MemRefType>(v.getType()).getRank(); }
Type elementType(Value v) {
  return cast<MemRefType>(v.getType()).getElementType();
}

/// The gemm epilogue named by |op|'s `epilogue` attribute (None when it has
/// none), or failure (with an error) for an unknown name.
FailureOr<GemmEpilogue> gemmEpilogue(LibraryCallOp op) {
  Attribute e = op->getAttr("epilogue");
  if (!e)
    return GemmEpilogue::None;
  auto name = dyn_cast<StringAttr>(e);
  for (GemmEpilogue candidate : kGemmEpilogues)
    if (name && name.getValue() == gemmEpilogueName(candidate))
      return candidate;
  std::string names;
  for (GemmEpilogue candidate : kGemmEpilogues)
    names += (names.empty() ? "\"" : ", \"") +
             std::string(gemmEpilogueName(candidate)) + "\"";
  return op.emitOpError() << "gemm epilogue must be one of " << names
                          << ", got " << e;
}

/// The ReLU bit-mask operand of a gemm call (an input of drelu/drelu_bgrad,
/// an output of relu_aux), or null; it is i32, unlike the other operands.
Value reluMaskOperand(LibraryCallOp op) {
  auto name = op->getAttrOfType<StringAttr>("epilogue");
  if (!name || op.getCallee() != "gemm")
    return nullptr;
  if (name.getValue() == gemmEpilogueName(GemmEpilogue::ReluAux))
    return op.getOutputs().size() == 2 ? op.getOutputs()[1] : nullptr;
  if (name.getValue() == gemmEpilogueName(GemmEpilogue::DRelu) ||
      name.getValue() == gemmEpilogueName(GemmEpilogue::DReluBiasGrad))
    return op.getInputs().size() == 3 ? op.getInputs()[2] : nullptr;
  return nullptr;
}

/// The f32 bias row C of an f16/bf16 gemm (GemmParams::f32_bias), or null:
/// a third input that is not the ReLU bit-mask, f32 while A is 16-bit.
Value f32BiasOperand(LibraryCallOp op) {
  auto ins = op.getInputs();
  if (op.getCallee() != "gemm" || ins.size() != 3 ||
      ins[2] == reluMaskOperand(op))
    return nullptr;
  Type a = elementType(ins[0]);
  return (a.isF16() || a.isBF16()) && elementType(ins[2]).isF32() ? ins[2]
                                                                  : nullptr;
}

/// The f32 dBias output of an f16/bf16 gemm's bias_grad_a/bias_grad_b
/// epilogue without C (GemmParams::f32_bias: the column sum of a 16-bit
/// operand kept in f32), or null.
Value f32BiasGradOperand(LibraryCallOp op) {
  auto outs = op.getOutputs();
  auto name = op->getAttrOfType<StringAttr>("epilogue");
  if (op.getCallee() != "gemm" || op.getInputs().size() != 2 ||
      outs.size() != 2 || !name ||
      (name.getValue() != gemmEpilogueName(GemmEpilogue::BiasGradA) &&
       name.getValue() != gemmEpilogueName(GemmEpilogue::BiasGradB)))
    return nullptr;
  Type a = elementType(op.getInputs()[0]);
  return (a.isF16() || a.isBF16()) && elementType(outs[1]).isF32() ? outs[1]
                                                                   : nullptr;
}

FailureOr<GemmParams> gemmParams(LibraryCallOp op) {
  auto ins = op.getInputs();
  Value out = op.getOutputs()[0];
  if (rank(ins[0]) != 2 || rank(ins[1]) != 2 || rank(out) != 2)
    return op.emitOpError() << "gemm expects ins(A, B[, C]) of rank 2 and "
                               "a rank-2 output";
  FailureOr<GemmEpilogue> epilogue = gemmEpilogue(op);
  if (failed(epilogue))
    return failure();
  GemmParams g;
  g.epilogue = *epilogue;
  const bool maskIn = readsReluMask(g.epilogue);
  auto ta = getInt(op, "trans_a", 0);
  auto tb = getInt(op, "trans_b", 0);
  bool hasC = ins.size() == 3 && !maskIn;
  auto alpha = getFloat(op, "alpha", 1.0f);
  auto beta = getFloat(op, "beta", hasC ? 1.0f : 0.0f);
  if (failed(ta) || failed(tb) || failed(alpha) || failed(beta))
    return failure();
  int64_t m = dim(out, 0), n = dim(out, 1);
  int64_t am = dim(ins[0], *ta ? 1 : 0), k = dim(ins[0], *ta ? 0 : 1);
  int64_t bk = dim(ins[1], *tb ? 1 : 0), bn = dim(ins[1], *tb ? 0 : 1);
  if (am != m || bn != n || bk != k)
    return op.emitOpError()
           << "gemm shapes do not agree: op(A) is " << am << "x" << k
           << ", op(B) is " << bk << "x" << bn << ", Y is " << m << "x" << n;
  unsigned wantOutputs =
      writesBiasGradient(g.epilogue) || writesReluMask(g.epilogue) ? 2 : 1;
  if (op.getOutputs().size() != wantOutputs)
    return op.emitOpError() << "gemm with epilogue \""
                            << gemmEpilogueName(g.epilogue) << "\" expects "
                            << wantOutputs << " output(s) ("
                            << (wantOutputs == 1               ? "Y"
                                : writesReluMask(g.epilogue) ? "Y, Aux"
                                                               : "Y, dBias")
                            << "), got " << op.getOutputs().size();
  if (writesBiasGradient(g.epilogue)) {
    Value db = op.getOutputs()[1];
    int64_t length = g.epilogue == GemmEpilogue::BiasGradA ? m : n;
    if (rank(db) != 1 || dim(db, 0) != length)
      return op.emitOpError()
             << "gemm epilogue \"" << gemmEpilogueName(g.epilogue)
             << "\" writes dBias of shape [" << length << "] ("
             << (g.epilogue == GemmEpilogue::BiasGradA ? "M" : "N")
             << "), got " << db.getType();
    g.f32_bias = db == f32BiasGradOperand(op);
  }
  if (maskIn && ins.size() != 3)
    return op.emitOpError() << "gemm epilogue \""
                            << gemmEpilogueName(g.epilogue)
                            << "\" expects ins(A, B, Aux), got " << ins.size()
                            << " inputs";
  if (Value mask = reluMaskOperand(op)) {
    auto t = cast<MemRefType>(mask.getType());
    if (t.getRank() != 2 || t.getDimSize(0) != m ||
        t.getDimSize(1) != reluMaskWords(n) ||
        !t.getElementType().isInteger(32))
      return op.emitOpError()
             << "gemm epilogue \"" << gemmEpilogueName(g.epilogue)
             << "\" takes the ReLU bit-mask Aux as memref<" << m << "x"
             << reluMaskWords(n) << "xi32> (M x N rounded up to "
             << kReluMaskLdBits << " bits), got " << t;
  }
  if ((writesReluMask(g.epilogue) || maskIn) && *beta != (hasC ? 1.0f : 0.0f))
    return op.emitOpError() << "gemm epilogue \""
                            << gemmEpilogueName(g.epilogue)
                            << "\" needs beta " << (hasC ? 1 : 0) << ", got "
                            << *beta;
  if (hasC) {
    Value c = ins[2];
    if (rank(c) == 1 && dim(c, 0) == n)
      g.c_is_row_vector = true;
    else if (rank(c) == 2 && dim(c, 0) == 1 && dim(c, 1) == n)
      g.c_is_row_vector = true;
    else if (!(rank(c) == 2 && dim(c, 0) == m && dim(c, 1) == n))
      return op.emitOpError() << "gemm C must be [N], [1, N] or [M, N] with "
                                 "M = "
                              << m << ", N = " << n << ", got " << c.getType();
    if (writesReluMask(g.epilogue) && !g.c_is_row_vector)
      return op.emitOpError() << "gemm epilogue \"relu_aux\" adds C as a "
                                 "bias row ([N] or [1, N]), got "
                              << c.getType();
    g.f32_bias = c == f32BiasOperand(op);
    if (g.f32_bias &&
        (!g.c_is_row_vector || *beta != 1.0f || writesReluMask(g.epilogue)))
      return op.emitOpError() << "an f32 C of an f16/bf16 gemm is a bias row "
                                 "([N] or [1, N]) with beta 1 (not with "
                                 "relu_aux), got "
                              << c.getType() << " with beta " << *beta;
  }
  g.m = m, g.n = n, g.k = k;
  g.trans_a = *ta != 0, g.trans_b = *tb != 0, g.has_c = hasC;
  g.alpha = *alpha, g.beta = *beta;
  return g;
}

FailureOr<BatchedGemmParams> batchedGemmParams(LibraryCallOp op) {
  auto ins = op.getInputs();
  Value out = op.getOutputs()[0];
  auto batchAttr = op->getAttrOfType<DenseI64ArrayAttr>("batch");
  if (!batchAttr)
    return op.emitOpError() << "batched_gemm needs a 'batch' array<i64>";
  ArrayRef<int64_t> batch = batchAttr.asArrayRef();
  auto sa = getIntList(op, "stride_a", {}, batch.size());
  auto sb = getIntList(op, "stride_b", {}, batch.size());
  auto m = getInt(op, "m", 0), n = getInt(op, "n", 0), k = getInt(op, "k", 0);
  auto ta = getInt(op, "trans_a", 0), tb = getInt(op, "trans_b", 0);
  if (failed(sa) || failed(sb) || failed(m) || failed(n) || failed(k) ||
      failed(ta) || failed(tb))
    return failure();
  if (*m <= 0 || *n <= 0 || *k <= 0)
    return op.emitOpError() << "batched_gemm needs positive m, n, k, got " << *m
                            << ", " << *n << ", " << *k;
  auto numel = [](Value v) {
    return cast<MemRefType>(v.getType()).getNumElements();
  };
  int64_t count = 1, lastA = 0, lastB = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i] <= 0 || (*sa)[i] < 0 || (*sb)[i] < 0)
      return op.emitOpError() << "batched_gemm batch dims must be positive "
                                 "and strides non-negative";
    count *= batch[i];
    lastA += (batch[i] - 1) * (*sa)[i];
    lastB += (batch[i] - 1) * (*sb)[i];
  }
  if (lastA + *m * *k > numel(ins[0]) || lastB + *k * *n > numel(ins[1]) ||
      count * *m * *n != numel(out))
    return op.emitOpError() << "batched_gemm operands do not hold " << count
                            << " batches of " << *m << "x" << *k << " * " << *k
                            << "x" << *n << ": A " << ins[0].getType() << ", B "
                            << ins[1].getType() << ", Y " << out.getType();
  BatchedGemmParams g;
  g.m = *m, g.n = *n, g.k = *k;
  g.batch.assign(batch.begin(), batch.end());
  g.stride_a.assign(sa->begin(), sa->end());
  g.stride_b.assign(sb->begin(), sb->end());
  g.trans_a = *ta != 0, g.trans_b = *tb != 0;
  return g;
}

FailureOr<ConvParams> convParams(LibraryCallOp op,
                                 const LibraryCallInfo &info) {
  StringRef callee = info.name;
  auto ins = op.getInputs();
  Value out = op.getOutputs()[0];
  // forward: X, W[, B] -> Y; backward_data: dY, W -> dX;
  // backward_filter: X, dY -> dW.
  Value x, w, y;
  switch (info.direction) {
  case ConvDirection::Forward:
  case ConvDirection::None:
    x = ins[0], w = ins[1], y = out;
    break;
  case ConvDirection::BackwardData:
    y = ins[0], w = ins[1], x = out;
    break;
  case ConvDirection::BackwardFilter:
    x = ins[0], y = ins[1], w = out;
    break;
  }
  const int sp = info.spatialDims;
  if (rank(x) != sp + 2 || rank(w) != sp + 2 || rank(y) != sp + 2)
    return op.emitOpError()
           << callee
           << (sp == 3 ? " expects rank-5 X [N,C,D,H,W], W [K,C/group,T,R,S] "
                         "and Y [N,K,O,P,Q]"
                       : " expects rank-4 X [N,C,H,W], W [K,C/group,R,S] and "
                         "Y [N,K,P,Q]");
  SmallVector<int64_t> ones(sp, 1), zeros(2 * sp, 0);
  auto strides = getIntList(op, "strides", ones, sp);
  auto pads = getIntList(op, "pads", zeros, 2 * sp);
  auto dil = getIntList(op, "dilations", ones, sp);
  auto group = getInt(op, "group", 1);
  if (failed(strides) || failed(pads) || failed(dil) || failed(group))
    return failure();
  if (*group <= 0 || dim(x, 1) != dim(w, 1) * *group ||
      dim(w, 0) != dim(y, 1) || dim(x, 0) != dim(y, 0) ||
      dim(w, 0) % *group != 0)
    return op.emitOpError()
           << callee << " shapes do not agree: X " << x.getType() << ", W "
           << w.getType() << ", Y " << y.getType() << ", group " << *group;
  for (int i = 0; i < sp; ++i)
    if ((*strides)[i] <= 0 || (*dil)[i] <= 0 || (*pads)[i] < 0 ||
        (*pads)[sp + i] < 0)
      return op.emitOpError() << callee
                              << " needs positive strides and dilations and "
                                 "non-negative pads";
  for (int i = 0; i < sp; ++i) {
    std::optional<int64_t> size = dlc::semantics::windowOutputSize(
        dim(x, 2 + i), dim(w, 2 + i), (*strides)[i], (*pads)[i],
        (*pads)[sp + i], (*dil)[i]);
    if (size != dim(y, 2 + i))
      return op.emitOpError()
             << callee << " output dim " << 2 + i << " is " << dim(y, 2 + i)
             << ", but input " << dim(x, 2 + i) << ", kernel " << dim(w, 2 + i)
             << ", stride " << (*strides)[i] << ", pads " << (*pads)[i] << "/"
             << (*pads)[sp + i] << " and dilation " << (*dil)[i] << " give "
             << (size ? std::to_string(*size) : std::string("no valid size"));
  }
  bool hasBias = info.direction == ConvDirection::Forward && ins.size() == 3;
  if (hasBias &&
      cast<MemRefType>(ins[2].getType()).getNumElements() != dim(w, 0))
    return op.emitOpError() << callee << " bias must hold K = " << dim(w, 0)
                            << " values, got " << ins[2].getType();
  ConvParams cv;
  cv.spatial = sp;
  cv.n = dim(x, 0), cv.c = dim(x, 1), cv.k = dim(w, 0);
  cv.group = *group;
  cv.has_bias = hasBias;
  // The last two spatial dims are H and W; a 3-D call adds the depth first.
  int hw = sp - 2;
  cv.h = dim(x, 2 + hw), cv.w = dim(x, 3 + hw);
  cv.r = dim(w, 2 + hw), cv.s = dim(w, 3 + hw);
  cv.p = dim(y, 2 + hw), cv.q = dim(y, 3 + hw);
  cv.stride_h = (*strides)[hw], cv.stride_w = (*strides)[hw + 1];
  cv.pad_top = (*pads)[hw], cv.pad_left = (*pads)[hw + 1];
  cv.pad_bottom = (*pads)[sp + hw], cv.pad_right = (*pads)[sp + hw + 1];
  cv.dilation_h = (*dil)[hw], cv.dilation_w = (*dil)[hw + 1];
  if (sp == 3) {
    cv.d = dim(x, 2), cv.t = dim(w, 2), cv.o = dim(y, 2);
    cv.stride_d = (*strides)[0], cv.dilation_d = (*dil)[0];
    cv.pad_front = (*pads)[0], cv.pad_back = (*pads)[3];
  }
  return cv;
}

} // namespace

const LibraryCallInfo *LibraryCallOp::getCallInfo() {
  return lookupLibraryCall(
      std::string_view(getCallee().data(), getCallee().size()));
}

FailureOr<LibraryCallParams> LibraryCallOp::getParams() {
  const LibraryCallInfo *info = getCallInfo();
  if (!info)
    return emitOpError() << "unknown library call '" << getCallee()
                         << "'; expected one of " << libraryCallNames();
  // A gemm's bias-gradient or ReLU-mask epilogue adds a second output
  // (gemmParams).
  if (getOutputs().size() != 1 &&
      !(info->family == LibraryCallFamily::Gemm && getOutputs().size() == 2))
    return emitOpError() << "'" << info->name
                         << "' expects exactly one output (" << info->outputs
                         << "), got " << getOutputs().size();
  unsigned numIns = getInputs().size();
  if (numIns < info->minInputs || numIns > info->maxInputs)
    return emitOpError() << "'" << info->name << "' expects ins("
                         << info->inputs << "), got " << numIns << " inputs";
  for (auto [i, v] : llvm::enumerate(getOperands())) {
    auto type = cast<MemRefType>(v.getType());
    if (!type.hasStaticShape() || !type.getLayout().isIdentity())
      return emitOpError() << "operand #" << i << " of type " << type
                           << " must have a static shape and the identity "
                              "layout";
  }
  // Every operand shares one float type: f32, f16 or bf16 (low precision
  // accumulates in f32 and rounds once, LibraryCalls.h ElementType), or f64
  // for gemm and the convolutions (reference pipelines; no device runs it).
  Type elem = elementType(getOperand(0));
  bool allowF64 = info->family != LibraryCallFamily::BatchedGemm;
  std::optional<ElementType> dtype;
  if (elem.isF32())
    dtype = ElementType::F32;
  else if (elem.isF16())
    dtype = ElementType::F16;
  else if (elem.isBF16())
    dtype = ElementType::BF16;
  else if (elem.isF64() && allowF64)
    dtype = ElementType::F64;
  if (!dtype)
    return emitOpError() << "'" << info->name << "' supports "
                         << (allowF64 ? "f32, f16, bf16 and f64"
                                      : "f32, f16 and bf16")
                         << ", got " << elem;
  Value mask = reluMaskOperand(*this); // i32, checked by gemmParams
  Value f32Bias = f32BiasOperand(*this); // checked by gemmParams
  Value f32BiasGrad = f32BiasGradOperand(*this);
  for (auto [i, v] : llvm::enumerate(getOperands()))
    if (v != mask && v != f32Bias && v != f32BiasGrad &&
        elementType(v) != elem)
      return emitOpError() << "operand #" << i << " has element type "
                           << elementType(v) << ", but operand #0 has " << elem
                           << "; all operands share one";
  for (auto [i, v] : llvm::enumerate(getOutputs()))
    if (v.getDefiningOp<SubviewOp>() &&
        !(writesStridedOperand(*this, getInputs().size() + i) &&
          stridedViewOf(v)))
      return emitOpError() << "'" << info->name
                           << "' cannot write output #" << i
                           << " through a dlexec.subview (only the output "
                              "of a call that accepts strided outputs, "
                              "viewing a dense buffer)";
  LibraryCallParams params;
  params.call = info->call;
  switch (info->family) {
  case LibraryCallFamily::Gemm: {
    auto g = gemmParams(*this);
    if (failed(g))
      return failure();
    params.gemm = *g;
    params.gemm.dtype = *dtype;
    break;
  }
  case LibraryCallFamily::BatchedGemm: {
    auto g = batchedGemmParams(*this);
    if (failed(g))
      return failure();
    params.batched = std::move(*g);
    params.batched.dtype = *dtype;
    break;
  }
  case LibraryCallFamily::Conv: {
    auto cv = convParams(*this, *info);
    if (failed(cv))
      return failure();
    params.conv = *cv;
    params.conv.dtype = *dtype;
    if (std::optional<StridedView> view = stridedViewOf(getOutputs()[0]))
      params.conv.y_strides.assign(view->strides.begin(), view->strides.end());
    break;
  }
  }
  return params;
}

LogicalResult LibraryCallOp::verify() {
  return success(succeeded(getParams()));
}
