//===- Liveness.h - buffer lifetimes over a dlexec.func schedule -*- C++
//-*-===//
#ifndef DLC_DIALECTS_EXEC_ANALYSIS_LIVENESS_H
#define DLC_DIALECTS_EXEC_ANALYSIS_LIVENESS_H

#include "dialects/Exec/ExecOps.h"
#include "llvm/ADT/SmallVector.h"

namespace dlc {

/// The lifetime of one arena buffer in a dlexec.func's straight-line
/// schedule. Positions index the ops of the function body; the buffer is live
/// over the closed interval [first, last].
struct BufferLife {
  exec::AllocOp alloc;
  int64_t first = 0, last = 0;
  int64_t bytes = 0; ///< size in bytes (i1 counts as one byte)
  /// The index (in the same list) of a buffer this one may share storage
  /// with in place, or -1: this buffer is the output of an all-parallel
  /// dlexec.kernel at its first position, and that buffer an input of the
  /// same kernel whose last use it is, of the same memref type, read only
  /// directly and only through the output's indexing map, which is a
  /// permutation (each loop point reads the element it then writes, and no
  /// other point reads it).
  int64_t inPlaceOf = -1;
};

/// Size in bytes of a dense memref (rank 0 = one element; sub-byte element
/// types round up to whole bytes).
int64_t bufferBytes(mlir::MemRefType type);

/// Lifetimes of every dlexec.alloc in |func|: from the first op that uses the
/// buffer or a dlexec.reshape or dlexec.subview view of it to the last such
/// op; a buffer passed
/// to dlexec.output lives to the end of the function. An unused alloc lives
/// at its own position.
llvm::SmallVector<BufferLife> computeBufferLives(exec::FuncOp func);

/// The in-place groups of |lives|: every buffer's group representative (a
/// buffer and the ones that take its storage in place, transitively, share
/// one group and one offset).
llvm::SmallVector<int64_t> inPlaceGroups(llvm::ArrayRef<BufferLife> lives);

/// True when the lifetimes of |a| and |b| intersect.
inline bool livesOverlap(const BufferLife &a, const BufferLife &b) {
  return a.first <= b.last && b.first <= a.last;
}

} // namespace dlc

#endif
