//===- ScanOps.cpp - dlgraph.cumsum, cumprod and one_hot -----------------===//
// Verifiers and result-type inference (InferTypeOpInterface) of the scan and
// one-hot ops. The inference runs from builders and in verification, so it
// rejects with a diagnostic every attribute value that would give no valid
// result type.
#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace dlc::graph;

namespace {

/// Reports a failure of op |OpT| the way emitOpError words it.
template <typename OpT, typename... Args>
LogicalResult opError(std::optional<Location> loc, Args &&...args) {
  return emitOptionalError(loc, "'", OpT::getOperationName(), "' op ",
                           std::forward<Args>(args)...);
}

} // namespace

/// The result type of a scan (cumsum, cumprod): the input's.
template <typename OpT>
static LogicalResult inferScanType(std::optional<Location> loc,
                                   typename OpT::Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  auto in = dyn_cast<RankedTensorType>(adaptor.getInput().getType());
  if (!in)
    return opError<OpT>(loc, "expects a ranked tensor input");
  inferred.push_back(in);
  return success();
}

/// A scan's axis lies in [0, rank) of an input of rank >= 1.
template <typename OpT> static LogicalResult verifyScanAxis(OpT op) {
  int64_t rank = op.getInput().getType().getRank(), axis = op.getAxis();
  if (rank == 0)
    return op.emitOpError() << "expects an input of rank >= 1";
  if (axis < 0 || axis >= rank)
    return op.emitOpError() << "axis " << axis << " is out of range [0, "
                            << rank - 1 << "] for an input of rank " << rank;
  return success();
}

//===----------------------------------------------------------------------===//
// CumSum and CumProd
//===----------------------------------------------------------------------===//

LogicalResult
CumSumOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                           ValueRange operands, DictionaryAttr attributes,
                           OpaqueProperties properties, RegionRange regions,
                           SmallVectorImpl<Type> &inferred) {
  return inferScanType<CumSumOp>(
      loc, Adaptor(operands, attributes, properties, regions), inferred);
}

LogicalResult CumSumOp::verify() { return verifyScanAxis(*this); }

LogicalResult
CumProdOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                            ValueRange operands, DictionaryAttr attributes,
                            OpaqueProperties properties, RegionRange regions,
                            SmallVectorImpl<Type> &inferred) {
  return inferScanType<CumProdOp>(
      loc, Adaptor(operands, attributes, properties, regions), inferred);
}

LogicalResult CumProdOp::verify() { return verifyScanAxis(*this); }

//===----------------------------------------------------------------------===//
// OneHot
//===----------------------------------------------------------------------===//

LogicalResult
OneHotOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                           ValueRange operands, DictionaryAttr attributes,
                           OpaqueProperties properties, RegionRange regions,
                           SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attributes, properties, regions);
  auto in = dyn_cast<RankedTensorType>(adaptor.getIndices().getType());
  if (!in)
    return opError<OneHotOp>(loc, "expects ranked tensor indices");
  int64_t rank = in.getRank(), depth = adaptor.getDepth(),
          axis = adaptor.getAxis();
  if (depth < 1)
    return opError<OneHotOp>(loc, "depth ", depth, " is not positive");
  if (axis < 0 || axis > rank)
    return opError<OneHotOp>(loc, "axis ", axis, " is out of range [0, ", rank,
                             "] for indices of rank ", rank);
  TypedAttr on = adaptor.getOnValueAttr();
  if (!on)
    return opError<OneHotOp>(loc, "expects an on_value attribute");
  SmallVector<int64_t> shape(in.getShape());
  shape.insert(shape.begin() + axis, depth);
  inferred.push_back(RankedTensorType::get(shape, on.getType()));
  return success();
}

LogicalResult OneHotOp::verify() {
  Type on = getOnValueAttr().getType(), off = getOffValueAttr().getType();
  if (on != off)
    return emitOpError() << "on_value has type " << on << " but off_value has "
                         << off << "; they must match";
  if (!isa<FloatType, IntegerType>(on))
    return emitOpError() << "on_value and off_value have type " << on
                         << "; expected an integer or float type";
  return success();
}
