//===- Passes.h - splitting reductions over the grid -------------*- C++
//-*-===//
//
// --dlexec-split-reductions: a reduction with few outputs and many steps
// becomes partial reductions over its outermost reduction loop plus a
// kernel that combines them (Passes.td).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_LOWERING_SPLITREDUCTIONS_PASSES_H
#define DLC_COMPILER_LOWERING_SPLITREDUCTIONS_PASSES_H

#include "dialects/Exec/ExecDialect.h"
#include "dialects/Exec/ExecOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace dlc {

#define GEN_PASS_DECL
#include "compiler/Lowering/SplitReductions/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Lowering/SplitReductions/Passes.h.inc"

} // namespace dlc

#endif
