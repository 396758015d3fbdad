//===- InitAllPasses.cpp - pass and pipeline registration -----------------===//
#include "compiler/InitAll/InitAll.h"

#include "compiler/Conversion/GraphToExec/Passes.h"
#include "compiler/ExecTransforms/Passes.h"
#include "compiler/GraphFusion/Passes.h"
#include "compiler/Partition/Passes.h"
#include "compiler/Pipeline/Pipeline.h"
#include "compiler/Training/Passes.h"
#include "mlir/Transforms/Passes.h"

void dlc::registerAllPasses() {
  static bool done = false;
  if (done)
    return;
  done = true;
  mlir::registerTransformsPasses();
  // One registration call per phase (each phase folder's Passes.td).
  dlc::registerDLCGraphFusionPasses();
  dlc::registerDLCTrainingPasses();
  dlc::registerDLCPartitionPasses();
  dlc::registerDLCGraphToExecPasses();
  dlc::registerDLCExecTransformsPasses();
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
