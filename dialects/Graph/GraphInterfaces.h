//===- GraphInterfaces.h - dlgraph op traits and interfaces ---*- C++ -*-===//
//
// The C++ side of GraphInterfaces.td: the precision and recompute-cost
// classes, the traits that give each op its class, the elementwise marker,
// and the result-type check shared by the ops with inferred types.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_DIALECTS_GRAPH_GRAPHINTERFACES_H
#define DLC_DIALECTS_GRAPH_GRAPHINTERFACES_H

#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace dlc::graph {

/// The precision an op runs in under mixed precision; see
/// PrecisionClassOpInterface in GraphInterfaces.td for the classification
/// and its sources (PyTorch autocast op lists, NVIDIA AMP lists).
enum class PrecisionClass {
  /// Runs in bf16/f16 with f32 accumulation (matmul, gemm, conv, ...).
  LowPrecision,
  /// Runs in f32 (reductions, softmax, losses, normalization statistics,
  /// exp/log/pow, optimizer updates).
  KeepsF32,
  /// Runs in its operands' type (data movement, relu, add, compare, ...).
  FollowsOperands,
};

/// Recompute cost per output element; see RecomputeCostOpInterface.
enum class RecomputeCost {
  /// No arithmetic: constants, views, reshapes, variable reads.
  Free,
  /// O(1) work per output element: elementwise ops, copies, casts, gathers.
  Cheap,
  /// O(reduced extent) per output element: reductions, softmax, pooling,
  /// losses, scatter-adds.
  Moderate,
  /// O(K) multiply-adds per output element: gemm, matmul, conv.
  Expensive,
  /// Has side effects; never duplicate it.
  Never,
};

/// "low_precision", "keeps_f32" or "follows_operands".
llvm::StringRef stringifyPrecisionClass(PrecisionClass c);
/// "free", "cheap", "moderate", "expensive" or "never".
llvm::StringRef stringifyRecomputeCost(RecomputeCost c);

namespace GraphTrait {

/// Marks an elementwise op (broadcasting operands allowed); see
/// Graph_Elementwise in GraphInterfaces.td.
template <typename ConcreteType>
class Elementwise : public mlir::OpTrait::TraitBase<ConcreteType, Elementwise> {
};

/// Marks an op that copies elements of its operand through an index map;
/// see Graph_MovesElements in GraphInterfaces.td.
template <typename ConcreteType>
class MovesElements
    : public mlir::OpTrait::TraitBase<ConcreteType, MovesElements> {};

/// Marks sin and cos; see Graph_Periodic in GraphInterfaces.td.
template <typename ConcreteType>
class Periodic : public mlir::OpTrait::TraitBase<ConcreteType, Periodic> {};

/// Marks softmax and log_softmax; see Graph_NormalizesScores in
/// GraphInterfaces.td.
template <typename ConcreteType>
class NormalizesScores
    : public mlir::OpTrait::TraitBase<ConcreteType, NormalizesScores> {};

/// Marks a reduction lowered to a generated loop kernel over its input's
/// shape; see Graph_Reduction in GraphInterfaces.td.
template <typename ConcreteType>
class Reduction : public mlir::OpTrait::TraitBase<ConcreteType, Reduction> {};

/// Precision-class traits: each provides the kPrecisionClass that
/// PrecisionClassOpInterface returns; two on one op do not compile.
template <typename ConcreteType>
class LowPrecision
    : public mlir::OpTrait::TraitBase<ConcreteType, LowPrecision> {
public:
  static constexpr PrecisionClass kPrecisionClass =
      PrecisionClass::LowPrecision;
};
template <typename ConcreteType>
class KeepsF32 : public mlir::OpTrait::TraitBase<ConcreteType, KeepsF32> {
public:
  static constexpr PrecisionClass kPrecisionClass = PrecisionClass::KeepsF32;
};
template <typename ConcreteType>
class FollowsOperands
    : public mlir::OpTrait::TraitBase<ConcreteType, FollowsOperands> {
public:
  static constexpr PrecisionClass kPrecisionClass =
      PrecisionClass::FollowsOperands;
};

/// Marks a KeepsF32 op that reads f16/bf16 operands directly and computes in
/// f32; see Graph_ReadsLowPrecision in GraphInterfaces.td.
template <typename ConcreteType>
class ReadsLowPrecision
    : public mlir::OpTrait::TraitBase<ConcreteType, ReadsLowPrecision> {};

/// Recompute-cost traits: each provides the kRecomputeCost that
/// RecomputeCostOpInterface returns; two on one op do not compile.
template <typename ConcreteType>
class RecomputeFree
    : public mlir::OpTrait::TraitBase<ConcreteType, RecomputeFree> {
public:
  static constexpr RecomputeCost kRecomputeCost = RecomputeCost::Free;
};
template <typename ConcreteType>
class RecomputeCheap
    : public mlir::OpTrait::TraitBase<ConcreteType, RecomputeCheap> {
public:
  static constexpr RecomputeCost kRecomputeCost = RecomputeCost::Cheap;
};
template <typename ConcreteType>
class RecomputeModerate
    : public mlir::OpTrait::TraitBase<ConcreteType, RecomputeModerate> {
public:
  static constexpr RecomputeCost kRecomputeCost = RecomputeCost::Moderate;
};
template <typename ConcreteType>
class RecomputeExpensive
    : public mlir::OpTrait::TraitBase<ConcreteType, RecomputeExpensive> {
public:
  static constexpr RecomputeCost kRecomputeCost = RecomputeCost::Expensive;
};
template <typename ConcreteType>
class NotRecomputable
    : public mlir::OpTrait::TraitBase<ConcreteType, NotRecomputable> {
public:
  static constexpr RecomputeCost kRecomputeCost = RecomputeCost::Never;
};

/// After the op's verify(), checks its declared result types against
/// ConcreteType::inferReturnTypes with detail::checkInferredResultTypes (see
/// Graph_InferType in GraphInterfaces.td).
template <typename ConcreteType>
class InferredResultTypes
    : public mlir::OpTrait::TraitBase<ConcreteType, InferredResultTypes> {
public:
  static llvm::LogicalResult verifyRegionTrait(mlir::Operation *op);
};

} // namespace GraphTrait

/// True when |op| is a dlgraph elementwise op (GraphTrait::Elementwise).
inline bool isElementwise(mlir::Operation *op) {
  return op->hasTrait<GraphTrait::Elementwise>();
}

namespace detail {
/// getRecomputeFlops for an op of cost class |cost| other than Expensive:
/// see RecomputeCostOpInterface in GraphInterfaces.td.
int64_t classRecomputeFlops(mlir::Operation *op, RecomputeCost cost);

/// The default getRecomputeFlops of ConcreteOp.
template <typename ConcreteOp> int64_t recomputeFlops(ConcreteOp op) {
  if constexpr (ConcreteOp::kRecomputeCost == RecomputeCost::Expensive)
    return 2 * op.getMultiplyAdds();
  else
    return classRecomputeFlops(op.getOperation(), ConcreteOp::kRecomputeCost);
}

/// Compares the |declared| result types of a dlgraph op named |opName| with
/// the |inferred| ones; on a mismatch emits, at |location| when given,
/// "'<opName>' op result shape is [2, 4], expected [2, 5]" (or "result
/// element type is ..., expected ...", "result #1 ..." for later results,
/// "has N results, expected M") and fails. Null declared types are not
/// checked (InferTypeOpInterface's convention).
llvm::LogicalResult checkInferredResultTypes(
    llvm::StringRef opName, std::optional<mlir::Location> location,
    llvm::ArrayRef<mlir::Type> inferred, llvm::ArrayRef<mlir::Type> declared);
} // namespace detail

template <typename ConcreteType>
llvm::LogicalResult
GraphTrait::InferredResultTypes<ConcreteType>::verifyRegionTrait(
    mlir::Operation *op) {
  llvm::SmallVector<mlir::Type, 2> inferred;
  if (mlir::failed(ConcreteType::inferReturnTypes(
          op->getContext(), op->getLoc(), op->getOperands(),
          op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
          op->getRegions(), inferred)))
    return mlir::failure();
  llvm::SmallVector<mlir::Type, 2> declared(op->getResultTypes());
  return detail::checkInferredResultTypes(ConcreteType::getOperationName(),
                                          op->getLoc(), inferred, declared);
}

} // namespace dlc::graph

#include "dialects/Graph/GraphInterfaces.h.inc"

#endif // DLC_DIALECTS_GRAPH_GRAPHINTERFACES_H
