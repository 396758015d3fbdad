//===- MixedPrecision.cpp - the --precision cast policy -------------------===//
//
// Rewrites every function of a dlgraph module to compute in bf16 or f16 by
// each op's precision class (PrecisionClassOpInterface), keeping variables
// (parameters, optimizer state, running statistics) and the functions'
// signatures in f32. The policy and its sources are in
// docs/mixed-precision.md and in MixedPrecisionPass's description.
//
//===----------------------------------------------------------------------===//
#include "compiler/Training/Passes.h"

#include "dialects/Graph/GraphInterfaces.h"
#include "dialects/Graph/GraphOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace dlc {
#define GEN_PASS_DEF_MIXEDPRECISIONPASS
#include "compiler/Training/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
using namespace dlc::graph;

llvm::ArrayRef<llvm::StringLiteral> dlc::supportedPrecisions() {
  static const llvm::StringLiteral kPrecisions[] = {"fp32", "bf16", "fp16"};
  return kPrecisions;
}

namespace {

/// The element type of |v| when it is a tensor of f32, f16 or bf16 (the types
/// the policy moves between), else null. f64 and integers are left alone.
Type policyFloat(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t)
    return Type();
  Type e = t.getElementType();
  return e.isF32() || e.isF16() || e.isBF16() ? e : Type();
}

/// The widest of |a| and |b| (either may be null): f32 over the 16-bit types;
/// f16 with bf16 gives f32, which holds both exactly.
Type widest(Type a, Type b) {
  if (!a)
    return b;
  if (!b || a == b)
    return a;
  return Float32Type::get(a.getContext());
}

bool isConstant(Value v) { return v.getDefiningOp<ConstantOp>() != nullptr; }

/// Whether |op| only moves the elements of its one operand (reshape,
/// transpose, slice, broadcast_to): not elementwise arithmetic, one operand,
/// one result, following its operand's type, free or cheap to recompute.
bool isDataMovementOfOne(Operation *op) {
  auto pc = dyn_cast<PrecisionClassOpInterface>(op);
  auto cost = dyn_cast<RecomputeCostOpInterface>(op);
  return pc && cost && op->getNumOperands() == 1 && op->getNumResults() == 1 &&
         pc.getPrecisionClass() == PrecisionClass::FollowsOperands &&
         !op->hasTrait<GraphTrait::Elementwise>() &&
         (cost.getRecomputeCost() == RecomputeCost::Free ||
          cost.getRecomputeCost() == RecomputeCost::Cheap) &&
         op->getNumRegions() == 0 && !isa<CastOp>(op);
}

/// Whether |v| is a float constant whose every element converts to |elem|
/// exactly (0, 1, 0.5, -inf convert to bf16 exactly; 1/sqrt(2) does not).
bool convertsExactly(Value v, Type elem) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto ft = dyn_cast<FloatType>(elem);
  if (!c || !ft)
    return false;
  auto d = dyn_cast<DenseFPElementsAttr>(c.getValue());
  if (!d)
    return false;
  auto exact = [&](APFloat x) {
    bool lost = false;
    APFloat y = x;
    y.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return !lost || x.isNaN();
  };
  if (d.isSplat())
    return exact(d.getSplatValue<APFloat>());
  return llvm::all_of(d.getValues<APFloat>(), exact);
}

class Rewriter {
public:
  explicit Rewriter(Type low) : low(low) {
    f32 = Float32Type::get(low.getContext());
  }

  LogicalResult run(func::FuncOp func) {
    sharedCasts.clear();
    broadcastLike.clear();
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (op != func.getOperation())
        ops.push_back(op);
    });
    for (Operation *op : ops)
      if (failed(rewrite(op, func)))
        return failure();
    return success();
  }

private:
  /// |v| as a tensor of |elem|: |v| itself, or a new dlgraph.cast in front of
  /// |user| (one per use, so that fusion folds it into the user's kernel).
  Value castForUse(Value v, Type elem, Operation *user) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getElementType() == elem)
      return v;
    OpBuilder b(user);
    return CastOp::create(b, user->getLoc(), t.clone(elem), v);
  }

  /// |v| as a tensor of |elem| through one cast placed right after |v|'s
  /// definition and shared by every user that asks (the low-precision copy of
  /// a parameter or activation that forward and backward GEMMs both read).
  Value sharedCast(Value v, Type elem) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getElementType() == elem)
      return v;
    auto key = std::make_pair(v, elem);
    if (Value c = sharedCasts.lookup(key))
      return c;
    // Narrowing a view or copy of one tensor (reshape, transpose, slice):
    // narrow the tensor and move the narrow data instead, so that views of
    // one value share one cast and copies move half the bytes.
    if (Operation *def = v.getDefiningOp();
        def && t.getElementType().isF32() && isDataMovementOfOne(def)) {
      Value in = sharedCast(def->getOperand(0), elem);
      OpBuilder b(def->getContext());
      b.setInsertionPointAfter(def);
      IRMapping map;
      map.map(def->getOperand(0), in);
      Operation *moved = b.clone(*def, map);
      moved->getResult(0).setType(t.clone(elem));
      sharedCasts[key] = moved->getResult(0);
      return moved->getResult(0);
    }
    OpBuilder b(v.getContext());
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
    Value c = CastOp::create(b, v.getLoc(), t.clone(elem), v);
    sharedCasts[key] = c;
    return c;
  }

  /// Re-infers |op|'s result types from its (now possibly low) operands: an
  /// op that reads f16/bf16 directly states what it returns for them.
  LogicalResult inferResults(Operation *op) {
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer)
      return op->emitOpError()
             << "reads low-precision operands but cannot infer its result "
                "types";
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
            op->getRegions(), types)))
      return failure();
    for (auto [r, t] : llvm::zip(op->getResults(), types))
      r.setType(t);
    return success();
  }

  void setFloatResults(Operation *op, Type elem) {
    for (Value r : op->getResults())
      if (policyFloat(r))
        r.setType(cast<RankedTensorType>(r.getType()).clone(elem));
  }

  /// Casts every policy-float operand of |op| to |elem| (per use).
  void castOperands(Operation *op, Type elem) {
    for (OpOperand &o : op->getOpOperands())
      if (policyFloat(o.get()))
        o.set(castForUse(o.get(), elem, op));
  }

  LogicalResult rewrite(Operation *op, func::FuncOp func) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      // The signature stays as the user compiled it (f32 in, f32 out).
      for (OpOperand &o : ret->getOpOperands()) {
        Type want = func.getFunctionType().getResult(o.getOperandNumber());
        auto wt = dyn_cast<RankedTensorType>(want);
        if (wt && policyFloat(o.get()) && want != o.get().getType())
          o.set(castForUse(o.get(), wt.getElementType(), op));
      }
      return success();
    }
    if (auto write = dyn_cast<WriteVariableOp>(op)) {
      // Variables keep their type: master weights, optimizer state and
      // running statistics stay f32.
      auto var = SymbolTable::lookupNearestSymbolFrom<VariableOp>(
          op, write.getVariableAttr());
      if (!var)
        return op->emitOpError() << "writes an unknown variable";
      auto vt = cast<RankedTensorType>(var.getType());
      OpOperand &value = op->getOpOperand(0);
      if (policyFloat(value.get()) && value.get().getType() != vt)
        value.set(castForUse(value.get(), vt.getElementType(), op));
      return success();
    }
    // A cast's target type is what the model asked for; constants and
    // variable reads keep their type (users cast them).
    if (isa<CastOp, ConstantOp, ReadVariableOp>(op))
      return success();
    auto pc = dyn_cast<PrecisionClassOpInterface>(op);
    if (!pc)
      return success();
    switch (pc.getPrecisionClass()) {
    case PrecisionClass::LowPrecision:
      // GEMM / convolution: low-precision operands (f32 accumulation in the
      // library), low-precision result. Their operands are library-call
      // inputs, which no kernel can absorb a cast into, so one cast per
      // value serves every GEMM that reads it.
      for (OpOperand &o : op->getOpOperands())
        if (policyFloat(o.get()))
          o.set(sharedCast(o.get(), low));
      setFloatResults(op, low);
      return success();
    case PrecisionClass::KeepsF32:
      if (op->hasTrait<GraphTrait::ReadsLowPrecision>())
        return inferResults(op);
      // An elementwise user (an optimizer update, exp, ...) lowers to a
      // kernel that absorbs a cast of its own; other users (reductions,
      // softmax, losses) share one, which fusion folds into the reduction's
      // kernel when it is the only reader.
      if (op->hasTrait<GraphTrait::Elementwise>())
        castOperands(op, f32);
      else
        for (OpOperand &o : op->getOpOperands())
          if (policyFloat(o.get()))
            o.set(sharedCast(o.get(), f32));
      setFloatResults(op, f32);
      return success();
    case PrecisionClass::FollowsOperands:
      return followOperands(op);
    }
    return success();
  }

  /// Runs |op| in the widest type of its operands. Constants do not vote
  /// when they convert to the op's type exactly (the canonicalizer folds
  /// their cast); an inexact one (1/sqrt(2) in GELU) makes an elementwise op
  /// compute in f32 and round its result once. An
  /// elementwise op stores its result in the widest type of its operands
  /// that have the result's shape; an operand broadcast into it (a
  /// per-channel statistic, scale or bias) that is wider makes the op
  /// compute in that wider type and round its result once, as cuDNN's and
  /// PyTorch's normalization kernels do with their f32 statistics.
  LogicalResult followOperands(Operation *op) {
    Type compute, store;
    int floatOperands = 0, broadcastOperands = 0;
    bool elementwise = op->hasTrait<GraphTrait::Elementwise>();
    auto resultShape = [&]() -> std::optional<ArrayRef<int64_t>> {
      if (op->getNumResults() == 0)
        return std::nullopt;
      if (auto t = dyn_cast<RankedTensorType>(op->getResult(0).getType()))
        return t.getShape();
      return std::nullopt;
    }();
    for (Value v : op->getOperands()) {
      Type e = policyFloat(v);
      if (!e || isConstant(v))
        continue;
      compute = widest(compute, e);
      // A dlgraph.broadcast_to (a reduction's gradient spread back over the
      // reduced axes) is a smaller tensor broadcast into the result, like an
      // operand of smaller shape.
      bool broadcast =
          elementwise && resultShape &&
          (cast<RankedTensorType>(v.getType()).getShape() != *resultShape ||
           broadcastLike.contains(v));
      if (!broadcast)
        store = widest(store, e);
      else
        ++broadcastOperands;
      ++floatOperands;
    }
    // What a broadcast computes with constants or other broadcasts is still
    // a broadcast of a smaller tensor (e.g. mean's gradient * 1/n).
    if (isa<BroadcastToOp>(op) ||
        (elementwise && floatOperands > 0 && broadcastOperands == floatOperands))
      for (Value r : op->getResults())
        broadcastLike.insert(r);
    if (!compute)
      return success(); // only constants (or no floats): nothing to follow
    if (!store)
      store = compute;
    if (elementwise)
      for (Value v : op->getOperands())
        if (policyFloat(v) && isConstant(v) && !convertsExactly(v, compute))
          compute = widest(compute, policyFloat(v));
    castOperands(op, compute);
    setFloatResults(op, compute);
    if (store == compute)
      return success();
    // Round the results once to the storage type.
    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(op);
    for (Value r : op->getResults()) {
      if (!policyFloat(r) || r.use_empty())
        continue;
      auto t = cast<RankedTensorType>(r.getType());
      Value rounded = CastOp::create(b, op->getLoc(), t.clone(store), r);
      r.replaceAllUsesExcept(rounded, rounded.getDefiningOp());
    }
    return success();
  }

  Type low, f32;
  llvm::DenseMap<std::pair<Value, Type>, Value> sharedCasts;
  /// Full-shape values that are broadcasts of smaller tensors
  /// (dlgraph.broadcast_to and elementwise ops on such values and
  /// constants): like smaller operands, they do not decide where an
  /// elementwise op stores its result.
  llvm::DenseSet<Value> broadcastLike;
};

/// A value rounded to the low type only to be widened again by every reader
/// (the middle of a chain of elementwise ops that compute in f32, e.g. a
/// normalization's `(x - mean) * rstd * gamma + beta`) is not rounded: the
/// readers take the f32 value. Fusion puts such chains into one kernel, so
/// the f32 value is never stored.
void keepF32Chains(ModuleOp module) {
  SmallVector<CastOp> narrowing;
  module.walk([&](CastOp c) {
    Type from = c.getInput().getType().getElementType();
    Type to = c.getType().getElementType();
    if (from.isF32() && (to.isBF16() || to.isF16()) && !c->use_empty() &&
        llvm::all_of(c->getUsers(), [&](Operation *u) {
          auto w = dyn_cast<CastOp>(u);
          return w && w.getType() == c.getInput().getType();
        }))
      narrowing.push_back(c);
  });
  for (CastOp c : narrowing) {
    for (Operation *u : llvm::make_early_inc_range(c->getUsers())) {
      u->getResult(0).replaceAllUsesWith(c.getInput());
      u->erase();
    }
    c->erase();
  }
}

struct MixedPrecisionPass
    : PassWithOptions<dlc::impl::MixedPrecisionPassBase<MixedPrecisionPass>, PrecisionOptions> {
  using PassWithOptions::PassWithOptions;

  void runOnOperation() override {
    if (failed(commitAndCheckOptions(getOperation())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    Type low;
    if (precision == "bf16")
      low = BFloat16Type::get(ctx);
    else if (precision == "fp16")
      low = Float16Type::get(ctx);
    else
      return; // fp32: nothing to lower (check() accepts only these three)
    Rewriter rewriter(low);
    for (auto func : module.getOps<func::FuncOp>())
      if (failed(rewriter.run(func)))
        return signalPassFailure();
    keepF32Chains(module);
  }
};

} // namespace

std::unique_ptr<mlir::Pass> dlc::createMixedPrecisionPass(const PrecisionOptions &options) {
  return std::make_unique<MixedPrecisionPass>(options);
}
