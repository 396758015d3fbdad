//===- MemoryModel.h - the training step's activations, for remat -*- C++
//-*-===//
//
// Internal to dlgraph-remat: the held activations of @train_step and a
// simulation of its activation memory over the program order, for a given
// set of dropped (recomputed) values.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_TRAINING_REMAT_MEMORYMODEL_H
#define DLC_COMPILER_TRAINING_REMAT_MEMORYMODEL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace dlc::remat {

/// One storage root of @train_step: a value with its own buffer (not a view,
/// a variable, a constant or an argument). Times are op positions in the
/// body (the return is at `StepGraph::end`).
struct Root {
  mlir::Value value;
  mlir::Operation *op = nullptr; ///< defining op (top level of the body)
  int64_t bytes = 0;
  int def = 0;
  int lastEarlyUse = -1; ///< last use at or before the boundary (-1: none)
  int firstLateUse = -1; ///< first use after the boundary (-1: none)
  int lastLateUse = -1;
  int lastUse = 0;           ///< last use of any kind (def when unused)
  bool forward = false;      ///< defined before the boundary
  bool recomputable = false; ///< forward, cost not never, no regions, not
                             ///< returned
  int64_t flops = 0;         ///< the defining op's getRecomputeFlops
  /// Folded into its consumer by elementwise fusion: no memory of its own
  /// (bytes 0), and its consumer's position counts as a use of its operands.
  bool fused = false;
  /// Its op is Elementwise with this one result: the lowering makes it (or
  /// the fused kernel it joins) an all-parallel kernel, which may write its
  /// result in place over an operand of the result's type that dies there.
  bool elementwise = false;
  /// Its op lowers to an all-parallel kernel that fusion can fold into its
  /// one consumer (Elementwise or MovesElements).
  bool fusable = false;
  /// Only read directly (no view of it is read): a kernel reading it can
  /// fuse it or take its buffer in place.
  bool readDirectly = true;
  llvm::SmallVector<int, 4> operandRoots; ///< roots its op reads (deduped)
  /// The backward ops (after the boundary) that read it, in order (deduped).
  llvm::SmallVector<int, 2> lateReaders;
};

/// The storage roots of @train_step and their uses.
class StepGraph {
public:
  /// Analyzes |train| (one block). |boundary| is the position of the op
  /// that defines the loss.
  StepGraph(mlir::func::FuncOp train, int boundary);

  llvm::SmallVector<Root> roots;
  llvm::SmallVector<mlir::Operation *> ops; ///< top-level ops in order
  llvm::DenseMap<mlir::Operation *, int> pos;
  int boundary = 0;
  int end = 0;

  /// The root index of |v| (through reshape/identity views), or -1 for
  /// values without their own buffer (variables, constants, arguments).
  int rootOf(mlir::Value v) const;

private:
  llvm::DenseMap<mlir::Value, int> rootIndex_;
  llvm::DenseMap<mlir::Value, mlir::Value> viewSource_;
};

/// A value is freed this long after its last use (less than the spacing of
/// clones, 1e-6): live over [start, end + kFreeAfter).
constexpr double kFreeAfter = 5e-7;

/// The simulated activation memory for one set of dropped roots.
struct Simulation {
  int64_t peak = 0;
  double peakTime = 0;
  /// Bytes times op positions, summed over the step (the area under the
  /// memory curve).
  double area = 0;
  /// Per root: the end of the original's interval (its early uses when
  /// dropped; extended to the clones that read it when kept).
  llvm::SmallVector<double> end;
  /// Per root: whether a clone is made, and its interval.
  llvm::SmallVector<bool> cloned;
  llvm::SmallVector<double> cloneStart, cloneEnd;
};

/// Simulates |g| with the roots where |dropped| is true recomputed: each
/// dropped root's backward uses read a clone made before its first backward
/// use (or earlier, before the first clone that reads it); the operands of a
/// clone live until it. Clones before op p sit between p - 0.5 and p, in
/// the order they are made (operands first). As the lowering does, a clone
/// that fusion folds into its one reader (an elementwise clone read by one
/// elementwise op of its type) takes no memory and its operands live until
/// that reader; and an elementwise value (original or clone) whose operand
/// of its type dies at it takes that operand's bytes in place.
Simulation simulate(const StepGraph &g, llvm::ArrayRef<bool> dropped);

} // namespace dlc::remat

#endif // DLC_COMPILER_TRAINING_REMAT_MEMORYMODEL_H
