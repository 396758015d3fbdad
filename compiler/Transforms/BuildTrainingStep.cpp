//===- BuildTrainingStep.cpp - @train_step: forward, loss, backward, update ===//
#include "compiler/Transforms/Autodiff.h"
#include "compiler/Transforms/Passes.h"

#include "dialects/Graph/GraphOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringSet.h"

namespace dlc {
#define GEN_PASS_DEF_BUILDTRAININGSTEPPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
using namespace dlc::graph;

namespace {

constexpr StringLiteral kNameAttr = "dlgraph.name";
constexpr StringLiteral kOptimizerStateAttr = "dlgraph.optimizer_state";

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

Value splat(OpBuilder &b, Location loc, RankedTensorType type, double v) {
  auto attr =
      DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), v));
  return ConstantOp::create(b, loc, type, cast<ElementsAttr>(attr));
}

/// Replaces |bn| (inference batch norm) with training-mode batch
/// normalization built from primitive ops, and writes the PyTorch train-mode
/// running statistics: running' = m * running + (1 - m) * batch (the
/// variance unbiased by n / (n - 1), n = elements per channel).
LogicalResult decomposeBatchNorm(OpBuilder &b, BatchNormOp bn) {
  auto meanRead = bn.getMean().getDefiningOp<ReadVariableOp>();
  auto varRead = bn.getVariance().getDefiningOp<ReadVariableOp>();
  if (!meanRead || !varRead)
    return bn.emitOpError()
           << "running mean and variance must come from "
              "dlgraph.read_variable so that training can update them";
  Location loc = bn.getLoc();
  auto xt = tensorType(bn.getInput());
  if (!isa<Float32Type>(xt.getElementType()))
    return bn.emitOpError() << "training supports f32 batch normalization "
                               "only, got "
                            << xt.getElementType();
  int64_t rank = xt.getRank(), channels = xt.getDimSize(1);
  int64_t n = xt.getNumElements() / channels;
  if (n < 2)
    return bn.emitOpError() << "training needs more than 1 value per channel "
                               "to compute batch statistics, got "
                            << n;
  SmallVector<int64_t> axes, kdShape;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != 1)
      axes.push_back(i);
    kdShape.push_back(i == 1 ? channels : 1);
  }
  auto kt = RankedTensorType::get(kdShape, xt.getElementType());
  auto ct = RankedTensorType::get({channels}, xt.getElementType());

  b.setInsertionPoint(bn);
  Value x = bn.getInput();
  Value mean = ReduceMeanOp::create(b, loc, kt, x, axes, /*keepdims=*/true);
  Value xc = SubOp::create(b, loc, xt, x, mean);
  Value sq = MulOp::create(b, loc, xt, xc, xc);
  Value var = ReduceMeanOp::create(b, loc, kt, sq, axes, /*keepdims=*/true);
  Value eps =
      splat(b, loc, kt, APFloat(bn.getEpsilon()).convertToDouble());
  Value inv = RsqrtOp::create(b, loc, kt, AddOp::create(b, loc, kt, var, eps));
  Value xhat = MulOp::create(b, loc, xt, xc, inv);
  Value scale = ReshapeOp::create(b, loc, kt, bn.getScale());
  Value bias = ReshapeOp::create(b, loc, kt, bn.getBias());
  Value y = AddOp::create(b, loc, xt, MulOp::create(b, loc, xt, xhat, scale),
                          bias);

  double m = APFloat(bn.getMomentum()).convertToDouble();
  Value batchMean = ReshapeOp::create(b, loc, ct, mean);
  Value batchVar = ReshapeOp::create(b, loc, ct, var);
  auto update = [&](Value running, Value batch, double batchFactor) {
    Value keep = MulOp::create(b, loc, ct, running, splat(b, loc, ct, m));
    Value add =
        MulOp::create(b, loc, ct, batch, splat(b, loc, ct, batchFactor));
    return AddOp::create(b, loc, ct, keep, add).getResult();
  };
  Value newMean = update(bn.getMean(), batchMean, 1.0 - m);
  Value newVar =
      update(bn.getVariance(), batchVar, (1.0 - m) * n / double(n - 1));
  WriteVariableOp::create(b, loc, meanRead.getVariableAttr(), newMean);
  WriteVariableOp::create(b, loc, varRead.getVariableAttr(), newVar);
  bn.replaceAllUsesWith(y);
  bn.erase();
  return success();
}

struct BuildTrainingStepPass
    : public dlc::impl::BuildTrainingStepPassBase<BuildTrainingStepPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run();
  LogicalResult validateOptions(ModuleOp module);
};

LogicalResult BuildTrainingStepPass::validateOptions(ModuleOp module) {
  if (optimizer != "sgd" && optimizer != "adam" && optimizer != "adamw")
    return module.emitError() << "unknown optimizer '" << optimizer
                              << "'; expected sgd, adam or adamw";
  if (lossOutput.empty() && loss != "softmax-cross-entropy")
    return module.emitError() << "unknown loss '" << loss
                              << "'; expected softmax-cross-entropy (or set "
                                 "loss-output to a scalar model output)";
  if (lr < 0)
    return module.emitError() << "lr must be >= 0, got " << lr;
  if (momentum < 0)
    return module.emitError() << "momentum must be >= 0, got " << momentum;
  if (beta1 < 0 || beta1 >= 1 || beta2 < 0 || beta2 >= 1)
    return module.emitError() << "beta1 and beta2 must be in [0, 1), got "
                              << beta1 << " and " << beta2;
  if (epsilon < 0)
    return module.emitError() << "epsilon must be >= 0, got " << epsilon;
  return success();
}

LogicalResult BuildTrainingStepPass::run() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = module.getContext();
  if (failed(validateOptions(module)))
    return failure();
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || main.isExternal())
    return module.emitError()
           << "training expects a func.func @main with a body";
  for (StringRef taken : {"forward", "train_step", "__step"})
    if (module.lookupSymbol(taken))
      return module.emitError() << "symbol @" << taken
                                << " already exists; was training already "
                                   "built for this module?";
  if (!main.getBody().hasOneBlock())
    return main.emitError() << "training expects @main to have one block";
  auto mainRet = cast<func::ReturnOp>(main.getBody().front().getTerminator());

  // Find the loss (checks done before anything is changed).
  auto f32Scalar = RankedTensorType::get({}, Float32Type::get(ctx));
  int lossIndex = -1;
  RankedTensorType labelsType;
  if (!lossOutput.empty()) {
    std::string names;
    for (unsigned i = 0; i < main.getNumResults(); ++i) {
      auto name = main.getResultAttrOfType<StringAttr>(i, kNameAttr);
      if (!name)
        continue;
      if (name.getValue() == lossOutput)
        lossIndex = i;
      names += (names.empty() ? "'" : ", '") + name.getValue().str() + "'";
    }
    if (lossIndex < 0)
      return main.emitError() << "loss-output '" << lossOutput
                              << "' is not an output of @main (outputs: "
                              << (names.empty() ? "none" : names) << ")";
    Type t = mainRet.getOperand(lossIndex).getType();
    if (t != f32Scalar)
      return main.emitError() << "loss-output '" << lossOutput
                              << "' must be a scalar tensor<f32>, got " << t;
  } else {
    if (main.getNumResults() == 0)
      return main.emitError() << "@main has no outputs to apply the loss to";
    auto logits = dyn_cast<RankedTensorType>(mainRet.getOperand(0).getType());
    if (!logits || logits.getRank() == 0)
      return main.emitError()
             << "the first output has rank 0; softmax-cross-entropy needs "
                "logits of rank >= 1 with the classes on the last axis";
    if (!isa<FloatType>(logits.getElementType()))
      return main.emitError() << "the first output has element type "
                              << logits.getElementType()
                              << "; softmax-cross-entropy needs floats";
    for (unsigned i = 0; i < main.getNumArguments(); ++i)
      if (auto name = main.getArgAttrOfType<StringAttr>(i, kNameAttr))
        if (name.getValue() == "labels")
          return main.emitError()
                 << "@main already has an input named 'labels', the name of "
                    "the labels input that training adds";
    labelsType = RankedTensorType::get(logits.getShape().drop_back(),
                                       IntegerType::get(ctx, 64));
  }

  // @train_step: a copy of @main; @main becomes @forward.
  OpBuilder mb(ctx);
  mb.setInsertionPointAfter(main);
  auto train = cast<func::FuncOp>(mb.clone(*main.getOperation()));
  main.setSymName("forward");
  train.setSymName("train_step");
  Block &body = train.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Location loc = train.getLoc();
  OpBuilder b(ctx);

  // Training-mode batch normalization, before differentiation.
  SmallVector<BatchNormOp> bns(body.getOps<BatchNormOp>());
  llvm::StringSet<> runningStats;
  for (BatchNormOp bn : bns) {
    // Each running statistic is written once per step; two batch_norm ops
    // sharing one would need sequential updates.
    for (Value stat : {bn.getMean(), bn.getVariance()})
      if (auto read = stat.getDefiningOp<ReadVariableOp>())
        if (!runningStats.insert(read.getVariable()).second)
          return bn.emitOpError()
                 << "running statistic @\"" << read.getVariable()
                 << "\" is shared with another batch_norm; training needs "
                    "one variable per batch_norm";
    if (failed(decomposeBatchNorm(b, bn)))
      return failure();
  }

  // The loss.
  b.setInsertionPoint(ret);
  Value lossValue;
  if (lossIndex >= 0) {
    lossValue = ret.getOperand(lossIndex);
  } else {
    auto nameAttr = b.getDictionaryAttr(
        b.getNamedAttr(kNameAttr, b.getStringAttr("labels")));
    if (failed(train.insertArgument(train.getNumArguments(), labelsType,
                                    nameAttr, loc)))
      return train.emitError() << "cannot add the labels argument";
    Value labels = body.getArguments().back();
    lossValue = SoftmaxCrossEntropyOp::create(b, ret.getLoc(), f32Scalar,
                                              ret.getOperand(0), labels);
  }

  // Reverse-mode differentiation from the loss.
  SmallVector<Operation *> ops;
  SmallVector<Value> sources;
  for (Operation &op : body.without_terminator()) {
    ops.push_back(&op);
    if (auto read = dyn_cast<ReadVariableOp>(op))
      if (isa<Float32Type>(read.getType().getElementType()))
        sources.push_back(read.getResult());
  }
  llvm::DenseSet<Value> active = computeActiveValues(ops, sources);
  Value seed = splat(b, loc, cast<RankedTensorType>(lossValue.getType()), 1.0);
  auto grads = computeGradients(b, ops, active, lossValue, seed);
  if (failed(grads))
    return failure();

  // Sum the gradients of every read of each variable; those are trainable.
  llvm::StringMap<Value> paramGrads, paramValues;
  for (Value src : sources) {
    Value g = grads->lookup(src);
    if (!g)
      continue;
    StringRef name = src.getDefiningOp<ReadVariableOp>().getVariable();
    paramValues.try_emplace(name, src);
    Value &acc = paramGrads[name];
    acc = acc ? AddOp::create(b, loc, g.getType(), acc, g).getResult() : g;
  }
  SmallVector<VariableOp> params;
  for (VariableOp var : module.getOps<VariableOp>())
    if (paramGrads.count(var.getSymName()))
      params.push_back(var);
  if (params.empty())
    return module.emitError()
           << "no trainable parameters: the loss does not depend on any f32 "
              "dlgraph.variable through differentiable ops";

  // Step counter.
  auto newVariable = [&](Operation *after, StringRef name,
                         RankedTensorType type) -> FailureOr<VariableOp> {
    if (module.lookupSymbol(name))
      return module.emitError() << "cannot create optimizer state @\"" << name
                                << "\": the symbol already exists";
    mb.setInsertionPointAfter(after);
    auto var = VariableOp::create(mb, loc, mb.getStringAttr(name),
                                  TypeAttr::get(type), ElementsAttr());
    var->setAttr(kOptimizerStateAttr, mb.getUnitAttr());
    return var;
  };
  auto stepVar = newVariable(params.back(), "__step", f32Scalar);
  if (failed(stepVar))
    return failure();
  Value step = ReadVariableOp::create(b, loc, f32Scalar, "__step");
  step = AddOp::create(b, loc, f32Scalar, step, splat(b, loc, f32Scalar, 1.0));
  WriteVariableOp::create(b, loc, "__step", step);

  // Optimizer updates, torch.optim semantics (see GraphTrainingOps.td).
  double wd = weightDecay < 0 ? (optimizer == "adamw" ? 0.01 : 0.0)
                              : double(weightDecay);
  auto f32 = [&](double v) { return b.getF32FloatAttr(v); };
  for (VariableOp var : params) {
    var.setTrainable(true);
    StringRef name = var.getSymName();
    auto type = cast<RankedTensorType>(var.getType());
    Value grad = paramGrads[name];
    Location ploc = var.getLoc();
    Value param = paramValues[name]; // the forward pass's read
    if (optimizer == "sgd") {
      auto buf = newVariable(var, (name + ".momentum_buffer").str(), type);
      if (failed(buf))
        return failure();
      Value bufValue =
          ReadVariableOp::create(b, ploc, type, buf->getSymName());
      auto upd = SGDUpdateOp::create(b, ploc, type, type, param, grad,
                                     bufValue, step, f32(lr), f32(momentum),
                                     f32(wd));
      WriteVariableOp::create(b, ploc, name, upd.getNewParam());
      WriteVariableOp::create(b, ploc, buf->getSymName(),
                              upd.getNewMomentumBuffer());
      continue;
    }
    auto m = newVariable(var, (name + ".exp_avg").str(), type);
    if (failed(m))
      return failure();
    auto v = newVariable(*m, (name + ".exp_avg_sq").str(), type);
    if (failed(v))
      return failure();
    Value mValue = ReadVariableOp::create(b, ploc, type, m->getSymName());
    Value vValue = ReadVariableOp::create(b, ploc, type, v->getSymName());
    auto upd = AdamUpdateOp::create(
        b, ploc, type, type, type, param, grad, mValue, vValue, step, f32(lr),
        f32(beta1), f32(beta2), f32(epsilon), f32(wd),
        optimizer == "adamw" ? b.getUnitAttr() : UnitAttr());
    WriteVariableOp::create(b, ploc, name, upd.getNewParam());
    WriteVariableOp::create(b, ploc, m->getSymName(), upd.getNewExpAvg());
    WriteVariableOp::create(b, ploc, v->getSymName(), upd.getNewExpAvgSq());
  }

  // Return the loss, and with expose-gradients each parameter's gradient
  // (the value its optimizer update reads) as "<parameter>.grad".
  SmallVector<Value> results = {lossValue};
  SmallVector<DictionaryAttr> resultAttrs = {b.getDictionaryAttr(
      b.getNamedAttr(kNameAttr, b.getStringAttr("loss")))};
  if (exposeGradients) {
    for (VariableOp var : params) {
      results.push_back(paramGrads[var.getSymName()]);
      resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          kNameAttr, b.getStringAttr(var.getSymName() + ".grad"))));
    }
  }
  ret.getOperandsMutable().assign(results);
  SmallVector<Type> argTypes(train.getArgumentTypes());
  train.setFunctionType(
      FunctionType::get(ctx, argTypes, ValueRange(results).getTypes()));
  train.setAllResultAttrs(resultAttrs);

  // Drop what the step does not need (other outputs, unused gradients).
  SmallVector<Operation *> all;
  for (Operation &op : body.without_terminator())
    all.push_back(&op);
  for (Operation *op : llvm::reverse(all))
    if (op->use_empty() && (isPure(op) || isa<ReadVariableOp>(op)))
      op->erase();
  return success();
}

} // namespace
