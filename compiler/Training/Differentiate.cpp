//===- Differentiate.cpp - gradients of @train_step's loss ----------------===//
#include "compiler/Training/Autodiff.h"
#include "compiler/Training/Passes.h"
#include "compiler/Training/TrainingStepUtils.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"

#include <cmath>
#include <optional>

namespace dlc {
#define GEN_PASS_DEF_DIFFERENTIATEPASS
#include "compiler/Training/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
using namespace dlc::graph;
using namespace dlc::training;

namespace {

/// Whether every path from |v| along its uses reaches an op for which
/// |goal| holds, passing only ops for which |through| holds (|through| sees
/// the op and the operand the path enters by), and at least one does.
bool onlyReaches(Value v, function_ref<bool(Operation *)> goal,
                 function_ref<bool(Operation *, Value)> through,
                 llvm::DenseSet<Operation *> &seen, bool &reached) {
  for (OpOperand &use : v.getUses()) {
    Operation *op = use.getOwner();
    if (goal(op)) {
      reached = true;
      continue;
    }
    if (!through(op, use.get()))
      return false;
    if (!seen.insert(op).second)
      continue;
    for (Value r : op->getResults())
      if (!onlyReaches(r, goal, through, seen, reached))
        return false;
  }
  return true;
}

/// Whether every path from |v| along its uses is a mask entering attention
/// scores: while not |injected|, through elementwise and element-moving ops
/// that mix in no value of |data| (preparing the mask: 1 - m, m == 0,
/// m * -1e9, a slice); then into an add or a select whose other operand
/// is of |data| (the scores); then through elementwise and element-moving
/// ops to a NormalizesScores op (the softmax), or directly into a score
/// mask operand (ScoreMaskOpInterface: the fused attention's mask), which at
/// least one reaches.
/// A value that multiplies the scores (a learned temperature) fails.
bool onlyMasksScores(Value v, bool injected,
                     const llvm::DenseSet<Value> &data,
                     llvm::DenseSet<std::pair<Operation *, unsigned>> &seen,
                     bool &reached) {
  for (OpOperand &use : v.getUses()) {
    Operation *op = use.getOwner();
    if (injected && op->hasTrait<GraphTrait::NormalizesScores>()) {
      reached = true;
      continue;
    }
    // A score mask of an op that normalizes scores inside itself (the
    // fused attention's mask) is added before its softmax.
    if (auto masks = dyn_cast<ScoreMaskOpInterface>(op))
      if (masks.isScoreMask(use)) {
        reached = true;
        continue;
      }
    bool mixesData = llvm::any_of(op->getOperands(), [&](Value o) {
      return o != use.get() && data.contains(o);
    });
    bool elementwise = op->hasTrait<GraphTrait::Elementwise>() ||
                       op->hasTrait<GraphTrait::MovesElements>();
    bool next = injected;
    if (!injected && mixesData && isa<AddOp, SelectOp>(op))
      next = true;
    else if (!elementwise || (!injected && mixesData))
      return false;
    if (!seen.insert({op, unsigned(next)}).second)
      continue;
    for (Value r : op->getResults())
      if (!onlyMasksScores(r, next, data, seen, reached))
        return false;
  }
  return true;
}

/// Calls |visit| on each f32 value of |var|'s initial value (dense or
/// dense_resource) until it returns false; false when it did, or when the
/// value cannot be read (none, or another form).
bool visitValues(VariableOp var, function_ref<bool(float)> visit) {
  std::optional<ElementsAttr> init = var.getInitialValue();
  if (!init)
    return false;
  if (auto dense = dyn_cast<DenseFPElementsAttr>(*init)) {
    if (!dense.getElementType().isF32())
      return false;
    for (float f : dense.getValues<float>())
      if (!visit(f))
        return false;
    return true;
  }
  if (auto blob = dyn_cast<DenseF32ResourceElementsAttr>(*init))
    if (std::optional<ArrayRef<float>> values = blob.tryGetAsArrayRef()) {
      for (float f : *values)
        if (!visit(f))
          return false;
      return true;
    }
  return false;
}

/// Whether the initial value of |var| holds a NaN or an infinity.
bool holdsNonFinite(VariableOp var) {
  bool found = false;
  visitValues(var, [&](float f) {
    found = !std::isfinite(f);
    return !found;
  });
  return found;
}

/// Whether |var|'s values look like an attention mask rather than a bias:
/// a large negative entry (-1e4 and below: BERT's -10000, -1e9, the f32
/// minimum), or only 0s and 1s with both present (a 0/1 mask stored as
/// float). A bias (random, or all zeros as initialized) is neither.
bool maskValues(VariableOp var) {
  bool zero = false, one = false, other = false, largeNegative = false;
  bool read = visitValues(var, [&](float f) {
    largeNegative |= f <= -1e4f;
    zero |= f == 0.0f;
    one |= f == 1.0f;
    other |= f != 0.0f && f != 1.0f;
    return !largeNegative;
  });
  return largeNegative || (read && zero && one && !other);
}

/// Why the trainable-set rule keeps the f32 variable |var| constant: it is
/// a buffer that PyTorch does not train, recognized by its values or by how
/// |train| reads it (docs/dlc.md, "What is trained"); empty when it may be
/// a parameter.
///  - its values are not all finite (a -inf mask, a NaN sentinel);
///  - its values look like a mask (maskValues) and every read is added to,
///    or selects into, attention scores before a softmax (onlyMasksScores:
///    a causal or padding mask; a bias added before a softmax trains);
///  - every read reaches only sin/cos (Periodic) through ops whose other
///    operands do not depend on the step's float inputs: the frequencies
///    of a rotary or sinusoidal position table. (A learned frequency applied
///    to the data, as in SIREN, meets the data before its sin.)
std::string bufferReason(VariableOp var, func::FuncOp train,
                         const llvm::DenseSet<Value> &dataDependent) {
  if (holdsNonFinite(var))
    return "holds non-finite values";
  SmallVector<Value> reads;
  train.walk([&](ReadVariableOp read) {
    if (read.getVariable() == var.getSymName())
      reads.push_back(read.getResult());
  });
  if (reads.empty())
    return "";
  auto all = [&](function_ref<bool(Operation *)> goal,
                 function_ref<bool(Operation *, Value)> through) {
    llvm::DenseSet<Operation *> seen;
    bool reached = false;
    for (Value r : reads)
      if (!onlyReaches(r, goal, through, seen, reached))
        return false;
    return reached;
  };
  {
    llvm::DenseSet<std::pair<Operation *, unsigned>> seen;
    bool reached = false;
    if (maskValues(var) &&
        llvm::all_of(reads,
                     [&](Value r) {
                       return onlyMasksScores(r, /*injected=*/false,
                                              dataDependent, seen, reached);
                     }) &&
        reached)
      return "only added to or selecting into attention scores before a "
             "softmax";
  }
  if (all([](Operation *op) { return op->hasTrait<GraphTrait::Periodic>(); },
          [&](Operation *op, Value from) {
            if (isa<func::ReturnOp>(op))
              return false;
            return llvm::none_of(op->getOperands(), [&](Value o) {
              return o != from && dataDependent.contains(o);
            });
          }))
    return "only feeds sin/cos position tables";
  return "";
}

/// The values of |train| that depend on its float arguments (the data).
llvm::DenseSet<Value> floatDataDependent(func::FuncOp train) {
  llvm::DenseSet<Value> dep;
  for (BlockArgument a : train.getArguments())
    if (auto t = dyn_cast<ShapedType>(a.getType());
        t && isa<FloatType>(t.getElementType()))
      dep.insert(a);
  train.walk([&](Operation *op) {
    if (llvm::any_of(op->getOperands(),
                     [&](Value o) { return dep.contains(o); }))
      for (Value r : op->getResults())
        dep.insert(r);
  });
  return dep;
}

struct DifferentiatePass
    : PassWithOptions<dlc::impl::DifferentiatePassBase<DifferentiatePass>, TrainingOptions> {
  using PassWithOptions::PassWithOptions;

  void runOnOperation() override {
    if (failed(commitAndCheckOptions(getOperation())))
      return signalPassFailure();
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

  // Frozen variables: marked with the reason, and not sources. --trainable
  // pins the set; else --freeze and the trainable-set rule (bufferReason),
  // which --no-freeze overrides.
  llvm::StringSet<> frozen;
  SmallVector<StringRef> varNames;
  for (VariableOp var : module.getOps<VariableOp>())
    varNames.push_back(var.getSymName());
  auto freezeVar = [&](VariableOp var, const Twine &why) {
    var->setAttr(kFrozenAttr, StringAttr::get(&getContext(), why));
    frozen.insert(var.getSymName());
  };
  auto compile = [&](StringRef flag, StringRef pattern,
                     std::optional<llvm::Regex> &re) -> LogicalResult {
    if (pattern.empty())
      return success();
    re.emplace(pattern); // POSIX extended
    std::string error;
    if (!re->isValid(error))
      return module.emitError() << flag << " '" << pattern
                                << "' is not a valid regex: " << error;
    if (llvm::none_of(varNames, [&](StringRef n) { return re->match(n); }))
      return module.emitError()
             << flag << " '" << pattern << "' matches no initializer; they are: "
             << (varNames.empty() ? std::string("none")
                                 : llvm::join(varNames, ", "));
    return success();
  };
  std::optional<llvm::Regex> freezeRe, keepRe;
  if (failed(compile("--freeze", freeze, freezeRe)) ||
      failed(compile("--no-freeze", noFreeze, keepRe)))
    return failure();
  if (!trainable.empty()) {
    auto file = llvm::MemoryBuffer::getFile(trainable);
    if (!file)
      return module.emitError() << "--trainable '" << trainable
                                << "': " << file.getError().message();
    llvm::StringSet<> listed;
    SmallVector<StringRef> lines;
    (*file)->getBuffer().split(lines, '\n');
    for (StringRef line : lines)
      if (StringRef name = line.trim(); !name.empty() && !name.starts_with("#"))
        listed.insert(name);
    SmallVector<StringRef> missing;
    for (const auto &entry : listed)
      if (!llvm::is_contained(varNames, entry.getKey()))
        missing.push_back(entry.getKey());
    if (missing.size() == listed.size())
      return module.emitError()
             << "--trainable '" << trainable
             << "' names no initializer of the model; they are: "
             << (varNames.empty() ? std::string("none")
                                 : llvm::join(varNames, ", "));
    if (!missing.empty()) {
      llvm::sort(missing);
      module.emitWarning()
          << "--trainable '" << trainable << "' names " << missing.size()
          << " tensor(s) the model does not hold as initializers (unused, or "
             "merged or renamed by the exporter): "
          << llvm::join(missing, ", ");
    }
    for (VariableOp var : module.getOps<VariableOp>()) {
      if (freezeRe && freezeRe->match(var.getSymName()))
        freezeVar(var, "--freeze");
      else if (!listed.contains(var.getSymName()))
        freezeVar(var, "not in --trainable");
    }
  } else {
    llvm::DenseSet<Value> data = floatDataDependent(train);
    for (VariableOp var : module.getOps<VariableOp>()) {
      if (freezeRe && freezeRe->match(var.getSymName())) {
        freezeVar(var, "--freeze");
        continue;
      }
      if (keepRe && keepRe->match(var.getSymName()))
        continue;
      if (!isa<Float32Type>(var.getType().getElementType()))
        continue;
      if (std::string why = bufferReason(var, train, data); !why.empty())
        freezeVar(var, why);
    }
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
           << (frozen.empty() ? ""
                              : " that is not frozen (--freeze, --trainable "
                                "or the buffer rule)")
           << " through differentiable ops";
  setResults(train, results, names);
  return success();
}

} // namespace

std::unique_ptr<mlir::Pass> dlc::createDifferentiatePass(const TrainingOptions &options) {
  return std::make_unique<DifferentiatePass>(options);
}
