//===- SplitPipelineStages.cpp - per-stage functions of a pipeline --------===//
//
// Cuts the staged @train_step into @stage<s>_forward, @stage<s>_backward and
// @stage<s>_update (Passes.td has the contract; docs/pipeline.md, "Running a
// pipeline", the runtime's side). Every op gets a place (stage, phase); each
// value read in another place than its definition's becomes a named result
// of the defining function and an input of the reading one: forward values
// `x.<k>` (to later stages, or to the stage's own backward: the activations
// a micro-batch keeps between its forward and its backward), gradients
// `g.<k>` (to earlier stages), and the parameter gradients, which go through
// accumulator variables from the backward to the update.
//
//===----------------------------------------------------------------------===//
#include "compiler/Partition/Passes.h"

#include "compiler/Training/TrainingStepUtils.h"
#include "dialects/Graph/GraphOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"

namespace dlc {
#define GEN_PASS_DEF_SPLITPIPELINESTAGESPASS
#include "compiler/Partition/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
using namespace dlc::graph;
using namespace dlc::training;

namespace {

enum Phase : int { Forward = 0, Backward = 1, Update = 2 };
constexpr const char *kPhaseNames[] = {"forward", "backward", "update"};

/// A function of the pipeline: stage * 3 + phase.
int fnIndex(int stage, Phase phase) { return stage * 3 + phase; }
int fnStage(int fn) { return fn / 3; }
Phase fnPhase(int fn) { return static_cast<Phase>(fn % 3); }

/// Ops copied into every function that reads them instead of transferred.
bool isCopied(Operation *op) { return isa<ConstantOp, ReadVariableOp>(op); }

struct SplitPipelineStagesPass
    : PassWithOptions<dlc::impl::SplitPipelineStagesPassBase<SplitPipelineStagesPass>, PartitionOptions> {
  using PassWithOptions::PassWithOptions;

  void runOnOperation() override {
    if (failed(commitAndCheckOptions(getOperation())))
      return signalPassFailure();
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run();
};

/// A value that leaves its function: its name and the functions reading it.
struct Crossing {
  std::string name;
  int from = -1;             ///< the defining function
  llvm::SmallVector<int> to; ///< reading functions, ascending
};

int64_t stageOf(Operation *op) {
  auto s = op->getAttrOfType<IntegerAttr>(kStageAttr);
  return s ? s.getInt() : -1;
}

/// The pass's work on one module, one method per step of run().
class StageSplitter {
public:
  StageSplitter(ModuleOp module, int64_t microBatches, std::string schedule)
      : module(module), ctx(module.getContext()), microBatches(microBatches),
        schedule(schedule), mb(ctx) {}

  LogicalResult run();

private:
  /// @train_step's ops in order, the number of stages and the backward's
  /// extent.
  LogicalResult collectOps();
  /// 1. Places: forward and backward ops by their tags, untagged forward ops
  /// (the loss, decompositions) at the latest stage of their operands, the
  /// optimizer's ops (after the backward) in the update.
  LogicalResult placeOps();
  /// The update: each op serves the stages whose gradients it reads, and
  /// those its users serve; a write serves the stages of what it writes.
  LogicalResult findServedStages();
  /// Parameters read in more than one stage (tied weights) would need their
  /// gradient summed across stages.
  LogicalResult checkTiedParameters();
  /// 2. Crossings: every operand read in another function than its
  /// definition's.
  LogicalResult findCrossings();
  /// 3. Accumulators: a variable per parameter gradient, named after the
  /// parameter its update reads.
  LogicalResult createAccumulators();
  /// 4. The functions of stage |s|; adds its record to stageRecords.
  LogicalResult buildStage(int64_t s);
  /// 5. The record for the package.
  void recordPipeline();

  /// The functions an op runs in (copied ops: where they are read).
  SmallVector<int> fnsOf(Operation *op) const;
  std::string argName(unsigned i);

  ModuleOp module;
  MLIRContext *ctx;
  const int64_t microBatches;
  const std::string schedule;
  const char *pass = "--dlgraph-split-pipeline-stages";
  OpBuilder mb;
  func::FuncOp train;
  func::ReturnOp ret;
  SmallVector<Operation *> ops;
  int64_t stages = 0, firstBackward = -1, lastBackward = -1;
  llvm::DenseMap<Operation *, int> place; // op -> fn (not for Update ops)
  SmallVector<Operation *> updateOps;
  llvm::DenseMap<Operation *, llvm::SmallBitVector> serves;
  std::vector<llvm::SetVector<Operation *>> members;
  llvm::MapVector<Value, Crossing> crossings;
  llvm::MapVector<Value, int> accumulated; // gradient -> its stage
  /// Model inputs each function reads (argument numbers).
  std::vector<llvm::SmallBitVector> dataInputs;
  Value lossValue;
  int lossFn = -1;
  llvm::MapVector<Value, VariableOp> accumulators;
  SmallVector<Attribute> stageRecords;
};

LogicalResult SplitPipelineStagesPass::run() {
  return StageSplitter(getOperation(), microbatches, schedule).run();
}

LogicalResult StageSplitter::run() {
  train = lookupTrainStep(module, pass);
  if (!train)
    return failure();
  if (failed(collectOps()) || failed(placeOps()) || failed(findServedStages()))
    return failure();
  members.resize(stages * 3);
  for (Operation *op : ops)
    for (int fn : fnsOf(op))
      members[fn].insert(op);
  if (failed(checkTiedParameters()) || failed(findCrossings()) ||
      failed(createAccumulators()))
    return failure();
  mb.setInsertionPoint(train);
  for (int64_t s = 0; s < stages; ++s)
    if (failed(buildStage(s)))
      return failure();
  recordPipeline();
  train.erase();
  // @forward keeps the partition's tags; they mean nothing after this.
  module.walk([](Operation *op) {
    op->removeAttr(kStageAttr);
    op->removeAttr(kBackwardAttr);
  });
  return success();
}

LogicalResult StageSplitter::collectOps() {
  Block &body = train.getBody().front();
  ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() != 1)
    return train.emitError()
           << pass << " expects @train_step to return only the loss; it "
           << "returns " << ret.getNumOperands()
           << " values (--expose-gradients is not supported with pipeline "
              "stages)";
  for (Operation &op : body.without_terminator()) {
    if (auto s = op.getAttrOfType<IntegerAttr>(kStageAttr))
      stages = std::max<int64_t>(stages, s.getInt() + 1);
    if (op.hasAttr(kBackwardAttr)) {
      if (firstBackward < 0)
        firstBackward = ops.size();
      lastBackward = ops.size();
    }
    ops.push_back(&op);
  }
  if (stages < 1 || firstBackward < 0)
    return train.emitError()
           << pass << " expects a @train_step built from a @main split by "
           << "--dlgraph-partition-pipeline (ops with dlgraph.stage, a "
              "backward with dlgraph.backward)";
  return success();
}

LogicalResult StageSplitter::placeOps() {
  for (auto [i, op] : llvm::enumerate(ops)) {
    if (isCopied(op))
      continue;
    int64_t i64 = static_cast<int64_t>(i);
    if (op->hasAttr(kBackwardAttr)) {
      place[op] = fnIndex(stageOf(op), Backward);
      continue;
    }
    if (i64 > lastBackward) {
      updateOps.push_back(op);
      continue;
    }
    if (i64 > firstBackward)
      return op->emitError() << pass << ": internal error: an op without a "
                             << "stage inside the backward";
    int64_t s = stageOf(op);
    if (s < 0) {
      s = 0;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp(); def && place.count(def))
          s = std::max<int64_t>(s, fnStage(place[def]));
    }
    place[op] = fnIndex(s, Forward);
  }
  return success();
}

LogicalResult StageSplitter::findServedStages() {
  for (Operation *op : llvm::reverse(updateOps)) {
    llvm::SmallBitVector set(stages);
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp(); def && place.count(def)) {
        if (fnPhase(place[def]) == Backward)
          set.set(fnStage(place[def]));
      }
    for (Operation *user : op->getUsers())
      if (!isa<WriteVariableOp>(user) && serves.count(user))
        set |= serves[user];
    serves[op] = set;
  }
  for (Operation *op : updateOps) {
    auto write = dyn_cast<WriteVariableOp>(op);
    if (!write)
      continue;
    Operation *def = write.getValue().getDefiningOp();
    if (def && serves.count(def))
      serves[op] = serves[def];
    else
      return op->emitError() << pass << ": internal error: the update writes "
                             << "a value it does not compute";
  }
  for (Operation *op : updateOps)
    if (serves[op].none() && !isPure(op))
      return op->emitError() << pass << ": internal error: an update op that "
                             << "serves no stage";
  return success();
}

SmallVector<int> StageSplitter::fnsOf(Operation *op) const {
  SmallVector<int> fns;
  if (auto it = place.find(op); it != place.end()) {
    fns.push_back(it->second);
  } else if (auto it = serves.find(op); it != serves.end()) {
    for (unsigned s : it->second.set_bits())
      fns.push_back(fnIndex(s, Update));
  }
  return fns;
}

LogicalResult StageSplitter::checkTiedParameters() {
  llvm::StringMap<int64_t> paramStage;
  for (Operation *op : ops) {
    auto read = dyn_cast<ReadVariableOp>(op);
    if (!read)
      continue;
    auto var = module.lookupSymbol<VariableOp>(read.getVariable());
    if (!var || !var.getTrainable())
      continue;
    for (Operation *user : read->getUsers()) {
      auto it = place.find(user);
      if (it == place.end() || fnPhase(it->second) != Forward)
        continue;
      auto [at, inserted] =
          paramStage.try_emplace(read.getVariable(), fnStage(it->second));
      if (!inserted && at->second != fnStage(it->second))
        return read.emitError()
               << "parameter @\"" << read.getVariable() << "\" is used by "
               << "pipeline stages "
               << std::min<int64_t>(at->second, fnStage(it->second)) << " and "
               << std::max<int64_t>(at->second, fnStage(it->second))
               << "; parameters shared across stages (tied weights) are not "
                  "supported: choose split points (--pipeline-split) that "
                  "keep its users in one stage";
    }
  }
  return success();
}

LogicalResult StageSplitter::findCrossings() {
  dataInputs.assign(stages * 3, llvm::SmallBitVector(train.getNumArguments()));
  for (Operation *op : ops) {
    for (int fn : fnsOf(op)) {
      for (Value v : op->getOperands()) {
        if (auto arg = dyn_cast<BlockArgument>(v)) {
          dataInputs[fn].set(arg.getArgNumber());
          continue;
        }
        Operation *def = v.getDefiningOp();
        if (isCopied(def)) {
          members[fn].insert(def);
          continue;
        }
        SmallVector<int> defFns = fnsOf(def);
        if (llvm::is_contained(defFns, fn))
          continue;
        int from = defFns.front();
        int fs = fnStage(from), ts = fnStage(fn);
        Phase fp = fnPhase(from), tp = fnPhase(fn);
        bool ok = false;
        if (fp == Forward && tp != Update)
          ok = fs <= ts; // to a later stage, or kept for the backward
        else if (fp == Backward && tp == Backward)
          ok = fs > ts; // a gradient to an earlier stage
        else if (fp == Backward && tp == Update && fs == ts) {
          accumulated.insert({v, fs});
          continue;
        }
        if (!ok)
          return op->emitError()
                 << pass << ": internal error: a value of stage " << fs << "'s "
                 << kPhaseNames[fp] << " is read by stage " << ts << "'s "
                 << kPhaseNames[tp] << ", against the schedule";
        Crossing &c = crossings[v];
        c.from = from;
        if (!llvm::is_contained(c.to, fn))
          c.to.push_back(fn);
      }
    }
  }
  // Names in program order: x.<k> forward, g.<k> backward.
  {
    unsigned next = 0;
    llvm::DenseMap<Value, unsigned> ids;
    for (Operation *op : ops)
      for (Value r : op->getResults())
        if (crossings.count(r))
          ids[r] = next++;
    for (auto &[v, c] : crossings) {
      c.name =
          (fnPhase(c.from) == Forward ? "x." : "g.") + std::to_string(ids[v]);
      llvm::sort(c.to);
    }
  }
  lossValue = ret.getOperand(0);
  Operation *lossDef = lossValue.getDefiningOp();
  if (!lossDef || !place.count(lossDef) || fnPhase(place[lossDef]) != Forward)
    return train.emitError() << pass << ": the loss is not computed by a "
                             << "stage's forward";
  lossFn = place[lossDef];
  return success();
}

LogicalResult StageSplitter::createAccumulators() {
  Location loc = train.getLoc();
  for (auto &[grad, stage] : accumulated) {
    std::string name;
    VariableOp after;
    for (Operation *user : grad.getUsers())
      for (Value operand : user->getOperands())
        if (auto read = operand.getDefiningOp<ReadVariableOp>())
          if (auto var = module.lookupSymbol<VariableOp>(read.getVariable()))
            if (var.getTrainable() && name.empty()) {
              name = (var.getSymName() + ".grad_accumulator").str();
              after = var;
            }
    if (name.empty())
      name = "__grad_accumulator." + std::to_string(accumulators.size());
    if (module.lookupSymbol(name))
      return module.emitError() << pass << ": cannot create @\"" << name
                                << "\": the symbol already exists";
    auto type = cast<RankedTensorType>(grad.getType());
    if (after)
      mb.setInsertionPointAfter(after);
    else
      mb.setInsertionPoint(train);
    auto var = VariableOp::create(mb, loc, mb.getStringAttr(name),
                                  TypeAttr::get(type), ElementsAttr());
    var->setAttr(kOptimizerStateAttr, mb.getUnitAttr());
    accumulators.insert({grad, var});
  }
  return success();
}

std::string StageSplitter::argName(unsigned i) {
  auto name = train.getArgAttrOfType<StringAttr>(i, kNameAttr);
  return name ? name.getValue().str() : "arg" + std::to_string(i);
}

LogicalResult StageSplitter::buildStage(int64_t s) {
  Location loc = train.getLoc();
  auto scale = 1.0 / static_cast<double>(microBatches);
  SmallVector<NamedAttribute> record;
  for (Phase phase : {Forward, Backward, Update}) {
    int fn = fnIndex(s, phase);
    std::string fnName = "stage" + std::to_string(s) + "_" + kPhaseNames[phase];
    record.push_back(
        mb.getNamedAttr(kPhaseNames[phase], mb.getStringAttr(fnName)));
    if (module.lookupSymbol(fnName))
      return module.emitError()
             << pass << ": symbol @" << fnName << " already exists";
    // Inputs: model inputs, then received values by name order.
    SmallVector<Value> inValues;
    SmallVector<Type> inTypes;
    SmallVector<std::string> inNames;
    for (unsigned a : dataInputs[fn].set_bits()) {
      inValues.push_back(train.getArgument(a));
      inTypes.push_back(train.getArgument(a).getType());
      inNames.push_back(argName(a));
    }
    SmallVector<Value> outValues;
    SmallVector<std::string> outNames;
    for (auto &[v, c] : crossings) {
      if (llvm::is_contained(c.to, fn)) {
        inValues.push_back(v);
        inTypes.push_back(v.getType());
        inNames.push_back(c.name);
      }
      if (c.from == fn) {
        outValues.push_back(v);
        outNames.push_back(c.name);
      }
    }
    if (fn == lossFn) {
      outValues.push_back(lossValue);
      outNames.push_back(kLossName.str());
    }
    auto func = func::FuncOp::create(
        mb, loc, fnName,
        FunctionType::get(ctx, inTypes, ValueRange(outValues).getTypes()));
    Block *entry = func.addEntryBlock();
    IRMapping map;
    for (auto [i, v] : llvm::enumerate(inValues)) {
      map.map(v, entry->getArgument(i));
      func.setArgAttrs(i, nameAttr(mb, inNames[i]));
    }
    OpBuilder b = OpBuilder::atBlockEnd(entry);
    if (phase == Update)
      for (auto &[grad, var] : accumulators)
        if (accumulated.lookup(grad) == s)
          map.map(grad, ReadVariableOp::create(b, loc, var.getType(),
                                               var.getSymName()));
    for (Operation *op : ops)
      if (members[fn].contains(op)) {
        Operation *copy = b.clone(*op, map);
        copy->removeAttr(kStageAttr);
        copy->removeAttr(kBackwardAttr);
      }
    // The backward adds each parameter gradient, times 1/M, to its
    // accumulator; the update zeroes them after reading.
    SmallVector<Attribute> accNames;
    for (auto &[grad, var] : accumulators) {
      if (accumulated.lookup(grad) != s)
        continue;
      auto type = cast<RankedTensorType>(var.getType());
      accNames.push_back(mb.getStringAttr(var.getSymName()));
      if (phase == Backward) {
        Value acc = ReadVariableOp::create(b, loc, type, var.getSymName());
        Value g = map.lookup(grad);
        if (microBatches > 1)
          g = MulOp::create(b, loc, type, g, splat(b, loc, type, scale));
        Value sum = AddOp::create(b, loc, type, acc, g);
        WriteVariableOp::create(b, loc, var.getSymName(), sum);
      } else if (phase == Update) {
        WriteVariableOp::create(b, loc, var.getSymName(),
                                splat(b, loc, type, 0.0));
      }
    }
    if (phase == Update)
      record.push_back(
          mb.getNamedAttr("accumulators", mb.getArrayAttr(accNames)));
    SmallVector<Value> results;
    for (Value v : outValues)
      results.push_back(map.lookup(v));
    func::ReturnOp::create(b, loc, results);
    for (auto [i, name] : llvm::enumerate(outNames))
      func.setResultAttrs(i, nameAttr(mb, name));
  }
  stageRecords.push_back(mb.getDictionaryAttr(record));
  return success();
}

void StageSplitter::recordPipeline() {
  SmallVector<Attribute> transfers;
  for (auto &[v, c] : crossings)
    for (int fn : c.to) {
      if (fnStage(fn) == fnStage(c.from))
        continue; // kept by the stage itself
      transfers.push_back(mb.getDictionaryAttr({
          mb.getNamedAttr("name", mb.getStringAttr(c.name)),
          mb.getNamedAttr("from", mb.getI64IntegerAttr(fnStage(c.from))),
          mb.getNamedAttr("to", mb.getI64IntegerAttr(fnStage(fn))),
          mb.getNamedAttr("backward",
                          mb.getBoolAttr(fnPhase(c.from) == Backward)),
      }));
    }
  // A value both kept and sent, or sent to two functions of one stage,
  // appears once per stage.
  {
    SmallVector<Attribute> unique;
    for (Attribute a : transfers)
      if (!llvm::is_contained(unique, a))
        unique.push_back(a);
    transfers = std::move(unique);
  }
  SmallVector<Attribute> inputs;
  for (unsigned i = 0; i < train.getNumArguments(); ++i)
    inputs.push_back(mb.getStringAttr(argName(i)));
  module->setAttr(
      kPipelineAttr,
      mb.getDictionaryAttr({
          mb.getNamedAttr("micro_batches", mb.getI64IntegerAttr(microBatches)),
          mb.getNamedAttr("schedule", mb.getStringAttr(schedule)),
          mb.getNamedAttr("loss_stage", mb.getI64IntegerAttr(fnStage(lossFn))),
          mb.getNamedAttr("stages", mb.getArrayAttr(stageRecords)),
          mb.getNamedAttr("transfers", mb.getArrayAttr(transfers)),
          mb.getNamedAttr("inputs", mb.getArrayAttr(inputs)),
      }));
}

} // namespace

std::unique_ptr<mlir::Pass> dlc::createSplitPipelineStagesPass(const PartitionOptions &options) {
  return std::make_unique<SplitPipelineStagesPass>(options);
}
