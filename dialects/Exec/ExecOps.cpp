//===- ExecOps.cpp - dlexec op verifiers ------------------------------------===//
#include "dialects/Exec/ExecOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace dlc::exec;

LogicalResult
VariableRefOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto var = symbolTable.lookupNearestSymbolFrom<VariableOp>(
      *this, getVariableAttr());
  if (!var)
    return emitOpError() << "'" << getVariable()
                         << "' does not name a dlexec.variable";
  if (var.getType() != getType())
    return emitOpError() << "type " << getType() << " does not match variable '"
                         << getVariable() << "' of type " << var.getType();
  return success();
}

LogicalResult KernelOp::verify() {
  size_t numOperands = getInputs().size() + getOutputs().size();
  auto maps = getIndexingMaps().getAsValueRange<AffineMapAttr>();
  if ((size_t)getIndexingMaps().size() != numOperands)
    return emitOpError() << "has " << getIndexingMaps().size()
                         << " indexing maps for " << numOperands << " operands";
  unsigned numLoops = getIteratorTypes().size();
  size_t i = 0;
  for (AffineMap map : maps) {
    Value operand = i < getInputs().size()
                        ? getInputs()[i]
                        : getOutputs()[i - getInputs().size()];
    auto type = cast<MemRefType>(operand.getType());
    if (map.getNumDims() != numLoops)
      return emitOpError() << "indexing map #" << i << " has "
                           << map.getNumDims() << " dims, expected "
                           << numLoops;
    if (map.getNumResults() != (unsigned)type.getRank())
      return emitOpError() << "indexing map #" << i << " has "
                           << map.getNumResults()
                           << " results for an operand of rank "
                           << type.getRank();
    ++i;
  }
  for (Attribute it : getIteratorTypes()) {
    StringRef s = cast<StringAttr>(it).getValue();
    if (s != "parallel" && s != "reduction")
      return emitOpError() << "iterator type '" << s
                           << "' is not 'parallel' or 'reduction'";
  }
  Block &body = getBody().front();
  if (body.getNumArguments() != numOperands)
    return emitOpError() << "body has " << body.getNumArguments()
                         << " arguments, expected " << numOperands;
  for (auto [arg, operand] :
       llvm::zip(body.getArguments(), getOperands())) {
    Type elem = cast<MemRefType>(operand.getType()).getElementType();
    if (arg.getType() != elem)
      return emitOpError() << "body argument of type " << arg.getType()
                           << " for an operand of element type " << elem;
  }
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().size() != getOutputs().size())
    return emitOpError() << "body yields " << yield.getValues().size()
                         << " values for " << getOutputs().size()
                         << " outputs";
  if (auto init = getInit())
    if (init->size() != getOutputs().size())
      return emitOpError() << "init has " << init->size() << " values for "
                           << getOutputs().size() << " outputs";
  return success();
}

LogicalResult LibraryCallOp::verify() {
  StringRef c = getCallee();
  if (c != "gemm" && c != "conv2d_forward" && c != "conv2d_backward_data" &&
      c != "conv2d_backward_filter" && c != "batched_gemm" &&
      c != "conv3d_forward" && c != "conv3d_backward_data" &&
      c != "conv3d_backward_filter")
    return emitOpError() << "unknown library call '" << c
                         << "'; expected gemm, batched_gemm, conv2d_forward, "
                            "conv2d_backward_data, conv2d_backward_filter or "
                            "their conv3d_ forms";
  if (getOutputs().size() != 1)
    return emitOpError() << "expects exactly one output";
  return success();
}

#define GET_OP_CLASSES
#include "dialects/Exec/ExecOps.cpp.inc"
