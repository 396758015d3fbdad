//===- BuiltinDropout.cpp - the dropout template --------------------------===//
//
// dropout (BuiltinFamily::Dropout): Philox-4x32-10 masks.
//
//===----------------------------------------------------------------------===//
#include "codegen/BuiltinKernels.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

using namespace mlir;

namespace dlc::codegen::detail {

/// runtime/schema/Semantics/Philox.h (dlc_philox_uniform24), the text the
/// reference interpreter compiles too.
static const char *kPhiloxSource =
#include "PhiloxSource.inc"
    ;

/// dropout: ins(X, step rank-0 f32) outs(Y, mask i1), attributes `ratio`
/// (f32 in [0, 1)) and `seed` (i64). Element i draws Philox-4x32-10 with
/// counter (i low, i high, step, 0) and key (seed low, seed high); u is the
/// top 24 bits of output word 0 over 2^24, and the element is kept when
/// u >= ratio (probability 1 - ratio); kept elements are scaled by
/// 1 / (1 - ratio), as torch.nn.functional.dropout does. f16 / bf16 X draws
/// the same mask; the scaled value is computed in float and rounded once.
FailureOr<KernelCode> buildDropout(exec::BuiltinKernelOp op,
                                   const exec::DropoutParams &params) {
  if (failed(expectOperands(op, 2, 2, "input, step -> result, mask")))
    return failure();
  Value x = op.getInputs()[0], step = op.getInputs()[1];
  auto t = floatElementType(op, x);
  if (failed(t))
    return failure();
  auto xt = cast<MemRefType>(x.getType());
  Type elem = xt.getElementType();
  auto st = cast<MemRefType>(step.getType());
  auto yt = cast<MemRefType>(op.getOutputs()[0].getType());
  auto mt = cast<MemRefType>(op.getOutputs()[1].getType());
  if (st.getRank() != 0 || !st.getElementType().isF32() || yt != xt ||
      mt.getShape() != xt.getShape() || !mt.getElementType().isInteger(1))
    return op.emitOpError() << "expects X, a rank-0 f32 step, Y of X's type "
                               "and an i1 mask of X's shape";
  float ratio = params.ratio;
  uint64_t seed = (uint64_t)params.seed;
  double scale = 1.0 / (1.0 - (double)ratio);
  std::string ratioLit, scaleLit;
  {
    llvm::raw_string_ostream rs(ratioLit);
    rs << llvm::format("%.9g", (double)ratio) << "f";
    llvm::raw_string_ostream ss(scaleLit);
    ss << llvm::format("%.17g", scale);
  }
  KernelCode code;
  code.numThreads = xt.getNumElements();
  std::string body;
  llvm::raw_string_ostream os(body);
  os << "  const float u = dlc_philox_uniform24(" << seed
     << "ull, (unsigned long long)tid, (unsigned int)a1[0]);\n"
     << "  const bool keep = u >= " << ratioLit << ";\n"
     << "  a3[tid] = keep;\n"
     << "  a2[tid] = keep ? "
     << storeExpr(elem, "(" + *t + ")(" + loadExpr(elem, "a0[tid]") + " * (" +
                            *t + ")" + scaleLit + ")")
     << " : " << storeExpr(elem, "(" + *t + ")0") << ";\n";
  code.body = std::move(body);
  code.helpers = kPhiloxSource;
  return code;
}

} // namespace dlc::codegen::detail
