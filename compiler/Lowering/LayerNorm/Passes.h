//===- Passes.h - LayerNorm row kernels ---------------------------*- C++ -*-===//
//
// --dlexec-fuse-layer-norm: the kernels of a decomposed LayerNorm become one
// layer_norm builtin kernel (Passes.td).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_LOWERING_LAYERNORM_PASSES_H
#define DLC_COMPILER_LOWERING_LAYERNORM_PASSES_H

#include "dialects/Exec/ExecDialect.h"
#include "dialects/Exec/ExecOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace dlc {

#define GEN_PASS_DECL
#include "compiler/Lowering/LayerNorm/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Lowering/LayerNorm/Passes.h.inc"

} // namespace dlc

#endif
