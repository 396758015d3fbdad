//===- KernelQueries.h - questions passes ask of a dlexec.kernel -*- C++ -*-===//
//
// Shared by elementwise fusion, the plan statistics (`dlc --stats`), memory
// planning and the reduction passes, so that "elementwise kernel", "cast
// kernel" and a kernel's loop sizes mean one thing in all of them.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_DIALECTS_EXEC_ANALYSIS_KERNELQUERIES_H
#define DLC_DIALECTS_EXEC_ANALYSIS_KERNELQUERIES_H

#include "dialects/Exec/ExecOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

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

/// The sizes of |k|'s loops, codegen's rule: from the plain dims of its
/// operands' maps; -1 for a loop no map sizes (the verifier rejects such a
/// kernel).
inline llvm::SmallVector<int64_t> loopSizes(exec::KernelOp k) {
  llvm::SmallVector<int64_t> sizes(k.getIteratorTypes().size(), -1);
  for (auto [v, a] : llvm::zip(k->getOperands(), k.getIndexingMaps())) {
    mlir::AffineMap m = mlir::cast<mlir::AffineMapAttr>(a).getValue();
    auto t = mlir::cast<mlir::MemRefType>(v.getType());
    for (unsigned r = 0; r < m.getNumResults(); ++r)
      if (auto d = mlir::dyn_cast<mlir::AffineDimExpr>(m.getResult(r)))
        sizes[d.getPosition()] = t.getDimSize(r);
  }
  return sizes;
}

} // namespace dlc

#endif // DLC_DIALECTS_EXEC_ANALYSIS_KERNELQUERIES_H
