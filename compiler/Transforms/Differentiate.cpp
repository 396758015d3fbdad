//===- Differentiate.cpp - gradients of @train_step's loss ----------------===//
#include "compiler/Transforms/Autodiff.h"
#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/TrainingStepUtils.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Regex.h"

namespace dlc {
#define GEN_PASS_DEF_DIFFERENTIATEPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
using namespace dlc::graph;
using namespace dlc::training;

namespace {

struct DifferentiatePass
    : public dlc::impl::DifferentiatePassBase<DifferentiatePass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run();
};

LogicalResult DifferentiatePass::run() {
  ModuleOp module = getOperation();
  func::FuncOp train = lookupTrainStep(module, "--dlgraph-differentiate");
  if (!train)
    return failure();
  Block &body = train.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  auto f32Scalar = RankedTensorType::get({}, Float32Type::get(&getContext()));
  if (ret.getNumOperands() != 1)
    return train.emitError()
           << "--dlgraph-differentiate expects @train_step to return only "
              "the loss; it returns "
           << ret.getNumOperands() << " values";
  if (ret.getOperand(0).getType() != f32Scalar)
    return train.emitError() << "--dlgraph-differentiate expects a loss of "
                                "type tensor<f32>, got "
                             << ret.getOperand(0).getType();
  Value lossValue = ret.getOperand(0);

  // Frozen variables (--freeze): marked, and not sources.
  llvm::StringSet<> frozen;
  if (!freeze.empty()) {
    llvm::Regex re(freeze); // POSIX extended
    std::string error;
    if (!re.isValid(error))
      return module.emitError()
             << "--freeze '" << freeze << "' is not a valid regex: " << error;
    bool any = false;
    SmallVector<StringRef> names;
    for (VariableOp var : module.getOps<VariableOp>()) {
      names.push_back(var.getSymName());
      if (re.match(var.getSymName())) {
        var->setAttr(kFrozenAttr, UnitAttr::get(&getContext()));
        frozen.insert(var.getSymName());
        any = true;
      }
    }
    if (!any)
      return module.emitError()
             << "--freeze '" << freeze
             << "' matches no initializer; they are: "
             << (names.empty() ? std::string("none") : llvm::join(names, ", "));
  }

  // Reverse-mode differentiation from the loss; every f32 read of a
  // variable that is not frozen is a source.
  SmallVector<Operation *> ops;
  SmallVector<Value> sources;
  for (Operation &op : body.without_terminator()) {
    ops.push_back(&op);
    if (auto read = dyn_cast<ReadVariableOp>(op))
      if (isa<Float32Type>(read.getType().getElementType()) &&
          !frozen.contains(read.getVariable()))
        sources.push_back(read.getResult());
  }
  llvm::DenseSet<Value> active = computeActiveValues(ops, sources);
  OpBuilder b(ret);
  Location loc = train.getLoc();
  Value seed;
  {
    StageTagger tag(b, stageOf(lossValue), /*backward=*/true);
    seed = splat(b, loc, f32Scalar, 1.0);
  }
  auto grads = computeGradients(b, ops, active, lossValue, seed);
  if (failed(grads))
    return failure();

  // Sum the gradients of every read of each variable; those are trainable.
  llvm::StringMap<Value> paramGrads;
  for (Value src : sources) {
    Value g = grads->lookup(src);
    if (!g)
      continue;
    StringRef name = src.getDefiningOp<ReadVariableOp>().getVariable();
    Value &acc = paramGrads[name];
    StageTagger tag(b, stageOf(g), /*backward=*/true);
    acc = acc ? AddOp::create(b, loc, g.getType(), acc, g).getResult() : g;
  }
  SmallVector<Value> results = {lossValue};
  SmallVector<DictionaryAttr> names = {nameAttr(b, kLossName)};
  for (VariableOp var : module.getOps<VariableOp>()) {
    Value grad = paramGrads.lookup(var.getSymName());
    if (!grad)
      continue;
    var.setTrainable(true);
    results.push_back(grad);
    names.push_back(nameAttr(b, (var.getSymName() + kGradSuffix).str()));
  }
  if (results.size() == 1)
    return module.emitError()
           << "no trainable parameters: the loss does not depend on any f32 "
              "dlgraph.variable"
           << (freeze.empty() ? "" : " that --freeze leaves trainable")
           << " through differentiable ops";
  setResults(train, results, names);
  return success();
}

} // namespace
