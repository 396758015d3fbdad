//===- BuiltinLayerNorm.cpp - the layer_norm template ---------------------===//
//
// layer_norm (BuiltinFamily::LayerNorm): LayerNorm over the last axis of
// x [R, N] in one kernel that reads x once and writes y once, plus the row
// mean and rstd; layer_norm_train also writes d = x - mean and
// u = d * rstd (a training step's backward reads them). The formula is the importer's decomposition (two passes,
// as PyTorch's and Apex's layer_norm kernels: the mean, then the variance
// of the centered values), with the generated reductions' f32 rounding
// steps and double accumulators, so that the host gives the decomposed
// kernels' bits:
//   mean = (T)sum_k (double)(T)(x_k * c)                c = (T)(1 / N)
//   var  = (T)sum_k (double)(T)((T)(d_k * d_k) * c)     d_k = (T)(x_k - mean)
//   rstd = 1 / sqrt((T)(var + epsilon))
//   y_k  = (T)((T)((T)(d_k * rstd) * scale_k) + bias_k)
// CUDA: one warp per row up to 1024 elements, else one block per row (256
// to 1024 threads); the row stays in registers (at most 32 values a
// thread; longer rows are read again from memory for each pass). Partial
// sums combine by an xor butterfly of shuffles and, across the warps of a
// block, in warp order through shared memory: deterministic, no atomics.
// The host goes through each row serially.
//
//===----------------------------------------------------------------------===//
#include "codegen/BuiltinKernels.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <functional>

using namespace mlir;

namespace dlc::codegen::detail {

namespace {
/// |v| as a C literal of |t| ("float" or "double"), bit-exact.
std::string literalOf(const std::string &t, double v) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (t == "float")
    os << "(float)" << llvm::format("%.9e", v) << "f";
  else
    os << llvm::format("%.17e", v);
  return out;
}
} // namespace

FailureOr<KernelCode> buildLayerNorm(exec::BuiltinKernelOp op,
                                     const exec::LayerNormParams &params) {
  // layer_norm_train also writes d = x - mean (a6) and u = d * rstd (a7),
  // which a training step's backward reads.
  const bool train = op.getTemplateName() == "layer_norm_train";
  if (failed(expectOperands(
          op, 3, train ? 5 : 3,
          train ? "x, scale, bias -> y, mean, rstd, centered, normalized"
                : "x, scale, bias -> y, mean, rstd")))
    return failure();
  Value x = op.getInputs()[0];
  auto t = floatElementType(op, x);
  if (failed(t))
    return failure();
  auto xt = cast<MemRefType>(x.getType());
  if (xt.getRank() < 1 || xt.getNumElements() == 0)
    return op.emitOpError() << "expects a non-empty x [..., N], got " << xt;
  const int64_t n = xt.getShape().back(), rows = xt.getNumElements() / n;
  const std::string &T = *t;
  const bool f32 = T == "float";
  // The decomposition's constants: 1/N and epsilon, rounded to T.
  const double inv = f32 ? (double)(float)(1.0 / (double)n) : 1.0 / (double)n;
  const double e = f32 ? (double)(float)params.epsilon : params.epsilon;
  const std::string c = literalOf(T, inv), epsLit = literalOf(T, e);
  const std::string one = f32 ? "1.0f" : "1.0", sqrt = f32 ? "sqrtf" : "sqrt";
  const std::string N = std::to_string(n) + "LL";

  // The per-element statements, shared by both targets; |xv| is x_k, |k| the
  // column. Accumulators are double, as the generated reductions'.
  auto meanTerm = [&](const std::string &xv) {
    return "s += (double)(" + T + ")(" + xv + " * c);";
  };
  auto varTerm = [&](const std::string &xv) {
    return "{ const " + T + " d = (" + T + ")(" + xv + " - m); q += (double)(" +
           T + ")((" + T + ")(d * d) * c); }";
  };
  auto yTerm = [&](const std::string &xv, const std::string &k) {
    return "{ const " + T + " d = (" + T + ")(" + xv + " - m); const " + T +
           " u = (" + T + ")(d * r); const " + T + " w = (" + T + ")(u * a1[" +
           k + "]); yr[" + k + "] = (" + T + ")(w + a2[" + k + "]);" +
           (train ? " dr[" + k + "] = d; ur[" + k + "] = u;" : "") + " }";
  };
  const std::string trainRows =
      train ? "  " + T + "* dr = a6 + row * " + N + ";\n  " + T +
                  "* ur = a7 + row * " + N + ";\n"
            : "";
  auto rowStats = [&](llvm::raw_ostream &os) {
    os << "  const " << T << " c = " << c << ";\n";
  };
  auto finish = [&](llvm::raw_ostream &os, StringRef in) {
    os << in << "const " << T << " r = " << one << " / " << sqrt << "((" << T
       << ")(var + " << epsLit << "));\n";
  };

  KernelCode code;
  // Host: one row per iteration, three passes over the row (it stays in
  // cache), in the decomposed kernels' order.
  {
    llvm::raw_string_ostream os(code.body);
    os << "  const long long row = tid;\n"
       << "  const " << T << "* xr = a0 + row * " << N << ";\n"
       << "  " << T << "* yr = a3 + row * " << N << ";\n"
       << trainRows;
    rowStats(os);
    os << "  double s = 0;\n"
       << "  for (long long k = 0; k < " << N << "; ++k) " << meanTerm("xr[k]")
       << "\n"
       << "  const " << T << " m = (" << T << ")s;\n"
       << "  double q = 0;\n"
       << "  for (long long k = 0; k < " << N << "; ++k) " << varTerm("xr[k]")
       << "\n"
       << "  const " << T << " var = (" << T << ")q;\n";
    finish(os, "  ");
    os << "  a4[row] = m;\n"
       << "  a5[row] = r;\n"
       << "  for (long long k = 0; k < " << N << "; ++k) "
       << yTerm("xr[k]", "k") << "\n";
    code.hostThreads = rows;
    code.hostGrain = n;
  }

  // CUDA: T threads a row (a warp, or a block of W warps).
  const int64_t threads =
      n <= 1024 ? 32
                : std::min<int64_t>(1024, std::max<int64_t>(
                                              256, ((n + 31) / 32 + 31) / 32 *
                                                       32));
  const int64_t warps = threads / 32;
  const int64_t slots = (n + threads - 1) / threads; // elements a thread
  const bool cached = slots <= 32;
  const bool ragged = n % threads != 0;
  const std::string TT = std::to_string(threads);
  llvm::raw_string_ostream cs(code.cudaBody);
  if (threads == 32) {
    code.blockSize = 256;
    code.numThreads = (rows * 32 + 255) / 256 * 256;
    cs << "  const long long row = tid >> 5;\n"
       << "  const int t = (int)(tid & 31);\n"
       << "  if (row >= " << rows << "LL) return;\n";
  } else {
    code.blockSize = static_cast<int32_t>(threads);
    code.numThreads = rows * threads;
    cs << "  const long long row = blockIdx.x;\n"
       << "  const int t = (int)threadIdx.x;\n"
       << "  const int lane = t & 31, warp = t >> 5;\n"
       << "  __shared__ double dlc_ln_part[" << warps << "];\n";
  }
  cs << "  const " << T << "* xr = a0 + row * " << N << ";\n"
     << "  " << T << "* yr = a3 + row * " << N << ";\n"
     << trainRows;
  rowStats(cs);
  // Each pass: `stmt` for every element k of this thread, reading the value
  // from registers (cached) or memory.
  auto forEach = [&](bool usesColumn,
                     const std::function<std::string(const std::string &,
                                                     const std::string &)>
                         &stmt) {
    if (cached) {
      cs << "  #pragma unroll\n"
         << "  for (int j = 0; j < " << slots << "; ++j) {\n";
      if (ragged || usesColumn)
        cs << "    const long long k = t + (long long)j * " << TT << ";\n";
      if (ragged)
        cs << "    if (k < " << N << ") " << stmt("v[j]", "k") << "\n";
      else
        cs << "    " << stmt("v[j]", "k") << "\n";
      cs << "  }\n";
    } else {
      cs << "  for (long long k = t; k < " << N << "; k += " << TT << ") "
         << stmt("xr[k]", "k") << "\n";
    }
  };
  // The sum of |var| over the row's threads, the same bits in every thread.
  auto combine = [&](const std::string &var) {
    cs << "  for (int o = 16; o > 0; o >>= 1) " << var << " += "
       << "__shfl_xor_sync(0xffffffffu, " << var << ", o);\n";
    if (threads > 32)
      cs << "  if (lane == 0) dlc_ln_part[warp] = " << var << ";\n"
         << "  __syncthreads();\n"
         << "  " << var << " = dlc_ln_part[0];\n"
         << "  for (int w = 1; w < " << warps << "; ++w) " << var
         << " += dlc_ln_part[w];\n"
         << "  __syncthreads();\n";
  };
  if (cached) {
    cs << "  " << T << " v[" << slots << "];\n"
       << "  #pragma unroll\n"
       << "  for (int j = 0; j < " << slots << "; ++j) {\n"
       << "    const long long k = t + (long long)j * " << TT << ";\n"
       << "    v[j] = " << (ragged ? "k < " + N + " ? xr[k] : (" + T + ")0"
                                   : std::string("xr[k]"))
       << ";\n"
       << "  }\n";
  }
  cs << "  double s = 0;\n";
  forEach(false, [&](const std::string &xv, const std::string &) {
    return meanTerm(xv);
  });
  combine("s");
  cs << "  const " << T << " m = (" << T << ")s;\n"
     << "  double q = 0;\n";
  forEach(false, [&](const std::string &xv, const std::string &) {
    return varTerm(xv);
  });
  combine("q");
  cs << "  const " << T << " var = (" << T << ")q;\n";
  finish(cs, "  ");
  cs << "  if (t == 0) { a4[row] = m; a5[row] = r; }\n";
  forEach(true, [&](const std::string &xv, const std::string &k) {
    return yTerm(xv, k);
  });
  return code;
}

} // namespace dlc::codegen::detail
