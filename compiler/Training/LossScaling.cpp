//===- LossScaling.cpp - in-graph dynamic loss scaling --------------------===//
//
// torch.cuda.amp.GradScaler's algorithm (Micikevicius et al. 2018, "Mixed
// Precision Training", section 3.2; PyTorch's _amp_update_scale_) as dlgraph
// ops inside @train_step: the backward seed becomes the loss scale, the
// gradients the optimizer updates read are unscaled in f32, one finiteness
// check over all of them decides whether the step's writes take effect, and
// the scale and its growth tracker are persistent variables updated by the
// step itself. See Passes.td for the contract and docs/loss-scaling.md.
//
//===----------------------------------------------------------------------===//
#include "compiler/Training/Passes.h"
#include "compiler/Training/TrainingStepUtils.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Sequence.h"

#include <cfloat>
#include <cmath>

namespace dlc {
#define GEN_PASS_DEF_LOSSSCALINGPASS
#include "compiler/Training/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
using namespace dlc::graph;
using namespace dlc::training;

namespace {

constexpr StringLiteral kPass = "--dlgraph-loss-scaling";
constexpr StringLiteral kScaleVar = "__loss_scale";
constexpr StringLiteral kTrackerVar = "__loss_scale_growth_tracker";
constexpr StringLiteral kScaleResult = "loss_scale";
constexpr StringLiteral kSkippedResult = "skipped";

/// The gradient operand of an optimizer update, or null for other ops.
/// (dlgraph has no optimizer-update interface; these are the updates
/// --dlgraph-apply-optimizer builds.)
OpOperand *updateGradient(Operation *op) {
  if (auto sgd = dyn_cast<SGDUpdateOp>(op))
    return &sgd.getGradMutable();
  if (auto adam = dyn_cast<AdamUpdateOp>(op))
    return &adam.getGradMutable();
  return nullptr;
}

/// What |v| widens: the f16/bf16 input of a `dlgraph.cast` to f32 (mixed
/// precision hands each update a per-use widening of a low-precision
/// gradient), else |v| itself.
Value widenedSource(Value v) {
  if (auto c = v.getDefiningOp<CastOp>()) {
    Type from = c.getInput().getType().getElementType();
    if ((from.isF16() || from.isBF16()) && c.getType().getElementType().isF32())
      return c.getInput();
  }
  return v;
}

/// |source| as the f32 tensor |type|: |source| itself, or a new widening
/// cast (one per reader, so that each fuses into its reader's kernel).
Value asF32(OpBuilder &b, Value source, RankedTensorType type) {
  if (source.getType() == type)
    return source;
  return CastOp::create(b, source.getLoc(), type, source);
}

/// Whether |op| is a rank-0 floating-point `dlgraph.constant` equal to 1.
bool isScalarOne(Operation *op) {
  auto c = dyn_cast<ConstantOp>(op);
  if (!c)
    return false;
  auto type = dyn_cast<RankedTensorType>(c.getType());
  if (!type || type.getRank() != 0 || !isa<FloatType>(type.getElementType()))
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  return dense && dense.isSplat() &&
         dense.getSplatValue<APFloat>().convertToDouble() == 1.0;
}

/// The ops of |block| that |roots| depend on (roots included).
llvm::DenseSet<Operation *> backwardClosure(Block &block,
                                            ArrayRef<Value> roots) {
  llvm::DenseSet<Operation *> seen;
  SmallVector<Operation *> work;
  for (Value v : roots)
    if (Operation *def = v.getDefiningOp())
      if (def->getBlock() == &block && seen.insert(def).second)
        work.push_back(def);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp())
        if (def->getBlock() == &block && seen.insert(def).second)
          work.push_back(def);
  }
  return seen;
}

struct LossScalingPass
    : PassWithOptions<dlc::impl::LossScalingPassBase<LossScalingPass>, PrecisionOptions> {
  using PassWithOptions::PassWithOptions;

  void runOnOperation() override {
    if (failed(commitAndCheckOptions(getOperation())))
      return signalPassFailure();
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run();
  /// The scale the options ask for (PrecisionOptions::check() has accepted
  /// them): dynamic from `loss-scale-init`, or the static `loss-scale`.
  void resolveScale();
  /// The dynamic scale's update at |b|: on overflow (|foundInf|) the scale
  /// backs off and the tracker restarts, else the tracker counts the step
  /// and the scale grows every growth-interval steps.
  void updateScale(OpBuilder &b, Location loc, Value foundInf, Value scale,
                   Value tracker, Value one, Value zero);

  // What resolveScale() reads from the options.
  bool dynamic = true;
  double initScale = 0;
};

void LossScalingPass::resolveScale() {
  dynamic = lossScale.empty() || lossScale == "dynamic";
  initScale = lossScaleInit;
  if (!dynamic)
    (void)llvm::StringRef(lossScale).getAsDouble(initScale); // check()ed
}

/// Guards every write of |body|: on overflow (|foundInf|) each variable
/// keeps its value from before the step. Writes take effect at the end of
/// the step wherever they stand, so one that comes before found_inf (the
/// step counter, BatchNorm's running statistics) moves to the end; the
/// optimizer's stay where they are, so that each new value dies at its
/// guard instead of living to the end of the step.
static void guardWrites(Block &body, func::ReturnOp ret, Value foundInf,
                        OpBuilder &b) {
  SmallVector<WriteVariableOp> writes(body.getOps<WriteVariableOp>());
  llvm::StringMap<Value> before;
  for (auto read : body.getOps<ReadVariableOp>())
    before.try_emplace(read.getVariable(), read.getResult());
  Operation *foundInfOp = foundInf.getDefiningOp();
  for (WriteVariableOp w : writes) {
    if (!foundInfOp->isBeforeInBlock(w))
      w->moveBefore(ret);
    b.setInsertionPoint(w);
    Value &old = before[w.getVariable()];
    if (!old) {
      OpBuilder top = OpBuilder::atBlockBegin(&body);
      old = ReadVariableOp::create(top, w.getLoc(), w.getValue().getType(),
                                   w.getVariable());
    }
    Value kept = SelectOp::create(b, w.getLoc(), w.getValue().getType(),
                                  foundInf, old, w.getValue());
    w.getValueMutable().assign(kept);
  }
}

void LossScalingPass::updateScale(OpBuilder &b, Location loc, Value foundInf,
                                  Value scale, Value tracker, Value one,
                                  Value zero) {
  auto f32Scalar = RankedTensorType::get({}, b.getF32Type());
  auto i1Scalar = RankedTensorType::get({}, b.getI1Type());
  auto constant = [&](double v) { return splat(b, loc, f32Scalar, v); };
  Value next = AddOp::create(b, loc, f32Scalar, tracker, one);
  Value reached = CompareOp::create(b, loc, i1Scalar, "ge", next,
                                    constant(double(lossScaleGrowthInterval)));
  Value grown = MulOp::create(b, loc, f32Scalar, scale, constant(lossScaleGrowthFactor));
  Value grownFinite =
      CompareOp::create(b, loc, i1Scalar, "le", grown, constant(FLT_MAX));
  Value maybeGrown =
      SelectOp::create(b, loc, f32Scalar, grownFinite, grown, scale);
  Value finiteScale =
      SelectOp::create(b, loc, f32Scalar, reached, maybeGrown, scale);
  Value finiteTracker =
      SelectOp::create(b, loc, f32Scalar, reached, zero, next);
  Value backedOff =
      MulOp::create(b, loc, f32Scalar, scale, constant(lossScaleBackoffFactor));
  Value newScale =
      SelectOp::create(b, loc, f32Scalar, foundInf, backedOff, finiteScale);
  Value newTracker =
      SelectOp::create(b, loc, f32Scalar, foundInf, zero, finiteTracker);
  WriteVariableOp::create(b, loc, kScaleVar, newScale);
  WriteVariableOp::create(b, loc, kTrackerVar, newTracker);
}

LogicalResult LossScalingPass::run() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = module.getContext();
  if (lossScale == "none")
    return success(); // no loss scaling asked for
  resolveScale();
  func::FuncOp train = lookupTrainStep(module, kPass);
  if (!train)
    return failure();
  for (StringRef name : {kScaleVar, kTrackerVar})
    if (module.lookupSymbol(name))
      return module.emitError()
             << kPass << ": cannot create @" << name
             << ": the symbol already exists (was loss scaling applied twice?)";
  Block &body = train.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Location loc = train.getLoc();
  auto f32 = Float32Type::get(ctx);
  auto f32Scalar = RankedTensorType::get({}, f32);
  auto i1Scalar = RankedTensorType::get({}, IntegerType::get(ctx, 1));

  // The loss: the result named "loss".
  Value loss;
  for (unsigned i = 0; i < ret.getNumOperands(); ++i)
    if (auto n = train.getResultAttrOfType<StringAttr>(i, kNameAttr))
      if (n.getValue() == kLossName)
        loss = ret.getOperand(i);
  if (!loss || loss.getType() != f32Scalar)
    return train.emitError() << kPass
                             << " expects @train_step to return the loss, a "
                                "tensor<f32> named \"loss\"";

  // The optimizer updates and the gradients they read.
  SmallVector<Operation *> updates;
  SmallVector<Value> grads;
  for (Operation &op : body.without_terminator())
    if (OpOperand *g = updateGradient(&op)) {
      updates.push_back(&op);
      grads.push_back(g->get());
      auto gt = dyn_cast<RankedTensorType>(g->get().getType());
      if (!gt || !gt.getElementType().isF32())
        return op.emitError()
               << kPass << " expects the gradients the optimizer updates "
               << "read to be f32 (master weights), got " << g->get().getType();
    }
  if (updates.empty())
    return train.emitError()
           << kPass << " expects @train_step with optimizer updates "
           << "(dlgraph.sgd_update / dlgraph.adam_update); run "
              "--dlgraph-apply-optimizer first";
  Operation *firstUpdate = updates.front();
  for (auto [g, u] : llvm::zip(grads, updates))
    if (Operation *def = widenedSource(g).getDefiningOp();
        def && (def->getBlock() != &body || !def->isBeforeInBlock(firstUpdate)))
      return u->emitError() << kPass << " expects every gradient to be "
                            << "computed in @train_step before the first "
                               "optimizer update";

  // The backward seed: the first rank-0 floating-point constant 1 of the
  // block that some gradient depends on and the loss does not (the forward
  // computes the loss without it; computeGradients creates the seed before
  // any gradient rule runs, so it precedes every other backward constant).
  llvm::DenseSet<Operation *> toGrads = backwardClosure(body, grads);
  llvm::DenseSet<Operation *> toLoss = backwardClosure(body, {loss});
  Operation *seed = nullptr;
  for (Operation &op : body.without_terminator())
    if (toGrads.contains(&op) && !toLoss.contains(&op) && isScalarOne(&op)) {
      seed = &op;
      break;
    }
  if (!seed)
    return train.emitError()
           << kPass
           << " cannot find the backward seed of @train_step (a "
              "rank-0 constant 1.0 that the gradients depend on and the loss "
              "does not; --dlgraph-differentiate creates it)";

  // The scale the step uses and the tracker, read at the top of the body.
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  auto constant = [&](double v) { return splat(b, loc, f32Scalar, v); };
  Value scale, tracker;
  if (dynamic) {
    OpBuilder mb(ctx);
    mb.setInsertionPointToStart(module.getBody());
    for (VariableOp var : module.getOps<VariableOp>())
      mb.setInsertionPointAfter(var);
    auto makeVar = [&](StringRef name, double init) {
      auto attr = DenseElementsAttr::get(f32Scalar, mb.getF32FloatAttr(init));
      auto var = VariableOp::create(mb, loc, mb.getStringAttr(name),
                                    TypeAttr::get(f32Scalar),
                                    cast<ElementsAttr>(attr));
      var->setAttr(kOptimizerStateAttr, mb.getUnitAttr());
    };
    makeVar(kScaleVar, initScale);
    makeVar(kTrackerVar, 0.0);
    scale = ReadVariableOp::create(b, loc, f32Scalar, kScaleVar);
    tracker = ReadVariableOp::create(b, loc, f32Scalar, kTrackerVar);
  } else {
    scale = constant(initScale);
  }

  // Scale the seed (only the uses on the way to the gradients, should the
  // constant be shared).
  Value seedValue = seed->getResult(0);
  Value scaledSeed = scale;
  if (seedValue.getType() != f32Scalar) {
    b.setInsertionPointAfterValue(scale);
    scaledSeed = CastOp::create(b, seed->getLoc(), seedValue.getType(), scale);
  }
  seedValue.replaceUsesWithIf(scaledSeed, [&](OpOperand &use) {
    return toGrads.contains(use.getOwner());
  });
  if (seed->use_empty())
    seed->erase();

  // Unscale each gradient in f32 before the first update; sum(u * 0) over
  // every unscaled gradient u is 0 when all are finite and NaN otherwise, so
  // one compare gives found_inf.
  b.setInsertionPoint(firstUpdate);
  Value inv = DivOp::create(b, loc, f32Scalar, constant(1.0), scale);
  Value zero = constant(0.0);
  Value total;
  llvm::DenseMap<Value, Value> unscaled; // keyed by widenedSource
  for (Value grad : grads) {
    Value g = widenedSource(grad);
    Value &u = unscaled[g];
    if (u)
      continue;
    auto gt = cast<RankedTensorType>(grad.getType());
    u = MulOp::create(b, g.getLoc(), gt, asF32(b, g, gt), inv);
    // The probe recomputes the unscaled value (the same ops, so the same
    // bits) instead of reading u: then each chain has one consumer, the
    // probe fuses into its reduction and u into the update's kernel.
    Value again = MulOp::create(b, g.getLoc(), gt, asF32(b, g, gt), inv);
    Value probe = MulOp::create(b, g.getLoc(), gt, again, zero);
    SmallVector<int64_t> axes =
        llvm::to_vector(llvm::seq<int64_t>(0, gt.getRank()));
    Value sum =
        gt.getRank() == 0
            ? probe
            : Value(ReduceSumOp::create(b, g.getLoc(), f32Scalar, probe, axes,
                                        /*keepdims=*/false));
    total = total ? Value(AddOp::create(b, loc, f32Scalar, total, sum)) : sum;
  }
  Value foundInf = CompareOp::create(b, loc, i1Scalar, "ne", total, total);
  for (Operation *u : updates) {
    OpOperand *g = updateGradient(u);
    Value old = g->get();
    g->set(unscaled.lookup(widenedSource(old)));
    if (old.use_empty())
      old.getDefiningOp()->erase();
  }
  for (OpOperand &r : ret->getOpOperands()) {
    Value old = r.get();
    auto rt = dyn_cast<RankedTensorType>(old.getType());
    if (!rt || !rt.getElementType().isF32())
      continue;
    if (Value u = unscaled.lookup(widenedSource(old))) {
      r.set(u);
      if (old.use_empty() && old.getDefiningOp())
        old.getDefiningOp()->erase();
    }
  }

  // Guard every write: on overflow each variable keeps its value from
  // before the step.
  guardWrites(body, ret, foundInf, b);

  // GradScaler's update (torch's _amp_update_scale_): on overflow scale *=
  // backoff and tracker = 0; else tracker += 1 and at growth-interval the
  // scale grows (unless that overflows f32) and the tracker restarts.
  b.setInsertionPoint(ret);
  Value one = constant(1.0);
  Value skipped = SelectOp::create(b, loc, f32Scalar, foundInf, one, zero);
  if (dynamic)
    updateScale(b, loc, foundInf, scale, tracker, one, zero);
  // Two more results: the scale this step used, and whether it was skipped.
  SmallVector<Value> results(ret.getOperands());
  SmallVector<DictionaryAttr> names;
  for (unsigned i = 0; i < results.size(); ++i)
    names.push_back(train.getResultAttrDict(i) ? train.getResultAttrDict(i)
                                               : b.getDictionaryAttr({}));
  results.append({scale, skipped});
  names.push_back(nameAttr(b, kScaleResult));
  names.push_back(nameAttr(b, kSkippedResult));
  setResults(train, results, names);
  return success();
}

} // namespace

std::unique_ptr<mlir::Pass> dlc::createLossScalingPass(const PrecisionOptions &options) {
  return std::make_unique<LossScalingPass>(options);
}
