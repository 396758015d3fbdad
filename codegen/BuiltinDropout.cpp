//===- BuiltinDropout.cpp - the dropout template --------------------------===//
//
// dropout (BuiltinFamily::Dropout): Philox-4x32-10 masks.
//
//===----------------------------------------------------------------------===//
#include "codegen/BuiltinKernels.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

using namespace mlir;

namespace dlc::codegen::detail {

/// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
/// 3", SC 2011) as C statements: on entry c0..c3 (the counter) and k0, k1
/// (the key) are `unsigned int` variables; on exit c0..c3 hold the output.
/// compiler/Reference/Interpreter.cpp computes the same function (dropout).
static const char *kPhilox4x32x10 =
    "  for (int r = 0; r < 10; ++r) {\n"
    "    const unsigned long long p0 = 0xD2511F53ull * c0;\n"
    "    const unsigned long long p1 = 0xCD9E8D57ull * c2;\n"
    "    const unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0;\n"
    "    const unsigned int n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1;\n"
    "    c1 = (unsigned int)p1; c3 = (unsigned int)p0; c0 = n0; c2 = n2;\n"
    "    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;\n"
    "  }\n";

/// dropout: ins(X, step rank-0 f32) outs(Y, mask i1), attributes `ratio`
/// (f32 in [0, 1)) and `seed` (i64). Element i draws Philox-4x32-10 with
/// counter (i low, i high, step, 0) and key (seed low, seed high); u is the
/// top 24 bits of output word 0 over 2^24, and the element is kept when
/// u >= ratio (probability 1 - ratio); kept elements are scaled by
/// 1 / (1 - ratio), as torch.nn.functional.dropout does.
FailureOr<KernelCode> buildDropout(exec::BuiltinKernelOp op) {
  if (failed(expectOperands(op, 2, 2, "input, step -> result, mask")))
    return failure();
  Value x = op.getInputs()[0], step = op.getInputs()[1];
  auto t = floatElementType(op, x);
  if (failed(t))
    return failure();
  auto xt = cast<MemRefType>(x.getType());
  auto st = cast<MemRefType>(step.getType());
  auto yt = cast<MemRefType>(op.getOutputs()[0].getType());
  auto mt = cast<MemRefType>(op.getOutputs()[1].getType());
  if (st.getRank() != 0 || !st.getElementType().isF32() || yt != xt ||
      mt.getShape() != xt.getShape() || !mt.getElementType().isInteger(1))
    return op.emitOpError() << "expects X, a rank-0 f32 step, Y of X's type "
                               "and an i1 mask of X's shape";
  auto ratioAttr = op->getAttrOfType<FloatAttr>("ratio");
  auto seedAttr = op->getAttrOfType<IntegerAttr>("seed");
  if (!ratioAttr || !seedAttr)
    return op.emitOpError()
           << "needs attributes 'ratio' (f32) and 'seed' (i64)";
  float ratio = (float)ratioAttr.getValueAsDouble();
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return op.emitOpError() << "ratio must be in [0, 1), got " << ratio;
  uint64_t seed = (uint64_t)seedAttr.getInt();
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
  os << "  unsigned int c0 = (unsigned int)tid;\n"
     << "  unsigned int c1 = (unsigned int)((unsigned long long)tid >> 32);\n"
     << "  unsigned int c2 = (unsigned int)a1[0];\n"
     << "  unsigned int c3 = 0u;\n"
     << "  unsigned int k0 = " << (uint32_t)seed << "u;\n"
     << "  unsigned int k1 = " << (uint32_t)(seed >> 32) << "u;\n"
     << kPhilox4x32x10
     << "  const float u = (float)(c0 >> 8) * 5.9604644775390625e-08f;\n"
     << "  const bool keep = u >= " << ratioLit << ";\n"
     << "  a3[tid] = keep;\n"
     << "  a2[tid] = keep ? (" << *t << ")(a0[tid] * (" << *t << ")" << scaleLit
     << ") : (" << *t << ")0;\n";
  code.body = std::move(body);
  return code;
}

} // namespace dlc::codegen::detail
