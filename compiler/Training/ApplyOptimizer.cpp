//===- ApplyOptimizer.cpp - optimizer updates at the end of @train_step ---===//
#include "compiler/Training/Passes.h"
#include "compiler/Training/TrainingStepUtils.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

#include <cmath>

namespace dlc {
#define GEN_PASS_DEF_APPLYOPTIMIZERPASS
#include "compiler/Training/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
using namespace dlc::graph;
using namespace dlc::training;

namespace {

struct ApplyOptimizerPass
    : PassWithOptions<dlc::impl::ApplyOptimizerPassBase<ApplyOptimizerPass>, TrainingOptions> {
  using PassWithOptions::PassWithOptions;

  void runOnOperation() override {
    if (failed(commitAndCheckOptions(getOperation())))
      return signalPassFailure();
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run();
};


/// The learning rate of the update whose incremented step counter is |t|
/// (rank-0 f32), for the schedule |kind| (see Passes.td; docs/dlc.md): f32
/// dlgraph ops, selects where the formula changes.
static Value buildLearningRate(OpBuilder &b, Location loc, StringRef kind,
                               Value t, double base, int64_t warmup,
                               int64_t total, double minLr, int64_t stepSize,
                               double gamma) {
  auto f32Scalar = cast<RankedTensorType>(t.getType());
  auto i1Scalar = RankedTensorType::get({}, b.getI1Type());
  auto c = [&](double v) { return splat(b, loc, f32Scalar, v); };
  auto add = [&](Value x, Value y) -> Value {
    return AddOp::create(b, loc, f32Scalar, x, y);
  };
  auto sub = [&](Value x, Value y) -> Value {
    return SubOp::create(b, loc, f32Scalar, x, y);
  };
  auto mul = [&](Value x, Value y) -> Value {
    return MulOp::create(b, loc, f32Scalar, x, y);
  };
  auto div = [&](Value x, Value y) -> Value {
    return DivOp::create(b, loc, f32Scalar, x, y);
  };
  auto select = [&](StringRef pred, Value x, Value y, Value ifTrue,
                    Value ifFalse) -> Value {
    Value cond = CompareOp::create(b, loc, i1Scalar, pred, x, y);
    return SelectOp::create(b, loc, f32Scalar, cond, ifTrue, ifFalse);
  };
  Value lr;
  if (kind == "constant") {
    lr = c(base);
  } else if (kind == "step") {
    Value k = FloorOp::create(b, loc, f32Scalar, div(t, c(double(stepSize))));
    lr = mul(c(base), PowOp::create(b, loc, f32Scalar, c(gamma), k));
  } else {
    // Decay from base at W to minLr at T, minLr after T. The denominator
    // is at least 1: with W == T no t takes this branch.
    Value span = c(double(std::max<int64_t>(total - warmup, 1)));
    Value shape;
    if (kind == "linear") {
      shape = div(sub(c(double(total)), t), span);
    } else {
      Value angle = mul(c(M_PI), div(sub(t, c(double(warmup))), span));
      shape = mul(c(0.5), add(c(1.0), CosOp::create(b, loc, f32Scalar, angle)));
    }
    Value decayed = add(c(minLr), mul(c(base - minLr), shape));
    lr = select("gt", t, c(double(total)), c(minLr), decayed);
  }
  if (warmup > 0)
    lr = select("le", t, c(double(warmup)),
                div(mul(c(base), t), c(double(warmup))), lr);
  return lr;
}

/// A trainable parameter as @train_step's results name it.
struct Parameter {
  VariableOp var;
  Value grad;  ///< the result "<name>.grad"
  Value value; ///< the parameter's first read in @train_step
};

/// The parameters: results 1.. of |train| are "<parameter>.grad" (from
/// --dlgraph-differentiate), in variable order.
static LogicalResult collectParameters(ModuleOp module, func::FuncOp train,
                                       SmallVectorImpl<Parameter> &params) {
  Block &body = train.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
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
  return success();
}

/// Marks the parameters whose names |noWeightDecay| (a POSIX extended
/// regex) matches with kNoWeightDecayAttr.
static LogicalResult markNoWeightDecay(ModuleOp module,
                                       MutableArrayRef<Parameter> params,
                                       StringRef noWeightDecay) {
  llvm::Regex re(noWeightDecay); // POSIX extended
  std::string error;
  if (!re.isValid(error))
    return module.emitError() << "--no-weight-decay '" << noWeightDecay
                              << "' is not a valid regex: " << error;
  bool any = false;
  for (Parameter &p : params)
    if (re.match(p.var.getSymName())) {
      p.var->setAttr(kNoWeightDecayAttr, UnitAttr::get(module.getContext()));
      any = true;
    }
  if (!any) {
    SmallVector<StringRef> names;
    for (Parameter &p : params)
      names.push_back(p.var.getSymName());
    return module.emitError() << "--no-weight-decay '" << noWeightDecay
                              << "' matches no trained parameter; they are: "
                              << llvm::join(names, ", ");
  }
  return success();
}

/// Multiplies each gradient of |params| by min(1, |maxNorm| / (norm +
/// 1e-6)); returns the global L2 norm of the gradients.
static Value clipGradients(OpBuilder &b, Location loc,
                           MutableArrayRef<Parameter> params, double maxNorm) {
  auto f32Scalar = RankedTensorType::get({}, b.getF32Type());
  Value sumSq;
  for (Parameter &p : params) {
    auto gt = cast<RankedTensorType>(p.grad.getType());
    Value sq = MulOp::create(b, loc, gt, p.grad, p.grad);
    SmallVector<int64_t> axes =
        llvm::to_vector(llvm::seq<int64_t>(0, gt.getRank()));
    Value s = gt.getRank() == 0
                  ? sq
                  : Value(ReduceSumOp::create(b, loc, f32Scalar, sq, axes,
                                              /*keepdims=*/false));
    sumSq = sumSq ? Value(AddOp::create(b, loc, f32Scalar, sumSq, s)) : s;
  }
  Value norm = SqrtOp::create(b, loc, f32Scalar, sumSq);
  Value coef = DivOp::create(
      b, loc, f32Scalar, splat(b, loc, f32Scalar, maxNorm),
      AddOp::create(b, loc, f32Scalar, norm, splat(b, loc, f32Scalar, 1e-6)));
  coef = MinOp::create(b, loc, f32Scalar, coef, splat(b, loc, f32Scalar, 1.0));
  for (Parameter &p : params)
    p.grad = MulOp::create(b, loc, p.grad.getType(), p.grad, coef);
  return norm;
}

LogicalResult ApplyOptimizerPass::run() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = module.getContext();
  func::FuncOp train = lookupTrainStep(module, "--dlgraph-apply-optimizer");
  if (!train)
    return failure();
  Block &body = train.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());

  SmallVector<Parameter> params;
  if (failed(collectParameters(module, train, params)))
    return failure();

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
  Value stepBefore = ReadVariableOp::create(b, loc, f32Scalar, "__step");
  Value step = AddOp::create(b, loc, f32Scalar, stepBefore,
                             splat(b, loc, f32Scalar, 1.0));

  // Gradient accumulation: a persistent count of calls; the optimizer
  // applies on every |accumulate|-th call (|apply|), and every write of the
  // optimizer keeps the old value on the other calls. The step counter (and
  // so the schedule) counts updates.
  Value apply;
  auto i1Scalar = RankedTensorType::get({}, b.getI1Type());
  if (accumulate > 1) {
    auto countVar = newVariable(*stepVar, kAccumulateCountVar, f32Scalar);
    if (failed(countVar))
      return failure();
    Value count = AddOp::create(
        b, loc, f32Scalar,
        ReadVariableOp::create(b, loc, f32Scalar, kAccumulateCountVar),
        splat(b, loc, f32Scalar, 1.0));
    apply = CompareOp::create(b, loc, i1Scalar, "ge", count,
                              splat(b, loc, f32Scalar, double(accumulate)));
    WriteVariableOp::create(
        b, loc, kAccumulateCountVar,
        SelectOp::create(b, loc, f32Scalar, apply,
                         splat(b, loc, f32Scalar, 0.0), count));
  }
  // Writes |value| to |name|, or with accumulation |value| on applying calls
  // and |before| on the others.
  auto writeUpdate = [&](Location l, StringRef name, Value value,
                         Value before) {
    if (apply)
      value = SelectOp::create(b, l, value.getType(), apply, value, before);
    WriteVariableOp::create(b, l, name, value);
  };
  writeUpdate(loc, "__step", step, stepBefore);

  // Parameter groups: no weight decay for the names |noWeightDecay| matches.
  if (!noWeightDecay.empty() &&
      failed(markNoWeightDecay(module, params, noWeightDecay)))
    return failure();

  // The learning rate of this update: a constant, or the schedule of the
  // incremented counter.
  SmallVector<Value> extraResults;
  SmallVector<DictionaryAttr> extraNames;
  Value lrValue;
  if (lrSchedule.empty()) {
    lrValue = splat(b, loc, f32Scalar, lr);
  } else {
    lrValue = buildLearningRate(b, loc, lrSchedule, step, lr, warmupSteps,
                                totalSteps, minLr, stepSize, gamma);
    extraResults.push_back(lrValue);
    extraNames.push_back(nameAttr(b, kLrName));
  }

  // Accumulation: each gradient is added to its persistent accumulator
  // (zeroed on applying calls); the updates read the mean over the calls,
  // the gradient of the mean loss over the N micro-batches.
  if (accumulate > 1) {
    for (Parameter &p : params) {
      auto type = cast<RankedTensorType>(p.var.getType());
      std::string accName = (p.var.getSymName() + kAccumulatorSuffix).str();
      auto acc = newVariable(p.var, accName, type);
      if (failed(acc))
        return failure();
      Location ploc = p.var.getLoc();
      Value sum = AddOp::create(
          b, ploc, type, ReadVariableOp::create(b, ploc, type, accName),
          p.grad);
      WriteVariableOp::create(
          b, ploc, accName,
          SelectOp::create(b, ploc, type, apply, splat(b, ploc, type, 0.0),
                           sum));
      p.grad = MulOp::create(b, ploc, type, sum,
                             splat(b, ploc, f32Scalar, 1.0 / accumulate));
    }
  }

  // Gradient clipping (torch.nn.utils.clip_grad_norm_): the global L2 norm
  // of every trained gradient, and each gradient times
  // min(1, max / (norm + 1e-6)).
  if (clipGradNorm > 0) {
    extraResults.push_back(clipGradients(b, loc, params, clipGradNorm));
    extraNames.push_back(nameAttr(b, kGradNormName));
  }

  // Optimizer updates, torch.optim semantics (see GraphTrainingOps.td).
  double baseWd = resolveWeightDecay(optimizer, weightDecay);
  auto f32 = [&](double v) { return b.getF32FloatAttr(v); };
  for (Parameter &p : params) {
    StringRef name = p.var.getSymName();
    auto type = cast<RankedTensorType>(p.var.getType());
    Location ploc = p.var.getLoc();
    double wd = p.var->hasAttr(kNoWeightDecayAttr) ? 0.0 : baseWd;
    if (optimizer == "sgd") {
      auto buf = newVariable(p.var, (name + ".momentum_buffer").str(), type);
      if (failed(buf))
        return failure();
      Value bufValue = ReadVariableOp::create(b, ploc, type, buf->getSymName());
      auto upd =
          SGDUpdateOp::create(b, ploc, type, type, p.value, p.grad, bufValue,
                              step, lrValue, f32(momentum), f32(wd));
      writeUpdate(ploc, name, upd.getNewParam(), p.value);
      writeUpdate(ploc, buf->getSymName(), upd.getNewMomentumBuffer(),
                  bufValue);
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
        lrValue, f32(beta1), f32(beta2), f32(adamEpsilon), f32(wd),
        optimizer == "adamw" ? b.getUnitAttr() : UnitAttr());
    writeUpdate(ploc, name, upd.getNewParam(), p.value);
    writeUpdate(ploc, m->getSymName(), upd.getNewExpAvg(), mValue);
    writeUpdate(ploc, v->getSymName(), upd.getNewExpAvgSq(), vValue);
  }

  // The loss, "lr" and "grad_norm" when there are, and with
  // expose-gradients the gradients the updates read.
  SmallVector<Value> results = {ret.getOperand(0)};
  SmallVector<DictionaryAttr> names = {nameAttr(b, kLossName)};
  results.append(extraResults);
  names.append(extraNames);
  if (exposeGradients)
    for (Parameter &p : params) {
      results.push_back(p.grad);
      names.push_back(
          nameAttr(b, (p.var.getSymName() + kGradSuffix).str()));
    }
  setResults(train, results, names);

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

std::unique_ptr<mlir::Pass> dlc::createApplyOptimizerPass(const TrainingOptions &options) {
  return std::make_unique<ApplyOptimizerPass>(options);
}
