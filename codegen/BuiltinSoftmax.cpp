//===- BuiltinSoftmax.cpp - softmax and cross-entropy templates -----------===//
//
// softmax, log_softmax (BuiltinFamily::Softmax) and softmax_cross_entropy
// with its gradient (BuiltinFamily::CrossEntropy). Softmax subtracts the
// slice maximum before exponentiating. On CUDA, rows along the last axis
// are shared by a warp or a block (RowKernel.h): a row that fits in the
// threads' registers is read once and written once; a longer one is
// streamed twice with the online softmax (Milakov & Gimelshein 2018,
// "Online normalizer calculation for softmax": a running maximum and a sum
// rescaled when the maximum grows), then written. The host runs the same
// function one row per iteration, as before.
//
//===----------------------------------------------------------------------===//
#include "codegen/BuiltinKernels.h"
#include "codegen/RowKernel.h"

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

/// Host: the maximum `m` and the sum of exp(x - m) `s` of a row of |n|
/// elements, serially, one element after another (the order of the host
/// kernels before the CUDA ones shared rows among threads; the two targets
/// differ in the last bits of the sum, as in a GEMM).
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
/// Host: the sum `sx` of a row's |n| elements (label smoothing's mean log
/// probability), serially.
std::string hostRowSum(const RowMath &r, int64_t n, StringRef in) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << in << r.t << " sx = 0;\n"
     << in << "for (long long k = 0; k < " << n << "LL; ++k) sx += " << r.x("k")
     << ";\n";
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

/// One step of the online softmax (Milakov & Gimelshein 2018, algorithm 3)
/// over element |v|: the running maximum `m` and the running sum `s` of
/// exp(x - m), rescaled by exp(m_old - m_new) when the maximum grows. While
/// every element so far is -inf, `s` stays 0 (no exp(-inf - -inf)).
std::string onlineStep(const RowMath &r, const std::string &v) {
  return "{ const " + r.t + " v = " + v + "; if (v > m || v != v) { s = s * " +
         r.exp + "(m - v); m = v; } if (m != -" + r.inf + ") s += " + r.exp +
         "(v - m); }";
}

/// rowAllReduce's combine of two threads' online statistics (m, s) and
/// (dlc_o0, dlc_o1): the larger maximum, each sum rescaled to it, a sum
/// whose maximum is the new one unscaled (no exp(inf - inf) for equal
/// infinite maxima). Symmetric bit for bit: both sides compute the same
/// maximum and add the same two terms.
std::string onlineCombine(const RowMath &r) {
  return "{ " + r.t +
         " mm = m; if (dlc_o0 > mm || dlc_o0 != dlc_o0) mm = dlc_o0; s = (m "
         "== mm ? s : s * " +
         r.exp + "(m - mm)) + (dlc_o0 == mm ? dlc_o1 : dlc_o1 * " + r.exp +
         "(dlc_o0 - mm)); m = mm; }";
}

/// The C type of a row's elements and how they are read: |load| turns a
/// reference to a stored element into a value of the row's compute type.
struct RowIo {
  std::string storage;
  std::function<std::string(const std::string &)> load;
};

/// The CUDA body of a kernel that writes each row of |l| from its maximum
/// `m` and its sum `s` of exp(x - m): |setup| (C statements after `row` is
/// known) points `x` at the row's input and `y` at its output; |value|(e, k)
/// is element k's output, converted to the storage type, from e = exp(x_k -
/// m) (|useExp|) or e = x_k; |afterStats| runs once the statistics are
/// known. A held row (RowLayout::held) is read once into registers (the
/// exps overwrite it when |useExp|); a streamed row is read twice, once
/// for the online statistics and once for the output.
std::string cudaRowBody(
    KernelCode &code, const RowLayout &l, const RowMath &r, const RowIo &io,
    const std::string &setup, bool useExp, const std::string &afterStats,
    const std::function<std::string(const std::string &, const std::string &)>
        &value) {
  std::string out;
  llvm::raw_string_ostream os(out);
  const std::string t = r.t, v = std::to_string(l.vec);
  os << rowPrologue(l, code) << setup << rowVectorType(l, io.storage, "  ");
  if (l.held) {
    auto slot = [&](const std::string &i) {
      return "dlc_v[j * " + v + " + " + i + "]";
    };
    os << "  " << t << " dlc_v[" << l.held * l.vec << "];\n"
       << rowHeldLoop(l, rowLoadVector(l, "x", slot, io.load, "    "), "  ")
       << "  " << t << " m = -" << r.inf << ";\n"
       << rowHeldLoop(l,
                      rowForEachElement(
                          l,
                          [&](const std::string &i) {
                            return "if (" + slot(i) + " > m || " + slot(i) +
                                   " != " + slot(i) + ") m = " + slot(i) + ";";
                          },
                          "    "),
                      "  ")
       << rowAllReduce(
              l, t, {"m"},
              [] { return "if (dlc_o0 > m || dlc_o0 != dlc_o0) m = dlc_o0;"; },
              "max", "  ")
       << "  " << t << " s = 0;\n"
       << rowHeldLoop(l,
                      rowForEachElement(
                          l,
                          [&](const std::string &i) {
                            std::string e = r.exp + "(" + slot(i) + " - m)";
                            return useExp ? slot(i) + " = " + e +
                                                "; s += " + slot(i) + ";"
                                          : "s += " + e + ";";
                          },
                          "    "),
                      "  ")
       << rowAllReduce(
              l, t, {"s"}, [] { return "s += dlc_o0;"; }, "sum", "  ")
       << afterStats
       << rowHeldLoop(l,
                      rowStoreVector(
                          l, "y",
                          [&](const std::string &i, const std::string &k) {
                            return value(slot(i), k);
                          },
                          "    "),
                      "  ");
    return out;
  }
  auto elem = [](const std::string &i) { return "dlc_x[" + i + "]"; };
  const std::string read = "    " + t + " dlc_x[" + v + "];\n" +
                           rowLoadVector(l, "x", elem, io.load, "    ");
  os << "  " << t << " m = -" << r.inf << ", s = 0;\n"
     << rowStreamLoop(l,
                      read + rowForEachElement(
                                 l,
                                 [&](const std::string &i) {
                                   return onlineStep(r, elem(i));
                                 },
                                 "    "),
                      "  ")
     << rowAllReduce(
            l, t, {"m", "s"}, [&] { return onlineCombine(r); }, "online", "  ")
     << afterStats
     << rowStreamLoop(
            l,
            read + rowStoreVector(
                       l, "y",
                       [&](const std::string &i, const std::string &k) {
                         return value(useExp ? r.exp + "(" + elem(i) + " - m)"
                                             : elem(i),
                                      k);
                       },
                       "    "),
            "  ");
  return out;
}

/// CUDA: the statistics of hostRowStats (and with |withSum| hostRowSum's
/// `sx`) of a row of |n| elements over the 32 lanes of a warp (`lane`), in
/// one read (the online softmax): lane l takes elements l, l + 32, ... in
/// order, then xor butterflies combine the lanes and leave the same bits in
/// every lane.
std::string warpOnlineStats(const RowMath &r, int64_t n, StringRef in,
                            bool withSum) {
  std::string out;
  llvm::raw_string_ostream os(out);
  RowLayout warp; // threads = 32
  os << in << r.t << " m = -" << r.inf << ", s = 0"
     << (withSum ? ", sx = 0" : "") << ";\n"
     << in << "for (long long k = lane; k < " << n << "LL; k += 32) { const "
     << r.t << " xk = " << r.x("k") << "; " << onlineStep(r, "xk")
     << (withSum ? " sx += xk;" : "") << " }\n"
     << rowAllReduce(
            warp, r.t, {"m", "s"}, [&] { return onlineCombine(r); }, "online",
            in);
  if (withSum)
    os << rowAllReduce(
        warp, r.t, {"sx"}, [] { return "sx += dlc_o0;"; }, "sx", in);
  return out;
}

/// Whether |v|'s first element is 16-byte aligned (knownAlignment).
bool aligned16(Value v) {
  const int64_t a = knownAlignment(v);
  return a > 0 && a % 16 == 0;
}

/// Elements of a 128-bit access to rows of |n| elements of |bytes| bytes
/// each in |operands| (every row start aligned: the buffers are, and n is a
/// multiple of the width), else 1.
int64_t rowVectorWidth(int64_t n, int64_t bytes, ArrayRef<Value> operands) {
  const int64_t width = 16 / bytes;
  if (width < 2 || n % width != 0)
    return 1;
  for (Value v : operands)
    if (!aligned16(v))
      return 1;
  return width;
}
} // namespace

FailureOr<KernelCode> buildSoftmax(exec::BuiltinKernelOp op, bool isLog,
                                   const exec::SoftmaxParams &params) {
  if (failed(expectOperands(op, 1, 1, "x -> y")))
    return failure();
  Value x = op.getInputs()[0];
  if (op.getOutputs()[0].getType() != x.getType())
    return op.emitOpError() << "y must have the type of x, " << x.getType();
  auto t = floatElementType(op, x);
  if (failed(t))
    return failure();
  auto type = cast<MemRefType>(x.getType());
  int64_t rank = type.getRank(), axis = params.axis;
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return op.emitOpError()
           << "axis " << params.axis << " is out of range for " << type;
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
    // Rows along the last axis. CUDA: a warp or a block per row
    // (cudaRowBody): read once into registers, or streamed with the online
    // softmax when too long; the host goes through a row per iteration
    // (hostRowStats).
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
    const int64_t bytes = f32 ? 4 : 8;
    RowLayout l = chooseRowLayout(
        outer, n, rowVectorWidth(n, bytes, {x, op.getOutputs()[0]}), bytes);
    code.cudaBody = cudaRowBody(
        code, l, r, {*t, [](const std::string &ref) { return ref; }},
        "  const " + *t + "* x = a0 + row * " + std::to_string(n) + "LL;\n  " +
            *t + "* y = a1 + row * " + std::to_string(n) + "LL;\n",
        /*useExp=*/!isLog,
        isLog ? "  const " + *t + " lse = " + log + "(s);\n" : "",
        [&](const std::string &e, const std::string &) {
          return isLog ? e + " - m - lse" : e + " / s";
        });
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

/// The most blocks the loss's forward kernel launches: its per-block sums
/// live in a __device__ array of this many doubles.
constexpr int64_t kMaxLossBlocks = 1024;

/// The CUDA statements after each warp of a cross-entropy loss kernel has
/// stored its sum in dlc_partial: the mean of the |warps| x |blocks| sums,
/// added in a fixed order, written by one block as |mean|.
static void printLossMean(llvm::raw_ostream &cs, KernelCode &code,
                          int64_t warps, int64_t blocks, const std::string &W,
                          const std::string &mean) {
  if (blocks == 1) {
    cs << "  if (threadIdx.x == 0) {\n"
       << "    double total = 0;\n"
       << "    for (int w = 0; w < " << W << "; ++w) total += dlc_partial[w];\n"
       << "    " << mean << "\n"
       << "  }\n";
  } else {
    // rows > 8 here, so a block is 8 warps: a power of two for the tree.
    assert(warps == 8 && "multi-block loss with a partial block");
    code.cudaHelpers = "__device__ double dlc_loss_partials[" +
                       std::to_string(blocks) +
                       "];\n__device__ unsigned int dlc_loss_done;\n";
    cs << "  __shared__ bool dlc_last;\n"
       << "  if (threadIdx.x == 0) {\n"
       << "    double sum = 0;\n"
       << "    for (int w = 0; w < " << W << "; ++w) sum += dlc_partial[w];\n"
       << "    dlc_loss_partials[blockIdx.x] = sum;\n"
       << "    __threadfence();\n"
       << "    dlc_last = atomicAdd(&dlc_loss_done, 1u) == " << blocks - 1
       << "u;\n"
       << "  }\n"
       << "  __syncthreads();\n"
       << "  if (dlc_last) {\n"
       << "    __shared__ double dlc_tree[" << 32 * warps << "];\n"
       << "    double v = 0;\n"
       << "    for (int b = threadIdx.x; b < " << blocks
       << "; b += " << 32 * warps
       << ") v += ((volatile double *)dlc_loss_partials)[b];\n"
       << "    dlc_tree[threadIdx.x] = v;\n"
       << "    __syncthreads();\n"
       << "    for (int h = " << 16 * warps << "; h > 0; h >>= 1) {\n"
       << "      if (threadIdx.x < h) dlc_tree[threadIdx.x] += "
          "dlc_tree[threadIdx.x + h];\n"
       << "      __syncthreads();\n"
       << "    }\n"
       << "    if (threadIdx.x == 0) {\n"
       << "      const double total = dlc_tree[0];\n"
       << "      " << mean << "\n"
       << "      dlc_loss_done = 0;\n"
       << "    }\n"
       << "  }\n";
  }
}

/// softmax_cross_entropy(_grad): logits [..., C], labels [...] (i64 or i32).
/// A label outside [0, C) contributes neither loss nor gradient but still
/// counts in the mean (count = number of label elements). With
/// `label_smoothing` e > 0 (dlgraph.softmax_cross_entropy's formula) the
/// loss needs each row's sum of logits too; with e = 0 the code is the
/// plain cross-entropy's.
FailureOr<KernelCode>
buildCrossEntropy(exec::BuiltinKernelOp op, bool grad,
                  const exec::CrossEntropyParams &params) {
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
      return op.emitOpError()
             << "loss must be a rank-0 " << lossType << " memref, got " << ot;
  }
  auto storage = cStorageType(elem);
  if (failed(storage))
    return op.emitOpError() << "unsupported logits type " << elem;
  auto x = [&](const std::string &k) { return loadExpr(elem, "x[" + k + "]"); };
  int64_t c = lt.getShape().back(), rows = bt.getNumElements();
  const double e = params.labelSmoothing;
  bool f32 = *t == "float";
  std::string exp = f32 ? "expf" : "exp", log = f32 ? "logf" : "log";
  std::string inf = f32 ? "DLC_INF_F" : "DLC_INF_D";
  RowMath r{*t, exp, log, inf, x};
  KernelCode code;
  std::string body;
  llvm::raw_string_ostream os(body);
  llvm::raw_string_ostream cs(code.cudaBody);
  // CUDA: warps share rows (warpOnlineStats, cudaRowBody); the host goes
  // through each row serially (hostRowStats). The results do not depend on
  // the order threads run in: every sum has a fixed order, and the loss's
  // one atomic only elects the block that adds the blocks' sums.
  auto rowBase = [&](llvm::raw_ostream &out, StringRef in) {
    out << in << "const " << *storage << "* x = a0 + row * " << c << "LL;\n"
        << in << "const long long label = (long long)a1[row];\n";
  };
  if (!grad) {
    // CUDA: blocks of W <= 8 warps, a warp a row (warp w of block b takes
    // rows b W + w, b W + w + B W, ...), lane 0 adding each row's loss in
    // double; each block adds its warps' sums in warp order. One block
    // writes the mean itself. With B > 1 blocks each stores its sum in a
    // __device__ array, fences, and counts itself done on a __device__
    // counter; the block that counts last adds the B sums in a fixed tree
    // (a strided sum per thread, then halving in shared memory), writes the
    // mean and resets the counter (the single-pass reduction of CUDA's
    // threadFenceReduction sample). The atomic only elects that block: the
    // sum's order, and so its bits, do not depend on which block is last.
    // One block read the whole batch's logits at one SM's rate before:
    // 0.28 ms of the benchmark GPT's step (2,048 rows of 512) in an H200
    // profile with synchronous launches.
    const int64_t warps = std::min<int64_t>(8, std::max<int64_t>(1, rows));
    const int64_t blocks = std::min<int64_t>(
        kMaxLossBlocks, std::max<int64_t>(1, (rows + warps - 1) / warps));
    code.blockSize = static_cast<int32_t>(32 * warps);
    code.numThreads = blocks * code.blockSize;
    code.hostThreads = 1;
    auto lossTerm = "(double)(m + " + log + "(s) - " + x("label") + ")";
    if (e != 0) {
      // (1 - e) (lse - x[label]) + e / C (C lse - sum_k x[k])
      lossTerm = "(double)((m + " + log + "(s) - " + x("label") + ") * " +
                 literal(*t, 1.0 - e) + " + ((m + " + log + "(s)) * " +
                 literal(*t, double(c)) + " - sx) * " +
                 literal(*t, e / double(c)) + ")";
    }
    const std::string W = std::to_string(warps);
    cs << "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
       << "  double acc = 0;\n"
       << "  for (long long row = (long long)blockIdx.x * " << W
       << " + warp; row < " << rows << "LL; row += " << blocks * warps
       << "LL) {\n";
    rowBase(cs, "    ");
    cs << warpOnlineStats(r, c, "    ", e != 0)
       << "    if (lane == 0 && label >= 0 && label < " << c
       << "LL) acc += " << lossTerm << ";\n"
       << "  }\n"
       << "  __shared__ double dlc_partial[" << W << "];\n"
       << "  if (lane == 0) dlc_partial[warp] = acc;\n"
       << "  __syncthreads();\n";
    const std::string mean =
        "a2[0] = (" + *t + ")(total / " + std::to_string(rows) + ".0);";
    printLossMean(cs, code, warps, blocks, W, mean);
    // Host: one thread; the mean accumulates in double, row after row.
    os << "  double total = 0;\n"
       << "  for (long long row = 0; row < " << rows << "LL; ++row) {\n";
    rowBase(os, "    ");
    os << hostRowStats(r, c, "    ") << (e != 0 ? hostRowSum(r, c, "    ") : "")
       << "    if (label >= 0 && label < " << c << "LL) total += " << lossTerm
       << ";\n"
       << "  }\n"
       << "  a2[0] = (" << *t << ")(total / " << rows << ".0);\n";
  } else {
    // The target of class k: on for the label, off for the others
    // ((1 - e) one_hot + e / C).
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
    // CUDA: a warp or a block per row (cudaRowBody), the exps held in
    // registers where the row fits.
    std::string setup;
    llvm::raw_string_ostream ss(setup);
    rowBase(ss, "  ");
    ss << "  " << *storage << "* y = a3 + row * " << c << "LL;\n"
       << "  const " << *t << " scale = a2[0] / (" << *t << ")" << rows << ";\n"
       << "  const bool valid = label >= 0 && label < " << c << "LL;\n";
    const int64_t bytes =
        std::max<int64_t>(1, elem.getIntOrFloatBitWidth() / 8);
    RowLayout l = chooseRowLayout(
        rows, c, rowVectorWidth(c, bytes, {logits, out}), f32 ? 4 : 8);
    code.cudaBody = cudaRowBody(
        code, l, r,
        {*storage, [&](const std::string &ref) { return loadExpr(elem, ref); }},
        setup, /*useExp=*/true, "",
        [&](const std::string &ex, const std::string &k) {
          return storeExpr(elem, "valid ? (" + ex + " / s - (" + k +
                                     " == label ? " + on + " : " + off +
                                     ")) * scale : (" + *t + ")0");
        });
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
