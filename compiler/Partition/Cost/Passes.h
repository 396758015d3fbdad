//===- Passes.h - pipeline stage split --------------------------*- C++ -*-===//
//
// dlgraph-partition-pipeline (docs/pipeline.md): the roofline cost model and
// the automatic split of @main into pipeline stages.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_PARTITION_COST_PASSES_H
#define DLC_COMPILER_PARTITION_COST_PASSES_H

#include "compiler/Partition/Cost/DeviceModel.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <cstdint>

namespace dlc {

/// Roofline cost of one op on |model|, seconds: forward =
/// max(FLOPs / peak, bytes / memory bandwidth); backward = 2x forward for an
/// op reading a parameter, 1x otherwise. |flops| in FLOPs, |bytes| in bytes.
struct OpCost {
  double forward = 0;  ///< seconds
  double backward = 0; ///< seconds
};

/// Costs |op| (see OpCost) on |model|.
OpCost costOp(mlir::Operation *op, const DeviceModel &model);

/// Transfer time of |bytes| across a stage boundary, seconds.
double transferTime(int64_t bytes, const DeviceModel &model);

#define GEN_PASS_DECL
#include "compiler/Partition/Cost/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Partition/Cost/Passes.h.inc"

} // namespace dlc

#endif // DLC_COMPILER_PARTITION_COST_PASSES_H
