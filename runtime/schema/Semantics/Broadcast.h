//===- Broadcast.h - NumPy / ONNX broadcasting of shapes ------*- C++ -*-===//
//
// NumPy broadcasting as ONNX defines it ("Broadcasting in ONNX",
// docs/Broadcasting.md of the ONNX repository: multidirectional for Add, Mul,
// Where, MatMul batch dims..., unidirectional for Expand and Gemm's C),
// shared by the dlgraph type inference, the importer and the reference
// interpreter. MLIR-free, plain C++17; shapes are any random-access
// container of int64_t with size() and operator[] (std::vector,
// llvm::ArrayRef, llvm::SmallVector), so callers need not copy.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_SCHEMA_SEMANTICS_BROADCAST_H
#define DLC_RUNTIME_SCHEMA_SEMANTICS_BROADCAST_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace dlc::semantics {

/// The multidirectional broadcast of shapes |a| and |b|: both are aligned at
/// their last dimension and the shorter is padded with leading 1s; each pair
/// of dimensions must be equal or contain a 1, and the result takes the
/// other one. std::nullopt when a pair is incompatible (e.g. [2, 3] and
/// [4, 3]). Example: [8, 1, 4] and [3, 1] give [8, 3, 4].
template <typename ShapeA, typename ShapeB>
std::optional<std::vector<int64_t>> broadcastShapes(const ShapeA &a,
                                                    const ShapeB &b) {
  size_t ra = a.size(), rb = b.size(), rank = ra > rb ? ra : rb;
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - ra ? 1 : a[i - (rank - ra)];
    int64_t db = i < rank - rb ? 1 : b[i - (rank - rb)];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// True when |from| broadcasts unidirectionally to |to| (ONNX Expand, Gemm's
/// C): from has no more dimensions than to and, aligned at the last
/// dimension, each of its dimensions is 1 or equal to to's.
template <typename ShapeA, typename ShapeB>
bool broadcastsTo(const ShapeA &from, const ShapeB &to) {
  if (from.size() > to.size())
    return false;
  size_t off = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[off + i])
      return false;
  return true;
}

/// The row-major linear index into a tensor of shape |in| that the output
/// element at multi-index |outIndex| reads when |in| is broadcast to the
/// output shape (outIndex.size() >= in.size(); size-1 dimensions of |in|
/// always read index 0).
template <typename Index, typename Shape>
int64_t broadcastSourceOffset(const Index &outIndex, const Shape &in) {
  size_t off = outIndex.size() - in.size();
  int64_t linear = 0;
  for (size_t i = 0; i < in.size(); ++i)
    linear = linear * in[i] + (in[i] == 1 ? 0 : outIndex[i + off]);
  return linear;
}

} // namespace dlc::semantics

#endif // DLC_RUNTIME_SCHEMA_SEMANTICS_BROADCAST_H
