//===- AppendLoss.cpp - @train_step from @main, returning the loss --------===//
#include "compiler/Training/Passes.h"
#include "compiler/Training/TrainingStepUtils.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

namespace dlc {
#define GEN_PASS_DEF_APPENDLOSSPASS
#include "compiler/Training/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
using namespace dlc::graph;
using namespace dlc::training;

namespace {

struct AppendLossPass
    : PassWithOptions<dlc::impl::AppendLossPassBase<AppendLossPass>, TrainingOptions> {
  using PassWithOptions::PassWithOptions;

  void runOnOperation() override {
    if (failed(commitAndCheckOptions(getOperation())))
      return signalPassFailure();
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run();
};

LogicalResult AppendLossPass::run() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = module.getContext();
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
      return main.emitError()
             << "the first output has element type " << logits.getElementType()
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
  train.setSymName(kTrainStep);
  Block &body = train.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());

  OpBuilder b(ret);
  Value lossValue;
  if (lossIndex >= 0) {
    lossValue = ret.getOperand(lossIndex);
  } else {
    if (failed(train.insertArgument(train.getNumArguments(), labelsType,
                                    nameAttr(b, "labels"), train.getLoc())))
      return train.emitError() << "cannot add the labels argument";
    Value labels = body.getArguments().back();
    StageTagger tag(b, stageOf(ret.getOperand(0)), /*backward=*/false);
    lossValue = SoftmaxCrossEntropyOp::create(
        b, ret.getLoc(), f32Scalar, ret.getOperand(0), labels,
        b.getF32FloatAttr(labelSmoothing));
  }
  setResults(train, {lossValue}, {nameAttr(b, kLossName)});
  return success();
}

} // namespace

std::unique_ptr<mlir::Pass> dlc::createAppendLossPass(const TrainingOptions &options) {
  return std::make_unique<AppendLossPass>(options);
}
