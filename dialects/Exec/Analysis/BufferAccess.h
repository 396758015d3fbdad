//===- BufferAccess.h - which buffers a dlexec op reads and writes -*- C++ -*-===//
//
// Shared by the dlexec passes that move or duplicate ops before memory
// planning (--dlexec-multi-tensor, --dlexec-remat-persistent-kernels): the
// storage behind a buffer value and the buffers an op reads and writes.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_DIALECTS_EXEC_ANALYSIS_BUFFERACCESS_H
#define DLC_DIALECTS_EXEC_ANALYSIS_BUFFERACCESS_H

#include "dialects/Exec/ExecOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>

namespace dlc::lowering {

/// The buffer |v| is a view of (reshapes stripped).
inline mlir::Value stripViews(mlir::Value v) {
  while (auto r = v.getDefiningOp<exec::ReshapeOp>())
    v = r.getSource();
  return v;
}

/// A key naming the storage behind |v|: the variable's name for a
/// `dlexec.variable_ref` (two refs of one variable are one buffer), else
/// the buffer value itself (before planning, distinct allocs do not
/// overlap).
inline const void *rootOf(mlir::Value v) {
  v = stripViews(v);
  if (auto ref = v.getDefiningOp<exec::VariableRefOp>())
    return ref.getVariableAttr().getAttr().getAsOpaquePointer();
  return v.getAsOpaquePointer();
}

/// Whether |v| is (a view of) a persistent variable.
inline bool isVariable(mlir::Value v) {
  return (bool)stripViews(v).getDefiningOp<exec::VariableRefOp>();
}

/// What an op of a step reads and writes, by buffer root (rootOf).
struct Access {
  llvm::SmallDenseSet<const void *, 8> reads, writes;
};

/// The buffers |op| reads and writes. Ops that only name buffers (views,
/// allocs, variable refs, inputs, constants) touch nothing; kernels and
/// library calls write their outputs; any other op (collectives, waits,
/// outputs, ops not known here) counts as writing every buffer it names.
inline Access accessOf(mlir::Operation *op) {
  Access a;
  if (mlir::isa<exec::ReshapeOp, exec::AllocOp, exec::VariableRefOp,
                exec::InputOp, mlir::arith::ConstantOp>(op))
    return a;
  std::optional<unsigned> numInputs;
  if (auto k = mlir::dyn_cast<exec::KernelOp>(op))
    numInputs = k.getInputs().size();
  else if (auto k = mlir::dyn_cast<exec::BuiltinKernelOp>(op))
    numInputs = k.getInputs().size();
  else if (auto c = mlir::dyn_cast<exec::LibraryCallOp>(op))
    numInputs = c.getInputs().size();
  else if (auto m = mlir::dyn_cast<exec::MultiTensorKernelOp>(op))
    numInputs = m.getInputs().size();
  else if (mlir::isa<exec::OutputOp>(op))
    numInputs = op->getNumOperands();
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    if (!mlir::isa<mlir::MemRefType>(v.getType()))
      continue;
    a.reads.insert(rootOf(v));
    if (!numInputs || i >= *numInputs)
      a.writes.insert(rootOf(v));
  }
  return a;
}

} // namespace dlc::lowering

#endif
