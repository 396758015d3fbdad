//===- Passes.h - multi-tensor kernels ----------------------------*- C++ -*-===//
//
// --dlexec-multi-tensor: one dlexec.multi_tensor_kernel for the same-bodied
// elementwise updates of many persistent tensors (Passes.td).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_LOWERING_MULTITENSOR_PASSES_H
#define DLC_COMPILER_LOWERING_MULTITENSOR_PASSES_H

#include "dialects/Exec/ExecDialect.h"
#include "dialects/Exec/ExecOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace dlc {

#define GEN_PASS_DECL
#include "compiler/Lowering/MultiTensor/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Lowering/MultiTensor/Passes.h.inc"

} // namespace dlc

#endif
