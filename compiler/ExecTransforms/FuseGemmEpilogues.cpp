//===- FuseGemmEpilogues.cpp - kernels into gemm library-call epilogues ---===//
//
// A ReLU kernel that is the only reader of a gemm's result, a bias add
// (with or without a ReLU) that is, and the bias gradient (a column sum of
// dY, or the f32 sum of a 16-bit dY) beside the weight-gradient gemm that
// reads the same dY, become
// epilogues of that gemm (LibraryCalls.h GemmEpilogue:
// cuBLASLt's RELU_BIAS and BGRADA/BGRADB; the host device computes the same);
// then the ReLU gradient select(H > 0, dH, 0) between a relu gemm and the
// gemm that computes dH becomes RELU_AUX(_BIAS) on the first (a bit-mask
// output) and DRELU(_BGRAD) on the second, with the bias gradient of dZ.
//
//===----------------------------------------------------------------------===//
#include "dialects/Exec/Analysis/KernelQueries.h"
#include "compiler/ExecTransforms/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace dlc {
#define GEN_PASS_DEF_FUSEGEMMEPILOGUESPASS
#include "compiler/ExecTransforms/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
namespace x = dlc::exec;

namespace {

/// The buffer |v| views: through reshapes and any other view op (one
/// buffer operand, one buffer result, no effects: e.g. dlexec.subview).
Value stripViews(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (def->getNumOperands() != 1 || def->getNumResults() != 1 ||
        !isa<MemRefType>(def->getOperand(0).getType()) ||
        !(isa<x::ReshapeOp>(def) || isPure(def)))
      break;
    v = def->getOperand(0);
  }
  return v;
}

/// Identifies the memory a buffer refers to: the variable symbol for
/// variable_refs (two refs of one variable alias), else the viewed value.
bool sameMemory(Value a, Value b) {
  a = stripViews(a), b = stripViews(b);
  auto ra = a.getDefiningOp<x::VariableRefOp>();
  auto rb = b.getDefiningOp<x::VariableRefOp>();
  if (ra || rb)
    return ra && rb && ra.getVariableAttr() == rb.getVariableAttr();
  return a == b;
}

/// The buffers |op| reads and writes (kernels, builtin kernels and library
/// calls name them as ins/outs; any other op that takes a buffer is treated
/// as touching it).
void touched(Operation *op, SmallVectorImpl<Value> &reads,
             SmallVectorImpl<Value> &writes) {
  auto split = [&](ValueRange ins, ValueRange outs) {
    reads.append(ins.begin(), ins.end());
    writes.append(outs.begin(), outs.end());
  };
  if (auto k = dyn_cast<x::KernelOp>(op))
    return split(k.getInputs(), k.getOutputs());
  if (auto b = dyn_cast<x::BuiltinKernelOp>(op))
    return split(b.getInputs(), b.getOutputs());
  if (auto l = dyn_cast<x::LibraryCallOp>(op))
    return split(l.getInputs(), l.getOutputs());
  if (isa<x::AllocOp, x::VariableRefOp, x::InputOp>(op) || isPure(op))
    return;
  for (Value v : op->getOperands())
    if (isa<MemRefType>(v.getType()))
      writes.push_back(v);
}

/// True when an op strictly between |from| and |to| (same block, |from|
/// first) reads or writes |buf| (when |reads| is set) or writes it.
bool touchedBetween(Operation *from, Operation *to, Value buf, bool reads) {
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode()) {
    SmallVector<Value> r, w;
    touched(op, r, w);
    if (llvm::any_of(w, [&](Value v) { return sameMemory(v, buf); }))
      return true;
    if (reads && llvm::any_of(r, [&](Value v) { return sameMemory(v, buf); }))
      return true;
  }
  return false;
}

/// The gemm's parameters, or failure for another callee.
FailureOr<x::GemmParams> gemmParams(x::LibraryCallOp call) {
  const x::LibraryCallInfo *info = call.getCallInfo();
  if (!info || info->call != x::LibraryCall::Gemm)
    return failure();
  FailureOr<x::LibraryCallParams> p = call.getParams();
  if (failed(p))
    return failure();
  return p->gemm;
}

/// Whether defineBefore(|buf|, |at|) can succeed: |buf| is defined before
/// |at|, or after it by an op without operands (alloc, variable_ref, input)
/// or a view (reshape) of such a buffer.
bool canDefineBefore(Value buf, Operation *at) {
  Operation *def = buf.getDefiningOp();
  if (!def || def->getBlock() != at->getBlock() || def->isBeforeInBlock(at))
    return true;
  if (def->getNumOperands() == 0)
    return true;
  return isa<x::ReshapeOp>(def) && canDefineBefore(def->getOperand(0), at);
}

/// Makes |buf| usable at |at| by moving its defining ops (canDefineBefore)
/// before |at|. Fails, changing nothing, when they cannot move.
LogicalResult defineBefore(Value buf, Operation *at) {
  if (!canDefineBefore(buf, at))
    return failure();
  Operation *def = buf.getDefiningOp();
  if (!def || def->getBlock() != at->getBlock() || def->isBeforeInBlock(at))
    return success();
  if (def->getNumOperands() == 1)
    (void)defineBefore(def->getOperand(0), at);
  def->moveBefore(at);
  return success();
}

/// The block argument |v| is argument |i| of |k|'s body.
bool isArg(Value v, x::KernelOp k, unsigned i) {
  auto a = dyn_cast<BlockArgument>(v);
  return a && a.getOwner() == &k.getBody().front() && a.getArgNumber() == i;
}

/// The value |k| yields, when its body is one op then the yield.
Operation *singleBodyOp(x::KernelOp k, unsigned extraConstants = 0) {
  Block &body = k.getBody().front();
  Operation *yield = body.getTerminator();
  if (yield->getNumOperands() != 1)
    return nullptr;
  Operation *op = yield->getOperand(0).getDefiningOp();
  if (!op || op->getBlock() != &body)
    return nullptr;
  unsigned others = 0;
  for (Operation &o : body.without_terminator())
    if (&o != op && !isa<arith::ConstantOp>(o))
      return nullptr;
    else if (&o != op)
      ++others;
  return others <= extraConstants ? op : nullptr;
}

/// |k| is Y = max(X, +0.0) elementwise over identical shapes (a
/// `dlgraph.relu` that fusion left alone because several ops read its
/// result): one input, one output, all-parallel identity maps.
bool isReluKernel(x::KernelOp k) {
  if (k.getInputs().size() != 1 || k.getOutputs().size() != 1 ||
      !isAllParallel(k) || k.getInit())
    return false;
  for (Attribute m : k.getIndexingMaps())
    if (!cast<AffineMapAttr>(m).getValue().isIdentity())
      return false;
  if (k.getInputs()[0].getType() != k.getOutputs()[0].getType())
    return false;
  auto max = dyn_cast_or_null<arith::MaximumFOp>(singleBodyOp(k, 1));
  if (!max)
    return false;
  Value lhs = max.getLhs(), rhs = max.getRhs();
  if (!isArg(lhs, k, 0))
    std::swap(lhs, rhs);
  FloatAttr zero;
  return isArg(lhs, k, 0) && matchPattern(rhs, m_Constant(&zero)) &&
         zero.getValue().isPosZero();
}

/// Folds a ReLU kernel into the gemm whose result is its only input:
/// gemm(A, B[, bias]) -> T; relu(T) -> Y  becomes  gemm{relu}(A, B[, bias])
/// -> Y. Only when the gemm adds no C or a bias row with beta 1 (cuBLASLt's
/// RELU_BIAS), T has no other reader, and nothing between the two touches Y.
LogicalResult fuseRelu(x::KernelOp relu) {
  if (!isReluKernel(relu))
    return failure();
  Value t = relu.getInputs()[0], y = relu.getOutputs()[0];
  auto alloc = t.getDefiningOp<x::AllocOp>();
  if (!alloc || !t.hasNUses(2))
    return failure();
  x::LibraryCallOp call;
  for (Operation *u : t.getUsers())
    if (auto c = dyn_cast<x::LibraryCallOp>(u))
      call = c;
  if (!call || call->getBlock() != relu->getBlock() ||
      !call->isBeforeInBlock(relu) || call.getOutputs().size() != 1 ||
      call.getOutputs()[0] != t)
    return failure();
  FailureOr<x::GemmParams> g = gemmParams(call);
  if (failed(g) || g->epilogue != x::GemmEpilogue::None)
    return failure();
  bool bias = g->has_c && g->c_is_row_vector && g->beta == 1.0f;
  bool plain = !g->has_c && g->beta == 0.0f;
  if (!bias && !plain)
    return failure();
  if (touchedBetween(call, relu, y, /*reads=*/true) ||
      llvm::any_of(call.getInputs(),
                   [&](Value in) { return sameMemory(in, y); }) ||
      failed(defineBefore(y, call)))
    return failure();
  call->setOperand(call->getNumOperands() - 1, y);
  call->setAttr("epilogue", StringAttr::get(call->getContext(),
                                            x::gemmEpilogueName(
                                                x::GemmEpilogue::Relu)));
  relu->erase();
  alloc->erase();
  return success();
}

/// Folds a kernel Y = X + bias or Y = max(X + bias, 0) (bias [N] broadcast
/// along the last dim of X, X read through the identity) into the gemm
/// without C whose result (or a reshape view of it with last dim N) X is
/// and that nothing else reads: the call takes the bias as its C row
/// (beta 1; cuBLASLt's BIAS / RELU_BIAS) and writes Y (through a reshape to
/// [M, N] when Y has another shape). Under mixed precision the kernel is
/// Y = truncf(extf(X) + bias) with 16-bit X, Y and an f32 bias: the call
/// then adds the f32 bias to its f32 sum and rounds once (f32_bias, one
/// rounding instead of the gemm's and the kernel's). Matmul lowering adds a
/// layer's bias in such a kernel (ONNX MatMul + Add, e.g. a transformer's
/// feed-forward layers); only when nothing between the two touches Y or writes
/// the bias.
LogicalResult fuseBiasKernel(x::KernelOp k) {
  if (k.getInputs().size() != 2 || k.getOutputs().size() != 1 ||
      !isAllParallel(k) || k.getInit())
    return failure();
  Value out = k.getOutputs()[0];
  auto outType = cast<MemRefType>(out.getType());
  int64_t r = outType.getRank();
  if (r < 2)
    return failure();
  auto maps = k.getIndexingMaps();
  AffineMap outMap = cast<AffineMapAttr>(maps[2]).getValue();
  if (!outMap.isIdentity())
    return failure();
  // Which input is X (identity, the output's type) and which the bias.
  int xi = -1;
  for (int i = 0; i < 2; ++i) {
    AffineMap m = cast<AffineMapAttr>(maps[i]).getValue();
    if (m.isIdentity() && k.getInputs()[i].getType() == outType)
      xi = i;
  }
  if (xi < 0)
    return failure();
  int bi = 1 - xi;
  Value xv = k.getInputs()[xi], bias = k.getInputs()[bi];
  auto biasType = cast<MemRefType>(bias.getType());
  AffineMap biasMap = cast<AffineMapAttr>(maps[bi]).getValue();
  int64_t n = outType.getShape().back();
  Type outElem = outType.getElementType();
  // Mixed precision: a 16-bit X and Y with an f32 bias, added in f32 and
  // rounded once (GemmParams::f32_bias).
  const bool f32Bias = biasType.getElementType().isF32() &&
                       (outElem.isF16() || outElem.isBF16());
  if (biasType.getRank() != 1 || biasType.getDimSize(0) != n ||
      (biasType.getElementType() != outElem && !f32Bias) ||
      biasMap.getNumResults() != 1 ||
      biasMap.getResult(0) != getAffineDimExpr(r - 1, k.getContext()))
    return failure();
  // Body: addf(x, bias), optionally then maximumf(., +0.0); with an f32 bias
  // truncf(addf(extf(x), bias)), the maximumf before or after the truncf
  // (round to nearest even is monotone and keeps signs, so both orders give
  // round(max(v, 0))).
  Block &body = k.getBody().front();
  Value v = body.getTerminator()->getOperand(0);
  bool relu = false;
  auto stripRelu = [&] {
    auto max = v.getDefiningOp<arith::MaximumFOp>();
    if (relu || !max)
      return true;
    Value lhs = max.getLhs(), rhs = max.getRhs();
    FloatAttr zero;
    if (!matchPattern(rhs, m_Constant(&zero)))
      std::swap(lhs, rhs);
    if (!matchPattern(rhs, m_Constant(&zero)) || !zero.getValue().isPosZero())
      return false;
    relu = true;
    v = lhs;
    return true;
  };
  if (!stripRelu())
    return failure();
  if (f32Bias) {
    auto trunc = v.getDefiningOp<arith::TruncFOp>();
    if (!trunc || !trunc.getIn().getType().isF32())
      return failure();
    v = trunc.getIn();
    if (!stripRelu())
      return failure();
  }
  auto add = v.getDefiningOp<arith::AddFOp>();
  if (!add || add->getBlock() != &body)
    return failure();
  // X's operand of the add: the argument, or its extf to f32.
  auto isX = [&](Value operand) {
    if (!f32Bias)
      return isArg(operand, k, xi);
    auto ext = operand.getDefiningOp<arith::ExtFOp>();
    return ext && isArg(ext.getIn(), k, xi);
  };
  if (!((isX(add.getLhs()) && isArg(add.getRhs(), k, bi)) ||
        (isArg(add.getLhs(), k, bi) && isX(add.getRhs()))))
    return failure();
  unsigned ops = 0;
  for (Operation &o : body.without_terminator())
    if (!isa<arith::ConstantOp>(o))
      ++ops;
  if (ops != (relu ? 2u : 1u) + (f32Bias ? 2u : 0u))
    return failure();
  // X is the gemm's result, or one reshape of it, read by nothing else.
  Value y2d = xv;
  x::ReshapeOp view = xv.getDefiningOp<x::ReshapeOp>();
  if (view) {
    if (!xv.hasOneUse())
      return failure();
    y2d = view.getSource();
  }
  auto alloc = y2d.getDefiningOp<x::AllocOp>();
  if (!alloc || !y2d.hasNUses(2))
    return failure();
  x::LibraryCallOp call;
  for (Operation *u : y2d.getUsers())
    if (auto c = dyn_cast<x::LibraryCallOp>(u))
      call = c;
  if (!call || call->getBlock() != k->getBlock() ||
      !call->isBeforeInBlock(k) || call.getOutputs().size() != 1 ||
      call.getOutputs()[0] != y2d)
    return failure();
  FailureOr<x::GemmParams> g = gemmParams(call);
  if (failed(g) || g->epilogue != x::GemmEpilogue::None || g->has_c ||
      g->beta != 0.0f || g->n != n)
    return failure();
  if (touchedBetween(call, k, out, /*reads=*/true) ||
      touchedBetween(call, k, bias, /*reads=*/false) ||
      llvm::any_of(call.getInputs(),
                   [&](Value in) { return sameMemory(in, out); }) ||
      !canDefineBefore(out, call) || !canDefineBefore(bias, call))
    return failure();
  (void)defineBefore(out, call);
  (void)defineBefore(bias, call);
  OpBuilder b(call);
  Value target = out;
  if (outType != y2d.getType())
    target = x::ReshapeOp::create(b, call.getLoc(), y2d.getType(), out)
                 .getResult();
  SmallVector<Value> ins(call.getInputs());
  ins.push_back(bias);
  auto fused = x::LibraryCallOp::create(b, call.getLoc(), call.getCalleeAttr(),
                                        ins, ValueRange{target});
  fused->setDiscardableAttrs(call->getDiscardableAttrDictionary());
  fused->setAttr("beta", b.getF32FloatAttr(1.0f));
  if (relu)
    fused->setAttr("epilogue",
                   b.getStringAttr(x::gemmEpilogueName(x::GemmEpilogue::Relu)));
  k->erase();
  if (view)
    view->erase();
  call->erase();
  alloc->erase();
  return success();
}

/// |k| is dBias[C] = sum of D over every dim but the last (D [..., C], f32
/// accumulation in the element type): one input read through the identity,
/// the output through the last loop, `reduction` iterators but the last,
/// init 0, body one addf of the element and the accumulator. With
/// |widening|, also the f32 sum of an f16/bf16 D (mixed precision's bias
/// gradient): the body adds extf(element) to an f32 accumulator.
bool isColumnSumKernel(x::KernelOp k, bool widening = false) {
  if (k.getInputs().size() != 1 || k.getOutputs().size() != 1)
    return false;
  auto in = cast<MemRefType>(k.getInputs()[0].getType());
  auto out = cast<MemRefType>(k.getOutputs()[0].getType());
  int64_t r = in.getRank();
  Type inT = in.getElementType(), outT = out.getElementType();
  const bool widened =
      widening && (inT.isF16() || inT.isBF16()) && outT.isF32();
  if (r < 2 || out.getRank() != 1 ||
      out.getDimSize(0) != in.getDimSize(r - 1) ||
      (inT != outT && !widened))
    return false;
  auto its = k.getIteratorTypes().getAsValueRange<StringAttr>();
  int64_t i = 0;
  for (StringRef it : its)
    if (it != (++i == r ? "parallel" : "reduction"))
      return false;
  if (i != r)
    return false;
  auto maps = k.getIndexingMaps();
  AffineMap inMap = cast<AffineMapAttr>(maps[0]).getValue();
  AffineMap outMap = cast<AffineMapAttr>(maps[1]).getValue();
  if (!inMap.isIdentity() || outMap.getNumResults() != 1 ||
      outMap.getResult(0) != getAffineDimExpr(r - 1, k.getContext()))
    return false;
  ArrayAttr init = k.getInitAttr();
  auto zero = init && init.size() == 1 ? dyn_cast<FloatAttr>(init[0]) : nullptr;
  if (!zero || !zero.getValue().isZero())
    return false;
  if (widened) {
    // Exactly: %e = arith.extf %arg0; %s = arith.addf (%e, %arg1); yield %s.
    Block &body = k.getBody().front();
    Operation *yield = body.getTerminator();
    if (yield->getNumOperands() != 1 ||
        std::distance(body.begin(), body.end()) != 3)
      return false;
    auto add = yield->getOperand(0).getDefiningOp<arith::AddFOp>();
    if (!add || add->getBlock() != &body)
      return false;
    auto isExt = [&](Value v) {
      auto ext = v.getDefiningOp<arith::ExtFOp>();
      return ext && ext->getBlock() == &body && isArg(ext.getIn(), k, 0);
    };
    return (isExt(add.getLhs()) && isArg(add.getRhs(), k, 1)) ||
           (isArg(add.getLhs(), k, 1) && isExt(add.getRhs()));
  }
  auto add = dyn_cast_or_null<arith::AddFOp>(singleBodyOp(k));
  return add && ((isArg(add.getLhs(), k, 0) && isArg(add.getRhs(), k, 1)) ||
                 (isArg(add.getLhs(), k, 1) && isArg(add.getRhs(), k, 0)));
}

/// Folds a column-sum kernel of D into a gemm (without C) in the same
/// function that reads D as op(A) = D^T (A is D [K, M] with trans_a:
/// bgrad_a) or op(B) = D (B is D [K, N] without trans_b: bgrad_b); the gemm
/// gains the kernel's output as dBias. The fused call runs at the gemm's
/// place when no op between the two touches dBias, else (the sum first, its
/// result read before the gemm, as by the bias's optimizer update) at the
/// sum's place when no op between writes the gemm's inputs or touches its
/// Y. Never when an op between the two writes D.
LogicalResult fuseBiasGradient(x::KernelOp sum) {
  if (!isColumnSumKernel(sum, /*widening=*/true))
    return failure();
  Value d = sum.getInputs()[0], dBias = sum.getOutputs()[0];
  auto dType = cast<MemRefType>(d.getType());
  int64_t cols = dType.getShape().back();
  int64_t rows = dType.getNumElements() / cols;
  SmallVector<Operation *> readers;
  Value root = stripViews(d);
  SmallVector<Value> work{root};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *u : v.getUsers())
      if (auto r = dyn_cast<x::ReshapeOp>(u))
        work.push_back(r.getResult());
      else
        readers.push_back(u);
  }
  for (Operation *u : readers) {
    auto call = dyn_cast<x::LibraryCallOp>(u);
    if (!call || call->getBlock() != sum->getBlock() ||
        call.getOutputs().size() != 1)
      continue;
    FailureOr<x::GemmParams> g = gemmParams(call);
    if (failed(g) || g->epilogue != x::GemmEpilogue::None || g->has_c ||
        g->beta != 0.0f)
      continue;
    auto is2d = [&](Value v) {
      auto t = cast<MemRefType>(v.getType());
      return sameMemory(v, d) && t.getDimSize(0) == rows &&
             t.getDimSize(1) == cols;
    };
    x::GemmEpilogue epilogue;
    if (g->trans_a && is2d(call.getInputs()[0]))
      epilogue = x::GemmEpilogue::BiasGradA;
    else if (!g->trans_b && is2d(call.getInputs()[1]))
      epilogue = x::GemmEpilogue::BiasGradB;
    else
      continue;
    const bool callFirst = call->isBeforeInBlock(sum);
    Operation *first = callFirst ? call.getOperation() : sum.getOperation();
    Operation *last = callFirst ? sum.getOperation() : call.getOperation();
    if (touchedBetween(first, last, d, /*reads=*/false) ||
        llvm::any_of(call->getOperands(),
                     [&](Value v) { return sameMemory(v, dBias); }))
      continue;
    // The fused call runs where the gemm is, writing dBias there (nothing
    // in between may touch dBias), or, when the sum comes first and its
    // result is read before the gemm (an optimizer update), where the sum
    // is: then nothing in between may write the gemm's inputs or touch Y.
    Operation *at = call.getOperation();
    if (touchedBetween(first, last, dBias, /*reads=*/true) ||
        !canDefineBefore(dBias, call)) {
      Value y = call.getOutputs()[0];
      if (callFirst || touchedBetween(sum, call, y, /*reads=*/true) ||
          llvm::any_of(call.getInputs(),
                       [&](Value in) {
                         return touchedBetween(sum, call, in,
                                               /*reads=*/false) ||
                                !canDefineBefore(in, sum);
                       }) ||
          !canDefineBefore(y, sum))
        continue;
      at = sum.getOperation();
      for (Value v : call->getOperands())
        (void)defineBefore(v, sum);
    }
    (void)defineBefore(dBias, at);
    OpBuilder b(at);
    auto fused = x::LibraryCallOp::create(
        b, call.getLoc(), call.getCalleeAttr(), call.getInputs(),
        ValueRange{call.getOutputs()[0], dBias});
    fused->setDiscardableAttrs(call->getDiscardableAttrDictionary());
    fused->setAttr("epilogue", b.getStringAttr(x::gemmEpilogueName(epilogue)));
    call->erase();
    sum->erase();
    return success();
  }
  return failure();
}

/// |k| is dZ = select(H > 0, dH, +0.0) elementwise over identical f32
/// shapes (autodiff's ReLU gradient; `0 < H` is the same test): two inputs,
/// one output, all-parallel identity maps. Sets |dh| and |h| to the
/// inputs in those roles.
bool isReluGradientKernel(x::KernelOp k, Value &dh, Value &h) {
  if (k.getInputs().size() != 2 || k.getOutputs().size() != 1 ||
      !isAllParallel(k) || k.getInit())
    return false;
  for (Attribute m : k.getIndexingMaps())
    if (!cast<AffineMapAttr>(m).getValue().isIdentity())
      return false;
  Type t = k.getOutputs()[0].getType();
  if (!cast<MemRefType>(t).getElementType().isF32() ||
      k.getInputs()[0].getType() != t || k.getInputs()[1].getType() != t)
    return false;
  Operation *yield = k.getBody().front().getTerminator();
  if (yield->getNumOperands() != 1)
    return false;
  auto select = yield->getOperand(0).getDefiningOp<arith::SelectOp>();
  if (!select || select->getBlock() != yield->getBlock())
    return false;
  FloatAttr zero;
  if (!matchPattern(select.getFalseValue(), m_Constant(&zero)) ||
      !zero.getValue().isPosZero())
    return false;
  auto cmp = select.getCondition().getDefiningOp<arith::CmpFOp>();
  if (!cmp || cmp->getBlock() != select->getBlock())
    return false;
  Value hArg, zeroSide;
  if (cmp.getPredicate() == arith::CmpFPredicate::OGT)
    hArg = cmp.getLhs(), zeroSide = cmp.getRhs();
  else if (cmp.getPredicate() == arith::CmpFPredicate::OLT)
    hArg = cmp.getRhs(), zeroSide = cmp.getLhs();
  else
    return false;
  FloatAttr cmpZero;
  if (!matchPattern(zeroSide, m_Constant(&cmpZero)) ||
      !cmpZero.getValue().isZero())
    return false;
  // The body is the compare, the select and constants.
  unsigned others = 0;
  for (Operation &o : k.getBody().front().without_terminator())
    if (!isa<arith::ConstantOp>(o) && &o != select.getOperation() &&
        &o != cmp.getOperation())
      ++others;
  if (others)
    return false;
  for (unsigned i = 0; i < 2; ++i)
    if (isArg(hArg, k, i) && isArg(select.getTrueValue(), k, 1 - i)) {
      h = k.getInputs()[i];
      dh = k.getInputs()[1 - i];
      return true;
    }
  return false;
}

/// The buffer |v| views through dlexec.reshape ops that keep the last dim:
/// they only merge or split leading dims ([B, T, N] <-> [B*T, N]), so,
/// reshapes being row-major, element (i..., n) of every such view is row
/// flatten(i...), column n of the root. Matmul lowering flattens a 3-D
/// activation [B, T, D] to the gemm's [B*T, D] this way (a transformer's
/// feed-forward layers).
Value leadingDimsRoot(Value v) {
  while (auto r = v.getDefiningOp<x::ReshapeOp>()) {
    auto from = cast<MemRefType>(r.getSource().getType());
    auto to = cast<MemRefType>(r.getType());
    if (from.getRank() == 0 || to.getRank() == 0 ||
        from.getShape().back() != to.getShape().back())
      break;
    v = r.getSource();
  }
  return v;
}

/// |a| and |b| are the same [M, N] matrix viewed with the same rows
/// (leadingDimsRoot).
bool sameRows(Value a, Value b) {
  return leadingDimsRoot(a) == leadingDimsRoot(b);
}

/// The uses of |v| and of every reshape view of it (through any chain of
/// dlexec.reshape), other than by the reshapes themselves.
void viewUses(Value v, SmallVectorImpl<OpOperand *> &uses) {
  for (OpOperand &use : v.getUses())
    if (auto r = dyn_cast<x::ReshapeOp>(use.getOwner()))
      viewUses(r.getResult(), uses);
    else
      uses.push_back(&use);
}

/// Erases the reshape views of |v| that nothing uses any more, then |v|'s
/// defining op when it is an alloc that nothing uses.
void eraseDeadViews(Value v) {
  for (Operation *u : llvm::make_early_inc_range(v.getUsers()))
    if (auto r = dyn_cast<x::ReshapeOp>(u)) {
      eraseDeadViews(r.getResult());
      if (r->use_empty())
        r->erase();
    }
  if (auto alloc = v.getDefiningOp<x::AllocOp>(); alloc && alloc->use_empty())
    alloc->erase();
}

/// The only gemm call in |v|'s block that writes |v| (or a view of it with
/// the same rows, sameRows) as its first output before |before|, or null.
x::LibraryCallOp writerGemm(Value v, Operation *before) {
  SmallVector<OpOperand *> uses;
  viewUses(leadingDimsRoot(v), uses);
  x::LibraryCallOp found;
  for (OpOperand *use : uses) {
    auto c = dyn_cast<x::LibraryCallOp>(use->getOwner());
    if (!c || c->getBlock() != before->getBlock() ||
        !c->isBeforeInBlock(before) || c.getOutputs().empty() ||
        c.getOutputs()[0] != use->get() || !sameRows(use->get(), v) ||
        failed(gemmParams(c)))
      continue;
    if (found)
      return nullptr;
    found = c;
  }
  return found;
}

/// Folds autodiff's ReLU gradient into the gemms around it (cuBLASLt's
/// RELU_AUX(_BIAS) and DRELU(_BGRAD)):
///   H = gemm{relu}(X, W1[, b1]); ...; dH = gemm(dY, W2);
///   dZ = select(H > 0, dH, 0); [db1 = column sum of dZ, a kernel or the
///   bgrad epilogue of a gemm reading dZ]
/// becomes
///   H, Aux = gemm{relu_aux}(X, W1[, b1]); ...;
///   dZ[, db1] = gemm{drelu[_bgrad]}(dY, W2, Aux)
/// where Aux is a new [M, reluMaskWords(N)] i32 buffer, the ReLU bit-mask
/// (the memory plan keeps it live from the forward gemm to the backward
/// one). Only for f32 (a 16-bit H rounds to 0 where the mask, taken before
/// rounding, has the bit set), when dH has no other reader, nothing between
/// the forward gemm and the select writes H, nothing between the dH gemm
/// and the select touches dZ, and (for the bias gradient) nothing between
/// the dH gemm and the sum touches db1 or writes dZ. A recomputed forward
/// (rematerialization) is a gemm of its own whose H the select reads: that
/// gemm gets the mask. H, dH, dZ and the column sum's input may be reshape
/// views that merge or split the leading dims of the gemms' [M, N]
/// (leadingDimsRoot: a 3-D activation [B, T, N] flattened to [B*T, N]); the
/// fused dH gemm then writes a [M, N] view of dZ, and the bias gradient sums
/// over all leading dims. A view that changes the last dim is not matched.
LogicalResult fuseReluGradient(x::KernelOp k) {
  Value dh, h;
  if (!isReluGradientKernel(k, dh, h))
    return failure();
  Value dz = k.getOutputs()[0];
  // dH is the dH gemm's [M, N] output or a view of it, and the select is
  // its only reader.
  Value dhRoot = leadingDimsRoot(dh);
  if (!dhRoot.getDefiningOp<x::AllocOp>())
    return failure();
  x::LibraryCallOp back = writerGemm(dh, k);
  x::LibraryCallOp fwd = writerGemm(h, back ? back.getOperation() : k);
  if (!back || !fwd || back.getOutputs().size() != 1)
    return failure();
  SmallVector<OpOperand *> dhUses;
  viewUses(dhRoot, dhUses);
  if (dhUses.size() != 2 || llvm::any_of(dhUses, [&](OpOperand *use) {
        return use->getOwner() != back.getOperation() &&
               use->getOwner() != k.getOperation();
      }))
    return failure();
  FailureOr<x::GemmParams> gb = gemmParams(back), gf = gemmParams(fwd);
  if (failed(gb) || failed(gf) || gb->epilogue != x::GemmEpilogue::None ||
      gb->has_c || gb->beta != 0.0f || gb->dtype != x::ElementType::F32 ||
      gf->dtype != x::ElementType::F32 || gf->m != gb->m || gf->n != gb->n ||
      (gf->epilogue != x::GemmEpilogue::Relu &&
       gf->epilogue != x::GemmEpilogue::ReluAux))
    return failure();
  if (touchedBetween(fwd, k, h, /*reads=*/false) ||
      touchedBetween(back, k, dz, /*reads=*/true) ||
      llvm::any_of(back.getInputs(),
                   [&](Value in) { return sameMemory(in, dz); }) ||
      !canDefineBefore(dz, back))
    return failure();

  // The bias gradient of dZ: a column-sum kernel or a gemm's bgrad epilogue
  // that reads dZ (the weight-gradient gemm), after the select.
  // dZ and its readers below may view it with other leading dims.
  int64_t rows = gb->m, cols = gb->n;
  auto dzType = cast<MemRefType>(dz.getType());
  if (dzType.getShape().back() != cols ||
      dzType.getNumElements() != rows * cols)
    return failure();
  Operation *sumOp = nullptr;
  Value dBias;
  SmallVector<OpOperand *> dzUses;
  viewUses(dz, dzUses);
  for (OpOperand *use : dzUses) {
    Operation *u = use->getOwner();
    if (u == k.getOperation() || u->getBlock() != k->getBlock() ||
        !k->isBeforeInBlock(u) || !sameRows(use->get(), dz))
      continue;
    Value candidate;
    if (auto sum = dyn_cast<x::KernelOp>(u)) {
      if (isColumnSumKernel(sum) && sum.getInputs()[0] == use->get())
        candidate = sum.getOutputs()[0];
    } else if (auto call = dyn_cast<x::LibraryCallOp>(u)) {
      FailureOr<x::GemmParams> g = gemmParams(call);
      if (succeeded(g) && call.getOutputs().size() == 2 &&
          ((g->epilogue == x::GemmEpilogue::BiasGradA &&
            call.getInputs()[0] == use->get() && g->trans_a) ||
           (g->epilogue == x::GemmEpilogue::BiasGradB &&
            call.getInputs()[1] == use->get() && !g->trans_b)))
        candidate = call.getOutputs()[1];
    }
    if (!candidate ||
        cast<MemRefType>(candidate.getType()).getNumElements() != cols ||
        touchedBetween(k, u, dz, /*reads=*/false) ||
        touchedBetween(back, u, candidate, /*reads=*/true) ||
        llvm::any_of(back->getOperands(),
                     [&](Value v) { return sameMemory(v, candidate); }) ||
        !canDefineBefore(candidate, back))
      continue;
    sumOp = u;
    dBias = candidate;
    break;
  }

  // The mask: the forward gemm's own when it already writes one.
  Value aux;
  if (gf->epilogue == x::GemmEpilogue::ReluAux) {
    aux = fwd.getOutputs()[1];
  } else {
    OpBuilder b(fwd);
    auto maskType = MemRefType::get({gf->m, x::reluMaskWords(gf->n)},
                                    b.getI32Type());
    aux = x::AllocOp::create(b, fwd.getLoc(), maskType, IntegerAttr())
              .getResult();
    auto fused = x::LibraryCallOp::create(
        b, fwd.getLoc(), fwd.getCalleeAttr(), fwd.getInputs(),
        ValueRange{fwd.getOutputs()[0], aux});
    fused->setDiscardableAttrs(fwd->getDiscardableAttrDictionary());
    fused->setAttr("epilogue", b.getStringAttr(x::gemmEpilogueName(
                                   x::GemmEpilogue::ReluAux)));
    fwd->erase();
  }

  (void)defineBefore(dz, back);
  if (dBias)
    (void)defineBefore(dBias, back);
  OpBuilder b(back);
  SmallVector<Value> ins(back.getInputs());
  ins.push_back(aux);
  Value dz2d = dz;
  if (dz.getType() != back.getOutputs()[0].getType())
    dz2d = x::ReshapeOp::create(b, back.getLoc(), back.getOutputs()[0].getType(),
                                dz)
               .getResult();
  SmallVector<Value> outs{dz2d};
  if (dBias)
    outs.push_back(dBias);
  auto fused = x::LibraryCallOp::create(b, back.getLoc(), back.getCalleeAttr(),
                                        ins, outs);
  fused->setDiscardableAttrs(back->getDiscardableAttrDictionary());
  fused->setAttr("epilogue",
                 b.getStringAttr(x::gemmEpilogueName(
                     dBias ? x::GemmEpilogue::DReluBiasGrad
                           : x::GemmEpilogue::DRelu)));
  back->erase();
  k->erase();
  eraseDeadViews(dhRoot);
  if (auto sum = dyn_cast_or_null<x::KernelOp>(sumOp)) {
    sum->erase();
  } else if (auto call = dyn_cast_or_null<x::LibraryCallOp>(sumOp)) {
    // The weight-gradient gemm loses its bgrad epilogue and dBias.
    OpBuilder cb(call);
    auto plain = x::LibraryCallOp::create(cb, call.getLoc(),
                                          call.getCalleeAttr(),
                                          call.getInputs(),
                                          ValueRange{call.getOutputs()[0]});
    plain->setDiscardableAttrs(call->getDiscardableAttrDictionary());
    plain->removeAttr("epilogue");
    call->erase();
  }
  return success();
}

struct FuseGemmEpiloguesPass
    : dlc::impl::FuseGemmEpiloguesPassBase<FuseGemmEpiloguesPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<x::FuncOp>())
      for (auto k : llvm::to_vector(func.getBody().getOps<x::KernelOp>()))
        if (failed(fuseRelu(k)) && failed(fuseBiasKernel(k)))
          (void)fuseBiasGradient(k);
    // After the forward ReLUs and the bias gradients are epilogues: the
    // ReLU gradients between them.
    for (auto func : getOperation().getOps<x::FuncOp>())
      for (auto k : llvm::to_vector(func.getBody().getOps<x::KernelOp>()))
        (void)fuseReluGradient(k);
  }
};

} // namespace
