//===- BuiltinSoftmax.cpp - softmax and cross-entropy templates -----------===//
//
// softmax, log_softmax (BuiltinFamily::Softmax) and softmax_cross_entropy
// with its gradient (BuiltinFamily::CrossEntropy). Softmax subtracts the
// slice maximum before exponentiating. On CUDA, rows along the last axis
// are shared by the lanes of a warp (shuffle reductions); the host runs the
// same function one row per iteration.
//
//===----------------------------------------------------------------------===//
#include "codegen/BuiltinKernels.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <functional>

using namespace mlir;

namespace dlc::codegen::detail {

namespace {
/// How a row's statistics are read: the C type |t| they are computed in,
/// the load of element k of the row (|x| applied to the index), and the
/// names of exp, log and infinity for |t|.
struct RowMath {
  std::string t, exp, log, inf;
  std::function<std::string(const std::string &)> x;
};

/// CUDA: the maximum `m` and the sum of exp(x - m) `s` of a row of |n|
/// elements, over the 32 lanes of a warp (`lane`): lane l takes elements
/// l, l + 32, ... in order, then an xor butterfly of shuffles combines the
/// lanes, which leaves the same bits in every lane (each level combines the
/// same two values, in either order).
std::string warpRowStats(const RowMath &r, int64_t n, StringRef in) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << in << r.t << " m = -" << r.inf << ";\n"
     << in << "for (long long k = lane; k < " << n << "LL; k += 32) { const "
     << r.t << " v = " << r.x("k") << "; if (v > m || v != v) m = v; }\n"
     << in << "for (int o = 16; o > 0; o >>= 1) { const " << r.t
     << " v = __shfl_xor_sync(0xffffffffu, m, o); if (v > m || v != v) m = "
        "v; }\n"
     << in << r.t << " s = 0;\n"
     << in << "for (long long k = lane; k < " << n
     << "LL; k += 32) s += " << r.exp << "(" << r.x("k") << " - m);\n"
     << in
     << "for (int o = 16; o > 0; o >>= 1) s += "
        "__shfl_xor_sync(0xffffffffu, s, o);\n";
  return out;
}

/// Host: the same statistics serially, one element after another (the
/// order of the host kernels before the CUDA ones shared rows among lanes;
/// the two targets differ in the last bits of the sum, as in a GEMM).
std::string hostRowStats(const RowMath &r, int64_t n, StringRef in) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << in << r.t << " m = -" << r.inf << ";\n"
     << in << "for (long long k = 0; k < " << n << "LL; ++k) { const " << r.t
     << " v = " << r.x("k") << "; if (v > m || v != v) m = v; }\n"
     << in << r.t << " s = 0;\n"
     << in << "for (long long k = 0; k < " << n << "LL; ++k) s += " << r.exp
     << "(" << r.x("k") << " - m);\n";
  return out;
}
/// The sum `sx` of a row's |n| elements (label smoothing's mean log
/// probability): on CUDA over the lanes (|cuda|) with the butterfly of
/// warpRowStats, on the host serially.
std::string rowSum(const RowMath &r, int64_t n, StringRef in, bool cuda) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << in << r.t << " sx = 0;\n";
  if (cuda)
    os << in << "for (long long k = lane; k < " << n << "LL; k += 32) sx += "
       << r.x("k") << ";\n"
       << in
       << "for (int o = 16; o > 0; o >>= 1) sx += "
          "__shfl_xor_sync(0xffffffffu, sx, o);\n";
  else
    os << in << "for (long long k = 0; k < " << n << "LL; ++k) sx += "
       << r.x("k") << ";\n";
  return out;
}

/// |v| as a C literal of |t| ("float" or "double").
std::string literal(const std::string &t, double v) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (t == "float")
    os << llvm::format("%.8e", v) << "f";
  else
    os << llvm::format("%.16e", v);
  return "(" + t + ")" + out;
}

/// Launches |code| with one warp per row of |rows| rows, 8 rows per block,
/// and returns the CUDA body's first lines: `row` and `lane`, and the
/// return of a warp past the last row (rows * 32 threads are whole warps,
/// so warps return whole and the shuffles after stay full). The host runs
/// one row per `tid`.
std::string warpPerRow(KernelCode &code, int64_t rows) {
  code.blockSize = 256;
  code.numThreads = (rows * 32 + 255) / 256 * 256;
  code.hostThreads = rows;
  return "  const long long row = tid >> 5;\n"
         "  const int lane = (int)(tid & 31);\n"
         "  if (row >= " +
         std::to_string(rows) + "LL) return;\n";
}
} // namespace

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
  std::string body;
  llvm::raw_string_ostream os(body);
  if (inner == 1) {
    // Rows along the last axis. CUDA: one warp per row, lanes striding over
    // it (coalesced), 8 rows per block; the host goes through a row per
    // iteration (hostRowStats).
    RowMath r{*t, exp, log, f32 ? "DLC_INF_F" : "DLC_INF_D",
              [](const std::string &k) { return "a0[base + " + k + "]"; }};
    auto write = [&](llvm::raw_ostream &out, StringRef loop) {
      if (isLog)
        out << "  const " << *t << " lse = " << log << "(s);\n"
            << "  " << loop << " a1[base + k] = a0[base + k] - m - lse;\n";
      else
        out << "  " << loop << " a1[base + k] = " << exp
            << "(a0[base + k] - m) / s;\n";
    };
    llvm::raw_string_ostream cs(code.cudaBody);
    cs << warpPerRow(code, outer) << "  const long long base = row * " << n
       << "LL;\n"
       << warpRowStats(r, n, "  ");
    write(cs,
          "for (long long k = lane; k < " + std::to_string(n) + "LL; k += 32)");
    os << "  const long long base = tid * " << n << "LL;\n"
       << hostRowStats(r, n, "  ");
    write(os, "for (long long k = 0; k < " + std::to_string(n) + "LL; ++k)");
    code.body = std::move(body);
    return code;
  }
  code.numThreads = outer * inner;
  code.serialReductionSteps = n; // softmax over a middle axis: a thread a row
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
/// counts in the mean (count = number of label elements). With
/// `label_smoothing` e > 0 (dlgraph.softmax_cross_entropy's formula) the
/// loss needs each row's sum of logits too; with e = 0 the code is the
/// plain cross-entropy's.
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
  auto smoothing = dlc::exec::getFloat(op, "label_smoothing", 0.0f);
  if (failed(smoothing))
    return failure();
  const double e = *smoothing;
  if (!(e >= 0 && e <= 1))
    return op.emitOpError() << "label_smoothing must be in [0, 1], got " << e;
  bool f32 = *t == "float";
  std::string exp = f32 ? "expf" : "exp", log = f32 ? "logf" : "log";
  std::string inf = f32 ? "DLC_INF_F" : "DLC_INF_D";
  RowMath r{*t, exp, log, inf, x};
  KernelCode code;
  std::string body;
  llvm::raw_string_ostream os(body);
  llvm::raw_string_ostream cs(code.cudaBody);
  // CUDA: one warp per row (warpRowStats); the host goes through each row
  // serially (hostRowStats). No atomics anywhere: the results do not depend
  // on the order threads run in.
  auto rowBase = [&](llvm::raw_ostream &out, StringRef in) {
    out << in << "const " << *storage << "* x = a0 + row * " << c << "LL;\n"
        << in << "const long long label = (long long)a1[row];\n";
  };
  if (!grad) {
    // CUDA: one block of W <= 32 warps; warp w takes rows w, w + W, ...,
    // and its lane 0 adds each row's loss in double; thread 0 then adds
    // the warps' sums in warp order. No second kernel or scratch buffer;
    // one block reads the logits (C * rows elements) at the rate of one
    // SM, which is fine up to a few MB of logits.
    const int64_t warps = std::min<int64_t>(32, std::max<int64_t>(1, rows));
    code.blockSize = static_cast<int32_t>(32 * warps);
    code.numThreads = code.blockSize;
    code.hostThreads = 1;
    auto lossTerm = "(double)(m + " + log + "(s) - " + x("label") + ")";
    std::string smooth;
    if (e != 0) {
      // (1 - e) (lse - x[label]) + e / C (C lse - sum_k x[k])
      lossTerm = "(double)((m + " + log + "(s) - " + x("label") + ") * " +
                 literal(*t, 1.0 - e) + " + ((m + " + log + "(s)) * " +
                 literal(*t, double(c)) + " - sx) * " +
                 literal(*t, e / double(c)) + ")";
    }
    cs << "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
       << "  double acc = 0;\n"
       << "  for (long long row = warp; row < " << rows
       << "LL; row += " << warps << ") {\n";
    rowBase(cs, "    ");
    cs << warpRowStats(r, c, "    ") << (e != 0 ? rowSum(r, c, "    ", true) : "")
       << "    if (lane == 0 && label >= 0 && label < " << c
       << "LL) acc += " << lossTerm << ";\n"
       << "  }\n"
       << "  __shared__ double dlc_partial[" << warps << "];\n"
       << "  if (lane == 0) dlc_partial[warp] = acc;\n"
       << "  __syncthreads();\n"
       << "  if (threadIdx.x == 0) {\n"
       << "    double total = 0;\n"
       << "    for (int w = 0; w < " << warps
       << "; ++w) total += dlc_partial[w];\n"
       << "    a2[0] = (" << *t << ")(total / " << rows << ".0);\n"
       << "  }\n";
    // Host: one thread; the mean accumulates in double, row after row.
    os << "  double total = 0;\n"
       << "  for (long long row = 0; row < " << rows << "LL; ++row) {\n";
    rowBase(os, "    ");
    os << hostRowStats(r, c, "    ")
       << (e != 0 ? rowSum(r, c, "    ", false) : "")
       << "    if (label >= 0 && label < " << c
       << "LL) total += " << lossTerm << ";\n"
       << "  }\n"
       << "  a2[0] = (" << *t << ")(total / " << rows << ".0);\n";
  } else {
    // CUDA: one warp per row (warpPerRow). The target of class k: on for
    // the label, off for the others ((1 - e) one_hot + e / C).
    std::string on = "(" + *t + ")1", off = "(" + *t + ")0";
    if (e != 0) {
      on = literal(*t, 1.0 - e + e / double(c));
      off = literal(*t, e / double(c));
    }
    auto writeGrad = [&](llvm::raw_ostream &out, StringRef in, StringRef loop) {
      out << in << *storage << "* dx = a3 + row * " << c << "LL;\n"
          << in << "const " << *t << " scale = a2[0] / (" << *t << ")" << rows
          << ";\n"
          << in << "const bool valid = label >= 0 && label < " << c << "LL;\n"
          << in << loop << "\n"
          << in << "  dx[k] = "
          << storeExpr(elem, "valid ? (" + exp + "(" + x("k") +
                                 " - m) / s - (k == label ? " + on + " : " +
                                 off + ")) * scale : (" + *t + ")0")
          << ";\n";
    };
    cs << warpPerRow(code, rows);
    rowBase(cs, "  ");
    cs << warpRowStats(r, c, "  ");
    writeGrad(cs, "  ",
              "for (long long k = lane; k < " + std::to_string(c) +
                  "LL; k += 32)");
    os << "  const long long row = tid;\n";
    rowBase(os, "  ");
    os << hostRowStats(r, c, "  ");
    writeGrad(os, "  ",
              "for (long long k = 0; k < " + std::to_string(c) + "LL; ++k)");
  }
  code.body = std::move(body);
  return code;
}

} // namespace dlc::codegen::detail
