//===- ExecOps.cpp - dlexec op verifiers ------------------------------------===//
#include "dialects/Exec/ExecOps.h"
#include "dialects/Exec/KernelBodyOps.h"

#include "runtime/schema/Limits.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
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

/// Whether a package can store buffers of element type |t| (f32, f64, f16,
/// bf16, i64,
/// i32, i1: package.fbs DType).
static bool isBufferElementType(Type t) {
  return t.isF32() || t.isF64() || t.isF16() || t.isBF16() || t.isInteger(64) ||
         t.isInteger(32) || t.isInteger(1);
}

/// A buffer the package writer can lay out: a static shape, the identity
/// layout and a package dtype.
static LogicalResult verifyBufferType(Operation *op, MemRefType type) {
  if (!type.hasStaticShape() || !type.getLayout().isIdentity())
    return op->emitOpError() << "buffer of type " << type
                             << " needs a static shape and the identity "
                                "layout";
  if (!isBufferElementType(type.getElementType()))
    return op->emitOpError() << "element type " << type.getElementType()
                             << " cannot be stored in a package (expected "
                                "f32, f64, f16, bf16, i64, i32 or i1)";
  if (type.getRank() > dlc::schema::kMaxBufferRank)
    return op->emitOpError() << "buffer of type " << type << " has rank "
                             << type.getRank() << "; a package holds buffers "
                             << "of rank at most "
                             << dlc::schema::kMaxBufferRank;
  return success();
}

/// Bytes of a buffer of |type| (i1 takes one byte).
static int64_t bufferBytes(MemRefType type) {
  return type.getNumElements() *
         std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

LogicalResult VariableOp::verify() {
  StringRef kind = getKind();
  if (kind != "parameter" && kind != "optimizer_state" && kind != "buffer" &&
      kind != "constant")
    return emitOpError() << "kind '" << kind
                         << "' is not parameter, optimizer_state, buffer or "
                            "constant";
  auto type = cast<MemRefType>(getType());
  if (failed(verifyBufferType(*this, type)))
    return failure();
  if (std::optional<ElementsAttr> init = getInitialValue()) {
    if (!isa<DenseElementsAttr, DenseResourceElementsAttr>(*init))
      return emitOpError() << "initial value must be dense<...> or "
                              "dense_resource<...>";
    auto initType = cast<ShapedType>(init->getType());
    if (initType.getShape() != type.getShape() ||
        initType.getElementType() != type.getElementType())
      return emitOpError() << "initial value of type " << initType
                           << " does not match the buffer type " << type;
  }
  return success();
}

LogicalResult InputOp::verify() {
  return verifyBufferType(*this, cast<MemRefType>(getType()));
}

LogicalResult AllReduceOp::verify() {
  if (getReduction() != "sum" && getReduction() != "avg")
    return emitOpError() << "reduction '" << getReduction()
                         << "' is not supported; supported: sum, avg";
  Type e = cast<MemRefType>(getBuffer().getType()).getElementType();
  if (!e.isF32() && !e.isF16() && !e.isBF16())
    return emitOpError() << "element type " << e
                         << " is not supported; supported: f32, f16, bf16";
  return success();
}

LogicalResult AllocOp::verify() {
  return verifyBufferType(*this, cast<MemRefType>(getType()));
}

LogicalResult ReshapeOp::verify() {
  auto from = cast<MemRefType>(getSource().getType());
  auto to = cast<MemRefType>(getType());
  if (failed(verifyBufferType(*this, to)))
    return failure();
  if (from.hasStaticShape() && bufferBytes(from) != bufferBytes(to))
    return emitOpError() << "changes the size of the buffer ("
                         << bufferBytes(from) << " -> " << bufferBytes(to)
                         << " bytes)";
  return success();
}

LogicalResult SubviewOp::verify() {
  auto from = cast<MemRefType>(getSource().getType());
  auto to = cast<MemRefType>(getType());
  if (failed(verifyBufferType(*this, to)) ||
      failed(verifyBufferType(*this, from)))
    return failure();
  if (from.getElementType() != to.getElementType() ||
      from.getRank() != to.getRank())
    return emitOpError() << "changes the element type or rank (" << from
                         << " -> " << to << ")";
  ArrayRef<int64_t> offsets = getOffsets(), strides = getStrides();
  if ((int64_t)offsets.size() != to.getRank() ||
      (int64_t)strides.size() != to.getRank())
    return emitOpError() << "has " << offsets.size() << " offsets and "
                         << strides.size() << " strides for rank "
                         << to.getRank();
  for (int64_t d = 0; d < to.getRank(); ++d) {
    int64_t size = to.getDimSize(d);
    if (offsets[d] < 0 || strides[d] < 1 ||
        (size > 0 &&
         offsets[d] + strides[d] * (size - 1) >= from.getDimSize(d)))
      return emitOpError() << "dimension " << d << " (size " << size
                           << ", offset " << offsets[d] << ", stride "
                           << strides[d] << ") reads outside the source's "
                           << from.getDimSize(d) << " elements";
  }
  return success();
}

std::optional<StridedView> dlc::exec::stridedViewOf(Value v) {
  auto view = v.getDefiningOp<SubviewOp>();
  if (!view || view.getSource().getDefiningOp<SubviewOp>())
    return std::nullopt;
  ArrayRef<int64_t> shape =
      cast<MemRefType>(view.getSource().getType()).getShape();
  StridedView out;
  int64_t dense = 1;
  out.strides.assign(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    out.offset += view.getOffsets()[d] * dense;
    out.strides[d] = view.getStrides()[d] * dense;
    dense *= shape[d];
  }
  return out;
}

bool dlc::exec::writesStridedOperand(Operation *op, unsigned operandNumber) {
  if (auto call = dyn_cast<LibraryCallOp>(op)) {
    const LibraryCallInfo *info = call.getCallInfo();
    return info && info->stridedOutput && call.getOutputs().size() == 1 &&
           operandNumber == call.getInputs().size();
  }
  if (auto bk = dyn_cast<BuiltinKernelOp>(op)) {
    const BuiltinTemplateInfo *info = bk.getTemplateInfo();
    return info && info->stridedOutput && bk.getOutputs().size() == 1 &&
           operandNumber == bk.getInputs().size();
  }
  return false;
}

LogicalResult FuncOp::verify() {
  // The step is a straight-line schedule the package stores op by op;
  // arith.constant holds scalars that kernel bodies capture.
  for (Operation &op : getBody().front())
    if (!isa<InputOp, OutputOp, VariableRefOp, AllocOp, ReshapeOp, SubviewOp,
             KernelOp, MultiTensorKernelOp, BuiltinKernelOp, LibraryCallOp,
             AllReduceOp, WaitOp, arith::ConstantOp>(op))
      return op.emitOpError()
             << "cannot be in a dlexec.func; a step holds dlexec.input, "
                "output, variable_ref, alloc, reshape, subview, kernel, "
                "multi_tensor_kernel, builtin_kernel, library_call, "
                "all_reduce and wait (and arith.constant)";
  return success();
}

/// The scalar types codegen stores and computes in (f32, f64, f16 and bf16
/// computed in float and rounded per op, i64 and index, i32, i1).
static bool isKernelScalarType(Type t) {
  return t.isF32() || t.isF64() || t.isF16() || t.isBF16() || t.isIndex() ||
         t.isInteger(64) || t.isInteger(32) || t.isInteger(1);
}

/// Whether |attr| can initialize an output of element type |elem| (a float
/// for a float output; an integer or boolean for any output).
static bool isScalarInit(Attribute attr, Type elem) {
  if (isa<FloatAttr>(attr))
    return isa<FloatType>(elem) && isKernelScalarType(elem);
  return isa<IntegerAttr, BoolAttr>(attr) && isKernelScalarType(elem);
}

LogicalResult KernelOp::verify() {
  size_t numOperands = getInputs().size() + getOutputs().size();
  auto maps = getIndexingMaps().getAsValueRange<AffineMapAttr>();
  if ((size_t)getIndexingMaps().size() != numOperands)
    return emitOpError() << "has " << getIndexingMaps().size()
                         << " indexing maps for " << numOperands << " operands";
  unsigned numLoops = getIteratorTypes().size();
  for (Attribute it : getIteratorTypes()) {
    StringRef s = cast<StringAttr>(it).getValue();
    if (s != "parallel" && s != "reduction")
      return emitOpError() << "iterator type '" << s
                           << "' is not 'parallel' or 'reduction'";
  }
  // Codegen sizes each loop from the operands whose maps use it as a plain
  // dimension: there must be one, and they must agree.
  SmallVector<int64_t> loopSizes(numLoops, -1);
  SmallVector<unsigned> sizedBy(numLoops, 0);
  size_t i = 0;
  for (AffineMap map : maps) {
    Value operand = getOperand(i);
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
    if (map.getNumSymbols() != 0)
      return emitOpError() << "indexing map #" << i
                           << " has symbols; only dims and constants are "
                              "supported";
    if (!type.hasStaticShape())
      return emitOpError() << "operand #" << i << " of type " << type
                           << " has a dynamic shape; codegen needs static "
                              "shapes";
    if (!type.getLayout().isIdentity())
      return emitOpError() << "operand #" << i << " of type " << type
                           << " has a non-identity layout";
    if (!isKernelScalarType(type.getElementType()))
      return emitOpError() << "operand #" << i << " has element type "
                           << type.getElementType()
                           << ", which codegen does not support (expected "
                              "f32, f64, f16, bf16, i64, i32 or i1)";
    for (unsigned r = 0; r < map.getNumResults(); ++r) {
      auto d = dyn_cast<AffineDimExpr>(map.getResult(r));
      if (!d)
        continue;
      int64_t size = type.getDimSize(r);
      unsigned loop = d.getPosition();
      if (loopSizes[loop] >= 0 && loopSizes[loop] != size)
        return emitOpError() << "loop " << loop << " has size "
                             << loopSizes[loop] << " from operand #"
                             << sizedBy[loop] << " and " << size
                             << " from operand #" << i;
      loopSizes[loop] = size;
      sizedBy[loop] = i;
    }
    ++i;
  }
  for (unsigned l = 0; l < numLoops; ++l)
    if (loopSizes[l] < 0)
      return emitOpError() << "cannot infer the size of loop " << l
                           << ": no indexing map uses it as a plain dimension";
  // Outputs live in per-thread accumulators while reduction loops run.
  SmallVector<AffineMap> mapList(maps);
  for (unsigned o = 0; o < getOutputs().size(); ++o)
    for (auto [l, it] : llvm::enumerate(getIteratorTypes()))
      if (cast<StringAttr>(it).getValue() == "reduction" &&
          mapList[getInputs().size() + o].isFunctionOfDim(l))
        return emitOpError() << "output #" << o << " is indexed by reduction "
                             << "loop " << l << "; outputs may be indexed by "
                             << "parallel loops only";
  // An f16 / bf16 output of a reduction is accumulated in float and rounded
  // once when stored (codegen/KernelEmitter.cpp).
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
  const unsigned numBodyOutputs = getNumBodyOutputs();
  if (yield.getValues().size() != numBodyOutputs)
    return emitOpError() << "body yields " << yield.getValues().size()
                         << " values for " << numBodyOutputs << " outputs";
  for (auto [o, v] : llvm::enumerate(yield.getValues())) {
    Type elem = cast<MemRefType>(getOutputs()[o].getType()).getElementType();
    if (v.getType() != elem)
      return emitOpError() << "body yields a " << v.getType()
                           << " for output #" << o << " of element type "
                           << elem;
  }
  if (auto init = getInit()) {
    if (init->size() != numBodyOutputs)
      return emitOpError() << "init has " << init->size() << " values for "
                           << numBodyOutputs << " outputs";
    for (auto [o, attr] : llvm::enumerate(*init)) {
      Type elem = cast<MemRefType>(getOutputs()[o].getType()).getElementType();
      if (!isScalarInit(attr, elem))
        return emitOpError() << "init value " << attr << " for output #" << o
                             << " is not a scalar of element type " << elem;
    }
  }
  if (!getEpilogue().empty()) {
    if (failed(verifyEpilogue(mapList)))
      return failure();
    // The epilogue outputs have no accumulator in the body.
    for (unsigned o = numBodyOutputs; o < getOutputs().size(); ++o)
      if (!body.getArgument(getInputs().size() + o).use_empty())
        return emitOpError() << "body reads epilogue output #" << o;
  }
  return verifyBodyOps(body);
}

LogicalResult KernelOp::verifyEpilogue(ArrayRef<AffineMap> maps) {
  Block &epi = getEpilogue().front();
  const unsigned numInputs = getInputs().size();
  const size_t numOperands = numInputs + getOutputs().size();
  SmallVector<bool> reductionLoop;
  for (Attribute it : getIteratorTypes())
    reductionLoop.push_back(cast<StringAttr>(it).getValue() == "reduction");
  if (!llvm::is_contained(reductionLoop, true))
    return emitOpError() << "has an epilogue but no reduction loop";
  if (epi.getNumArguments() != numOperands)
    return emitOpError() << "epilogue has " << epi.getNumArguments()
                         << " arguments, expected " << numOperands;
  for (auto [arg, operand] : llvm::zip(epi.getArguments(), getOperands())) {
    Type elem = cast<MemRefType>(operand.getType()).getElementType();
    if (arg.getType() != elem)
      return emitOpError() << "epilogue argument of type " << arg.getType()
                           << " for an operand of element type " << elem;
  }
  unsigned numEpilogue = getNumEpilogueOutputs();
  if (numEpilogue == 0 || numEpilogue >= getOutputs().size())
    return emitOpError() << "epilogue yields " << numEpilogue << " values for "
                         << getOutputs().size()
                         << " outputs; it must write at least one output "
                            "and leave at least one to the body";
  auto yield = cast<YieldOp>(epi.getTerminator());
  unsigned first = getNumBodyOutputs();
  for (auto [k, v] : llvm::enumerate(yield.getValues())) {
    Type elem = cast<MemRefType>(getOutputs()[first + k].getType())
                    .getElementType();
    if (v.getType() != elem)
      return emitOpError() << "epilogue yields a " << v.getType()
                           << " for output #" << first + k
                           << " of element type " << elem;
  }
  // The epilogue runs once per output element, after the reduction loops.
  for (unsigned i = 0; i < numInputs; ++i) {
    if (epi.getArgument(i).use_empty())
      continue;
    for (auto [l, red] : llvm::enumerate(reductionLoop))
      if (red && maps[i].isFunctionOfDim(l))
        return emitOpError() << "epilogue reads input #" << i
                             << ", whose indexing map uses reduction loop "
                             << l;
  }
  for (Operation &op : epi.without_terminator())
    if (auto index = dyn_cast<IndexOp>(op))
      if (index.getDim() >= 0 && index.getDim() < (int64_t)reductionLoop.size() &&
          reductionLoop[index.getDim()])
        return index.emitOpError() << "reads reduction loop "
                                   << index.getDim() << " in an epilogue";
  return verifyBodyOps(epi);
}

LogicalResult KernelOp::verifyBodyOps(Block &body) {
  unsigned numLoops = getIteratorTypes().size();
  // Body ops become one C expression each: the ops of KernelBodyOps.h and
  // dlexec.index, with one scalar result.
  for (Operation &op : body.without_terminator()) {
    if (auto index = dyn_cast<IndexOp>(op)) {
      if (index.getDim() < 0 || index.getDim() >= (int64_t)numLoops)
        return index.emitOpError() << "loop " << index.getDim()
                                   << " does not exist; the kernel has "
                                   << numLoops << " loops";
      continue;
    }
    if (!isKernelBodyOp(&op) || op.getNumResults() != 1)
      return op.emitOpError()
             << "is not supported in a dlexec.kernel body by codegen (see "
                "dialects/Exec/KernelBodyOps.h)";
    Type result = op.getResult(0).getType();
    if (!isKernelScalarType(result))
      return op.emitOpError() << "result type " << result
                              << " is not supported by codegen (expected "
                                 "f32, f64, f16, bf16, i64, i32, i1 or "
                                 "index)";
    if (isKernelMathCall(&op) && !isa<FloatType>(result))
      return op.emitOpError()
             << "on " << result << " is not supported by codegen";
  }
  return success();
}

LogicalResult MultiTensorKernelOp::verify() {
  int64_t numShared = getNumShared();
  unsigned numTensors = getNumTensors();
  if (numShared < 0 || numShared > (int64_t)getInputs().size())
    return emitOpError() << "num_shared is " << numShared << " for "
                         << getInputs().size() << " inputs";
  if (numTensors == 0)
    return emitOpError() << "has no tensors (sizes is empty)";
  unsigned perTensorIns = getInputs().size() - numShared;
  if (perTensorIns % numTensors != 0 || getOutputs().size() % numTensors != 0 ||
      getOutputs().empty())
    return emitOpError() << "has " << perTensorIns << " per-tensor inputs and "
                         << getOutputs().size() << " outputs for "
                         << numTensors << " tensors; expected a multiple of "
                            "the tensor count each, and outputs";
  unsigned ins = getNumInputRoles(), outs = getNumOutputRoles();
  auto check = [&](Value v, unsigned index, int64_t elements) -> LogicalResult {
    auto type = cast<MemRefType>(v.getType());
    if (!type.hasStaticShape() || !type.getLayout().isIdentity())
      return emitOpError() << "operand #" << index << " of type " << type
                           << " is not a dense buffer of static shape";
    if (!isKernelScalarType(type.getElementType()))
      return emitOpError() << "operand #" << index << " has element type "
                           << type.getElementType()
                           << ", which codegen does not support (expected "
                              "f32, f64, f16, bf16, i64, i32 or i1)";
    if (type.getNumElements() != elements)
      return emitOpError() << "operand #" << index << " of type " << type
                           << " has " << type.getNumElements()
                           << " elements, expected " << elements;
    return success();
  };
  // Role r of tensor t is operand roleOperand(t, r); its element type must be
  // the role's block argument type.
  Block &body = getBody().front();
  if (body.getNumArguments() != numShared + ins + outs)
    return emitOpError() << "body has " << body.getNumArguments()
                         << " arguments, expected " << numShared + ins + outs
                         << " (shared inputs, per-tensor inputs, outputs)";
  auto operands = getOperands();
  for (int64_t s = 0; s < numShared; ++s)
    if (failed(check(operands[s], s, 1)))
      return failure();
  for (unsigned t = 0; t < numTensors; ++t) {
    int64_t n = getSizes()[t];
    for (unsigned r = 0; r < ins + outs; ++r) {
      unsigned index = r < ins ? numShared + t * ins + r
                               : getInputs().size() + t * outs + (r - ins);
      if (failed(check(operands[index], index, n)))
        return failure();
      Type elem = cast<MemRefType>(operands[index].getType()).getElementType();
      if (body.getArgument(numShared + r).getType() != elem)
        return emitOpError() << "operand #" << index << " of element type "
                             << elem << " for a body argument of type "
                             << body.getArgument(numShared + r).getType();
    }
  }
  for (int64_t s = 0; s < numShared; ++s)
    if (body.getArgument(s).getType() !=
        cast<MemRefType>(operands[s].getType()).getElementType())
      return emitOpError() << "shared input #" << s << " of element type "
                           << cast<MemRefType>(operands[s].getType())
                                  .getElementType()
                           << " for a body argument of type "
                           << body.getArgument(s).getType();
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().size() != outs)
    return emitOpError() << "body yields " << yield.getValues().size()
                         << " values for " << outs << " outputs per tensor";
  for (auto [o, v] : llvm::enumerate(yield.getValues()))
    if (v.getType() != body.getArgument(numShared + ins + o).getType())
      return emitOpError() << "body yields a " << v.getType() << " for output #"
                           << o << " of element type "
                           << body.getArgument(numShared + ins + o).getType();
  for (Operation &op : body.without_terminator()) {
    if (!isKernelBodyOp(&op) || op.getNumResults() != 1 ||
        !isKernelScalarType(op.getResult(0).getType()))
      return op.emitOpError()
             << "is not supported in a dlexec.multi_tensor_kernel body (the "
                "scalar ops of dialects/Exec/KernelBodyOps.h; no "
                "dlexec.index)";
    if (isKernelMathCall(&op) && !isa<FloatType>(op.getResult(0).getType()))
      return op.emitOpError()
             << "on " << op.getResult(0).getType()
             << " is not supported by codegen";
  }
  return success();
}

#define GET_OP_CLASSES
#include "dialects/Exec/ExecOps.cpp.inc"
