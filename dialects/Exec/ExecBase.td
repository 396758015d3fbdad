//===- ExecBase.td - dlexec dialect definition -------------*- tablegen -*-===//
// The dlexec dialect: the runtime contract. Buffers with planned arena
// offsets, generated kernels whose bodies are upstream arith/math ops,
// library calls (GEMM, convolution) and built-in template kernels, in the
// order the runtime runs them.
#ifndef DLC_DIALECT_EXEC_BASE_TD
#define DLC_DIALECT_EXEC_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

def Exec_Dialect : Dialect {
  let name = "dlexec";
  let cppNamespace = "::dlc::exec";
  let summary = "Buffers, kernels, library calls and the step schedule";
  let description = [{
    A module holds `dlexec.variable` symbols (persistent buffers: parameters,
    optimizer state, running statistics) and one or more `dlexec.func`
    step functions. Inside a function, values are memrefs with the identity
    layout (dense, row-major); ops run in program order on one stream.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect"];
  // The dlexec.* discardable attributes a planned module carries are
  // declared in ExecAttributes.h and checked in ExecAttributes.cpp.
  let hasOperationAttrVerify = 1;
}

class Exec_Op<string mnemonic, list<Trait> traits = []>
    : Op<Exec_Dialect, mnemonic, traits>;

#endif
