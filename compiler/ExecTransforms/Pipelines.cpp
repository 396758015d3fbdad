//===- Pipelines.cpp - the order of the dlexec transforms -----------------===//
#include "compiler/ExecTransforms/Passes.h"

#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace dlc;

void dlc::buildExecTransformsPipeline(OpPassManager &pm) {
  pm.addPass(createFuseElementwisePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createFuseGemmEpiloguesPass());
  pm.addPass(createMultiTensorPass());
  pm.addPass(createFuseReductionEpiloguesPass());
  pm.addPass(createFuseLayerNormPass());
  pm.addPass(createRematPersistentKernelsPass());
  pm.addPass(createFuseSiblingReductionsPass());
  pm.addPass(createSplitReductionsPass());
}

void dlc::buildMemoryPlanningPipeline(OpPassManager &pm) {
  pm.addPass(createPlanMemoryPass());
}
