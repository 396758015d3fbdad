//===- Passes.h - data-parallel training ------------------------*- C++ -*-===//
//
// The data-parallel pass family (docs/distributed.md): `--data-parallel`
// averages the training step's gradients over the ranks in buckets.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_TRAINING_DATAPARALLEL_PASSES_H
#define DLC_COMPILER_TRAINING_DATAPARALLEL_PASSES_H

#include "dialects/Graph/GraphDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dlc {

#define GEN_PASS_DECL
#include "compiler/Training/DataParallel/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Training/DataParallel/Passes.h.inc"

} // namespace dlc

#endif // DLC_COMPILER_TRAINING_DATAPARALLEL_PASSES_H
