//===- Passes.h - reduction epilogue fusion -----------------------*- C++ -*-===//
//
// --dlexec-fuse-reduction-epilogues: elementwise kernels over the outputs of
// a reduction kernel become that kernel's epilogue region (Passes.td).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_LOWERING_REDUCTIONEPILOGUES_PASSES_H
#define DLC_COMPILER_LOWERING_REDUCTIONEPILOGUES_PASSES_H

#include "dialects/Exec/ExecDialect.h"
#include "dialects/Exec/ExecOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace dlc {

#define GEN_PASS_DECL
#include "compiler/Lowering/ReductionEpilogues/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Lowering/ReductionEpilogues/Passes.h.inc"

} // namespace dlc

#endif
