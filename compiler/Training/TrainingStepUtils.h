//===- TrainingStepUtils.h - shared by the training passes ------*- C++ -*-===//
#ifndef DLC_COMPILER_TRANSFORMS_TRAININGSTEPUTILS_H
#define DLC_COMPILER_TRANSFORMS_TRAININGSTEPUTILS_H

#include "dialects/Graph/GraphAttributes.h"
#include "dialects/Graph/GraphOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace dlc::training {

// The attributes the training passes read and write, declared with the
// dialect (dialects/Graph/GraphAttributes.h).
using graph::kBackwardAttr;
using graph::kFrozenAttr;
using graph::kNameAttr;
using graph::kNoWeightDecayAttr;
using graph::kOptimizerStateAttr;
using graph::kStageAttr;

/// The function the training passes build and then extend.
constexpr llvm::StringLiteral kTrainStep = "train_step";
/// The name of @train_step's first result.
constexpr llvm::StringLiteral kLossName = "loss";
/// The suffix of the gradient results: "<parameter>.grad".
constexpr llvm::StringLiteral kGradSuffix = ".grad";
/// The result of @train_step with the learning rate of the update (rank-0
/// f32), present with an lr schedule.
constexpr llvm::StringLiteral kLrName = "lr";
/// The result of @train_step with the gradients' global L2 norm before
/// clipping (rank-0 f32), present with clip-grad-norm.
constexpr llvm::StringLiteral kGradNormName = "grad_norm";
/// With --accumulate: the persistent f32 count of calls since the last
/// update, and the suffix of each parameter's gradient accumulator.
constexpr llvm::StringLiteral kAccumulateCountVar = "__accumulate_count";
constexpr llvm::StringLiteral kAccumulatorSuffix = ".grad_accumulator";
/// While alive, tags every op |b| inserts with |stage| (when not null) and,
/// when |backward|, kBackwardAttr; restores |b|'s listener at the end. Ops
/// of a module without pipeline stages are left untouched.
class StageTagger : public mlir::OpBuilder::Listener {
public:
  StageTagger(mlir::OpBuilder &b, mlir::Attribute stage, bool backward)
      : b(b), previous(b.getListener()), stage(stage), backward(backward) {
    if (stage)
      b.setListener(this);
  }
  ~StageTagger() override {
    if (stage)
      b.setListener(previous);
  }
  void notifyOperationInserted(mlir::Operation *op,
                               mlir::OpBuilder::InsertPoint) override {
    op->setAttr(kStageAttr, stage);
    if (backward)
      op->setAttr(kBackwardAttr, mlir::UnitAttr::get(op->getContext()));
  }

private:
  mlir::OpBuilder &b;
  mlir::OpBuilder::Listener *previous;
  mlir::Attribute stage;
  bool backward;
};

/// The stage attribute of |v|'s defining op, or null (block arguments,
/// unstaged modules).
inline mlir::Attribute stageOf(mlir::Value v) {
  mlir::Operation *def = v.getDefiningOp();
  return def ? def->getAttr(kStageAttr) : mlir::Attribute();
}

/// A `dlgraph.constant` of |type| (floating-point elements) with every
/// element |v|.
inline mlir::Value splat(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::RankedTensorType type, double v) {
  auto attr = mlir::DenseElementsAttr::get(
      type, b.getFloatAttr(type.getElementType(), v));
  return graph::ConstantOp::create(b, loc, type,
                                   mlir::cast<mlir::ElementsAttr>(attr));
}

/// `{dlgraph.name = |name|}`.
inline mlir::DictionaryAttr nameAttr(mlir::Builder &b, llvm::StringRef name) {
  return b.getDictionaryAttr(b.getNamedAttr(kNameAttr, b.getStringAttr(name)));
}

/// Finds @train_step with a body of one block ending in func.return, or
/// emits an error at |module| naming |pass| (the pass that needs it) and
/// returns null.
inline mlir::func::FuncOp lookupTrainStep(mlir::ModuleOp module,
                                          llvm::StringRef pass) {
  auto train = module.lookupSymbol<mlir::func::FuncOp>(kTrainStep);
  if (!train || train.isExternal() || !train.getBody().hasOneBlock()) {
    module.emitError() << pass
                       << " expects a func.func @train_step with one block; "
                          "run --dlgraph-append-loss first";
    return nullptr;
  }
  return train;
}

/// Sets @train_step's results to |results| with the names |names| (same
/// length), updating its function type.
inline void setResults(mlir::func::FuncOp train,
                       llvm::ArrayRef<mlir::Value> results,
                       llvm::ArrayRef<mlir::DictionaryAttr> names) {
  auto ret =
      mlir::cast<mlir::func::ReturnOp>(train.getBody().front().getTerminator());
  ret.getOperandsMutable().assign(results);
  llvm::SmallVector<mlir::Type> argTypes(train.getArgumentTypes());
  train.setFunctionType(mlir::FunctionType::get(
      train.getContext(), argTypes, mlir::ValueRange(results).getTypes()));
  train.setAllResultAttrs(names);
}

} // namespace dlc::training

#endif // DLC_COMPILER_TRANSFORMS_TRAININGSTEPUTILS_H
