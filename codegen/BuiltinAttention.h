//===- BuiltinAttention.h - what the attention templates share -*- C++ -*-===//
//
// The operand description the portable attention bodies
// (BuiltinAttention.cpp) and the tensor-core CUDA bodies
// (BuiltinAttentionMma.cpp) both generate from.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CODEGEN_BUILTINATTENTION_H
#define DLC_CODEGEN_BUILTINATTENTION_H

#include "codegen/BuiltinKernels.h"

#include "runtime/schema/Semantics/Attention.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <string>

namespace dlc::codegen::detail {

/// What the three templates share: the sizes, each operand's strides and
/// pointer names, the score of (query row, key j) with its masks, and the
/// dropout factor.
struct AttentionGen {
  semantics::AttentionDims d;
  const exec::AttentionParams &p;
  std::string t;              // compute type: "float" or "double"
  std::string exp, log, inf;  // in t
  // Element types: Q, K, V, O, dO, mask.
  mlir::Type qe, ke, ve, oe, doe, maskElem;
  std::array<int64_t, 4> qs, ks, vs, os, ms; // (b, h, s, d) strides
  std::string q, k, v, mask, step;           // operand names

  std::string lit(double x) const {
    std::string out;
    llvm::raw_string_ostream os(out);
    os << "(" << t << ")" << llvm::format("%.17g", x);
    return out;
  }
  static std::string idx(const std::array<int64_t, 4> &st,
                         const std::string &b, const std::string &h,
                         const std::string &s, const std::string &c) {
    return b + " * " + std::to_string(st[0]) + "LL + " + h + " * " +
           std::to_string(st[1]) + "LL + " + s + " * " + std::to_string(st[2]) +
           "LL + " + c + " * " + std::to_string(st[3]) + "LL";
  }
  /// Element |index| of operand |ptr| (element type |et|) as a value of t.
  std::string load(const std::string &ptr, mlir::Type et,
                   const std::string &index) const {
    return "(" + t + ")" + loadExpr(et, ptr + "[" + index + "]");
  }
  /// Statements that set `s` to the masked, scaled score of query (b, h, i)
  /// — its row held in `qv` — and key j of K/V head `hk`, and `continue`
  /// the enclosing key loop when the mask removes it.
  std::string score(const std::string &in) const {
    std::string out;
    llvm::raw_string_ostream os(out);
    os << in << t << " s = 0;\n"
       << in << "for (int c = 0; c < " << d.headDim << "; ++c) s += qv[c] * "
       << load(k, ke, idx(ks, "b", "hk", "j", "c")) << ";\n"
       << in << "s = s * " << lit(p.scale) << ";\n";
    if (p.hasMask) {
      std::string m = mask + "[" + idx(ms, "b", "h", "i", "j") + "]";
      if (maskElem.isInteger(1))
        os << in << "if (!" << m << ") continue;\n";
      else
        os << in << "s += (" << t << ")" << loadExpr(maskElem, m) << ";\n";
    }
    os << in << "if (s == -" << inf << ") continue;\n";
    return out;
  }
  /// Statements that set `keep`, the dropout factor of probability
  /// (b, h, i, j): 0 or 1 / (1 - ratio); 1 without dropout.
  std::string keep(const std::string &in) const {
    if (p.dropoutRatio <= 0.0f)
      return in + "const " + t + " keep = 1;\n";
    std::string out;
    llvm::raw_string_ostream os(out);
    os << in << "const unsigned long long e = (((unsigned long long)b * "
       << d.queryHeads << "ULL + (unsigned long long)h) * " << d.queryLen
       << "ULL + (unsigned long long)i) * " << d.kvLen
       << "ULL + (unsigned long long)j;\n"
       << in << "const " << t << " keep = dlc_philox_uniform24("
       << (uint64_t)p.seed << "ull, e, (unsigned int)" << step << "[0]) >= "
       << llvm::format("%.9g", (double)p.dropoutRatio) << "f ? "
       << lit(1.0 / (1.0 - (double)p.dropoutRatio)) << " : (" << t << ")0;\n";
    return out;
  }
  /// The last key query i sees plus one (causal), else Skv.
  std::string keyEnd() const {
    if (!p.causal)
      return std::to_string(d.kvLen) + "LL";
    int64_t off = d.kvLen - d.queryLen + 1;
    return "(i + " + std::to_string(off) + "LL < " + std::to_string(d.kvLen) +
           "LL ? i + " + std::to_string(off) + "LL : " +
           std::to_string(d.kvLen) + "LL)";
  }
  /// Decodes a query-row `tid` into b, h, i and the K/V head hk.
  std::string queryRow() const {
    std::string out;
    llvm::raw_string_ostream os(out);
    os << "  const long long i = tid % " << d.queryLen << "LL;\n"
       << "  const long long h = (tid / " << d.queryLen << "LL) % "
       << d.queryHeads << "LL;\n"
       << "  const long long b = tid / " << d.queryLen * d.queryHeads
       << "LL;\n"
       << "  const long long hk = h / " << d.groupSize() << "LL;\n";
    return out;
  }
  /// Loads query row (b, h, i) into `qv`.
  std::string loadQuery(const std::string &in) const {
    return in + t + " qv[" + std::to_string(d.headDim) + "];\n" + in +
           "for (int c = 0; c < " + std::to_string(d.headDim) +
           "; ++c) qv[c] = " + load(q, qe, idx(qs, "b", "h", "i", "c")) + ";\n";
  }
};

/// The (b, h, s, d) strides of a mask of shape |shape| broadcast to
/// [B, Hq, Sq, Skv]: 0 along broadcast dimensions.
std::array<int64_t, 4> maskStrides(llvm::ArrayRef<int64_t> shape);

/// Reads |op|'s operands into |g|: sizes, element types, strides and the
/// names of the optional mask and step.
mlir::LogicalResult initGen(exec::BuiltinKernelOp op, AttentionGen &g);

/// Sets |code|'s cooperative CUDA body (cudaBody, blockSize, numThreads) to
/// the tensor-core kernel of |op| where it covers the case (Q, K and V all
/// bf16 or all f16; BuiltinAttentionMma.cpp); leaves |code| as it is
/// elsewhere. Keeps a hostThreads the host body set, else sets it to the
/// portable body's numThreads.
mlir::LogicalResult addAttentionTensorCoreBody(exec::BuiltinKernelOp op,
                                               const AttentionGen &g,
                                               KernelCode &code);

} // namespace dlc::codegen::detail

#endif // DLC_CODEGEN_BUILTINATTENTION_H
