//===- Passes.h - sibling reductions in one kernel -------------*- C++ -*-===//
//
// --dlexec-fuse-sibling-reductions: reductions over the same loops that
// read a common input become one kernel with the outputs of both
// (Passes.td).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_LOWERING_SIBLINGREDUCTIONS_PASSES_H
#define DLC_COMPILER_LOWERING_SIBLINGREDUCTIONS_PASSES_H

#include "dialects/Exec/ExecDialect.h"
#include "dialects/Exec/ExecOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace dlc {

#define GEN_PASS_DECL
#include "compiler/Lowering/SiblingReductions/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Lowering/SiblingReductions/Passes.h.inc"

} // namespace dlc

#endif
