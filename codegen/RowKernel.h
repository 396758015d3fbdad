//===- RowKernel.h - CUDA row kernels, a warp or block a row -*- C++ -*-===//
//
// Code generators for cooperative CUDA kernels that reduce rows along the
// last (contiguous) axis and then write them (softmax, log_softmax, the
// softmax cross-entropy gradient; usable by any row-normalising builtin).
// A row is shared by T threads: a warp (T = 32, 8 rows per 256-thread block)
// or a whole block (T = 64..256, one row per block). Where the row fits,
// each thread holds its share in registers, so the row is read once and
// written once (the "persistent" softmax of Apex / PyTorch's
// softmax_warp_forward); longer rows are streamed. Accesses are 128-bit
// vectors when the caller proved every row start aligned (knownAlignment).
// Every reduction combines values in a fixed order that leaves the same bits
// in every thread of the row: no atomics, results independent of thread
// order.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CODEGEN_ROWKERNEL_H
#define DLC_CODEGEN_ROWKERNEL_H

#include "codegen/KernelCode.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

namespace dlc::codegen::detail {

/// How a CUDA row kernel spreads `rows` rows of `n` elements over threads.
/// Vector q of a row (elements q * vec ... q * vec + vec - 1) belongs to
/// thread q % threads of the row; a held row keeps its vectors j * threads +
/// lane, j < held, in a register array.
struct RowLayout {
  int64_t rows = 0, n = 0;
  int64_t threads = 32; ///< T: threads sharing a row (32: a warp)
  int64_t vec = 1;      ///< V: elements per access (128 bits' worth, or 1)
  int64_t vectors = 0;  ///< n / V
  int64_t held = 0;     ///< vectors a thread holds; 0: the row is streamed
  int32_t blockSize = 256;
  bool warp() const { return threads == 32; }
  /// Warps sharing a row.
  int64_t warps() const { return threads / 32; }
  /// Whether some of the threads' `held` slots lie past the row's end.
  bool ragged() const { return held * threads != vectors; }
};

/// Elements of the compute type a thread holds at most (128 bytes of
/// registers: 32 floats, 16 doubles), and the most threads a held row uses:
/// 256, so that no kernel needs `__launch_bounds__` to launch (a 256-thread
/// block may use the 255 registers a thread can have). Rows beyond that are
/// streamed by blocks of kStreamThreads.
constexpr int64_t kRowHeldBytes = 128, kRowMaxHeldThreads = 256,
                  kStreamThreads = 512;

/// The layout of rows of |n| elements: |vec| elements per access (the
/// caller's choice: 128 bits when n % vec == 0 and every row operand is
/// 16-byte aligned, else 1), |computeBytes| bytes a held element takes in
/// registers. The fewest threads whose registers hold the row, else a
/// streamed row.
inline RowLayout chooseRowLayout(int64_t rows, int64_t n, int64_t vec,
                                 int64_t computeBytes) {
  RowLayout l;
  l.rows = rows;
  l.n = n;
  l.vec = vec;
  l.vectors = n / vec;
  const int64_t maxHeld = kRowHeldBytes / computeBytes;
  for (int64_t t = 32; t <= kRowMaxHeldThreads; t *= 2) {
    int64_t e = (l.vectors + t - 1) / t;
    if (e * vec <= maxHeld) {
      l.threads = t;
      l.held = std::max<int64_t>(1, e);
      break;
    }
  }
  if (l.held == 0)
    l.threads = kStreamThreads;
  l.blockSize = static_cast<int32_t>(l.warp() ? 256 : l.threads);
  return l;
}

/// Sets |code|'s launch (warp rows: rows * 32 threads rounded up to whole
/// blocks; block rows: one block a row) and returns the CUDA body's first
/// lines: `row`, `lane` (the thread's index among its row's T threads) and,
/// for warp rows, the return of a warp past the last row (whole warps
/// return, so the shuffles after stay full). The host runs a row per `tid`.
inline std::string rowPrologue(const RowLayout &l, KernelCode &code) {
  code.blockSize = l.blockSize;
  code.hostThreads = l.rows;
  if (l.warp()) {
    code.numThreads = (l.rows * 32 + 255) / 256 * 256;
    return "  const long long row = tid >> 5;\n"
           "  const int lane = (int)(tid & 31);\n"
           "  if (row >= " +
           std::to_string(l.rows) + "LL) return;\n";
  }
  code.numThreads = l.rows * l.threads;
  return "  const long long row = blockIdx.x;\n"
         "  const int lane = (int)threadIdx.x;\n";
}

/// The local type of one vector access to elements of C type |storage|
/// (`dlc_row_vec`), for layouts with V > 1.
inline std::string rowVectorType(const RowLayout &l, const std::string &storage,
                                 llvm::StringRef in) {
  if (l.vec == 1)
    return "";
  return (in + "struct alignas(16) dlc_row_vec { " + storage + " v[" +
          std::to_string(l.vec) + "]; };\n")
      .str();
}

/// Combines the per-thread values |vars| (C type |t|) over the row's
/// threads into values every thread holds with the same bits: an xor
/// butterfly of shuffles in the warp (each level combines the same two
/// values in either order, so |combine| must be commutative bit for bit),
/// then, for block rows, lane 0 of each warp stores into shared memory and
/// every thread combines the warps' values in warp order. |combine| returns
/// the statement that folds `dlc_o<i>` (another thread's values) into
/// |vars|. |tag| names the shared arrays: each tag once per kernel.
inline std::string rowAllReduce(const RowLayout &l, const std::string &t,
                                llvm::ArrayRef<std::string> vars,
                                const std::function<std::string()> &combine,
                                const std::string &tag, llvm::StringRef in) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << in << "for (int o = 16; o > 0; o >>= 1) {\n";
  for (size_t i = 0; i < vars.size(); ++i)
    os << in << "  const " << t << " dlc_o" << i
       << " = __shfl_xor_sync(0xffffffffu, " << vars[i] << ", o);\n";
  os << in << "  " << combine() << "\n" << in << "}\n";
  if (l.warp())
    return out;
  for (size_t i = 0; i < vars.size(); ++i)
    os << in << "__shared__ " << t << " dlc_" << tag << i << "[" << l.warps()
       << "];\n";
  os << in << "if ((lane & 31) == 0) {";
  for (size_t i = 0; i < vars.size(); ++i)
    os << " dlc_" << tag << i << "[lane >> 5] = " << vars[i] << ";";
  os << " }\n" << in << "__syncthreads();\n";
  for (size_t i = 0; i < vars.size(); ++i)
    os << in << vars[i] << " = dlc_" << tag << i << "[0];\n";
  os << in << "for (int w = 1; w < " << l.warps() << "; ++w) {\n";
  for (size_t i = 0; i < vars.size(); ++i)
    os << in << "  const " << t << " dlc_o" << i << " = dlc_" << tag << i
       << "[w];\n";
  os << in << "  " << combine() << "\n" << in << "}\n";
  return out;
}

/// A loop over the vectors this thread holds (held rows): |body| sees `q`
/// (the vector's index in the row) and `j` (its slot: registers j * V ...
/// j * V + V - 1), inside a bounds check where the row is ragged. Unrolled,
/// so the register array is indexed by constants.
inline std::string rowHeldLoop(const RowLayout &l, const std::string &body,
                               llvm::StringRef in) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << in << "#pragma unroll\n"
     << in << "for (int j = 0; j < " << l.held << "; ++j) {\n"
     << in << "  const int q = j * " << l.threads << " + lane;\n";
  if (l.ragged())
    os << in << "  if (q < " << l.vectors << ") {\n" << body << in << "  }\n";
  else
    os << body;
  os << in << "}\n";
  return out;
}

/// A loop over this thread's vectors of a streamed row: `q` as above.
inline std::string rowStreamLoop(const RowLayout &l, const std::string &body,
                                 llvm::StringRef in) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << in << "for (long long q = lane; q < " << l.vectors
     << "LL; q += " << l.threads << ") {\n"
     << body << in << "}\n";
  return out;
}

/// Statements that read vector `q` of the row at |ptr| (elements of C type
/// |storage|) and set |dest|(i) to |load|(element expression) for each of
/// its V elements i (a C expression of `dlc_i`, the element within the
/// vector, for V > 1; "0" otherwise).
inline std::string
rowLoadVector(const RowLayout &l, const std::string &ptr,
              const std::function<std::string(const std::string &)> &dest,
              const std::function<std::string(const std::string &)> &load,
              llvm::StringRef in) {
  if (l.vec == 1)
    return (in + dest("0") + " = " + load(ptr + "[q]") + ";\n").str();
  std::string out;
  llvm::raw_string_ostream os(out);
  os << in << "const dlc_row_vec dlc_w = *(const dlc_row_vec *)(" << ptr
     << " + q * " << l.vec << ");\n"
     << in << "#pragma unroll\n"
     << in << "for (int dlc_i = 0; dlc_i < " << l.vec << "; ++dlc_i) "
     << dest("dlc_i") << " = " << load("dlc_w.v[dlc_i]") << ";\n";
  return out;
}

/// Statements that write vector `q` of the row at |ptr|: element i gets
/// |value|(i, k) (k: a C expression of its index in the row), already
/// converted to the storage type.
inline std::string rowStoreVector(
    const RowLayout &l, const std::string &ptr,
    const std::function<std::string(const std::string &, const std::string &)>
        &value,
    llvm::StringRef in) {
  if (l.vec == 1)
    return (in + ptr + "[q] = " + value("0", "q") + ";\n").str();
  std::string out;
  llvm::raw_string_ostream os(out);
  const std::string k = "(q * " + std::to_string(l.vec) + " + dlc_i)";
  os << in << "dlc_row_vec dlc_u;\n"
     << in << "#pragma unroll\n"
     << in << "for (int dlc_i = 0; dlc_i < " << l.vec
     << "; ++dlc_i) dlc_u.v[dlc_i] = " << value("dlc_i", k) << ";\n"
     << in << "*(dlc_row_vec *)(" << ptr << " + q * " << l.vec
     << ") = dlc_u;\n";
  return out;
}

/// |stmt|(i) for each element i of a vector: "0" when V = 1, else an
/// unrolled loop over `dlc_i`.
inline std::string
rowForEachElement(const RowLayout &l,
                  const std::function<std::string(const std::string &)> &stmt,
                  llvm::StringRef in) {
  if (l.vec == 1)
    return (in + stmt("0") + "\n").str();
  return (in + "#pragma unroll\n" + in + "for (int dlc_i = 0; dlc_i < " +
          std::to_string(l.vec) + "; ++dlc_i) { " + stmt("dlc_i") + " }\n")
      .str();
}

} // namespace dlc::codegen::detail

#endif
