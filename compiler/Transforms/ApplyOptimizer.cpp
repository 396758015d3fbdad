//===- ApplyOptimizer.cpp - optimizer updates at the end of @train_step ---===//
#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/TrainingStepUtils.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

namespace dlc {
#define GEN_PASS_DEF_APPLYOPTIMIZERPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
using namespace dlc::graph;
using namespace dlc::training;

namespace {

struct ApplyOptimizerPass
    : public dlc::impl::ApplyOptimizerPassBase<ApplyOptimizerPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run();
  LogicalResult validateOptions(ModuleOp module);
};

LogicalResult ApplyOptimizerPass::validateOptions(ModuleOp module) {
  ArrayRef<StringLiteral> known = supportedOptimizers();
  if (!llvm::is_contained(known, optimizer))
    return module.emitError()
           << "unknown optimizer '" << optimizer << "'; expected "
           << llvm::join(known.drop_back(), ", ") << " or " << known.back();
  if (lr < 0)
    return module.emitError() << "lr must be >= 0, got " << lr;
  if (momentum < 0)
    return module.emitError() << "momentum must be >= 0, got " << momentum;
  if (beta1 < 0 || beta1 >= 1 || beta2 < 0 || beta2 >= 1)
    return module.emitError() << "beta1 and beta2 must be in [0, 1), got "
                              << beta1 << " and " << beta2;
  if (adamEpsilon < 0)
    return module.emitError()
           << "adam-epsilon must be >= 0, got " << adamEpsilon;
  return success();
}

/// A trainable parameter as @train_step's results name it.
struct Parameter {
  VariableOp var;
  Value grad;  ///< the result "<name>.grad"
  Value value; ///< the parameter's first read in @train_step
};

LogicalResult ApplyOptimizerPass::run() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = module.getContext();
  if (failed(validateOptions(module)))
    return failure();
  func::FuncOp train = lookupTrainStep(module, "--dlgraph-apply-optimizer");
  if (!train)
    return failure();
  Block &body = train.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());

  // The parameters: results 1.. are "<parameter>.grad" (from
  // --dlgraph-differentiate), in variable order.
  SmallVector<Parameter> params;
  for (unsigned i = 1; i < ret.getNumOperands(); ++i) {
    auto name = train.getResultAttrOfType<StringAttr>(i, kNameAttr);
    VariableOp var;
    if (name && name.getValue().ends_with(kGradSuffix))
      var = module.lookupSymbol<VariableOp>(
          name.getValue().drop_back(kGradSuffix.size()));
    if (!var)
      return train.emitError()
             << "--dlgraph-apply-optimizer expects result " << i
             << " of @train_step to be the gradient \"<parameter>.grad\" of "
                "a dlgraph.variable, got "
             << (name ? "'" + name.getValue().str() + "'"
                      : std::string("an unnamed result"));
    params.push_back({var, ret.getOperand(i), Value()});
  }
  if (params.empty())
    return train.emitError()
           << "--dlgraph-apply-optimizer expects @train_step to return the "
              "gradients of the trainable parameters after the loss; run "
              "--dlgraph-differentiate first";
  for (Parameter &p : params) {
    for (auto read : body.getOps<ReadVariableOp>()) {
      if (read.getVariable() == p.var.getSymName()) {
        p.value = read.getResult();
        break;
      }
    }
    if (!p.value)
      return train.emitError() << "@train_step returns a gradient for @\""
                               << p.var.getSymName() << "\" but never reads it";
  }

  // New zero-initialized optimizer-state variables, each after |after|.
  OpBuilder mb(ctx);
  Location loc = train.getLoc();
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

  // Step counter.
  OpBuilder b(ret);
  auto f32Scalar = RankedTensorType::get({}, Float32Type::get(ctx));
  auto stepVar = newVariable(params.back().var, "__step", f32Scalar);
  if (failed(stepVar))
    return failure();
  Value step = ReadVariableOp::create(b, loc, f32Scalar, "__step");
  step = AddOp::create(b, loc, f32Scalar, step, splat(b, loc, f32Scalar, 1.0));
  WriteVariableOp::create(b, loc, "__step", step);

  // Optimizer updates, torch.optim semantics (see GraphTrainingOps.td).
  double wd = resolveWeightDecay(optimizer, weightDecay);
  auto f32 = [&](double v) { return b.getF32FloatAttr(v); };
  for (Parameter &p : params) {
    StringRef name = p.var.getSymName();
    auto type = cast<RankedTensorType>(p.var.getType());
    Location ploc = p.var.getLoc();
    if (optimizer == "sgd") {
      auto buf = newVariable(p.var, (name + ".momentum_buffer").str(), type);
      if (failed(buf))
        return failure();
      Value bufValue = ReadVariableOp::create(b, ploc, type, buf->getSymName());
      auto upd =
          SGDUpdateOp::create(b, ploc, type, type, p.value, p.grad, bufValue,
                              step, f32(lr), f32(momentum), f32(wd));
      WriteVariableOp::create(b, ploc, name, upd.getNewParam());
      WriteVariableOp::create(b, ploc, buf->getSymName(),
                              upd.getNewMomentumBuffer());
      continue;
    }
    auto m = newVariable(p.var, (name + ".exp_avg").str(), type);
    if (failed(m))
      return failure();
    auto v = newVariable(*m, (name + ".exp_avg_sq").str(), type);
    if (failed(v))
      return failure();
    Value mValue = ReadVariableOp::create(b, ploc, type, m->getSymName());
    Value vValue = ReadVariableOp::create(b, ploc, type, v->getSymName());
    auto upd = AdamUpdateOp::create(
        b, ploc, type, type, type, p.value, p.grad, mValue, vValue, step,
        f32(lr), f32(beta1), f32(beta2), f32(adamEpsilon), f32(wd),
        optimizer == "adamw" ? b.getUnitAttr() : UnitAttr());
    WriteVariableOp::create(b, ploc, name, upd.getNewParam());
    WriteVariableOp::create(b, ploc, m->getSymName(), upd.getNewExpAvg());
    WriteVariableOp::create(b, ploc, v->getSymName(), upd.getNewExpAvgSq());
  }

  // Without expose-gradients only the loss stays a result.
  if (!exposeGradients)
    setResults(train, {ret.getOperand(0)}, {nameAttr(b, kLossName)});

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
