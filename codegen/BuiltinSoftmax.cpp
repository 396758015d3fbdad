//===- BuiltinSoftmax.cpp - softmax and cross-entropy templates -----------===//
//
// softmax, log_softmax (BuiltinFamily::Softmax) and softmax_cross_entropy
// with its gradient (BuiltinFamily::CrossEntropy). Softmax subtracts the
// slice maximum before exponentiating.
//
//===----------------------------------------------------------------------===//
#include "codegen/BuiltinKernels.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

using namespace mlir;

namespace dlc::codegen::detail {

FailureOr<KernelCode> buildSoftmax(exec::BuiltinKernelOp op, bool isLog) {
  if (failed(expectOperands(op, 1, 1, "x -> y")))
    return failure();
  Value x = op.getInputs()[0];
  if (op.getOutputs()[0].getType() != x.getType())
    return op.emitOpError() << "y must have the type of x, " << x.getType();
  auto t = floatElementType(op, x);
  if (failed(t))
    return failure();
  auto type = cast<MemRefType>(x.getType());
  auto axisOr = getInt(op, "axis", -1);
  if (failed(axisOr))
    return failure();
  int64_t rank = type.getRank(), axis = *axisOr;
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return op.emitOpError()
           << "axis " << *axisOr << " is out of range for " << type;
  int64_t outer = 1, inner = 1, n = type.getDimSize(axis);
  for (int64_t d = 0; d < axis; ++d)
    outer *= type.getDimSize(d);
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= type.getDimSize(d);
  bool f32 = *t == "float";
  std::string exp = f32 ? "expf" : "exp", log = f32 ? "logf" : "log";
  KernelCode code;
  code.numThreads = outer * inner;
  std::string body;
  llvm::raw_string_ostream os(body);
  os << "  const long long base = (tid / " << inner << "LL) * " << n * inner
     << "LL + tid % " << inner << "LL;\n"
     << "  " << *t << " m = -" << (f32 ? "DLC_INF_F" : "DLC_INF_D") << ";\n"
     << "  for (long long k = 0; k < " << n << "LL; ++k) {\n"
     << "    const " << *t << " v = a0[base + k * " << inner << "LL];\n"
     << "    if (v > m || v != v) m = v;\n"
     << "  }\n"
     << "  " << *t << " s = 0;\n"
     << "  for (long long k = 0; k < " << n << "LL; ++k) s += " << exp
     << "(a0[base + k * " << inner << "LL] - m);\n";
  if (isLog)
    os << "  const " << *t << " ls = " << log << "(s);\n"
       << "  for (long long k = 0; k < " << n << "LL; ++k) a1[base + k * "
       << inner << "LL] = a0[base + k * " << inner << "LL] - m - ls;\n";
  else
    os << "  for (long long k = 0; k < " << n << "LL; ++k) a1[base + k * "
       << inner << "LL] = " << exp << "(a0[base + k * " << inner
       << "LL] - m) / s;\n";
  code.body = std::move(body);
  return code;
}

/// softmax_cross_entropy(_grad): logits [..., C], labels [...] (i64 or i32).
/// A label outside [0, C) contributes neither loss nor gradient but still
/// counts in the mean (count = number of label elements).
FailureOr<KernelCode> buildCrossEntropy(exec::BuiltinKernelOp op, bool grad) {
  if (failed(expectOperands(op, grad ? 3 : 2, 1,
                            grad ? "logits, labels, loss_grad -> dlogits"
                                 : "logits, labels -> loss")))
    return failure();
  Value logits = op.getInputs()[0], labels = op.getInputs()[1];
  auto t = floatElementType(op, logits);
  if (failed(t))
    return failure();
  auto lt = cast<MemRefType>(logits.getType());
  auto bt = cast<MemRefType>(labels.getType());
  if (lt.getRank() < 1 || bt.getRank() != lt.getRank() - 1 ||
      lt.getShape().drop_back() != bt.getShape())
    return op.emitOpError() << "expects logits [..., C] and labels [...], got "
                            << lt << " and " << bt;
  if (!bt.getElementType().isInteger(64) && !bt.getElementType().isInteger(32))
    return op.emitOpError()
           << "labels must be i64 or i32, got " << bt.getElementType();
  Value out = op.getOutputs()[0];
  // f16/bf16 logits are widened as read; everything is computed in float,
  // the loss and its seed are f32 and dlogits is rounded once.
  Type elem = lt.getElementType();
  Type lossType = isHalfFloat(elem) ? Float32Type::get(op.getContext()) : elem;
  if (grad) {
    auto gt = cast<MemRefType>(op.getInputs()[2].getType());
    if (gt.getRank() != 0 || gt.getElementType() != lossType)
      return op.emitOpError() << "loss_grad must be a rank-0 " << lossType
                              << " memref, got " << gt;
    if (out.getType() != logits.getType())
      return op.emitOpError() << "dlogits must have the type of logits, " << lt;
  } else {
    auto ot = cast<MemRefType>(out.getType());
    if (ot.getRank() != 0 || ot.getElementType() != lossType)
      return op.emitOpError() << "loss must be a rank-0 " << lossType
                              << " memref, got " << ot;
  }
  auto storage = cStorageType(elem);
  if (failed(storage))
    return op.emitOpError() << "unsupported logits type " << elem;
  auto x = [&](const std::string &k) { return loadExpr(elem, "x[" + k + "]"); };
  int64_t c = lt.getShape().back(), rows = bt.getNumElements();
  bool f32 = *t == "float";
  std::string exp = f32 ? "expf" : "exp", log = f32 ? "logf" : "log";
  std::string inf = f32 ? "DLC_INF_F" : "DLC_INF_D";
  KernelCode code;
  std::string body;
  llvm::raw_string_ostream os(body);
  auto rowStats = [&](StringRef indent) {
    os << indent << "const " << *storage << "* x = a0 + row * " << c << "LL;\n"
       << indent << "const long long label = (long long)a1[row];\n"
       << indent << *t << " m = -" << inf << ";\n"
       << indent << "for (long long k = 0; k < " << c << "LL; ++k) { const "
       << *t << " v = " << x("k") << "; if (v > m || v != v) m = v; }\n"
       << indent << *t << " s = 0;\n"
       << indent << "for (long long k = 0; k < " << c << "LL; ++k) s += " << exp
       << "(" << x("k") << " - m);\n";
  };
  if (!grad) {
    // One thread; the mean accumulates in double.
    code.numThreads = 1;
    os << "  double total = 0;\n"
       << "  for (long long row = 0; row < " << rows << "LL; ++row) {\n";
    rowStats("    ");
    os << "    if (label < 0 || label >= " << c << "LL) continue;\n"
       << "    total += (double)(m + " << log << "(s) - " << x("label") << ");\n"
       << "  }\n"
       << "  a2[0] = (" << *t << ")(total / " << rows << ".0);\n";
  } else {
    code.numThreads = rows;
    os << "  const long long row = tid;\n";
    rowStats("  ");
    os << "  " << *storage << "* dx = a3 + row * " << c << "LL;\n"
       << "  const " << *t << " scale = a2[0] / (" << *t << ")" << rows << ";\n"
       << "  const bool valid = label >= 0 && label < " << c << "LL;\n"
       << "  for (long long k = 0; k < " << c << "LL; ++k)\n"
       << "    dx[k] = "
       << storeExpr(elem, "valid ? (" + exp + "(" + x("k") +
                              " - m) / s - (k == label ? (" + *t +
                              ")1 : (" + *t + ")0)) * scale : (" + *t + ")0")
       << ";\n";
  }
  code.body = std::move(body);
  return code;
}

} // namespace dlc::codegen::detail
