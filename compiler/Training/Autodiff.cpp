//===- Autodiff.cpp - the reverse sweep over dlgraph ----------------------===//
//
// Reverse-mode automatic differentiation of straight-line dlgraph code: each
// op gives its vector-Jacobian product through DifferentiableOpInterface
// (the rules are external models, one file per op family, in
// compiler/Training/Gradients/); this file finds the active values and
// visits the ops backwards, accumulating gradients.
//
//===----------------------------------------------------------------------===//
#include "compiler/Training/Autodiff.h"

#include "compiler/Training/Gradients/GradientUtils.h"
#include "compiler/Training/TrainingStepUtils.h"
#include "dialects/Graph/DifferentiableOpInterface.h"
#include "dialects/Graph/GraphOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace dlc;
using namespace dlc::graph;
using namespace dlc::gradients;

//===----------------------------------------------------------------------===//
// Activity analysis and the reverse sweep
//===----------------------------------------------------------------------===//

llvm::DenseSet<Value> dlc::computeActiveValues(ArrayRef<Operation *> ops,
                                               ArrayRef<Value> sources) {
  llvm::DenseSet<Value> active(sources.begin(), sources.end());
  for (Operation *op : ops) {
    if (!llvm::any_of(op->getOperands(),
                      [&](Value v) { return active.contains(v); }))
      continue;
    for (Value r : op->getResults())
      if (isFloatTensor(r))
        active.insert(r);
  }
  return active;
}

FailureOr<llvm::DenseMap<Value, Value>>
dlc::computeGradients(OpBuilder &b, ArrayRef<Operation *> ops,
                      const llvm::DenseSet<Value> &active, Value loss,
                      Value seed) {
  llvm::DenseMap<Value, Value> grads;
  grads[loss] = seed;
  auto accumulate = [&](Value v, Value g, Operation *at) -> LogicalResult {
    if (g.getType() != v.getType())
      return at->emitError()
             << "internal error: gradient of type " << g.getType()
             << " for a value of type " << v.getType();
    auto it = grads.find(v);
    if (it == grads.end()) {
      grads[v] = g;
      return success();
    }
    // The sum belongs to the stage that defines |v| (pipeline stages).
    training::StageTagger tag(b, training::stageOf(v), /*backward=*/true);
    it->second = AddOp::create(b, at->getLoc(), v.getType(), it->second, g);
    return success();
  };
  for (Operation *op : llvm::reverse(ops)) {
    if (!llvm::any_of(op->getResults(),
                      [&](Value r) { return grads.count(r); }))
      continue;
    if (!llvm::any_of(op->getOperands(),
                      [&](Value v) { return active.contains(v); }))
      continue;
    // What the rule builds runs in |op|'s pipeline stage, in the backward.
    training::StageTagger tag(b, op->getAttr(training::kStageAttr),
                              /*backward=*/true);
    auto rule = dyn_cast<DifferentiableOpInterface>(op);
    if (!rule)
      return op->emitError()
             << "no gradient rule for '" << op->getName()
             << "', which is on a path from a trainable parameter to the loss";
    SmallVector<Value> dys;
    for (Value r : op->getResults()) {
      Value g = grads.lookup(r);
      if (!g) {
        auto rt = dyn_cast<RankedTensorType>(r.getType());
        if (rt && isa<IntegerType>(rt.getElementType())) {
          // An integer result (dropout's i1 mask) of an op with a float
          // result: rules ignore its (zero) gradient.
          auto zero = DenseElementsAttr::get(
              rt, b.getIntegerAttr(rt.getElementType(), 0));
          dys.push_back(ConstantOp::create(b, op->getLoc(), rt,
                                           cast<ElementsAttr>(zero)));
          continue;
        }
        if (!isFloatTensor(r))
          return op->emitError() << "no gradient for non-float result of '"
                                 << op->getName() << "'";
        g = splat(b, op->getLoc(), tensorType(r), 0.0);
      }
      dys.push_back(g);
    }
    SmallVector<Value> dxs(op->getNumOperands());
    if (failed(rule.buildGradients(b, dys, dxs)))
      return failure();
    for (auto [operand, g] : llvm::zip(op->getOperands(), dxs))
      if (g && active.contains(operand))
        if (failed(accumulate(operand, g, op)))
          return failure();
  }
  return grads;
}
