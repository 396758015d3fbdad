//===- InitAllPasses.cpp - pass and pipeline registration -----------------===//
#include "compiler/InitAll/InitAll.h"

#include "compiler/Lowering/MultiTensor/Passes.h"
#include "compiler/Lowering/LayerNorm/Passes.h"
#include "compiler/Lowering/ReductionEpilogues/Passes.h"
#include "compiler/Lowering/Remat/Passes.h"
#include "compiler/Lowering/SiblingReductions/Passes.h"
#include "compiler/Lowering/SplitReductions/Passes.h"
#include "compiler/Lowering/Passes.h"
#include "compiler/Lowering/Pipelines.h"
#include "compiler/Pipeline/Pipeline.h"
#include "compiler/Partition/Cost/Passes.h"
#include "compiler/Partition/Stages/Passes.h"
#include "compiler/Training/DataParallel/Passes.h"
#include "compiler/Training/MixedPrecision/Passes.h"
#include "compiler/Training/Remat/Passes.h"
#include "compiler/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

void dlc::registerAllPasses() {
  static bool done = false;
  if (done)
    return;
  done = true;
  mlir::registerTransformsPasses();
  dlc::registerLoweringPasses();
  dlc::registerDLCMultiTensorPasses();
  dlc::registerDLCReductionEpiloguesPasses();
  dlc::registerDLCLayerNormPasses();
  dlc::registerDLCLoweringRematPasses();
  dlc::registerDLCSiblingReductionsPasses();
  dlc::registerDLCSplitReductionsPasses();
  dlc::registerDLCTransformsPasses();
  dlc::registerDLCMixedPrecisionPasses();
  dlc::registerDLCDataParallelPasses();
  dlc::registerDLCRematPasses();
  dlc::registerDLCPartitionCostPasses();
  dlc::registerDLCPartitionStagesPasses();
  registerAllPipelines();
}

void dlc::registerAllPipelines() {
  static bool done = false;
  if (done)
    return;
  done = true;
  dlc::registerTrainingStepPipeline();
  dlc::registerLoweringPipeline();
  dlc::registerPipeline();
}
