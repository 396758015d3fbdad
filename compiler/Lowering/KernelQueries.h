//===- KernelQueries.h - questions passes ask of a dlexec.kernel -*- C++ -*-===//
//
// Shared by elementwise fusion and the plan statistics (`dlc --stats`), so
// that "elementwise kernel" and "cast kernel" mean one thing in both.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_LOWERING_KERNELQUERIES_H
#define DLC_COMPILER_LOWERING_KERNELQUERIES_H

#include "dialects/Exec/ExecOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/STLExtras.h"

namespace dlc {

/// Whether every loop of |k| is `parallel` (an elementwise or data-movement
/// kernel: no reduction).
inline bool isAllParallel(exec::KernelOp k) {
  return llvm::all_of(k.getIteratorTypes(), [](mlir::Attribute a) {
    return mlir::cast<mlir::StringAttr>(a).getValue() == "parallel";
  });
}

/// Whether |k| only converts the element type of its one input (a body of
/// one `arith.extf`/`arith.truncf` of that input, then the yield).
inline bool isCastKernel(exec::KernelOp k) {
  if (k.getInputs().size() != 1 || k.getOutputs().size() != 1)
    return false;
  mlir::Block &body = k.getBody().front();
  if (body.getOperations().size() != 2)
    return false;
  mlir::Operation &op = body.front();
  return mlir::isa<mlir::arith::ExtFOp, mlir::arith::TruncFOp>(op) &&
         op.getOperand(0) == body.getArgument(0);
}

} // namespace dlc

#endif // DLC_COMPILER_LOWERING_KERNELQUERIES_H
