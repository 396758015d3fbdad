//===- GraphInterfaces.cpp - dlgraph op traits and interfaces ---------------===//
#include "dialects/Graph/GraphInterfaces.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

#include <string>

using namespace mlir;
using namespace dlc::graph;

#include "dialects/Graph/GraphInterfaces.cpp.inc"

StringRef dlc::graph::stringifyPrecisionClass(PrecisionClass c) {
  switch (c) {
  case PrecisionClass::LowPrecision:
    return "low_precision";
  case PrecisionClass::KeepsF32:
    return "keeps_f32";
  case PrecisionClass::FollowsOperands:
    return "follows_operands";
  }
  return "unknown";
}

StringRef dlc::graph::stringifyRecomputeCost(RecomputeCost c) {
  switch (c) {
  case RecomputeCost::Free:
    return "free";
  case RecomputeCost::Cheap:
    return "cheap";
  case RecomputeCost::Moderate:
    return "moderate";
  case RecomputeCost::Expensive:
    return "expensive";
  case RecomputeCost::Never:
    return "never";
  }
  return "unknown";
}

/// Elements of |t| when it is a ranked tensor with a static shape, else 0.
static int64_t staticElements(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt && rt.hasStaticShape() ? rt.getNumElements() : 0;
}

int64_t dlc::graph::detail::classRecomputeFlops(Operation *op,
                                                RecomputeCost cost) {
  int64_t results = 0, operands = 0;
  for (Type t : op->getResultTypes())
    results += staticElements(t);
  for (Type t : op->getOperandTypes())
    operands += staticElements(t);
  switch (cost) {
  case RecomputeCost::Cheap:
    return results;
  case RecomputeCost::Moderate:
    return operands + results;
  case RecomputeCost::Free:
  case RecomputeCost::Never:
  case RecomputeCost::Expensive: // counted by the op (getMultiplyAdds)
    return 0;
  }
  return 0;
}

/// Renders a shape as "[2, 3, 4]" for diagnostics.
static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

LogicalResult dlc::graph::detail::checkInferredResultTypes(
    StringRef opName, std::optional<Location> location, ArrayRef<Type> inferred,
    ArrayRef<Type> declared) {
  if (inferred.size() != declared.size())
    return emitOptionalError(location, "'", opName, "' op has ",
                             declared.size(), " results, expected ",
                             inferred.size());
  for (size_t i = 0; i < declared.size(); ++i) {
    if (!declared[i] || declared[i] == inferred[i])
      continue;
    std::string which =
        declared.size() == 1 ? "result" : "result #" + std::to_string(i);
    auto d = dyn_cast<RankedTensorType>(declared[i]);
    auto e = dyn_cast<RankedTensorType>(inferred[i]);
    if (d && e && d.getShape() != e.getShape())
      return emitOptionalError(location, "'", opName, "' op ", which,
                               " shape is ", shapeStr(d.getShape()),
                               ", expected ", shapeStr(e.getShape()));
    if (d && e && d.getElementType() != e.getElementType())
      return emitOptionalError(location, "'", opName, "' op ", which,
                               " element type is ", d.getElementType(),
                               ", expected ", e.getElementType());
    return emitOptionalError(location, "'", opName, "' op ", which, " type is ",
                             declared[i], ", expected ", inferred[i]);
  }
  return success();
}
