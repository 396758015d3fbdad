//===- Passes.h - rematerialization on dlexec ---------------------*- C++ -*-===//
//
// --dlexec-remat-persistent-kernels: a kernel that reads only persistent
// variables is recomputed before each later reader (Passes.td).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_LOWERING_REMAT_PASSES_H
#define DLC_COMPILER_LOWERING_REMAT_PASSES_H

#include "dialects/Exec/ExecDialect.h"
#include "dialects/Exec/ExecOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace dlc {

#define GEN_PASS_DECL
#include "compiler/Lowering/Remat/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Lowering/Remat/Passes.h.inc"

} // namespace dlc

#endif
